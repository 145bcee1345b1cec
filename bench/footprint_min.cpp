// SPDX-License-Identifier: Apache-2.0
// The smallest real edgelock program: one fenced lock over one Redis on loopback, driven
// through plain POSIX sockets, no exceptions, no RTTI, no heap of its own, linked statically.
// scripts/size-report.sh measures it per architecture: what the core costs a gateway image.
//
//   footprint_min PORT     acquire "footprint:min" on 127.0.0.1:PORT, release it; exit 0
//                          when both succeeded, 1 otherwise
//   footprint_min --sizes  print sizeof one lock and of a table of lock_table_size locks
//
// It prints with write(2) only: printf alone would outweigh the core in a static image.
#include <netinet/in.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <array>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <system_error>

#include "edgelock/lock.hpp"
#include "edgelock/resp_reader.hpp"

namespace {

constexpr std::size_t lock_table_size = 64;
constexpr std::size_t receive_bytes_max = 4096;
constexpr std::size_t reply_nodes_max = 16;
constexpr int steps_max = 256;  // every request and reply of one acquire and release fits
constexpr std::int64_t ttl_ms = 5'000;
constexpr std::int64_t wait_ms = 2'000;
constexpr std::int64_t poll_ms_max = 1'000;
constexpr std::uint8_t instance = 0;

using lock_table = std::array<edgelock::lock, lock_table_size>;

std::int64_t monotonic_ms() {
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    return std::int64_t{now.tv_sec} * 1000 + now.tv_nsec / 1'000'000;
}

void print(const char* text) {
    const std::size_t size = std::strlen(text);
    if (write(STDOUT_FILENO, text, size) != static_cast<ssize_t>(size)) _exit(1);
}

void print_number(std::size_t value) {
    std::array<char, 24> digits{};
    std::size_t at = digits.size() - 1;  // digits.back() stays the terminating zero
    do {
        digits[--at] = static_cast<char>('0' + value % 10);
        value /= 10;
    } while (value != 0 && at != 0);
    print(&digits[at]);
}

int print_sizes() {
    print("lock ");
    print_number(sizeof(edgelock::lock));
    print("\nlock_table_");
    print_number(lock_table_size);
    print(" ");
    print_number(sizeof(lock_table));
    print("\n");
    return 0;
}

// 1..65535 in at most five digits; unsigned from_chars refuses a sign and a space.
bool parse_port(const char* text, std::uint16_t& port) {
    const std::size_t length = std::strlen(text);
    if (length > 5) return false;
    std::uint32_t value = 0;
    const auto [end, error] = std::from_chars(text, text + length, value);
    if (error != std::errc{} || end != text + length) return false;
    if (value == 0 || value > 65535) return false;
    port = static_cast<std::uint16_t>(value);
    return true;
}

int connect_loopback(std::uint16_t port) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

bool send_all(int fd, const char* data, std::size_t size) {
    while (size > 0) {
        const ssize_t sent = send(fd, data, size, MSG_NOSIGNAL);
        if (sent <= 0) return false;
        data += sent;
        size -= static_cast<std::size_t>(sent);
    }
    return true;
}

bool send_requests(edgelock::lock& lock, int fd) {
    std::array<char, edgelock::request_bytes_max> request{};
    while (lock.has_request(instance)) {
        const edgelock::write_result written =
            lock.write_request(instance, request.data(), request.size());
        if (written.code != edgelock::errc::ok) return false;
        if (!send_all(fd, request.data(), written.size)) return false;
    }
    return true;
}

// Receive state: bytes read from the connection and not yet parsed into a reply.
struct receiver {
    std::array<char, receive_bytes_max> bytes{};
    std::size_t size = 0;
};

// Reads what arrived and hands every complete reply to the lock. False on a dead connection
// or bytes that are not RESP.
bool receive_replies(edgelock::lock& lock, int fd, receiver& in) {
    const ssize_t got = read(fd, in.bytes.data() + in.size, in.bytes.size() - in.size);
    if (got <= 0) return false;
    in.size += static_cast<std::size_t>(got);
    std::array<edgelock::reply_node, reply_nodes_max> nodes{};
    for (;;) {
        const edgelock::parse_result parsed =
            edgelock::parse_reply(in.bytes.data(), in.size, nodes.data(), nodes.size());
        if (parsed.code == edgelock::errc::need_more) return in.size < in.bytes.size();
        if (parsed.code != edgelock::errc::ok) return false;
        // error_reply and unexpected_reply count as the instance's failure, which the lock's
        // events report; any other code means the reply was not used.
        const edgelock::errc code = lock.on_reply(instance, nodes[0], monotonic_ms());
        if (code != edgelock::errc::ok && code != edgelock::errc::error_reply &&
            code != edgelock::errc::unexpected_reply) {
            return false;
        }
        std::memmove(in.bytes.data(), in.bytes.data() + parsed.consumed, in.size - parsed.consumed);
        in.size -= parsed.consumed;
    }
}

enum class progress : std::uint8_t { running, done, failed };

// Drains the lock's events: releases as soon as the lock is acquired, finishes on release.
progress handle_events(edgelock::lock& lock) {
    edgelock::event e;
    while (lock.poll_event(e)) {
        switch (e.type) {
            case edgelock::event_type::acquired:
                print("acquired, fence ");
                print_number(static_cast<std::size_t>(e.fence));
                print("\n");
                if (lock.release(monotonic_ms()) != edgelock::errc::ok) return progress::failed;
                break;
            case edgelock::event_type::released:
                print("released\n");
                return e.expired_before ? progress::failed : progress::done;
            case edgelock::event_type::acquire_failed:
            case edgelock::event_type::lost:
                print("failed: ");
                print(edgelock::to_string(e.code));
                print("\n");
                return progress::failed;
            case edgelock::event_type::renewed: break;
        }
    }
    return progress::running;
}

int acquire_and_release(std::uint16_t port) {
    const int fd = connect_loopback(port);
    if (fd < 0) {
        print("cannot connect\n");
        return 1;
    }
    static edgelock::lock lock;  // static: a firmware keeps its locks out of the stack
    edgelock::lock_config config;
    config.name = "footprint:min";
    config.ttl_ms = ttl_ms;
    config.fencing = true;
    edgelock::owner_token token{};
    if (getrandom(token.data(), token.size(), 0) != static_cast<ssize_t>(token.size())) return 1;
    if (lock.configure(config) != edgelock::errc::ok) return 1;
    if (lock.acquire(monotonic_ms(), wait_ms, token) != edgelock::errc::ok) return 1;

    static receiver in;
    for (int step = 0; step < steps_max; ++step) {
        const progress now = handle_events(lock);
        if (now != progress::running) {
            close(fd);
            return now == progress::done ? 0 : 1;
        }
        if (!send_requests(lock, fd)) break;
        const std::int64_t wait = lock.next_deadline_ms() - monotonic_ms();
        pollfd readable{fd, POLLIN, 0};
        const int ready = poll(&readable, 1,
                               static_cast<int>(wait < 0             ? 0
                                                : wait < poll_ms_max ? wait
                                                                     : poll_ms_max));
        if (ready < 0) break;
        if (ready > 0 && !receive_replies(lock, fd, in)) {
            // Told as a transport must tell it, though the program gives up next whatever
            // the lock answers.
            (void)lock.on_io_error(instance, monotonic_ms());
            break;
        }
        // events_pending: the next step drains the events and runs the timer again.
        const edgelock::errc timed = lock.on_timer(monotonic_ms());
        if (timed != edgelock::errc::ok && timed != edgelock::errc::events_pending) break;
    }
    print("gave up\n");
    close(fd);
    return 1;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc == 2 && std::strcmp(argv[1], "--sizes") == 0) return print_sizes();
    std::uint16_t port = 0;
    if (argc != 2 || !parse_port(argv[1], port)) {
        print("usage: footprint_min PORT | --sizes\n");
        return 2;
    }
    return acquire_and_release(port);
}
