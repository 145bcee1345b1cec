// SPDX-License-Identifier: Apache-2.0
// A lock whose slot has no known master makes the map due again: nothing else would.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../core/lock_driving.hpp"
#include "cluster_testing.hpp"
#include "edgelock/session/cluster_route.hpp"

namespace {

using namespace cluster_testing;

using namespace edgelock;
using namespace edgelock::session;
using namespace lock_driving;

// CLUSTER SLOTS from a node that knows no slot yet (a node not yet joined, or one whose view
// lags: "*0"), or from one that names the slot's master by an endpoint it lacks ("?").
// The read succeeds, the map is no longer stale, and the lock's slot has no master. No request
// is ever written for the lock, so no MOVED can come, and nothing else marks the map stale
// while the links stay up: the map is never read again and the lock never runs, even once
// the cluster serves the slot. A client needs the map to become due again.
void expect_read_again_when_the_slot_has_no_master(const std::string& slots_reply) {
    const node_address seed = node("redis://127.0.0.1:7101");
    slot_map map;
    map_refresh refresh;
    ASSERT_TRUE(refresh.due(map, 0));
    refresh.sent();
    const parsed reply(slots_reply);
    ASSERT_EQ(map.read_slots(reply.nodes.data(), reply.count, seed), errc::ok);
    refresh.ended(0);

    lock core;
    configure(core, 1);
    lock_route route = route_of("orders:42");
    ASSERT_EQ(core.acquire(0, 0, token_a), errc::ok);
    const route_step step = begin_writes(core, 0, route, map, 0);
    ASSERT_EQ(step.code, errc::ok);
    ASSERT_EQ(step.to.node, slot_map::no_master) << "the slot has no known master";

    // A minute later, long after the refresh gap: still nothing would read the map again.
    EXPECT_TRUE(refresh.due(map, 60'000))
        << "a lock whose slot has no known master waits forever for a map read";
}

TEST(cluster_no_master, an_empty_slot_map_is_read_again) {
    expect_read_again_when_the_slot_has_no_master("*0\r\n");
}

TEST(cluster_no_master, a_map_whose_master_of_the_slot_has_no_endpoint_is_read_again) {
    expect_read_again_when_the_slot_has_no_master(
        "*1\r\n*3\r\n:0\r\n:16383\r\n*2\r\n$1\r\n?\r\n:7102\r\n");
}

}  // namespace
