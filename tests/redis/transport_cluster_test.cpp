// SPDX-License-Identifier: Apache-2.0
// A held cluster lock kept through the cluster's own changes, written once and run through
// both clients (the async client and the blocking one, so the C API too) against a real Redis
// Cluster on loopback (tests/support redis_cluster.hpp):
//   - the lock's master SIGKILLed mid-hold: its replica is promoted, the renewals go on there,
//     and the release deletes the key on the promoted master;
//   - the lock's slot migrated mid-hold: the renewals follow ASK to the importing master, then
//     MOVED, and the release deletes the key there;
//   - a fair waiter cancelled after its master failed over: its leave of the line, the only
//     request left, reaches the promoted replica.
// The metrics mean the same in both clients: a failover is the move to the promoted replica
// after the master was lost; an ASK or a MOVED is a redirect of its kind; the first connection
// to a node is no reconnect. Seen failing on the blocking client that counted every route move
// (an ASK's hop and back) as a connect, a reconnect and a failover.
// Each client is given one seed, a master that is not the lock's: the node the requests must
// reach next (the promoted replica, the importing master) is one the client has never linked.
//
// Seen failing on the blocking client whose I/O loop skipped a node it had not linked before
// asking whether the lock's requests target it (wants_link): no renewal after the promotion,
// the hold lost with `expired` while the promoted master kept its token; the renewal
// redirected by ASK never sent, the hold lost with `expired`; the cancelled waiter's entry
// left in the line on the promoted replica until it expires.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "../asio/asio_test_util.hpp"
#include "edgelock/async_client.hpp"
#include "edgelock/blocking_lock.hpp"
#include "edgelock/keys.hpp"
#include "edgelock/session/lock_metrics.hpp"
#include "edgelock/testing/redis_client.hpp"
#include "edgelock/testing/redis_cluster.hpp"
#include "edgelock/testing/redis_process.hpp"
#include "redis_test_util.hpp"

