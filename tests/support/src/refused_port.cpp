// SPDX-License-Identifier: Apache-2.0
#include "edgelock/testing/refused_port.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdexcept>
#include <utility>

namespace edgelock::testing {

refused_port::refused_port() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) throw std::runtime_error("refused_port: socket failed");
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t size = sizeof addr;
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &size) != 0) {
        ::close(fd_);
        throw std::runtime_error("refused_port: bind failed");
    }
    port_ = ntohs(addr.sin_port);
}

refused_port::~refused_port() {
    if (fd_ >= 0) ::close(fd_);
}

refused_port::refused_port(refused_port&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), port_(other.port_) {}

refused_port& refused_port::operator=(refused_port&& other) noexcept {
    if (this != &other) {
        if (fd_ >= 0) ::close(fd_);
        fd_ = std::exchange(other.fd_, -1);
        port_ = other.port_;
    }
    return *this;
}

std::string refused_port::url() const { return "redis://127.0.0.1:" + std::to_string(port_); }

}  // namespace edgelock::testing
