// SPDX-License-Identifier: Apache-2.0
// A connection to a real redis-server that hands back each reply's exact bytes: the
// conformance test compares them with the model's bytes, so nothing may parse and re-encode
// them on the way (the admin client in tests/support gives parsed replies only).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "edgelock/resp_reader.hpp"

namespace edgelock::conformance {

// A request as Redis reads it: an array of bulk strings.
inline std::string encode_request(const std::vector<std::string>& args) {
    std::string out = "*" + std::to_string(args.size()) + "\r\n";
    for (const std::string& a : args) {
        out += "$" + std::to_string(a.size()) + "\r\n";
        out += a;
        out += "\r\n";
    }
    return out;
}

class raw_connection {
public:
    // A reply that takes longer than this means a hung server or a test bug: fail loudly.
    static constexpr int reply_timeout_ms = 10'000;

    explicit raw_connection(std::uint16_t port) {
        fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
        if (fd_ < 0) throw std::runtime_error("socket() failed");
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_port = htons(port);
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (::connect(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
            ::close(fd_);
            throw std::runtime_error("connect to port " + std::to_string(port) + " failed");
        }
        const int one = 1;
        ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    ~raw_connection() { ::close(fd_); }
    raw_connection(const raw_connection&) = delete;
    raw_connection& operator=(const raw_connection&) = delete;

    // Writes `request` and returns the bytes of the next whole reply.
    std::string call(std::string_view request) {
        send_only(request);
        return next_reply();
    }

    // Writes `request` without waiting for its reply (a server stopped by SIGSTOP finds it in
    // its socket when it resumes).
    void send_only(std::string_view request) {
        std::size_t sent = 0;
        while (sent < request.size()) {
            const ssize_t n =
                ::send(fd_, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
            if (n <= 0) throw std::runtime_error("send failed");
            sent += static_cast<std::size_t>(n);
        }
    }

    // The bytes of the next whole reply (what was read beyond it stays for the next call).
    std::string next_reply() {
        std::vector<reply_node> nodes(4096);
        for (;;) {
            const parse_result parsed =
                parse_reply(buffer_.data(), buffer_.size(), nodes.data(), nodes.size());
            if (parsed.code == errc::ok) {
                std::string reply = buffer_.substr(0, parsed.consumed);
                buffer_.erase(0, parsed.consumed);
                return reply;
            }
            if (parsed.code != errc::need_more) throw std::runtime_error("malformed reply");
            read_some();
        }
    }

private:
    void read_some() {
        pollfd p{fd_, POLLIN, 0};
        if (::poll(&p, 1, reply_timeout_ms) != 1) throw std::runtime_error("no reply in time");
        char chunk[16384];
        const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
        if (n <= 0) throw std::runtime_error("connection closed");
        buffer_.append(chunk, static_cast<std::size_t>(n));
    }

    int fd_ = -1;
    std::string buffer_;
};

}  // namespace edgelock::conformance
