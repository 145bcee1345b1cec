// SPDX-License-Identifier: Apache-2.0
// The blocking client on Redis Cluster (deployment::cluster), against a live cluster of
// redis-server processes (tests/support redis_cluster.hpp): locks on every master, a slot
// migrated under a held lock (ASK, then MOVED), a master killed and its replica followed,
// CLUSTERDOWN and TRYAGAIN answered without a hang, seeds that cannot give a map, fair waiting
// on the slot's master, and a hold checker over contending lock objects.
//
// Seen failing against broken clients (each built, run, then restored):
//   route_of() giving slot 0 to every lock: every_master_serves_its_locks fails
//     (too_many_redirects: the MOVED is learned for the name's slot, the route asks slot 0's)
//   the answer delivered as over instances (redirects not followed): the migration
//     test fails (the renewals stop at the ASK, the other lock gets error_reply, not busy)
//   the map read only once (tend_map returning after the first read): the killed-master test
//     fails (connection refused: the lock keeps asking the dead master)
//   EDGELOCK_ASSERT(code == errc::ok) after the lock's answer (an error reply taken as
//     impossible): the CLUSTERDOWN and TRYAGAIN tests abort
//   no_slot_map never noted: the seeds test gets no_quorum instead
//   the subscriber never placed (place_subscriber returning false): the fair test is not
//     subscribed on the slot's master and not woken by the release; the subscriber never
//     moved (kept where it was first set up): the failover test never sees it on the promoted
//     replica
//   acquire_failed taken as acquired: the hold checker finds overlapping holds
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "edgelock/blocking_lock.hpp"
#include "edgelock/keys.hpp"
#include "edgelock/testing/redis_client.hpp"
#include "edgelock/testing/redis_cluster.hpp"
#include "edgelock/testing/redis_process.hpp"
#include "edgelock/testing/refused_port.hpp"

