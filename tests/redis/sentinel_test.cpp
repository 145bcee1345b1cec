// SPDX-License-Identifier: Apache-2.0
// A Sentinel failover while locks are held.
//
// What the client does, and why: a hold is kept across a failover when the promoted replica
// has our key (it was replicated before the old master stopped) and a renewal reaches the new
// master before validity runs out; the client then simply goes on renewing there. It is
// reported lost with `expired` when the failover takes longer than the remaining validity (no
// renewal could be confirmed in time), and with `token_gone` when the new master does not
// hold our token (the SET never replicated, or someone else took the key there). The client
// does not declare a hold lost merely because the master changed: the key on the master that
// now serves writes is the only authority on who holds the lock. Asynchronous replication is
// the risk: without WAIT (replicas_to_wait) an acquired key can be lost in a failover, and
// until our next renewal notices, two owners may believe they hold it; fence tokens make the
// protected storage refuse the older one.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>

#include "edgelock/hiredis_lock.hpp"
#include "edgelock/testing/redis_client.hpp"
#include "edgelock/testing/redis_process.hpp"

namespace {

using namespace std::chrono_literals;
using edgelock::hiredis::lock;
using edgelock::hiredis::lock_options;
using edgelock::hiredis::now_ms;
using edgelock::testing::eventually;
using edgelock::testing::redis_client;
using edgelock::testing::sentinel_topology;

lock_options sentinel_options(sentinel_topology& topology, const std::string& name, std::int64_t ttl_ms) {
    lock_options options;
    options.name = name;
    options.sentinels = topology.sentinel_urls();
    options.master_name = sentinel_topology::master_name;
    options.ttl_ms = ttl_ms;
    options.connect_timeout_ms = 300;
    options.command_timeout_ms = 300;
    return options;
}

TEST(sentinel, a_failover_keeps_replicated_holds_and_loses_expired_or_missing_ones) {
    sentinel_topology topology;
    const std::uint16_t old_master = topology.master_port();

    // kept: long enough to outlive the failover and the old master's return as a replica,
    // and confirmed on the replica by WAIT (its renewals too).
    lock kept;
    auto kept_options = sentinel_options(topology, "kept", 15000);
    kept_options.replicas_to_wait = 1;
    kept_options.replica_wait_ms = 250;  // below the command timeout, as both clients require
    ASSERT_FALSE(kept.open(kept_options));
    // expires: its lease is shorter than the failover.
    std::atomic<bool> expires_lost{false};
    lock expires;
    auto expires_options = sentinel_options(topology, "expires", 1000);
    expires_options.on_lost = [&](std::error_code ec) { expires_lost = ec == edgelock::errc::expired; };
    ASSERT_FALSE(expires.open(expires_options));
    // vanishes: its key will be missing on the new master.
    lock vanishes;
    ASSERT_FALSE(vanishes.open(sentinel_options(topology, "vanishes", 9000)));

    edgelock::hiredis::hold kept_hold;
    ASSERT_FALSE(kept.try_acquire(&kept_hold));
    ASSERT_FALSE(expires.try_acquire());
    ASSERT_FALSE(vanishes.try_acquire());
    {
        redis_client primary(old_master);
        primary.command({"WAIT", "1", "2000"});
    }

    topology.primary().freeze();
    const std::uint16_t new_master = topology.wait_for_failover(old_master);
    ASSERT_NE(new_master, old_master);
    redis_client promoted(new_master);
    ASSERT_TRUE(promoted.exists("kept")) << "WAIT made sure the replica had the key";
    promoted.command({"DEL", "vanishes"});

    // The short lease could not be renewed while no master answered.
    EXPECT_TRUE(eventually([&] { return expires.lost(); }, 5s));
    EXPECT_EQ(expires.lost_reason(), edgelock::errc::expired);
    EXPECT_TRUE(eventually([&] { return expires_lost.load(); }, 2s));

    // The renewal on the new master finds no token: token_gone.
    EXPECT_TRUE(eventually([&] { return vanishes.lost(); }, 6s));
    EXPECT_EQ(vanishes.lost_reason(), edgelock::errc::token_gone);
    // The new master has no replica until the old one comes back as one (thawed only now,
    // so that no client renews on it while it still believes it is the master): until then
    // no renewal of kept can be confirmed by WAIT, and its lease only runs down.
    topology.primary().thaw();

    // The replicated hold goes on past the lease it had before the failover, renewed there
    // once the old master replicates the new one.
    EXPECT_TRUE(eventually([&] { return now_ms() > kept_hold.valid_until_ms + 500; }, 25s));
    EXPECT_TRUE(kept.held());
    EXPECT_FALSE(kept.lost());
    EXPECT_GT(promoted.pttl("kept"), 0);
    EXPECT_FALSE(kept.release());
    EXPECT_FALSE(promoted.exists("kept")) << "released on the new master";

    EXPECT_EQ(expires.release(), edgelock::errc::expired);
    EXPECT_EQ(vanishes.release(), edgelock::errc::expired);
    ASSERT_FALSE(expires.try_acquire()) << "the client works against the new master";
    EXPECT_FALSE(expires.release());
}

}  // namespace
