// SPDX-License-Identifier: Apache-2.0
// Fair waiting in the async client against one real redis-server: waiters of one name, in one
// client and across two, are served in arrival order; a release wakes the head through the
// client's subscriber connection, well before the re-check would have (recheck 5 s, each
// handover asserted within 1 s: a check that the wake-up arrived, not a speed benchmark); a
// killed subscriber connection is made again and its channels subscribed again; a subscriber
// that cannot come back strands nobody (the re-check); a waiter that gives up leaves the line.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "asio_test_util.hpp"
#include "edgelock/async_client.hpp"
#include "edgelock/testing/redis_client.hpp"
#include "edgelock/testing/redis_process.hpp"

namespace {

using namespace edgelock::asio_tests;
using edgelock::errc;
using edgelock::async::client;
using edgelock::async::lock_handle;
using edgelock::testing::redis_client;
using edgelock::testing::redis_server;

// The re-check every fair waiter makes by itself: far above the wake-up bound below, so a
// handover within that bound came from a wake-up.
constexpr std::int64_t recheck_ms = 5000;
constexpr auto handover_bound = 1000ms;

edgelock::lock_config fair_lock(std::string_view name, std::int64_t recheck = recheck_ms) {
    edgelock::lock_config config = lock_for(name, 20'000);
    config.fair = true;
    config.recheck_ms = recheck;
    return config;
}

std::string queue_key(const std::string& name) { return "{" + name + "}:queue"; }

// One waiter's acquire, started in the background.
struct waiter {
    std::shared_ptr<outcome> result = std::make_shared<outcome>();
};

class asio_fair : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_FALSE(first.open(config_for({server.url()})));
        ASSERT_FALSE(wait_ready(first).ec);
        ASSERT_FALSE(second.open(config_for({server.url()})));
        ASSERT_FALSE(wait_ready(second).ec);
    }

    lock_handle add(client& owner, std::string_view name, std::int64_t recheck = recheck_ms) {
        lock_handle handle;
        EXPECT_FALSE(owner.add_lock(fair_lock(name, recheck), handle));
        return handle;
    }

    // Starts a waiting acquire; `order` gets `label` when it succeeds.
    waiter start_waiting(client& owner, lock_handle handle, std::chrono::milliseconds wait,
                         std::vector<std::string>* order = nullptr, std::string label = {}) {
        waiter w;
        auto result = w.result;
        owner.async_acquire(handle, wait,
                            [result, order, label](std::error_code ec, std::int64_t fence) {
                                result->done = true;
                                result->ec = ec;
                                result->fence = fence;
                                if (!ec && order != nullptr) order->push_back(label);
                            });
        return w;
    }

    // The waiters in line: the queue's tokens but the holder's (it stands at the head until
    // its release).
    long long queued(const std::string& name) {
        const std::string holder = admin.exists(name) ? admin.get(name) : std::string();
        long long waiters = 0;
        for (const auto& member : admin.command({"ZRANGE", queue_key(name), "0", "-1"}).elements) {
            if (member.text != holder) ++waiters;
        }
        return waiters;
    }
    // The waiters' channels of `name` with a subscriber: each waiting acquire() has its own
    // (the queue key, ":" and its token).
    long long subscribers(const std::string& name) {
        const auto reply = admin.command({"PUBSUB", "CHANNELS", queue_key(name) + ":*"});
        return static_cast<long long>(reply.elements.size());
    }
    // Runs the io_context until `count` waiters are in the line of `name`.
    long long pubsub_connections() {
        const std::string list = admin.command({"CLIENT", "LIST", "TYPE", "pubsub"}).text;
        long long lines = 0;
        for (const char c : list) lines += c == '\n';
        return lines;
    }
    bool until_queued(const std::string& name, long long count) {
        return run_until(
            io, [&] { return queued(name) == count; }, 3s);
    }
    bool until_subscribed(const std::string& name, long long count) {
        return run_until(
            io, [&] { return subscribers(name) == count; }, 3s);
    }

    redis_server server;
    redis_client admin{server.port()};
    asio::io_context io{1};
    client first{io};
    client second{io};
};

// Releases `holder` and runs until `next` completes; returns how long that took.
std::chrono::milliseconds hand_over(client& owner, lock_handle holder, const waiter& next) {
    const auto start = std::chrono::steady_clock::now();
    bool released = false;
    owner.async_release(holder, [&](std::error_code ec) {
        EXPECT_FALSE(ec) << ec.message();
        released = true;
    });
    run_until(
        owner.context(), [&] { return released && next.result->done; }, 10s);
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                 start);
}

