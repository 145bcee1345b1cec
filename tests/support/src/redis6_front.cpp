// SPDX-License-Identifier: Apache-2.0
#include "edgelock/testing/redis6_front.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>

#include "edgelock/resp_reader.hpp"
#include "socket_util.hpp"

namespace edgelock::testing {

namespace {

constexpr int poll_slice_ms = 10;
constexpr std::size_t reply_nodes_max = 1024;

std::string upper(std::string text) {
    std::transform(text.begin(), text.end(), text.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    return text;
}

// Reads from fd into `buffer` until one complete RESP value is at its front; returns its
// size, or 0 when the peer closed, failed, or `stopping` was set.
std::size_t read_one_value(int fd, std::string& buffer, const std::atomic<bool>& stopping) {
    for (;;) {
        std::array<reply_node, reply_nodes_max> nodes{};
        const parse_result parsed =
            parse_reply(buffer.data(), buffer.size(), nodes.data(), nodes.size());
        if (parsed.code == errc::ok) return parsed.consumed;
        if (parsed.code != errc::need_more) return 0;
        pollfd p{fd, POLLIN, 0};
        if (stopping) return 0;
        if (::poll(&p, 1, poll_slice_ms) <= 0) continue;
        char chunk[4096];
        const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return 0;
        buffer.append(chunk, static_cast<std::size_t>(n));
    }
}

std::vector<std::string> arguments_of(const std::string& command_bytes) {
    std::array<reply_node, reply_nodes_max> nodes{};
    const parse_result parsed =
        parse_reply(command_bytes.data(), command_bytes.size(), nodes.data(), nodes.size());
    std::vector<std::string> args;
    for (std::size_t i = 1; i < parsed.nodes; ++i) args.emplace_back(nodes[i].text);
    return args;
}

}  // namespace

redis6_front::redis6_front(std::uint16_t upstream_port) : upstream_port_(upstream_port) {
    listen_fd_ = detail::listen_loopback(port_);
    acceptor_ = std::thread([this] { accept_loop(); });
}

redis6_front::~redis6_front() {
    stopping_ = true;
    if (acceptor_.joinable()) acceptor_.join();
    std::lock_guard<std::mutex> guard(threads_mutex_);
    for (std::thread& t : threads_) t.join();
    ::close(listen_fd_);
}

std::string redis6_front::url() const { return "redis://127.0.0.1:" + std::to_string(port_); }

bool redis6_front::unknown_to_redis_6(const std::vector<std::string>& args) {
    if (args.empty()) return false;
    const std::string command = upper(args[0]);
    if (command == "INFO") return args.size() > 2;
    if (command != "SET") return false;
    bool nx = false;
    bool get = false;
    for (std::size_t i = 3; i < args.size(); ++i) {
        const std::string option = upper(args[i]);
        nx = nx || option == "NX";
        get = get || option == "GET";
    }
    return nx && get;
}

void redis6_front::accept_loop() {
    while (!stopping_) {
        pollfd p{listen_fd_, POLLIN, 0};
        if (::poll(&p, 1, poll_slice_ms) <= 0) continue;
        const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) continue;
        std::lock_guard<std::mutex> guard(threads_mutex_);
        threads_.emplace_back([this, fd] { serve(fd); });
    }
}

// One command at a time: refused here, or sent upstream and its one reply relayed.
void redis6_front::serve(int client_fd) {
    const int upstream_fd = detail::connect_loopback(upstream_port_);
    std::string from_client;
    std::string from_upstream;
    while (upstream_fd >= 0 && !stopping_) {
        const std::size_t command_size = read_one_value(client_fd, from_client, stopping_);
        if (command_size == 0) break;
        const std::string command = from_client.substr(0, command_size);
        from_client.erase(0, command_size);
        std::string reply;
        if (unknown_to_redis_6(arguments_of(command))) {
            ++refused_;
            reply = "-ERR syntax error\r\n";
        } else {
            if (!detail::send_all(upstream_fd, command.data(), command.size())) break;
            const std::size_t reply_size = read_one_value(upstream_fd, from_upstream, stopping_);
            if (reply_size == 0) break;
            reply = from_upstream.substr(0, reply_size);
            from_upstream.erase(0, reply_size);
        }
        if (!detail::send_all(client_fd, reply.data(), reply.size())) break;
    }
    if (upstream_fd >= 0) ::close(upstream_fd);
    ::close(client_fd);
}

}  // namespace edgelock::testing
