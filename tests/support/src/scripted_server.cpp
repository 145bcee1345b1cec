// SPDX-License-Identifier: Apache-2.0
#include "edgelock/testing/scripted_server.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>

#include "edgelock/resp_reader.hpp"
#include "socket_util.hpp"

namespace edgelock::testing {

scripted_server::scripted_server(responder respond) : respond_(std::move(respond)) {
    listen_fd_ = detail::listen_loopback(port_);
    acceptor_ = std::thread([this] { accept_loop(); });
}

scripted_server::~scripted_server() {
    stopping_ = true;
    if (acceptor_.joinable()) acceptor_.join();
    std::lock_guard<std::mutex> guard(threads_mutex_);
    for (std::thread& t : threads_) t.join();
    ::close(listen_fd_);
}

scripted_reply long_running_node_reply(const std::vector<std::string>& args) {
    if (args.empty()) return {};
    if (args[0] == "INFO") {
        const std::string info =
            "# Server\r\nredis_version:7.0.15\r\nrun_id:" + std::string(40, 'a') +
            "\r\nuptime_in_seconds:86400\r\n# Persistence\r\naof_enabled:0\r\n";
        return scripted_reply{"$" + std::to_string(info.size()) + "\r\n" + info + "\r\n"};
    }
    if (args[0] == "CONFIG")
        return scripted_reply{"*2\r\n$11\r\nappendfsync\r\n$8\r\neverysec\r\n"};
    return {};
}

std::string scripted_server::url() const { return "redis://127.0.0.1:" + std::to_string(port_); }

void scripted_server::accept_loop() {
    while (!stopping_) {
        pollfd p{listen_fd_, POLLIN, 0};
        if (::poll(&p, 1, 10) <= 0) continue;
        const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) continue;
        std::lock_guard<std::mutex> guard(threads_mutex_);
        threads_.emplace_back([this, fd] { serve(fd); });
    }
}

void scripted_server::serve(int fd) {
    std::string input;
    bool open = true;
    while (open && !stopping_) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 10) <= 0) continue;
        char buffer[4096];
        const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        input.append(buffer, static_cast<std::size_t>(n));
        for (;;) {
            std::array<reply_node, 64> nodes{};
            const parse_result parsed =
                parse_reply(input.data(), input.size(), nodes.data(), nodes.size());
            if (parsed.code == errc::need_more) break;
            if (parsed.code != errc::ok) {
                open = false;
                break;
            }
            std::vector<std::string> args;
            for (std::size_t i = 1; i < parsed.nodes; ++i) args.emplace_back(nodes[i].text);
            input.erase(0, parsed.consumed);
            ++commands_;
            const scripted_reply reply = respond_(args);
            if (!reply.bytes.empty() &&
                !detail::send_all(fd, reply.bytes.data(), reply.bytes.size())) {
                open = false;
                break;
            }
            if (reply.close_after) {
                open = false;
                break;
            }
        }
    }
    ::close(fd);
}

}  // namespace edgelock::testing