TEST_F(asio_fair, waiters_in_one_client_are_served_in_arrival_order_each_woken_by_the_release) {
    const std::string name = "fair:one";
    std::vector<lock_handle> locks;
    for (int i = 0; i < 5; ++i) locks.push_back(add(first, name));
    ASSERT_FALSE(acquire(first, locks[0], 0ms).ec);

    std::vector<std::string> order;
    std::vector<waiter> waiters(5);
    for (int i = 1; i < 5; ++i) {
        waiters[i] = start_waiting(first, locks[i], 30s, &order, std::to_string(i));
        ASSERT_TRUE(until_queued(name, i)) << "waiter " << i << " joins the line";
    }
    ASSERT_TRUE(until_subscribed(name, 4)) << "a channel for each of the client's four waiters";
    EXPECT_EQ(pubsub_connections(), 1) << "on one subscriber connection";
    run_for(io, 100ms);
    for (int i = 1; i < 5; ++i) EXPECT_FALSE(waiters[i].result->done);

    for (int i = 1; i < 5; ++i) {
        const auto took = hand_over(first, locks[i - 1], waiters[i]);
        ASSERT_TRUE(waiters[i].result->done) << "waiter " << i;
        EXPECT_FALSE(waiters[i].result->ec) << waiters[i].result->ec.message();
        EXPECT_LT(took.count(), handover_bound.count())
            << "waiter " << i << " woken by the release, not its re-check";
    }
    EXPECT_EQ(order, (std::vector<std::string>{"1", "2", "3", "4"}));
    EXPECT_FALSE(release(first, locks[4]).ec);
    EXPECT_EQ(queued(name), 0);
    ASSERT_TRUE(until_subscribed(name, 0)) << "no waiter left: every channel is unsubscribed";
}

TEST_F(asio_fair, waiters_across_two_clients_are_served_in_arrival_order) {
    const std::string name = "fair:two";
    const lock_handle holder = add(first, name);
    const std::vector<lock_handle> mine = {add(first, name), add(first, name)};
    const std::vector<lock_handle> theirs = {add(second, name), add(second, name)};
    ASSERT_FALSE(acquire(first, holder, 0ms).ec);

    std::vector<std::string> order;
    // Arrival: second, first, second, first.
    std::vector<std::pair<client*, lock_handle>> line = {
        {&second, theirs[0]}, {&first, mine[0]}, {&second, theirs[1]}, {&first, mine[1]}};
    std::vector<waiter> waiters;
    for (std::size_t i = 0; i < line.size(); ++i) {
        waiters.push_back(
            start_waiting(*line[i].first, line[i].second, 30s, &order, std::to_string(i)));
        ASSERT_TRUE(until_queued(name, static_cast<long long>(i + 1)))
            << "waiter " << i << " joins the line";
    }
    ASSERT_TRUE(until_subscribed(name, 4)) << "a channel for each waiter";
    EXPECT_EQ(pubsub_connections(), 2) << "one subscriber connection per client";

    client* owner = &first;
    lock_handle held = holder;
    for (std::size_t i = 0; i < line.size(); ++i) {
        const auto took = hand_over(*owner, held, waiters[i]);
        ASSERT_TRUE(waiters[i].result->done) << "waiter " << i;
        EXPECT_FALSE(waiters[i].result->ec) << waiters[i].result->ec.message();
        EXPECT_LT(took.count(), handover_bound.count())
            << "waiter " << i << " woken by the release, not its re-check";
        owner = line[i].first;
        held = line[i].second;
    }
    EXPECT_EQ(order, (std::vector<std::string>{"0", "1", "2", "3"}));
    EXPECT_FALSE(release(*owner, held).ec);
}

