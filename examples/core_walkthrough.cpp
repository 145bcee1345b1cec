// SPDX-License-Identifier: Apache-2.0
// Drives the sans-IO core by hand, the way a transport does, with scripted replies standing
// in for Redis. Every request the lock emits is printed as the command Redis would receive;
// every reply is chosen by the script below. Time is a literal: nothing here sleeps.
//
// It is the shortest complete picture of the core's contract: calls in (acquire, release,
// on_reply, on_io_error, on_timer), pulls out (write_request, next_deadline_ms, poll_event).
#include <array>
#include <cinttypes>
#include <cstdio>
#include <string_view>

#include "edgelock/lock.hpp"
#include "edgelock/resp_reader.hpp"

namespace {

using edgelock::errc;

edgelock::reply_node integer_reply(std::int64_t value) {
    edgelock::reply_node node;
    node.type = edgelock::reply_type::integer;
    node.integer = value;
    return node;
}

// SET NX GET's answer when the key was free and is now ours.
edgelock::reply_node nil_reply() { return edgelock::reply_node{}; }

// A fenced acquire answers its counter as a string: exact past 2^53, where a Lua number is not.
edgelock::reply_node bulk_reply(std::string_view text) {
    edgelock::reply_node node;
    node.type = edgelock::reply_type::bulk_string;
    node.text = text;
    return node;
}

// Writes the next request for `instance` and prints it as a command line.
void send(edgelock::lock& lock, std::uint8_t instance, std::int64_t now_ms) {
    std::array<char, edgelock::request_bytes_max> bytes{};
    const edgelock::write_result written = lock.write_request(instance, bytes.data(), bytes.size());
    if (written.code != errc::ok) {
        std::printf("  write_request failed: %s\n", edgelock::to_string(written.code));
        return;
    }
    std::array<edgelock::reply_node, 16> nodes{};
    const edgelock::parse_result parsed =
        edgelock::parse_reply(bytes.data(), written.size, nodes.data(), nodes.size());
    std::printf("  t=%6" PRId64 "  -> redis[%u]:", now_ms, unsigned{instance});
    for (std::size_t i = 1; i < parsed.nodes; ++i) {
        std::string_view arg = nodes[i].text;
        if (arg.size() > 24) arg = arg.substr(0, 12);  // script digests: the first 12 digits
        std::printf(" %.*s", static_cast<int>(arg.size()), arg.data());
    }
    std::printf("  (%zu bytes)\n", written.size);
}

void send_all(edgelock::lock& lock, std::int64_t now_ms) {
    for (std::uint8_t i = 0; i < lock.instance_count(); ++i) {
        while (lock.has_request(i)) send(lock, i, now_ms);
    }
}

void reply(edgelock::lock& lock, std::uint8_t instance, const edgelock::reply_node& node,
           std::int64_t now_ms) {
    const char* shown = node.type == edgelock::reply_type::nil ? "(nil)" : "";
    if (node.type == edgelock::reply_type::integer) {
        std::printf("  t=%6" PRId64 "  <- redis[%u]: (integer) %" PRId64 "\n", now_ms,
                    unsigned{instance}, node.integer);
    } else if (node.type == edgelock::reply_type::bulk_string) {
        std::printf("  t=%6" PRId64 "  <- redis[%u]: \"%.*s\"\n", now_ms, unsigned{instance},
                    static_cast<int>(node.text.size()), node.text.data());
    } else {
        std::printf("  t=%6" PRId64 "  <- redis[%u]: %s\n", now_ms, unsigned{instance}, shown);
    }
    const errc code = lock.on_reply(instance, node, now_ms);
    if (code != errc::ok) std::printf("  on_reply: %s\n", edgelock::to_string(code));
}

// Every call in returns a code (lock.hpp lists which): a transport acts on each. Here each
// one is expected to be ok, and one that is not is printed where it happened.
void expect_ok(const char* call, errc code) {
    if (code != errc::ok) std::printf("  %s: %s\n", call, edgelock::to_string(code));
}

void print_events(edgelock::lock& lock, std::int64_t now_ms) {
    edgelock::event e;
    while (lock.poll_event(e)) {
        switch (e.type) {
            case edgelock::event_type::acquired:
                std::printf("  t=%6" PRId64 "  EVENT acquired  fence=%" PRId64
                            " valid_until=%" PRId64 " (validity %" PRId64 " ms left)\n",
                            now_ms, e.fence, e.valid_until_ms, e.valid_until_ms - now_ms);
                break;
            case edgelock::event_type::acquire_failed:
                std::printf("  t=%6" PRId64 "  EVENT acquire_failed  code=%s cause=%s\n", now_ms,
                            edgelock::to_string(e.code), edgelock::to_string(e.cause));
                break;
            case edgelock::event_type::renewed:
                std::printf("  t=%6" PRId64 "  EVENT renewed  valid_until=%" PRId64 "\n", now_ms,
                            e.valid_until_ms);
                break;
            case edgelock::event_type::lost:
                std::printf("  t=%6" PRId64 "  EVENT lost  why=%s\n", now_ms,
                            edgelock::to_string(e.code));
                break;
            case edgelock::event_type::released:
                std::printf(
                    "  t=%6" PRId64 "  EVENT released  expired_before=%s instances_released=%u\n",
                    now_ms, e.expired_before ? "yes" : "no", unsigned{e.instances_released});
                break;
        }
    }
}

constexpr edgelock::owner_token token_of(std::uint8_t seed) {
    edgelock::owner_token token{};
    for (std::size_t i = 0; i < token.size(); ++i)
        token[i] = static_cast<std::uint8_t>(seed * 17 + i);
    return token;
}

bool configure(edgelock::lock& lock, std::uint8_t instances, bool fencing) {
    edgelock::lock_config config;
    config.name = "orders:42";
    config.ttl_ms = 30'000;
    config.instances = instances;
    config.fencing = fencing;
    const errc code = lock.configure(config);
    if (code != errc::ok) std::printf("configure: %s\n", edgelock::to_string(code));
    return code == errc::ok;
}

void single_instance_with_fencing() {
    std::puts("\n1. One Redis, fencing on: acquire, a watchdog renewal, release");
    edgelock::lock lock;
    if (!configure(lock, 1, true)) return;
    expect_ok("acquire", lock.acquire(1'000, 0, token_of(1)));
    send_all(lock, 1'000);
    reply(lock, 0, bulk_reply("41"), 1'004);
    print_events(lock, 1'004);
    std::printf("  next deadline: t=%" PRId64 " (the renewal, every ttl/3)\n",
                lock.next_deadline_ms());
    expect_ok("on_timer", lock.on_timer(lock.next_deadline_ms()));
    send_all(lock, 11'000);
    reply(lock, 0, integer_reply(1), 11'003);
    print_events(lock, 11'003);
    expect_ok("release", lock.release(12'000));
    send_all(lock, 12'000);
    reply(lock, 0, integer_reply(1), 12'002);
    print_events(lock, 12'002);
}

void contention_and_waiting() {
    std::puts("\n2. Someone else holds it: wait up to 300 ms with jittered backoff, then give up");
    edgelock::lock lock;
    if (!configure(lock, 1, false)) return;
    std::int64_t now = 0;
    expect_ok("acquire", lock.acquire(now, 300, token_of(2)));
    for (int attempt = 0; attempt < 20 && lock.state() != edgelock::lock_state::idle; ++attempt) {
        send_all(lock, now);
        now += 2;
        reply(lock, 0, bulk_reply("another owner's token"), now);  // SET NX GET: taken
        if (lock.state() == edgelock::lock_state::backing_off) {
            now = lock.next_deadline_ms();
            std::printf("  backing off until t=%" PRId64 "\n", now);
            expect_ok("on_timer", lock.on_timer(now));
        }
    }
    print_events(lock, now);
}

void redlock_with_failures() {
    std::puts("\n3. Redlock over 5 masters: 2 do not answer, the quorum of 3 holds the lock");
    edgelock::lock lock;
    if (!configure(lock, 5, false)) return;
    expect_ok("acquire", lock.acquire(0, 0, token_of(3)));
    send_all(lock, 0);
    reply(lock, 0, nil_reply(), 3);
    reply(lock, 2, nil_reply(), 4);
    expect_ok("on_io_error", lock.on_io_error(1, 5));
    std::puts("  t=     5  redis[1]: connection reset");
    reply(lock, 4, nil_reply(), 6);
    print_events(lock, 6);
    std::puts("  (redis[3] never answered; the release still goes to it)");
    expect_ok("release", lock.release(100));
    send_all(lock, 100);
    for (std::uint8_t i : {0, 2, 4}) reply(lock, i, integer_reply(1), 102);
    std::printf("  release waits for the silent ones until t=%" PRId64 "\n",
                lock.next_deadline_ms());
    expect_ok("on_timer", lock.on_timer(lock.next_deadline_ms()));
    print_events(lock, 3'100);
}

void renewal_too_late() {
    std::puts(
        "\n4. The watchdog cannot reach Redis: lost when validity ends, a drift before Redis "
        "expires the key");
    edgelock::lock lock;
    if (!configure(lock, 1, false)) return;
    expect_ok("acquire", lock.acquire(0, 0, token_of(4)));
    send_all(lock, 0);
    reply(lock, 0, nil_reply(), 2);
    print_events(lock, 2);
    expect_ok("on_timer", lock.on_timer(10'000));
    send_all(lock, 10'000);
    std::puts("  (no answer: a partition)");
    const std::int64_t end = lock.valid_until_ms();
    std::printf("  held(t=%" PRId64 ") = %s\n", end - 1, lock.held(end - 1) ? "true" : "false");
    expect_ok("on_timer", lock.on_timer(end));
    print_events(lock, end);
    std::printf("  held(t=%" PRId64 ") = %s\n", end, lock.held(end) ? "true" : "false");
    expect_ok("release", lock.release(end + 5));
    print_events(lock, end + 5);
}

}  // namespace

int main() {
    std::puts(
        "edgelock core walkthrough: one lock object, scripted Redis replies, literal time (ms)");
    std::printf("sizeof(edgelock::lock) = %zu bytes, instances_max = %zu\n", sizeof(edgelock::lock),
                edgelock::instances_max);
    single_instance_with_fencing();
    contention_and_waiting();
    redlock_with_failures();
    renewal_too_late();
    return 0;
}
