// SPDX-License-Identifier: Apache-2.0
// The blocking client's metrics (blocking::lock::metrics()) against a real redis-server: what
// each call, renewal, loss, release and reconnect adds, the handover gap of a fair lock, and
// the event hook's timings and lock name.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <mutex>
#include <thread>
#include <vector>

#include "edgelock/blocking_lock.hpp"
#include "edgelock/testing/redis_client.hpp"
#include "edgelock/testing/redis_process.hpp"
#include "redis_test_util.hpp"

namespace {

using namespace std::chrono_literals;
using edgelock::redis_tests::options_for;
using edgelock::session::acquire_outcome;
using edgelock::session::loss_cause;
using edgelock::session::release_outcome;
using edgelock::testing::eventually;
using edgelock::testing::redis_client;
using edgelock::testing::redis_server;

std::uint64_t acquires(const edgelock::session::lock_metrics& m, acquire_outcome outcome) {
    return m.acquires[static_cast<std::size_t>(outcome)];
}

TEST(metrics, each_acquire_is_counted_by_its_outcome_and_each_release_by_its_own) {
    redis_server server;
    edgelock::blocking::lock first;
    edgelock::blocking::lock second;
    ASSERT_FALSE(first.open(options_for("counted", {server.url()}, 5000)));
    ASSERT_FALSE(second.open(options_for("counted", {server.url()}, 5000)));
    EXPECT_EQ(first.metrics().connects, 0u) << "connections are made on demand";

    ASSERT_FALSE(first.try_acquire());
    EXPECT_EQ(second.try_acquire(), edgelock::errc::busy);
    EXPECT_EQ(second.acquire(50ms), edgelock::errc::busy);
    ASSERT_FALSE(first.acquire(0ms)) << "reentrant";
    ASSERT_FALSE(first.release());
    ASSERT_FALSE(first.release());
    EXPECT_EQ(first.release(), edgelock::errc::not_held);

    const edgelock::session::lock_metrics a = first.metrics();
    EXPECT_EQ(acquires(a, acquire_outcome::acquired), 2u);
    EXPECT_EQ(a.acquire_latency.count, 1u) << "the reentrant acquire has no latency";
    EXPECT_EQ(a.releases[static_cast<std::size_t>(release_outcome::released)], 1u)
        << "only the release that ended the hold";
    EXPECT_EQ(a.connects, 1u);
    EXPECT_EQ(a.reconnects, 0u);
    EXPECT_EQ(a.requests_in_flight, 0u);

    const edgelock::session::lock_metrics b = second.metrics();
    EXPECT_EQ(acquires(b, acquire_outcome::busy), 2u);
    EXPECT_EQ(b.acquire_wait.count, 1u) << "the waiting acquire made several attempts";
    EXPECT_EQ(b.acquire_latency.count, 0u);
}

TEST(metrics, renewals_a_loss_and_a_reconnect_are_counted) {
    redis_server server;
    redis_client client(server.port());
    edgelock::blocking::lock lock;
    ASSERT_FALSE(lock.open(options_for("renewed", {server.url()}, 300)));
    ASSERT_FALSE(lock.try_acquire());
    ASSERT_TRUE(eventually([&] { return lock.metrics().renewals_ok >= 2; }, 10s));
    client.command({"DEL", "renewed"});
    ASSERT_TRUE(eventually([&] { return lock.lost(); }, 10s));
    EXPECT_EQ(lock.release(), edgelock::errc::expired);
    edgelock::session::lock_metrics m = lock.metrics();
    EXPECT_EQ(m.losses[static_cast<std::size_t>(loss_cause::token_gone)], 1u);
    EXPECT_EQ(m.releases[static_cast<std::size_t>(release_outcome::expired)], 1u);

    ASSERT_FALSE(lock.try_acquire());
    server.stop();  // the hold's renewals now fail, and it ends as expired
    ASSERT_TRUE(eventually([&] { return lock.lost(); }, 10s));
    m = lock.metrics();
    EXPECT_GE(m.renewal_failures, 1u);
    EXPECT_EQ(m.losses[static_cast<std::size_t>(loss_cause::expired)], 1u);
    EXPECT_EQ(lock.release(), edgelock::errc::expired);

    server.start();
    EXPECT_TRUE(eventually([&] { return !lock.try_acquire(); }, 10s));
    m = lock.metrics();
    EXPECT_GE(m.reconnects, 1u) << "the connection was made again after the restart";
    EXPECT_EQ(m.failovers, 0u) << "the same server, not another master";
    EXPECT_GE(m.connects, m.reconnects + 1);
    ASSERT_FALSE(lock.release());
}

// A fair waiter woken by the release before it: the gap from that message to its hold.
TEST(metrics, a_fair_handover_records_its_gap) {
    redis_server server;
    auto options = options_for("handed", {server.url()}, 5000);
    options.fair = true;
    options.recheck_ms = 5000;  // so the wake-up, not a re-check, hands the lock over
    edgelock::blocking::lock holder;
    edgelock::blocking::lock waiter;
    ASSERT_FALSE(holder.open(options));
    ASSERT_FALSE(waiter.open(options));
    ASSERT_FALSE(holder.try_acquire());
    std::error_code waited;
    std::thread waiting([&] { waited = waiter.acquire(20s); });
    ASSERT_TRUE(eventually([&] { return waiter.metrics().connects >= 1; }, 10s));
    // The waiter stands in line once its first attempt was refused.
    ASSERT_TRUE(eventually(
        [&] {
            return redis_client(server.port()).command({"ZCARD", "{handed}:queue"}).integer >= 1;
        },
        10s));
    // Apart in time from the subscription's "look now", which is no release.
    std::this_thread::sleep_for(100ms);
    const std::int64_t release_started_ms = edgelock::blocking::now_ms();
    ASSERT_FALSE(holder.release());
    waiting.join();
    const std::int64_t handed_over_ms = edgelock::blocking::now_ms();
    ASSERT_FALSE(waited) << waited.message();
    const edgelock::session::lock_metrics m = waiter.metrics();
    EXPECT_EQ(m.handover_gap.count, 1u);
    EXPECT_LE(m.handover_gap.sum_ms, handed_over_ms - release_started_ms)
        << "the gap starts at the release's message, not before it";
    EXPECT_EQ(m.acquire_wait.count, 1u);
    EXPECT_EQ(holder.metrics().handover_gap.count, 0u);
    ASSERT_FALSE(waiter.release());
}

TEST(metrics, the_event_hook_carries_the_lock_name_and_elapsed_times) {
    redis_server server;
    std::mutex mutex;
    std::vector<edgelock::lock_event> seen;
    auto options = options_for("timed", {server.url()}, 5000);
    options.on_event = [&](const edgelock::lock_event& e) {
        std::lock_guard<std::mutex> guard(mutex);
        seen.push_back(e);
    };
    edgelock::blocking::lock lock;
    ASSERT_FALSE(lock.open(options));
    ASSERT_FALSE(lock.try_acquire());
    const std::int64_t acquired_ms = edgelock::blocking::now_ms();
    std::this_thread::sleep_for(20ms);  // a hold of measurable length, not synchronisation
    const std::int64_t released_ms = edgelock::blocking::now_ms();
    ASSERT_FALSE(lock.release());
    ASSERT_TRUE(eventually(
        [&] {
            std::lock_guard<std::mutex> guard(mutex);
            return !seen.empty() && seen.back().kind == edgelock::lock_event_kind::released;
        },
        10s));
    std::lock_guard<std::mutex> guard(mutex);
    for (const edgelock::lock_event& e : seen) EXPECT_EQ(e.lock, "timed");
    EXPECT_FALSE(seen.back().code) << "released on the quorum";
    EXPECT_GE(seen.back().elapsed_ms, released_ms - acquired_ms) << "the hold's length";
}

// The event hook is the caller's code too: a slow one must not come between the lease's check
// and acquire()'s return, which tells success only while the lease runs.
TEST(metrics, a_slow_event_hook_never_makes_a_success_of_an_ended_lease) {
    redis_server server;
    auto options = options_for("hooked", {server.url()}, 300);  // shorter than the hook
    options.watchdog = false;
    std::atomic<int> slow_attempts{1};
    std::atomic<int> losses{0};
    std::mutex mutex;
    std::vector<edgelock::lock_event> seen;
    options.on_event = [&](const edgelock::lock_event& e) {
        {
            std::lock_guard<std::mutex> guard(mutex);
            seen.push_back(e);
        }
        if (e.kind == edgelock::lock_event_kind::attempt && slow_attempts.fetch_sub(1) > 0)
            std::this_thread::sleep_for(400ms);
    };
    options.on_lost = [&](std::error_code) { ++losses; };
    edgelock::blocking::lock lock;
    ASSERT_FALSE(lock.open(options));
    const std::error_code heard = lock.try_acquire();
    EXPECT_TRUE(heard || lock.held()) << "success told for a lease that had already ended";
    EXPECT_EQ(heard, edgelock::errc::validity_expired) << heard.message();
    EXPECT_FALSE(lock.lost()) << "a hold never told of is not lost to the caller";
    {
        std::lock_guard<std::mutex> guard(mutex);
        const auto lost_at = std::find_if(seen.begin(), seen.end(), [](const auto& e) {
            return e.kind == edgelock::lock_event_kind::lost;
        });
        ASSERT_NE(lost_at, seen.end()) << "the hook heard the attempt succeed, then the end";
        EXPECT_EQ(lost_at->elapsed_ms, 0) << "a hold the caller never had lasted no time";
    }
    const edgelock::session::lock_metrics m = lock.metrics();
    EXPECT_EQ(acquires(m, acquire_outcome::validity_expired), 1u);
    for (const std::uint64_t count : m.losses) EXPECT_EQ(count, 0u) << "no hold was lost";
    // The next acquire starts afresh, and the first hold's end never reaches on_lost.
    ASSERT_FALSE(lock.try_acquire());
    ASSERT_FALSE(lock.release());
    std::this_thread::sleep_for(100ms);
    EXPECT_EQ(losses.load(), 0);
}

}  // namespace