TEST_F(asio_fair, a_killed_subscriber_connection_is_made_again_and_wake_ups_resume) {
    const std::string name = "fair:killed";
    const lock_handle holder = add(first, name);
    const lock_handle next = add(second, name);
    ASSERT_FALSE(acquire(first, holder, 0ms).ec);
    const waiter w = start_waiting(second, next, 30s);
    ASSERT_TRUE(until_queued(name, 1));
    ASSERT_TRUE(until_subscribed(name, 1));

    EXPECT_EQ(admin.command({"CLIENT", "KILL", "TYPE", "pubsub"}).integer, 1)
        << "the second client's subscriber";
    ASSERT_TRUE(run_until(
        io, [&] { return subscribers(name) == 0; }, 2s));
    ASSERT_TRUE(until_subscribed(name, 1)) << "connected and subscribed again";
    EXPECT_FALSE(w.result->done) << "the lock is still held; the loss failed nothing";

    const auto took = hand_over(first, holder, w);
    ASSERT_TRUE(w.result->done);
    EXPECT_FALSE(w.result->ec) << w.result->ec.message();
    EXPECT_LT(took.count(), handover_bound.count()) << "woken through the new subscription";
    EXPECT_FALSE(release(second, next).ec);
}

// The subscriber is killed and cannot connect again (the server takes no more clients): the
// release's message is lost, and the waiter takes the lock at its re-check.
TEST_F(asio_fair, a_waiter_whose_subscriber_cannot_come_back_gets_the_lock_by_its_recheck) {
    const std::string name = "fair:recheck";
    constexpr std::int64_t short_recheck_ms = 300;
    const lock_handle holder = add(first, name, short_recheck_ms);
    const lock_handle next = add(second, name, short_recheck_ms);
    ASSERT_FALSE(acquire(first, holder, 0ms).ec);
    const waiter w = start_waiting(second, next, 30s);
    ASSERT_TRUE(until_queued(name, 1));
    ASSERT_TRUE(until_subscribed(name, 1));

    const std::string connected = admin.info_field("clients", "connected_clients");
    admin.command({"CONFIG", "SET", "maxclients", std::to_string(std::stoll(connected) - 1)});
    EXPECT_EQ(admin.command({"CLIENT", "KILL", "TYPE", "pubsub"}).integer, 1);
    run_for(io, 300ms);
    EXPECT_EQ(subscribers(name), 0) << "the subscriber is refused";
    EXPECT_FALSE(w.result->done) << "the lock is still held; the loss failed nothing";

    ASSERT_FALSE(release(first, holder).ec);
    ASSERT_TRUE(run_until(
        io, [&] { return w.result->done; }, 5s))
        << "stranded: no re-check";
    EXPECT_FALSE(w.result->ec) << w.result->ec.message();
    EXPECT_EQ(subscribers(name), 0) << "taken by the re-check, no wake-up";
    admin.command({"CONFIG", "SET", "maxclients", "10000"});
    EXPECT_FALSE(release(second, next).ec);
}

TEST_F(asio_fair, a_waiter_whose_wait_runs_out_leaves_the_line_and_the_next_gets_the_lock_at_once) {
    const std::string name = "fair:timeout";
    const lock_handle holder = add(first, name);
    const lock_handle quitter = add(second, name);
    const lock_handle patient = add(first, name);
    ASSERT_FALSE(acquire(first, holder, 0ms).ec);
    const waiter gives_up = start_waiting(second, quitter, 500ms);
    ASSERT_TRUE(until_queued(name, 1));
    const waiter stays = start_waiting(first, patient, 30s);
    ASSERT_TRUE(until_queued(name, 2));

    ASSERT_TRUE(run_until(
        io, [&] { return gives_up.result->done; }, 3s));
    EXPECT_EQ(gives_up.result->ec, errc::busy) << gives_up.result->ec.message();
    ASSERT_TRUE(until_queued(name, 1)) << "the waiter that gave up left the line";

    const auto took = hand_over(first, holder, stays);
    ASSERT_TRUE(stays.result->done);
    EXPECT_FALSE(stays.result->ec) << stays.result->ec.message();
    EXPECT_LT(took.count(), handover_bound.count())
        << "not held up by the entry of the waiter that gave up";
    EXPECT_FALSE(release(first, patient).ec);
}

TEST_F(asio_fair, a_cancelled_waiter_leaves_the_line_and_the_next_gets_the_lock_at_once) {
    const std::string name = "fair:cancel";
    const lock_handle holder = add(first, name);
    const lock_handle quitter = add(second, name);
    const lock_handle patient = add(first, name);
    ASSERT_FALSE(acquire(first, holder, 0ms).ec);
    const waiter cancelled = start_waiting(second, quitter, 30s);
    ASSERT_TRUE(until_queued(name, 1));
    const waiter stays = start_waiting(first, patient, 30s);
    ASSERT_TRUE(until_queued(name, 2));

    EXPECT_FALSE(release(second, quitter).ec) << "cancels the running acquire";
    ASSERT_TRUE(cancelled.result->done);
    EXPECT_EQ(cancelled.result->ec, errc::cancelled);
    ASSERT_TRUE(until_queued(name, 1)) << "the cancelled waiter left the line";

    const auto took = hand_over(first, holder, stays);
    ASSERT_TRUE(stays.result->done);
    EXPECT_FALSE(stays.result->ec) << stays.result->ec.message();
    EXPECT_LT(took.count(), handover_bound.count())
        << "not held up by the cancelled waiter's entry";
    EXPECT_FALSE(release(first, patient).ec);
}

