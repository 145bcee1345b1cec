// SPDX-License-Identifier: Apache-2.0
// Server names: the addresses the simulated clients connect to, and which server each reaches.
#include "edgelock/sim/addresses.hpp"

#include <gtest/gtest.h>

namespace {

using namespace edgelock::sim;
using edgelock::session::node_address;

node_address at(const char* host, std::uint16_t port) {
    node_address a;
    EXPECT_EQ(edgelock::session::set_host_port(a, host, port).code, edgelock::errc::ok);
    return a;
}

TEST(sim_addresses, nodes_then_sentinels_are_numbered_as_one_list_of_servers) {
    EXPECT_EQ(resolve(address_of_node(0), 3, 3), 0);
    EXPECT_EQ(resolve(address_of_node(2), 3, 3), 2);
    EXPECT_EQ(resolve(address_of_sentinel(0), 3, 3), 3);
    EXPECT_EQ(resolve(address_of_sentinel(2), 3, 3), 5);
    EXPECT_EQ(address_of_node(4).host.view(), "n4");
    EXPECT_EQ(address_of_node(4).port, redis_port);
    EXPECT_EQ(address_of_sentinel(1).host.view(), "s1");
    EXPECT_EQ(address_of_sentinel(1).port, sentinel_port);
}

TEST(sim_addresses, nothing_listens_elsewhere) {
    EXPECT_EQ(resolve(address_of_node(3), 3, 3), no_server) << "no such node";
    EXPECT_EQ(resolve(address_of_sentinel(0), 5, 0), no_server) << "no sentinels in this world";
    EXPECT_EQ(resolve(at("n0", sentinel_port), 1, 0), no_server)
        << "the right host, the wrong port";
    EXPECT_EQ(resolve(at("s0", redis_port), 3, 3), no_server);
    for (const char* host :
         {"localhost", "n", "nx", "n00x", "10.0.0.1", "s-1", "n+1", "n-1", "n-0"}) {
        EXPECT_EQ(resolve(at(host, redis_port), 5, 3), no_server) << host;
    }
}

}  // namespace
