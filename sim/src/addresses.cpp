// SPDX-License-Identifier: Apache-2.0
#include "edgelock/sim/addresses.hpp"

#include <charconv>
#include <system_error>

#include "edgelock/assert.hpp"

namespace edgelock::sim {
namespace {

session::node_address address_of(const std::string& host, std::uint16_t port) {
    session::node_address out;
    const session::address_result set = session::set_host_port(out, host, port);
    EDGELOCK_ASSERT(set.code == errc::ok);
    return out;
}

// "<prefix><digits>" -> the number, or -1. Unsigned from_chars refuses a '-'.
int numbered(std::string_view host, char prefix) noexcept {
    if (host.size() < 2 || host.size() > 3 || host[0] != prefix) return -1;
    unsigned value = 0;
    const char* const last = host.data() + host.size();
    const auto [end, error] = std::from_chars(host.data() + 1, last, value);
    if (error != std::errc{} || end != last) return -1;
    return static_cast<int>(value);
}

}  // namespace

std::string node_host(std::uint8_t node) { return "n" + std::to_string(node); }
std::string sentinel_host(std::uint8_t sentinel) { return "s" + std::to_string(sentinel); }

session::node_address address_of_node(std::uint8_t node) {
    return address_of(node_host(node), redis_port);
}

session::node_address address_of_sentinel(std::uint8_t sentinel) {
    return address_of(sentinel_host(sentinel), sentinel_port);
}

int resolve(const session::node_address& address, std::uint8_t nodes,
            std::uint8_t sentinels) noexcept {
    const int node = numbered(address.host.view(), 'n');
    if (node >= 0 && node < nodes) return address.port == redis_port ? node : no_server;
    const int sentinel = numbered(address.host.view(), 's');
    if (sentinel >= 0 && sentinel < sentinels)
        return address.port == sentinel_port ? nodes + sentinel : no_server;
    return no_server;
}

}  // namespace edgelock::sim
