// SPDX-License-Identifier: Apache-2.0
// edgelock test support: a loopback port where nothing listens, for as long as it lives.
//
// A port from free_port() is only free a moment: under `ctest -j` another test's server may
// bind it, and a URL meant to be down then reaches a live Redis. refused_port keeps a socket
// bound to its port (without SO_REUSEADDR and without listening), so connections to it are
// refused and no other process can bind it until the object is destroyed.
#pragma once

#include <cstdint>
#include <string>

namespace edgelock::testing {

class refused_port {
public:
    refused_port();  // throws std::runtime_error when no socket can be bound
    ~refused_port();
    refused_port(const refused_port&) = delete;
    refused_port& operator=(const refused_port&) = delete;
    refused_port(refused_port&& other) noexcept;
    refused_port& operator=(refused_port&& other) noexcept;

    std::uint16_t port() const { return port_; }
    std::string url() const;  // redis://127.0.0.1:PORT

private:
    int fd_ = -1;
    std::uint16_t port_ = 0;
};

}  // namespace edgelock::testing
