// SPDX-License-Identifier: Apache-2.0
// The async client against a real Redis Cluster on loopback (tests/support redis_cluster.hpp):
// locks spread over every master, a slot migrated under held and contended locks (ASK, then
// MOVED, and TRYAGAIN for a fenced lock whose keys the migration split), a master killed and
// its replica followed, a cluster that lost a slot answering CLUSTERDOWN. A checker over every
// client's holds asserts that no two ever overlap.
#include <gtest/gtest.h>

#include <asio/steady_timer.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "asio_test_util.hpp"
#include "edgelock/error_code.hpp"
#include "edgelock/keys.hpp"
#include "edgelock/testing/redis_cluster.hpp"

namespace {

using namespace edgelock;
using namespace edgelock::asio_tests;
using edgelock::testing::cluster_settings;
using edgelock::testing::migration;
using edgelock::testing::redis_cluster;

async::client_config cluster_config(redis_cluster& cluster, std::size_t seed = 0) {
    async::client_config config = config_for({});
    config.instances.clear();
    config.cluster = {"redis://127.0.0.1:" + std::to_string(cluster.node(seed).port())};
    // The nodes are volatile and seconds old: the restart guard would hold every lock back
    // for a TTL after their start (restart_guard_test covers the guard).
    config.restart_guard = false;
    return config;
}

// A lock name whose slot master `master` owns at start.
std::string name_on(redis_cluster& cluster, std::size_t master, const std::string& prefix) {
    const auto range = cluster.assigned(master);
    for (int n = 0;; ++n) {
        const std::string name = prefix + std::to_string(n);
        const std::uint16_t slot = cluster_slot(name);
        if (slot >= range.first && slot <= range.last) return name;
    }
}

TEST(asio_cluster, locks_spread_over_every_master) {
    redis_cluster cluster;
    asio::io_context io;
    async::client client(io);
    ASSERT_FALSE(client.open(cluster_config(cluster)));
    ASSERT_FALSE(wait_ready(client).ec);
    std::vector<async::lock_handle> handles;
    std::vector<std::string> names;
    for (std::size_t m = 0; m < cluster.masters_at_start(); ++m) {
        for (const bool fenced : {false, true}) {
            names.push_back(name_on(cluster, m, fenced ? "fenced:" : "orders:"));
            lock_config lc = lock_for(names.back());
            lc.fencing = fenced;
            handles.emplace_back();
            ASSERT_FALSE(client.add_lock(lc, handles.back()));
        }
    }
    for (std::size_t i = 0; i < handles.size(); ++i) {
        const outcome got = acquire(client, handles[i], 0ms);
        ASSERT_TRUE(got.done && !got.ec) << names[i] << ": " << got.ec.message();
        const std::size_t owner = cluster.owner_of(cluster_slot(names[i]));
        EXPECT_TRUE(cluster.admin(owner).exists(names[i])) << names[i] << " on its slot's master";
    }
    EXPECT_GE(client.instance_count(), cluster.masters_at_start()) << "a link per master";
    for (std::size_t i = 0; i < handles.size(); ++i) {
        ASSERT_FALSE(release(client, handles[i]).ec);
        EXPECT_FALSE(cluster.admin(cluster.owner_of(cluster_slot(names[i]))).exists(names[i]));
    }
}

// Holds one lock from acquire's success to the start of its release, over and over, and
// records each hold; all contenders share one io_context.
struct contender {
    struct hold {
        std::chrono::steady_clock::time_point from;
        std::chrono::steady_clock::time_point to;
    };
    async::client& client;
    async::lock_handle handle;
    std::vector<hold>& holds;
    asio::steady_timer timer;
    std::chrono::steady_clock::time_point held_since;
    bool stopping = false;
    int errors = 0;

    contender(async::client& c, async::lock_handle h, std::vector<hold>& all)
        : client(c), handle(h), holds(all), timer(c.context()) {}

