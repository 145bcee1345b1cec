// SPDX-License-Identifier: Apache-2.0
// The restart guard against real redis-server processes (edgelock/lock.hpp, "Restarts"): a
// node started without AOF appendfsync always counts only a TTL plus drift after its start,
// one with it counts at once, a restart during a hold is noticed by its run_id, and ACLs that
// hide the node's facts are handled as documented.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "edgelock/error_code.hpp"
#include "edgelock/blocking_lock.hpp"
#include "edgelock/lock.hpp"
#include "edgelock/testing/redis_client.hpp"
#include "edgelock/testing/redis_process.hpp"
#include "redis_test_util.hpp"

namespace {

using namespace std::chrono_literals;
using edgelock::errc;
using edgelock::redis_tests::options_for;
using edgelock::testing::persistence;
using edgelock::testing::redis_client;
using edgelock::testing::redis_masters;
using edgelock::testing::redis_server;

constexpr std::int64_t ttl_ms = 1500;

// The guard a lock of this TTL runs with by default (ttl + drift), as the core resolves it.
std::int64_t default_guard_ms() {
    edgelock::lock_config config;
    config.name = "job";
    config.ttl_ms = ttl_ms;
    return edgelock::resolve(config).restart_guard_ms;
}

edgelock::blocking::lock_options guarded(std::vector<std::string> urls) {
    return options_for("job", std::move(urls), ttl_ms);
}

TEST(restart_guard, a_fresh_volatile_node_is_refused_until_the_guard_has_passed_then_counts) {
    redis_server server({}, persistence::volatile_);
    edgelock::blocking::lock lock;
    ASSERT_FALSE(lock.open(guarded({server.url()})));
    const std::int64_t before = edgelock::blocking::now_ms();
    EXPECT_EQ(lock.try_acquire(), errc::restart_guard);
    const std::int64_t guard_until = lock.guard_until_ms();
    EXPECT_GE(guard_until, before + ttl_ms) << "counted from a start no earlier than the connect";
    EXPECT_LE(guard_until, edgelock::blocking::now_ms() + default_guard_ms());
    EXPECT_EQ(lock.acquire(100ms), errc::restart_guard) << "a wait short of the guard ends at once";
    EXPECT_LT(edgelock::blocking::now_ms(), guard_until);

    const std::error_code waited = lock.acquire(5s);
    EXPECT_FALSE(waited) << waited.message();
    EXPECT_GE(edgelock::blocking::now_ms(), guard_until) << "not a moment before the guard ended";
    EXPECT_TRUE(lock.held());
    EXPECT_FALSE(lock.release());
}

TEST(restart_guard, a_node_with_aof_always_counts_at_once_and_after_a_restart) {
    redis_server server;  // durable: AOF, appendfsync always
    edgelock::blocking::lock lock;
    ASSERT_FALSE(lock.open(guarded({server.url()})));
    ASSERT_FALSE(lock.try_acquire());
    ASSERT_FALSE(lock.release());
    server.restart();
    const std::error_code again = lock.acquire(2s);
    EXPECT_FALSE(again) << again.message();
    EXPECT_FALSE(lock.release());
}

TEST(restart_guard, the_guard_can_be_turned_off) {
    redis_server server({}, persistence::volatile_);
    auto options = guarded({server.url()});
    options.restart_guard = false;
    edgelock::blocking::lock lock;
    ASSERT_FALSE(lock.open(options));
    EXPECT_FALSE(lock.try_acquire()) << "nothing read, nothing guarded";
    EXPECT_FALSE(lock.release());
}

TEST(restart_guard, a_restart_during_a_hold_is_noticed_and_the_hold_lost_with_node_restarted) {
    redis_server server({}, persistence::volatile_);
    std::this_thread::sleep_for(std::chrono::milliseconds(ttl_ms + 100));  // past the first guard
    edgelock::blocking::lock lock;
    auto options = guarded({server.url()});
    options.ttl_ms = 6000;              // renewals every 2 s; the guard of a new start is 6 s
    options.restart_guard_ms = ttl_ms;  // but this node's first start counts after 1.5 s
    ASSERT_FALSE(lock.open(options));
    const std::error_code acquired = lock.acquire(3s);
    ASSERT_FALSE(acquired) << acquired.message();
    server.restart();
    ASSERT_TRUE(edgelock::testing::eventually([&] { return lock.lost(); }, 5s))
        << "the renewal's new connection reads a new run_id";
    EXPECT_EQ(lock.lost_reason(), errc::node_restarted);
    EXPECT_EQ(lock.release(), errc::expired);
}

TEST(restart_guard, redlock_holds_on_the_nodes_that_count_while_one_is_guarded) {
    redis_masters masters(3, {}, persistence::volatile_);
    // Up 3 s: Redis's whole-second uptime, less the second it may round up, covers the guard.
    std::this_thread::sleep_for(3200ms);
    masters[2].restart();  // just started again: kept out, the other two are a quorum
    redis_client fresh(masters[2].port());
    edgelock::blocking::lock lock;
    ASSERT_FALSE(lock.open(guarded(masters.urls())));
    const std::error_code acquired = lock.try_acquire();
    ASSERT_FALSE(acquired) << acquired.message();
    EXPECT_FALSE(fresh.exists("job")) << "an instance the guard keeps out is not asked";
    EXPECT_FALSE(lock.release());
}

TEST(restart_guard, an_acl_without_config_get_makes_even_an_aof_always_node_wait) {
    redis_server server;  // durable, but the lock's user may not read appendfsync
    redis_client admin(server.port());
    admin.command({"ACL", "SETUSER", "locker", "on", ">pw", "~*", "+@all", "-config"});
    edgelock::blocking::lock lock;
    ASSERT_FALSE(lock.open(guarded({server.url("pw", "locker")})));
    EXPECT_EQ(lock.try_acquire(), errc::restart_guard) << "persistence unknown: not durable";
}

TEST(restart_guard, an_acl_without_info_fails_every_connection_with_node_info_refused) {
    redis_server server;
    redis_client admin(server.port());
    admin.command({"ACL", "SETUSER", "locker", "on", ">pw", "~*", "+@all", "-info"});
    edgelock::blocking::lock lock;
    ASSERT_FALSE(lock.open(guarded({server.url("pw", "locker")})));
    EXPECT_EQ(lock.try_acquire(), edgelock::transport_errc::node_info_refused);
}

}  // namespace