TEST_F(asio_fair, the_subscriber_connects_only_once_a_fair_lock_waits) {
    const std::string name = "fair:lazy";
    const lock_handle holder = add(first, name);
    const lock_handle next = add(first, name);
    const long long connections_before =
        std::stoll(admin.info_field("stats", "total_connections_received"));
    ASSERT_FALSE(acquire(first, holder, 0ms).ec);
    EXPECT_EQ(acquire(first, next, 0ms).ec, errc::busy) << "a zero wait waits for no wake-up";
    ASSERT_TRUE(until_queued(name, 0)) << "a refused zero wait leaves the line";
    EXPECT_EQ(std::stoll(admin.info_field("stats", "total_connections_received")),
              connections_before)
        << "no subscriber connection yet";

    const waiter w = start_waiting(first, next, 30s);
    ASSERT_TRUE(until_subscribed(name, 1));
    EXPECT_EQ(std::stoll(admin.info_field("stats", "total_connections_received")),
              connections_before + 1);
    const auto took = hand_over(first, holder, w);
    EXPECT_FALSE(w.result->ec) << w.result->ec.message();
    EXPECT_LT(took.count(), handover_bound.count());
    EXPECT_FALSE(release(first, next).ec);
}

// locks_max 1: a fair lock waits (its channel subscribed), is woken, acquires, releases, and
// its release handler swaps it for a lock of the next name. The removed lock's channel may
// still wait for its UNSUBSCRIBE's confirmation while the lock's slot is free again: the
// new name must find a channel all the same (this did abort the process within a few dozen
// rounds), and every round's waiter is served.
TEST_F(asio_fair, a_fair_lock_removed_and_replaced_by_another_name_in_its_release_handler) {
    client swapper(io);
    auto config = config_for({server.url()});
    config.locks_max = 1;
    ASSERT_FALSE(swapper.open(config));
    ASSERT_FALSE(wait_ready(swapper).ec);
    constexpr int rounds = 200;
    const auto name_of = [](int round) { return "fair:swap:" + std::to_string(round); };
    lock_handle waiting = add(swapper, name_of(0));
    int swapped = 0;
    std::error_code first_error;
    for (int round = 0; round < rounds && !first_error; ++round) {
        const std::string name = name_of(round);
        const lock_handle holder = add(first, name);
        ASSERT_FALSE(acquire(first, holder, 0ms).ec) << "round " << round;
        const lock_handle current = waiting;
        swapper.async_acquire(current, 30s, [&, current, round](std::error_code ec, std::int64_t) {
            if (ec) return void(first_error = ec);
            swapper.async_release(current, [&, current, round](std::error_code released) {
                if (released) return void(first_error = released);
                if (const std::error_code removed = swapper.remove_lock(current)) {
                    return void(first_error = removed);
                }
                const std::string next_name = name_of(round + 1);  // the config views it
                const edgelock::lock_config next = fair_lock(next_name);
                const std::error_code added = swapper.add_lock(next, waiting);
                if (added) return void(first_error = added);
                ++swapped;
            });
        });
        ASSERT_TRUE(until_queued(name, 1)) << "round " << round << ": the waiter joins the line";
        ASSERT_TRUE(until_subscribed(name, 1)) << "round " << round << ": its channel subscribed";
        EXPECT_FALSE(release(first, holder).ec) << "round " << round;
        const bool swapped_or_failed = run_until(
            io, [&] { return swapped == round + 1 || first_error; }, 10s);
        ASSERT_TRUE(swapped_or_failed) << "round " << round;
        ASSERT_FALSE(first.remove_lock(holder));
    }
    EXPECT_FALSE(first_error) << first_error.message();
    EXPECT_EQ(swapped, rounds);
}