namespace {

using namespace std::chrono_literals;
using edgelock::cluster_slot;
using edgelock::errc;
using edgelock::transport_errc;
using edgelock::blocking::hold;
using edgelock::blocking::lock;
using edgelock::blocking::lock_options;
using edgelock::testing::cluster_settings;
using edgelock::testing::eventually;
using edgelock::testing::migration;
using edgelock::testing::redis_client;
using edgelock::testing::redis_cluster;
using edgelock::testing::slot_range;

constexpr std::size_t names_tried_max = 100'000;
constexpr auto settle_timeout = 10s;  // renewals, promotions, CLUSTERDOWN: bounded polls

// A lock on the cluster's nodes, with short timings. The restart guard is off (every node
// of a fresh volatile cluster is inside it for a TTL) except where a test turns it on.
lock_options cluster_options(const std::string& name, redis_cluster& cluster,
                             std::int64_t ttl_ms = 1500) {
    lock_options options;
    options.name = name;
    options.cluster = cluster.seed_urls();
    options.ttl_ms = ttl_ms;
    options.connect_timeout_ms = 500;
    options.command_timeout_ms = 500;
    options.retry_delay_ms_min = 5;
    options.retry_delay_ms_max = 50;
    options.restart_guard = false;
    return options;
}

// The first name "<prefix>0", "<prefix>1", ... whose slot master m was given at start.
std::string name_on(redis_cluster& cluster, std::size_t m, const std::string& prefix = "lock:") {
    const slot_range r = cluster.assigned(m);
    for (std::size_t n = 0; n < names_tried_max; ++n) {
        std::string name = prefix + std::to_string(n);
        const std::uint16_t slot = cluster_slot(name);
        if (slot >= r.first && slot <= r.last) return name;
    }
    return {};
}

redis_client client_of(redis_cluster& cluster, std::size_t node) {
    return redis_client(cluster.node(node).port());
}

std::uint64_t renewals(const lock& l) { return l.metrics().renewals_ok; }

// At least `count` more renewals than `since`, the lock held and not lost meanwhile.
bool renews(const lock& l, std::uint64_t since, std::uint64_t count) {
    return eventually([&] { return renewals(l) >= since + count || l.lost(); }, settle_timeout) &&
           !l.lost() && l.held();
}

TEST(hiredis_cluster, every_master_serves_its_locks) {
    redis_cluster cluster;
    for (std::size_t m = 0; m < cluster.masters_at_start(); ++m) {
        const std::string name = name_on(cluster, m);
        ASSERT_FALSE(name.empty());
        lock_options options = cluster_options(name, cluster);
        options.restart_guard = true;  // told the start of the node the route reaches
        lock l;
        ASSERT_FALSE(l.open(options));
        hold h;
        const std::error_code acquired = l.acquire(5s, &h);
        ASSERT_FALSE(acquired) << name << ": " << acquired.message();
        const std::size_t owner = cluster.owner_of(cluster_slot(name));
        EXPECT_EQ(owner, m);
        redis_client direct = client_of(cluster, owner);
        EXPECT_EQ(direct.get(name), h.token) << name << " on master " << m;
        EXPECT_FALSE(l.release());
        EXPECT_FALSE(direct.exists(name)) << name << " still on master " << m;
    }
}

// The holder renews through the ASK of a half-migrated slot and the MOVED after it; another
// lock object finds it held all along, and takes it once released, on the new master.
TEST(hiredis_cluster, a_migrated_slot_keeps_the_lock_held_and_exclusive) {
    redis_cluster cluster;
    const std::string name = name_on(cluster, 0);
    const std::uint16_t slot = cluster_slot(name);
    lock holder;
    lock other;
    ASSERT_FALSE(holder.open(cluster_options(name, cluster)));
    ASSERT_FALSE(other.open(cluster_options(name, cluster)));
    hold h;
    ASSERT_FALSE(holder.acquire(5s, &h));
    ASSERT_EQ(other.try_acquire(), errc::busy);

    ASSERT_EQ(cluster.migrate_slot(slot, 0, 1, migration::half_way), 1U);  // the lock key
    EXPECT_TRUE(renews(holder, renewals(holder), 2)) << "renewed through ASK";
    EXPECT_EQ(other.try_acquire(), errc::busy) << "asked the importing node";

    cluster.migrate_slot(slot, 0, 1, migration::complete);
    EXPECT_TRUE(renews(holder, renewals(holder), 2)) << "renewed after MOVED";
    EXPECT_EQ(other.try_acquire(), errc::busy);
    redis_client target = client_of(cluster, 1);
    EXPECT_EQ(target.get(name), h.token);

    EXPECT_FALSE(holder.release());
    EXPECT_FALSE(target.exists(name));
    hold taken;
    const std::error_code acquired = other.try_acquire(&taken);
    EXPECT_FALSE(acquired) << acquired.message();
    EXPECT_EQ(target.get(name), taken.token);
    EXPECT_FALSE(other.release());
}

// A master killed: once its replica is promoted, the same lock object finds it (the map is
// read again after the lost connection) and its locks land there.
TEST(hiredis_cluster, a_killed_master_is_followed_to_its_promoted_replica) {
    redis_cluster cluster(cluster_settings{3, 1});
    const std::string name = name_on(cluster, 2);
    lock l;
    ASSERT_FALSE(l.open(cluster_options(name, cluster)));
    ASSERT_FALSE(l.try_acquire());
    ASSERT_FALSE(l.release());

    const std::size_t promoted = cluster.kill_master(2);
    hold h;
    const std::error_code acquired = l.acquire(settle_timeout, &h);
    ASSERT_FALSE(acquired) << acquired.message();
    redis_client direct = client_of(cluster, promoted);
    EXPECT_EQ(direct.get(name), h.token);
    EXPECT_FALSE(l.release());
    EXPECT_FALSE(direct.exists(name));
}

// The cluster down (a master without a replica killed): the live masters answer CLUSTERDOWN,
// which an acquire reports as the error reply it is, at once or when its wait ends.
TEST(hiredis_cluster, clusterdown_fails_the_acquire_with_the_error_reply) {
    redis_cluster cluster;
    const std::string name = name_on(cluster, 0);
    cluster.node(2).stop();
    redis_client direct = client_of(cluster, 0);
    ASSERT_TRUE(eventually(
        [&] {
            const auto reply = direct.command({"GET", name});
            return reply.is_error() && reply.text.rfind("CLUSTERDOWN", 0) == 0;
        },
        settle_timeout));
    lock l;
    ASSERT_FALSE(l.open(cluster_options(name, cluster)));
    EXPECT_EQ(l.try_acquire(), errc::error_reply);
    EXPECT_EQ(l.instance_error_text(0).rfind("CLUSTERDOWN", 0), 0U) << l.instance_error_text(0);
    EXPECT_EQ(l.acquire(300ms), errc::error_reply);
    EXPECT_FALSE(l.held());
}

// Fencing keys split by a half-way migration: a second acquire's script touches both, and
// the node answers TRYAGAIN (or ASK first, then TRYAGAIN on the importing node).
TEST(hiredis_cluster, tryagain_fails_the_acquire_and_the_holder_keeps_the_lock) {
    redis_cluster cluster;
    const std::string name = name_on(cluster, 0);
    lock_options options = cluster_options(name, cluster);
    options.fencing = true;
    lock holder;
    lock other;
    ASSERT_FALSE(holder.open(options));
    ASSERT_FALSE(other.open(options));
    ASSERT_FALSE(holder.try_acquire());
    ASSERT_EQ(cluster.migrate_slot(cluster_slot(name), 0, 1, migration::half_way), 1U);

    const std::error_code refused = other.try_acquire();
    EXPECT_TRUE(refused == errc::error_reply || refused == errc::busy) << refused.message();
    if (refused == errc::error_reply) {
        EXPECT_EQ(other.instance_error_text(0).rfind("TRYAGAIN", 0), 0U)
            << other.instance_error_text(0);
    }
    const std::error_code waited = other.acquire(300ms);
    EXPECT_TRUE(waited == errc::error_reply || waited == errc::busy) << waited.message();
    EXPECT_TRUE(holder.held());
    EXPECT_FALSE(holder.release());
}

TEST(hiredis_cluster, seeds_that_give_no_map_fail_with_no_slot_map) {
    lock_options options;
    options.name = "lock:0";
    options.connect_timeout_ms = 300;
    options.command_timeout_ms = 300;
    options.attempt_timeout_ms = 300;
    options.restart_guard = false;
    const edgelock::testing::refused_port nobody;
    options.cluster = {nobody.url()};
    {
        lock l;
        ASSERT_FALSE(l.open(options));
        EXPECT_EQ(l.try_acquire(), transport_errc::no_slot_map) << "nothing listens";
    }
    edgelock::testing::redis_server plain;  // not in cluster mode: CLUSTER SLOTS is refused
    options.cluster = {plain.url()};
    lock l;
    ASSERT_FALSE(l.open(options));
    EXPECT_EQ(l.try_acquire(), transport_errc::no_slot_map) << "a server without a cluster";
}

// Fair waiting: the waiter subscribes on the slot's master and the release there wakes it.
TEST(hiredis_cluster, a_fair_waiter_is_woken_by_the_release) {
    redis_cluster cluster;
    const std::string name = name_on(cluster, 1);
    lock_options options = cluster_options(name, cluster);
    options.fair = true;
    options.recheck_ms = 10'000;  // a wake-up, not a re-check, hands the lock over
    lock holder;
    lock waiter;
    ASSERT_FALSE(holder.open(options));
    ASSERT_FALSE(waiter.open(options));
    ASSERT_FALSE(holder.try_acquire());
    std::error_code waited = make_error_code(errc::invalid_state);
    std::thread t([&] { waited = waiter.acquire(20s); });
    redis_client master = client_of(cluster, 1);
    const std::string channel = "{" + name + "}:queue";  // and ":" and the waiter's token
    // Not an ASSERT: the waiter's thread must be joined whatever happens.
    EXPECT_TRUE(eventually(
        [&] {
            return master.command({"PUBSUB", "CHANNELS", channel + ":*"}).elements.size() == 1;
        },
        settle_timeout))
        << "subscribed on the slot's master";
    EXPECT_FALSE(holder.release());
    t.join();
    EXPECT_FALSE(waited) << waited.message();
    EXPECT_EQ(waiter.metrics().handover_gap.count, 1U) << "woken by the release naming it";
    EXPECT_FALSE(waiter.release());
}

// A failover while a fair waiter waits: its subscriber's connection to the old master is
// lost, and it subscribes again on the promoted replica once the map names it; the release
// there hands the lock over.
TEST(hiredis_cluster, a_fair_waiter_follows_a_failover) {
    redis_cluster cluster(cluster_settings{3, 1});
    const std::string name = name_on(cluster, 1);
    lock_options options = cluster_options(name, cluster, 5000);
    options.fair = true;
    options.recheck_ms = 1000;
    lock holder;
    lock waiter;
    ASSERT_FALSE(holder.open(options));
    ASSERT_FALSE(waiter.open(options));
    ASSERT_FALSE(holder.try_acquire());
    std::error_code waited = make_error_code(errc::invalid_state);
    std::thread t([&] { waited = waiter.acquire(30s); });
    const std::string channel = "{" + name + "}:queue";  // and ":" and the waiter's token
    const auto subscribed_on = [&](std::size_t node) {
        redis_client direct = client_of(cluster, node);
        return eventually(
            [&] {
                return direct.command({"PUBSUB", "CHANNELS", channel + ":*"}).elements.size() == 1;
            },
            settle_timeout);
    };
    EXPECT_TRUE(subscribed_on(1));
    const std::size_t promoted = cluster.kill_master(1);
    EXPECT_TRUE(subscribed_on(promoted)) << "the subscriber follows the slot's master";
    (void)holder.release();  // ok, or expired when the key had not reached the replica
    t.join();
    EXPECT_FALSE(waited) << waited.message();
    EXPECT_FALSE(waiter.release());
}

// ---- the hold checker ----------------------------------------------------------------------

struct hold_interval {
    std::chrono::steady_clock::time_point from;  // acquire() returned ok
    std::chrono::steady_clock::time_point to;    // release() about to start
};

// Sorted by start, each hold must end before the next begins. The recorded interval lies
// inside the true one (taken after acquiring, ended before releasing), so an overlap here is
// one in Redis too.
std::size_t overlaps(std::vector<hold_interval> holds) {
    std::sort(holds.begin(), holds.end(),
              [](const hold_interval& a, const hold_interval& b) { return a.from < b.from; });
    std::size_t found = 0;
    for (std::size_t k = 1; k < holds.size(); ++k) {
        if (holds[k].from < holds[k - 1].to) ++found;
    }
    return found;
}

// Several lock objects on one name, each on its own thread, acquire and release in a loop
// while the name's slot is migrated half-way and then completely: holds before, during and
// after each step.
TEST(hiredis_cluster, contending_locks_never_hold_at_once) {
    redis_cluster cluster;
    const std::string name = name_on(cluster, 0);
    constexpr std::size_t threads_count = 3;
    constexpr std::size_t holds_per_phase = 6;
    constexpr std::size_t tries_max = 1000;
    std::mutex recorded_mutex;
    std::vector<hold_interval> recorded;
    std::atomic<int> inside{0};
    std::atomic<bool> two_inside{false};
    std::atomic<bool> stop{false};
    std::atomic<std::size_t> failures{0};
    const auto contend = [&] {
        lock l;
        if (l.open(cluster_options(name, cluster))) return void(++failures);
        while (!stop) {
            // Short waits, so each verdict is one attempt's or two: a busy one is asked again.
            std::error_code got = l.acquire(30ms);
            for (std::size_t tries = 0; got == errc::busy && tries < tries_max; ++tries)
                got = l.acquire(30ms);
            if (got) {
                ++failures;
                continue;
            }
            hold_interval held{std::chrono::steady_clock::now(), {}};
            if (++inside > 1) two_inside = true;
            std::this_thread::sleep_for(3ms);  // the protected work
            --inside;
            held.to = std::chrono::steady_clock::now();
            {
                std::lock_guard<std::mutex> guard(recorded_mutex);
                recorded.push_back(held);
            }
            if (l.release()) ++failures;
        }
    };
    std::vector<std::thread> threads;
    for (std::size_t t = 0; t < threads_count; ++t) threads.emplace_back(contend);
    const auto holds_so_far = [&] {
        std::lock_guard<std::mutex> guard(recorded_mutex);
        return recorded.size();
    };
    const auto more_holds = [&] {
        const std::size_t from = holds_so_far();
        return eventually([&] { return holds_so_far() >= from + holds_per_phase; }, 30s);
    };
    EXPECT_TRUE(more_holds());
    cluster.migrate_slot(cluster_slot(name), 0, 1, migration::half_way);
    EXPECT_TRUE(more_holds()) << "with the slot half-way";
    cluster.migrate_slot(cluster_slot(name), 0, 1, migration::complete);
    EXPECT_TRUE(more_holds()) << "after the migration";
    stop = true;
    for (std::thread& t : threads) t.join();
    EXPECT_EQ(overlaps(recorded), 0U);
    EXPECT_FALSE(two_inside.load());
    EXPECT_EQ(failures.load(), 0U);
}

}  // namespace
