// SPDX-License-Identifier: Apache-2.0
// The C API over a real Redis Cluster: a lock given the cluster's seeds lives on its slot's
// master, and a NULL seed is the caller's mistake.
#include <gtest/gtest.h>

#include <string>

#include "edgelock.h"
#include "edgelock/keys.hpp"
#include "edgelock/testing/redis_cluster.hpp"

namespace {

TEST(CapiCluster, ALockLivesOnItsSlotsMaster) {
    edgelock::testing::redis_cluster cluster;
    const std::string seed = "redis://127.0.0.1:" + std::to_string(cluster.node(0).port());
    const char* const seeds[] = {seed.c_str()};
    edgelock_options o;
    edgelock_options_init(&o, sizeof o);
    o.cluster = seeds;
    o.cluster_count = 1;
    o.name = "capi:cluster";
    o.ttl_ms = 5000;
    o.fencing = 1;
    o.restart_guard = 0;  // seconds-old volatile nodes
    edgelock_lock* lock = nullptr;
    ASSERT_EQ(edgelock_open(&o, &lock), EDGELOCK_OK);
    edgelock_hold hold{};
    ASSERT_EQ(edgelock_acquire(lock, 1000, &hold), EDGELOCK_OK);
    const std::size_t owner = cluster.owner_of(edgelock::cluster_slot("capi:cluster"));
    EXPECT_TRUE(cluster.admin(owner).exists("capi:cluster"));
    EXPECT_EQ(edgelock_release(lock), EDGELOCK_OK);
    EXPECT_FALSE(cluster.admin(owner).exists("capi:cluster"));
    edgelock_close(lock);
}

TEST(CapiCluster, ANullSeedIsAnInvalidArgument) {
    const char* const seeds[] = {nullptr};
    edgelock_options o;
    edgelock_options_init(&o, sizeof o);
    o.cluster = seeds;
    o.cluster_count = 1;
    o.name = "capi:cluster";
    edgelock_lock* lock = nullptr;
    EXPECT_EQ(edgelock_open(&o, &lock), EDGELOCK_E_INVALID_ARGUMENT);
    EXPECT_EQ(lock, nullptr);
}

}  // namespace