namespace {

using namespace std::chrono_literals;
using edgelock::cluster_slot;
using edgelock::testing::cluster_settings;
using edgelock::testing::eventually;
using edgelock::testing::migration;
using edgelock::testing::redis_cluster;

constexpr auto settle_timeout = 15s;  // promotions, migrations, renewals: bounded waits

// The lock a scenario holds or waits for.
struct lock_shape {
    std::int64_t ttl_ms = 1500;
    bool fencing = false;
    bool fair = false;  // re-checked every 10 s: a waiter in line sends nothing meanwhile
};
constexpr std::int64_t fair_recheck_ms = 10'000;

// What a scenario asks of one client holding one lock. Calls come from the test's thread.
class cluster_holder {
public:
    virtual ~cluster_holder() = default;
    virtual std::error_code open(const std::string& seed, const std::string& name,
                                 const lock_shape& shape) = 0;
    virtual std::error_code acquire() = 0;
    // An acquire that waits (up to 20 s) in the background, and its cancel: the acquire's
    // result once it returned.
    virtual void start_waiting() = 0;
    virtual std::error_code cancel_waiting() = 0;
    virtual std::error_code release() = 0;
    virtual bool held() = 0;
    virtual std::uint64_t renewals() = 0;
    // The client's counts (the async client's over all its connections).
    virtual edgelock::session::lock_metrics metrics() = 0;
    // The code on_lost was called with; {} while it was not.
    virtual std::error_code lost_reported() = 0;
    // Runs `fault` on a thread of its own while the client works; returns when it is done.
    virtual void run_while(const std::function<void()>& fault) = 0;
    virtual bool wait_until(const std::function<bool()>& done,
                            std::chrono::milliseconds timeout) = 0;
};

class asio_holder final : public cluster_holder {
public:
    std::error_code open(const std::string& seed, const std::string& name,
                         const lock_shape& shape) override {
        namespace at = edgelock::asio_tests;
        edgelock::async::client_config config = at::config_for({});
        config.cluster = {seed};
        config.restart_guard = false;  // every node of a fresh volatile cluster is inside it
        if (const std::error_code opened = client_.open(config)) return opened;
        edgelock::lock_config lock = at::lock_for(name, shape.ttl_ms);
        lock.fencing = shape.fencing;
        lock.fair = shape.fair;
        if (shape.fair) lock.recheck_ms = fair_recheck_ms;
        if (const std::error_code added = client_.add_lock(lock, handle_)) return added;
        return client_.set_lost_handler(handle_, [this](std::error_code ec) { lost_ = ec; });
    }
    std::error_code acquire() override {
        return edgelock::asio_tests::acquire(client_, handle_, 5s).ec;
    }
    std::error_code release() override {
        return edgelock::asio_tests::release(client_, handle_).ec;
    }
    void start_waiting() override {
        waited_ = std::make_shared<edgelock::asio_tests::outcome>();
        client_.async_acquire(handle_, 20s, [waited = waited_](std::error_code ec, std::int64_t) {
            waited->done = true;
            waited->ec = ec;
        });
    }
    // release() cancels a waiting acquire of the lock.
    std::error_code cancel_waiting() override {
        (void)release();  // its own code is not this scenario's
        wait_until([&] { return waited_->done; }, 10s);
        return waited_->ec;
    }
    bool held() override { return client_.held(handle_); }
    std::uint64_t renewals() override { return client_.status(handle_).renewals; }
    edgelock::session::lock_metrics metrics() override { return client_.metrics(); }
    std::error_code lost_reported() override { return lost_; }
    void run_while(const std::function<void()>& fault) override {
        edgelock::redis_tests::run_beside(
            fault, [this](const std::function<bool()>& done, std::chrono::milliseconds timeout) {
                return wait_until(done, timeout);
            });
    }
    bool wait_until(const std::function<bool()>& done, std::chrono::milliseconds timeout) override {
        return edgelock::asio_tests::run_until(io_, done, timeout);
    }

private:
    asio::io_context io_{1};
    std::error_code lost_;  // outlives the client's handlers
    std::shared_ptr<edgelock::asio_tests::outcome> waited_;
    edgelock::async::lock_handle handle_{};
    edgelock::async::client client_{io_};
};

class blocking_holder final : public cluster_holder {
public:
    ~blocking_holder() override {
        if (waiting_.joinable()) waiting_.join();
    }
    std::error_code open(const std::string& seed, const std::string& name,
                         const lock_shape& shape) override {
        edgelock::blocking::lock_options options;
        options.name = name;
        options.cluster = {seed};
        options.ttl_ms = shape.ttl_ms;
        options.fencing = shape.fencing;
        options.fair = shape.fair;
        if (shape.fair) options.recheck_ms = fair_recheck_ms;
        options.connect_timeout_ms = 500;
        options.command_timeout_ms = 500;
        options.retry_delay_ms_min = 5;
        options.retry_delay_ms_max = 50;
        options.restart_guard = false;
        options.on_lost = [this](std::error_code ec) {  // on a thread of its own
            std::lock_guard<std::mutex> guard(mutex_);
            lost_ = ec;
        };
        return lock_.open(options);
    }
    std::error_code acquire() override { return lock_.acquire(5s); }
    std::error_code release() override { return lock_.release(); }
    void start_waiting() override {
        waiting_ = std::thread([this] { waited_ = lock_.acquire(20s); });
    }
    std::error_code cancel_waiting() override {
        lock_.cancel();
        waiting_.join();
        return waited_;
    }
    bool held() override { return lock_.held(); }
    std::uint64_t renewals() override { return lock_.metrics().renewals_ok; }
    edgelock::session::lock_metrics metrics() override { return lock_.metrics(); }
    std::error_code lost_reported() override {
        std::lock_guard<std::mutex> guard(mutex_);
        return lost_;
    }
    // The helper thread renews meanwhile: the fault runs on the test's thread.
    void run_while(const std::function<void()>& fault) override { fault(); }
    bool wait_until(const std::function<bool()>& done, std::chrono::milliseconds timeout) override {
        return eventually(done, timeout);
    }

private:
    std::mutex mutex_;  // declared before the lock: its destructor waits for a running on_lost
    std::error_code lost_;
    edgelock::blocking::lock lock_;
    std::error_code waited_;
    std::thread waiting_;  // last: joined before the lock goes
};

std::string url_of(redis_cluster& cluster, std::size_t node) {
    return "redis://127.0.0.1:" + std::to_string(cluster.node(node).port());
}

// The first "<prefix>N" whose slot master `master` was given at start.
std::string name_on(redis_cluster& cluster, std::size_t master, const std::string& prefix) {
    const auto range = cluster.assigned(master);
    for (int n = 0;; ++n) {
        const std::string name = prefix + std::to_string(n);
        const std::uint16_t slot = cluster_slot(name);
        if (slot >= range.first && slot <= range.last) return name;
    }
}

// The hold goes on: at least `count` more renewals than `since`, and no loss.
void expect_renewing(cluster_holder& holder, std::uint64_t since, std::uint64_t count,
                     const char* when) {
    holder.wait_until(
        [&] { return holder.renewals() >= since + count || bool(holder.lost_reported()); },
        settle_timeout);
    EXPECT_GE(holder.renewals(), since + count) << when;
    EXPECT_FALSE(holder.lost_reported()) << when << ": " << holder.lost_reported().message();
    EXPECT_TRUE(holder.held()) << when;
}

template <typename Holder>
void a_killed_masters_hold_is_kept_on_its_promoted_replica() {
    redis_cluster cluster(cluster_settings{3, 1});
    const std::string name = name_on(cluster, 2, "failover:");
    Holder holder;
    // TTL 8 s: the lease left after the last renewal before the kill outlasts the promotion.
    ASSERT_FALSE(holder.open(url_of(cluster, 0), name, lock_shape{8000, true}));
    ASSERT_FALSE(holder.acquire());
    cluster.admin(2).command({"WAIT", "1", "2000"});  // the replica has the key
    std::size_t promoted = 0;
    holder.run_while([&] { promoted = cluster.kill_master(2); });
    expect_renewing(holder, holder.renewals(), 2, "renewed on the promoted replica");
    EXPECT_GT(cluster.admin(promoted).pttl(name), 0);
    EXPECT_FALSE(holder.release());
    EXPECT_FALSE(cluster.admin(promoted).exists(name)) << "released on the promoted replica";
    // The move to the promoted replica after the master was lost is the one failover; the
    // first connection to the replica is no reconnect.
    const edgelock::session::lock_metrics m = holder.metrics();
    EXPECT_EQ(m.failovers, 1U);
    EXPECT_EQ(m.reconnects, 0U);
}

template <typename Holder>
void a_migrated_slots_hold_follows_ask_then_moved() {
    redis_cluster cluster;
    const std::string name = name_on(cluster, 0, "migrating:");
    const std::uint16_t slot = cluster_slot(name);
    Holder holder;
    // Unfenced: the lock key is the slot's only key, so the half-way migration moves it.
    ASSERT_FALSE(holder.open(url_of(cluster, 2), name, lock_shape{}));
    ASSERT_FALSE(holder.acquire());
    std::size_t moved = 0;
    holder.run_while([&] { moved = cluster.migrate_slot(slot, 0, 1, migration::half_way); });
    ASSERT_EQ(moved, 1U) << "the lock key is on the importing master: ASK";
    expect_renewing(holder, holder.renewals(), 2, "renewed through ASK");
    holder.run_while([&] { cluster.migrate_slot(slot, 0, 1, migration::complete); });
    expect_renewing(holder, holder.renewals(), 2, "renewed after MOVED");
    EXPECT_GT(cluster.admin(1).pttl(name), 0);
    EXPECT_FALSE(holder.release());
    EXPECT_FALSE(cluster.admin(1).exists(name)) << "released on the new master";
    // Redirects, counted by kind; no master was lost, so no failover; one connection to each
    // of the seed, the old master and the new one, none made again.
    const edgelock::session::lock_metrics m = holder.metrics();
    EXPECT_GE(m.redirects_ask, 1U);
    EXPECT_GE(m.redirects_moved, 1U);
    EXPECT_EQ(m.failovers, 0U);
    EXPECT_EQ(m.reconnects, 0U);
    EXPECT_EQ(m.connects, 3U);
}

// A fair waiter in line on the slot's master (its entry replicated); the master is killed and
// its replica promoted while the waiter sends nothing (its re-check is 10 s away); then the
// waiter is cancelled. Its leave of the line finds the old master gone, the map read again
// names the promoted replica, which the client never linked, and the leave must go there
// although nothing but that cleanup is left to send.
template <typename Holder>
void a_cancelled_waiters_leave_reaches_the_promoted_replica() {
    redis_cluster cluster(cluster_settings{3, 1});
    const std::string name = name_on(cluster, 2, "line:");
    const std::string line = "{" + name + "}:queue";
    cluster.admin(2).command({"SET", name, "another-owner", "PX", "60000"});
    Holder waiter;
    ASSERT_FALSE(waiter.open(url_of(cluster, 0), name, lock_shape{1500, false, true}));
    waiter.start_waiting();
    const bool in_line = waiter.wait_until(
        [&] {
            return cluster.admin(2).command({"ZCARD", line}).integer == 1;
        },
        settle_timeout);
    std::size_t promoted = 0;
    if (in_line) {
        cluster.admin(2).command({"WAIT", "1", "2000"});
        waiter.run_while([&] { promoted = cluster.kill_master(2); });
    }
    const std::error_code waited = waiter.cancel_waiting();
    ASSERT_TRUE(in_line) << "the waiter stood in line on the slot's master";
    EXPECT_NE(waited, std::error_code()) << "cancelled, not acquired";
    EXPECT_TRUE(waiter.wait_until(
        [&] {
            return cluster.admin(promoted).command({"ZCARD", line}).integer == 0;
        },
        3s))
        << "the waiter left the line on the promoted replica";
}

// How many of node n's clients are subscribed to a channel (CLIENT LIST's sub=).
int subscribers_on(redis_cluster& cluster, std::size_t n) {
    const std::string list = cluster.admin(n).command({"CLIENT", "LIST"}).text;
    int count = 0;
    for (std::size_t at = list.find(" sub="); at != std::string::npos;
         at = list.find(" sub=", at + 1)) {
        count += list.compare(at, 7, " sub=0 ") != 0 ? 1 : 0;
    }
    return count;
}

// A fair waiter's subscriber listens on the master of its lock's slot, not on the seed it was
// given, and follows the slot to the replica promoted when that master is killed (the waiter's
// re-check reads the map again).
template <typename Holder>
void a_fair_waiters_subscriber_follows_its_slots_master() {
    redis_cluster cluster(cluster_settings{3, 1});
    const std::string name = name_on(cluster, 2, "listener:");
    cluster.admin(2).command({"SET", name, "another-owner", "PX", "60000"});
    Holder waiter;
    ASSERT_FALSE(waiter.open(url_of(cluster, 0), name, lock_shape{1500, false, true}));
    waiter.start_waiting();
    const bool listening =
        waiter.wait_until([&] { return subscribers_on(cluster, 2) == 1; }, settle_timeout);
    std::size_t promoted = 0;
    if (listening) {
        EXPECT_EQ(subscribers_on(cluster, 0), 0) << "nothing listens on the seed";
        cluster.admin(2).command({"WAIT", "1", "2000"});
        waiter.run_while([&] { promoted = cluster.kill_master(2); });
    }
    const bool followed =
        listening &&
        waiter.wait_until([&] { return subscribers_on(cluster, promoted) == 1; }, settle_timeout);
    (void)waiter.cancel_waiting();
    ASSERT_TRUE(listening) << "the subscriber listened on the slot's master";
    EXPECT_TRUE(followed) << "the subscriber moved to the promoted replica";
}

// The async client's one subscriber serves every fair lock: with locks waiting on two masters,
// it stays on the master it listens on while a lock waits there. The second lock waits on
// master 1 throughout; the first (master 0, and first in the client's table) waits, gets its
// lock (the subscriber moves to master 1), and waits again: the subscriber stays on master 1
// rather than moving back and forth with each turn of the first lock.
TEST(transport_cluster, asio_subscriber_stays_while_a_lock_waits_on_its_master) {
    namespace at = edgelock::asio_tests;
    redis_cluster cluster;
    const std::string first = name_on(cluster, 0, "stay-first:");
    const std::string second = name_on(cluster, 1, "stay-second:");
    cluster.admin(0).command({"SET", first, "another-owner", "PX", "60000"});
    cluster.admin(1).command({"SET", second, "another-owner", "PX", "60000"});
    asio::io_context io{1};
    edgelock::async::client client(io);
    edgelock::async::client_config config = at::config_for({});
    config.cluster = {url_of(cluster, 2)};
    config.restart_guard = false;
    ASSERT_FALSE(client.open(config));
    edgelock::async::lock_handle a{};
    edgelock::async::lock_handle b{};
    for (auto [name, handle] : {std::pair{&first, &a}, std::pair{&second, &b}}) {
        edgelock::lock_config lock = at::lock_for(*name, 1500);
        lock.fair = true;
        lock.recheck_ms = 200;
        ASSERT_FALSE(client.add_lock(lock, *handle));
    }
    const auto wait_for = [&](edgelock::async::lock_handle handle) {
        auto result = std::make_shared<at::outcome>();
        client.async_acquire(handle, 20s, [result](std::error_code ec, std::int64_t) {
            result->done = true;
            result->ec = ec;
        });
        return result;
    };
    const auto first_waited = wait_for(a);
    const auto second_waited = wait_for(b);
    ASSERT_TRUE(at::run_until(
        io, [&] { return subscribers_on(cluster, 0) == 1; }, settle_timeout))
        << "it listens on the first waiting lock's master";
    cluster.admin(0).command({"DEL", first});
    ASSERT_TRUE(at::run_until(
        io, [&] { return first_waited->done; }, settle_timeout));
    ASSERT_FALSE(first_waited->ec) << first_waited->ec.message();
    ASSERT_TRUE(at::run_until(
        io, [&] { return subscribers_on(cluster, 1) == 1; }, settle_timeout))
        << "it moved to the master where a lock still waits";
    ASSERT_FALSE(at::release(client, a).ec);
    cluster.admin(0).command({"SET", first, "another-owner", "PX", "60000"});
    const auto waited_again = wait_for(a);
    EXPECT_FALSE(at::run_until(
        io, [&] { return subscribers_on(cluster, 0) > 0; }, 1500ms))
        << "it went back to the first lock's master while the second still waited";
    EXPECT_EQ(subscribers_on(cluster, 1), 1);
    EXPECT_FALSE(second_waited->done);
    EXPECT_FALSE(waited_again->done);
}

TEST(transport_cluster, asio_keeps_a_hold_through_its_masters_failover) {
    a_killed_masters_hold_is_kept_on_its_promoted_replica<asio_holder>();
}

TEST(transport_cluster, blocking_keeps_a_hold_through_its_masters_failover) {
    a_killed_masters_hold_is_kept_on_its_promoted_replica<blocking_holder>();
}

TEST(transport_cluster, asio_keeps_a_hold_through_its_slots_migration) {
    a_migrated_slots_hold_follows_ask_then_moved<asio_holder>();
}

TEST(transport_cluster, blocking_keeps_a_hold_through_its_slots_migration) {
    a_migrated_slots_hold_follows_ask_then_moved<blocking_holder>();
}

TEST(transport_cluster, asio_cancelled_waiters_leave_reaches_the_promoted_replica) {
    a_cancelled_waiters_leave_reaches_the_promoted_replica<asio_holder>();
}

TEST(transport_cluster, blocking_cancelled_waiters_leave_reaches_the_promoted_replica) {
    a_cancelled_waiters_leave_reaches_the_promoted_replica<blocking_holder>();
}

TEST(transport_cluster, asio_fair_waiters_subscriber_follows_its_slots_master) {
    a_fair_waiters_subscriber_follows_its_slots_master<asio_holder>();
}

TEST(transport_cluster, blocking_fair_waiters_subscriber_follows_its_slots_master) {
    a_fair_waiters_subscriber_follows_its_slots_master<blocking_holder>();
}

}  // namespace