// A waiter in line whose client is closed leaves the line then: the waiter behind it gets
// the lock at the holder's release, within a wait far shorter than the closed waiter's entry
// would have held the line (its queue_entry_ttl_ms). close() still completes the closed
// waiter's acquire with operation_canceled.
TEST_F(asio_fair, a_waiter_whose_client_is_closed_leaves_the_line) {
    const std::string name = "fair:closed";
    constexpr std::int64_t entry_ttl_ms = 20'000;
    constexpr auto wait_behind = 5s;
    static_assert(std::chrono::milliseconds(wait_behind).count() < entry_ttl_ms);
    client third(io);
    ASSERT_FALSE(third.open(config_for({server.url()})));
    ASSERT_FALSE(wait_ready(third).ec);
    const lock_handle holder = add(first, name);
    edgelock::lock_config long_entry = fair_lock(name);
    long_entry.queue_entry_ttl_ms = entry_ttl_ms;
    lock_handle closed_waiter;
    ASSERT_FALSE(second.add_lock(long_entry, closed_waiter));
    const lock_handle behind = add(third, name, 1000);
    ASSERT_FALSE(acquire(first, holder, 0ms).ec);

    const waiter closed = start_waiting(second, closed_waiter, 30s);
    ASSERT_TRUE(until_queued(name, 1));
    const waiter next = start_waiting(third, behind, wait_behind);
    ASSERT_TRUE(until_queued(name, 2));
    second.close();
    ASSERT_TRUE(run_until(
        io, [&] { return closed.result->done; }, 2s));
    EXPECT_EQ(closed.result->ec, std::errc::operation_canceled) << closed.result->ec.message();

    EXPECT_FALSE(release(first, holder).ec);
    ASSERT_TRUE(run_until(
        io, [&] { return next.result->done; }, 10s));
    EXPECT_FALSE(next.result->ec) << "the closed waiter's entry held the line: "
                                  << next.result->ec.message();
    EXPECT_EQ(queued(name), 0) << "nobody left in line";
    EXPECT_FALSE(release(third, behind).ec);
}

// The same for a semaphore's waiter: close() loads the semaphore's fair release script on the
// lingering connection (here flushed from the server's cache first), so the waiter leaves the
// line, and the one behind it gets the permit the next release frees.
TEST_F(asio_fair, a_semaphore_waiter_whose_client_is_closed_leaves_the_line) {
    const std::string name = "fair:permits";
    const auto permit = [&](std::int64_t entry_ttl_ms) {
        edgelock::lock_config config = fair_lock(name);
        config.permits = 2;
        config.queue_entry_ttl_ms = entry_ttl_ms;
        return config;
    };
    const auto waiting = [&] {  // the line's members that hold no lease
        long long count = 0;
        for (const auto& m : admin.command({"ZRANGE", queue_key(name), "0", "-1"}).elements) {
            if (admin.command({"ZSCORE", name, m.text}).is_nil()) ++count;
        }
        return count;
    };
    client third(io);
    ASSERT_FALSE(third.open(config_for({server.url()})));
    ASSERT_FALSE(wait_ready(third).ec);
    std::array<lock_handle, 2> holders{};
    for (lock_handle& h : holders) {
        ASSERT_FALSE(first.add_lock(permit(20'000), h));
        ASSERT_FALSE(acquire(first, h, 0ms).ec);
    }
    lock_handle closed_waiter;
    ASSERT_FALSE(second.add_lock(permit(20'000), closed_waiter));
    lock_handle behind;
    ASSERT_FALSE(third.add_lock(permit(20'000), behind));
    const waiter closed = start_waiting(second, closed_waiter, 30s);
    ASSERT_TRUE(run_until(
        io, [&] { return waiting() == 1; }, 3s));
    const waiter next = start_waiting(third, behind, 5s);
    ASSERT_TRUE(run_until(
        io, [&] { return waiting() == 2; }, 3s));
    admin.command({"SCRIPT", "FLUSH"});
    second.close();
    ASSERT_TRUE(run_until(
        io, [&] { return closed.result->done; }, 2s));
    ASSERT_TRUE(run_until(
        io, [&] { return waiting() == 1; }, 2s))
        << "the closed waiter's release, by its loaded script, took it out of the line";
    EXPECT_FALSE(release(first, holders[0]).ec);
    ASSERT_TRUE(run_until(
        io, [&] { return next.result->done; }, 10s));
    EXPECT_FALSE(next.result->ec) << next.result->ec.message();
}

}  // namespace
