// SPDX-License-Identifier: Apache-2.0
// edgelock sim: the names of the simulated servers, as the clients address them.
//
// The simulated clients connect by address, exactly as the real transports do
// (session/address.hpp): Redis node k is host "n<k>" on port 6379, sentinel j is host "s<j>"
// on Sentinel's port 26379. The world numbers every process a client can connect to as one
// "server": the Redis nodes first (server k is node k), then the sentinels. resolve() is the
// simulated name lookup: which server an address reaches, if any.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "edgelock/session/address.hpp"

namespace edgelock::sim {

inline constexpr std::uint16_t redis_port = 6379;
inline constexpr std::uint16_t sentinel_port = 26379;
// The name the sentinels monitor the master under (SENTINEL get-master-addr-by-name).
inline constexpr std::string_view monitored_master_name = "mymaster";

std::string node_host(std::uint8_t node);
std::string sentinel_host(std::uint8_t sentinel);
session::node_address address_of_node(std::uint8_t node);
session::node_address address_of_sentinel(std::uint8_t sentinel);

inline constexpr int no_server = -1;
// The server `address` reaches in a world of `nodes` Redis nodes and `sentinels` sentinels,
// or no_server (an unknown host, or the right host on the wrong port: nothing listens there).
int resolve(const session::node_address& address, std::uint8_t nodes,
            std::uint8_t sentinels) noexcept;

}  // namespace edgelock::sim