    void start() {
        if (stopping) return;
        client.async_acquire(handle, 200ms, [this](std::error_code ec, std::int64_t) {
            if (ec) {
                ++errors;
                return start();
            }
            held_since = std::chrono::steady_clock::now();
            timer.expires_after(20ms);
            timer.async_wait([this](std::error_code) {
                holds.push_back({held_since, std::chrono::steady_clock::now()});
                client.async_release(handle, [this](std::error_code) { start(); });
            });
        });
    }
};

// No two holds overlap: sorted by start, each begins after the one before ended.
void expect_no_overlap(std::vector<contender::hold> holds) {
    std::sort(holds.begin(), holds.end(),
              [](const auto& a, const auto& b) { return a.from < b.from; });
    for (std::size_t i = 1; i < holds.size(); ++i)
        EXPECT_GE(holds[i].from, holds[i - 1].to)
            << "holds " << i - 1 << " and " << i << " overlap";
}

TEST(asio_cluster, a_slot_migrated_under_contention_keeps_every_hold_exclusive) {
    redis_cluster cluster;
    const std::string name = name_on(cluster, 0, "migrating:");
    const std::uint16_t slot = cluster_slot(name);
    asio::io_context io;
    std::vector<std::unique_ptr<async::client>> clients;
    std::vector<std::unique_ptr<contender>> contenders;
    std::vector<contender::hold> holds;
    for (std::size_t c = 0; c < 3; ++c) {
        clients.push_back(std::make_unique<async::client>(io));
        ASSERT_FALSE(clients.back()->open(cluster_config(cluster, c)));
        ASSERT_FALSE(wait_ready(*clients.back()).ec);
        async::lock_handle h;
        ASSERT_FALSE(clients.back()->add_lock(lock_for(name, 600), h));
        contenders.push_back(std::make_unique<contender>(*clients.back(), h, holds));
    }
    for (auto& c : contenders) c->start();
    run_for(io, 300ms);
    const std::size_t before = holds.size();
    // The migration runs beside the clients: half-way (ASK for the moved key), then done.
    std::atomic<int> stage{0};
    std::thread mover([&] {
        cluster.migrate_slot(slot, 0, 1, migration::half_way);
        stage = 1;
        std::this_thread::sleep_for(300ms);  // traffic while the slot is half-way
        cluster.migrate_slot(slot, 0, 1, migration::complete);
        stage = 2;
    });
    run_until(
        io, [&] { return stage.load() == 2; }, 30s);
    mover.join();
    const std::size_t during = holds.size();
    run_for(io, 300ms);
    for (auto& c : contenders) c->stopping = true;
    run_for(io, 200ms);
    EXPECT_GT(before, 0u);
    EXPECT_GT(holds.size(), during) << "the clients follow the slot to its new master";
    expect_no_overlap(holds);
    EXPECT_EQ(cluster.owner_of(slot), 1u);
}

TEST(asio_cluster, a_held_lock_renews_through_ask_and_moved) {
    redis_cluster cluster;
    const std::string name = name_on(cluster, 0, "held:");
    const std::uint16_t slot = cluster_slot(name);
    asio::io_context io;
    async::client holder(io);
    async::client other(io);
    ASSERT_FALSE(holder.open(cluster_config(cluster)));
    ASSERT_FALSE(other.open(cluster_config(cluster, 2)));
    async::lock_handle h;
    async::lock_handle o;
    ASSERT_FALSE(holder.add_lock(lock_for(name, 600), h));
    ASSERT_FALSE(other.add_lock(lock_for(name, 600), o));
    ASSERT_FALSE(acquire(holder, h, 0ms).ec);
    cluster.migrate_slot(slot, 0, 1, migration::half_way);
    run_for(io, 700ms);  // beyond the TTL: only renewals through ASK keep it
    EXPECT_TRUE(holder.status(h).held);
    EXPECT_EQ(acquire(other, o, 0ms).ec, make_error_code(errc::busy)) << "ASKING finds the key";
    cluster.migrate_slot(slot, 0, 1, migration::complete);
    run_for(io, 700ms);
    EXPECT_TRUE(holder.status(h).held) << "renewed on the new master after MOVED";
    EXPECT_GT(holder.status(h).renewals, 2u);
    EXPECT_EQ(acquire(other, o, 0ms).ec, make_error_code(errc::busy));
    ASSERT_FALSE(release(holder, h).ec);
    EXPECT_FALSE(acquire(other, o, 0ms).ec);
    EXPECT_TRUE(cluster.admin(1).exists(name));
}

// A fenced lock's script touches the lock key and its fence counter; half-way through a
// migration one of them has moved: Redis answers TRYAGAIN, an answer the acquire fails with.
TEST(asio_cluster, tryagain_fails_the_attempt_and_the_lock_works_once_the_slot_moved) {
    redis_cluster cluster;
    const std::string name = name_on(cluster, 0, "fenced:");
    const std::uint16_t slot = cluster_slot(name);
    asio::io_context io;
    async::client client(io);
    ASSERT_FALSE(client.open(cluster_config(cluster)));
    lock_config lc = lock_for(name, 600);
    lc.fencing = true;
    async::lock_handle h;
    ASSERT_FALSE(client.add_lock(lc, h));
    const outcome first = acquire(client, h, 0ms);
    ASSERT_FALSE(first.ec);
    ASSERT_FALSE(release(client, h).ec);
    cluster.admin(0).set(name, "someone-else");  // the lock key and the fence counter: 2 keys
    cluster.admin(0).command({"PEXPIRE", name, "60000"});
    ASSERT_EQ(cluster.migrate_slot(slot, 0, 1, migration::half_way), 1u);
    const outcome split = acquire(client, h, 0ms);
    ASSERT_TRUE(split.done);
    EXPECT_EQ(split.ec, make_error_code(errc::error_reply)) << split.ec.message();
    cluster.migrate_slot(slot, 0, 1, migration::complete);
    cluster.admin(1).command({"DEL", name});
    const outcome after = acquire(client, h, 1s);
    ASSERT_FALSE(after.ec) << after.ec.message();
    EXPECT_GT(after.fence, first.fence) << "the counter moved with its slot";
}

TEST(asio_cluster, the_client_follows_a_killed_master_to_its_replica) {
    cluster_settings settings;
    settings.replicas_per_master = 1;
    redis_cluster cluster(settings);
    const std::string name = name_on(cluster, 1, "failover:");
    asio::io_context io;
    async::client client(io);
    ASSERT_FALSE(client.open(cluster_config(cluster)));
    async::lock_handle h;
    ASSERT_FALSE(client.add_lock(lock_for(name, 1000), h));
    ASSERT_FALSE(acquire(client, h, 0ms).ec);
    ASSERT_FALSE(release(client, h).ec);
    const std::size_t promoted = cluster.kill_master(1);
    const outcome again = acquire(client, h, 10s, 15s);
    ASSERT_TRUE(again.done);
    ASSERT_FALSE(again.ec) << again.ec.message();
    EXPECT_TRUE(cluster.admin(promoted).exists(name)) << "on the promoted replica";
    ASSERT_FALSE(release(client, h).ec);
}

TEST(asio_cluster, a_cluster_missing_a_slot_answers_clusterdown_and_the_acquire_fails) {
    cluster_settings settings;
    settings.node_timeout_ms = 500;
    redis_cluster cluster(settings);
    const std::string name = name_on(cluster, 1, "down:");
    asio::io_context io;
    async::client client(io);
    ASSERT_FALSE(client.open(cluster_config(cluster, 1)));
    async::lock_handle h;
    ASSERT_FALSE(client.add_lock(lock_for(name), h));
    ASSERT_FALSE(acquire(client, h, 0ms).ec);
    ASSERT_FALSE(release(client, h).ec);
    cluster.node(0).stop();  // its slots have no master now: the cluster fails
    bool refused = false;
    for (int attempt = 0; attempt < 100 && !refused; ++attempt) {
        const outcome got = acquire(client, h, 0ms, 5s);
        ASSERT_TRUE(got.done) << "no hang";
        refused = got.ec == make_error_code(errc::error_reply);
        if (!got.ec) {
            // The cluster may fail between the two: the release then meets CLUSTERDOWN too.
            const std::error_code released = release(client, h).ec;
            ASSERT_TRUE(!released || released == make_error_code(errc::error_reply))
                << released.message();
        }
        run_for(io, 50ms);
    }
    EXPECT_TRUE(refused) << "CLUSTERDOWN is an answer the attempt fails with";
}

// The waiter's subscriber listens on the seed (master 0) while the lock lives on master 2:
// the release's PUBLISH reaches it through the cluster, and the handover is a wake-up, not a
// re-check (recheck_ms is far beyond the test).
TEST(asio_cluster, a_fair_waiter_is_woken_through_any_node) {
    redis_cluster cluster;
    const std::string name = name_on(cluster, 2, "fair:");
    asio::io_context io;
    async::client holder(io);
    async::client waiter(io);
    ASSERT_FALSE(holder.open(cluster_config(cluster, 2)));
    ASSERT_FALSE(waiter.open(cluster_config(cluster, 0)));
    lock_config lc = lock_for(name, 2000);
    lc.fair = true;
    lc.recheck_ms = 60'000;
    async::lock_handle h;
    async::lock_handle w;
    ASSERT_FALSE(holder.add_lock(lc, h));
    ASSERT_FALSE(waiter.add_lock(lc, w));
    ASSERT_FALSE(acquire(holder, h, 0ms).ec);
    auto woken = std::make_shared<outcome>();
    waiter.async_acquire(w, 20s, [woken](std::error_code ec, std::int64_t) {
        woken->done = true;
        woken->ec = ec;
    });
    run_for(io, 500ms);  // the waiter joins the line and subscribes
    ASSERT_FALSE(woken->done);
    ASSERT_FALSE(release(holder, h).ec);
    ASSERT_TRUE(run_until(
        io, [&] { return woken->done; }, 10s));
    EXPECT_FALSE(woken->ec) << woken->ec.message();
    EXPECT_EQ(waiter.metrics(w).handover_gap.count, 1u) << "woken by the release's message";
}

// With the guard on, every master these seconds-old volatile nodes run is one that may have
// lost keys at its start: a lock on any of them is held back for a TTL after it, whichever
// node its slot took it to.
TEST(asio_cluster, the_restart_guard_hears_the_node_each_lock_goes_to) {
    redis_cluster cluster;
    asio::io_context io;
    async::client client(io);
    async::client_config config = cluster_config(cluster);
    config.restart_guard = true;
    ASSERT_FALSE(client.open(config));
    for (std::size_t m = 0; m < cluster.masters_at_start(); ++m) {
        async::lock_handle h;
        ASSERT_FALSE(client.add_lock(lock_for(name_on(cluster, m, "guarded:"), 60'000), h));
        const outcome got = acquire(client, h, 0ms);
        ASSERT_TRUE(got.done);
        EXPECT_EQ(got.ec, make_error_code(errc::restart_guard)) << "master " << m;
    }
}

// A seed that is no cluster node answers CLUSTER SLOTS with an error: the next seed is
// asked, and locks work from its map.
TEST(asio_cluster, a_seed_without_a_map_gives_way_to_the_next) {
    redis_cluster cluster;
    edgelock::testing::redis_server plain;
    asio::io_context io;
    async::client client(io);
    async::client_config config = cluster_config(cluster);
    config.cluster.insert(config.cluster.begin(), plain.url());
    ASSERT_FALSE(client.open(config));
    const outcome ready = wait_ready(client);
    ASSERT_TRUE(ready.done);
    EXPECT_EQ(ready.ec, make_error_code(transport_errc::no_slot_map)) << "the first seed's answer";
    async::lock_handle h;
    ASSERT_FALSE(client.add_lock(lock_for(name_on(cluster, 2, "after:")), h));
    const outcome got = acquire(client, h, 3s);
    ASSERT_TRUE(got.done);
    EXPECT_FALSE(got.ec) << got.ec.message();
}

// Seeded with a replica: the map comes from it, the locks go to the masters, and the link to
// the replica, which no lock needs, is closed after the map is read.
TEST(asio_cluster, a_link_nothing_needs_is_closed) {
    cluster_settings settings;
    settings.replicas_per_master = 1;
    redis_cluster cluster(settings);
    asio::io_context io;
    async::client client(io);
    ASSERT_FALSE(client.open(cluster_config(cluster, cluster.replica_of(0))));
    ASSERT_FALSE(wait_ready(client).ec);
    async::lock_handle h;
    ASSERT_FALSE(client.add_lock(lock_for(name_on(cluster, 0, "pruned:")), h));
    ASSERT_FALSE(acquire(client, h, 0ms).ec);
    ASSERT_FALSE(release(client, h).ec);
    const std::string replica =
        "127.0.0.1:" + std::to_string(cluster.node(cluster.replica_of(0)).port());
    ASSERT_EQ(client.instance_endpoint(0), replica) << "the seed is node 0";
    EXPECT_TRUE(run_until(
        io, [&] { return !client.instance_connected(0); }, 2s));
    EXPECT_TRUE(client.instance_connected(1)) << "master 0's link stays";
}

// A resharded cluster: forty single slots of master 0 moved to master 1, one slot apart, so
// CLUSTER SLOTS lists 81 ranges (649 reply nodes: beyond the 256 of a lock's reply, and its
// top array beyond 64 elements). The client reads that map and its locks work on both masters.
TEST(asio_cluster, a_map_of_many_ranges_is_read) {
    redis_cluster cluster;
    const std::uint16_t first = cluster.assigned(0).first;
    for (std::uint16_t n = 0; n < 40; ++n) cluster.migrate_slot(first + 2 * n + 1, 0, 1);
    ASSERT_GE(cluster.slots_seen_by(2).size(), 81u);
    asio::io_context io;
    async::client client(io);
    ASSERT_FALSE(client.open(cluster_config(cluster, 2)));
    const outcome ready = wait_ready(client);
    ASSERT_FALSE(ready.ec) << ready.ec.message();
    for (const std::size_t m : {0, 1}) {
        async::lock_handle h;
        ASSERT_FALSE(client.add_lock(lock_for(name_on(cluster, m, "resharded:")), h));
        const outcome got = acquire(client, h, 0ms);
        ASSERT_TRUE(got.done);
        EXPECT_FALSE(got.ec) << got.ec.message();
    }
}

TEST(asio_cluster, no_seed_answers_and_wait_ready_fails) {
    asio::io_context io;
    async::client client(io);
    async::client_config config = config_for({});
    config.instances.clear();
    config.cluster = {"redis://127.0.0.1:1", "redis://127.0.0.1:2"};
    ASSERT_FALSE(client.open(config));
    const outcome ready = wait_ready(client);
    ASSERT_TRUE(ready.done);
    EXPECT_TRUE(ready.ec);
}

}  // namespace
