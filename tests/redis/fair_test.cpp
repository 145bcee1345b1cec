// SPDX-License-Identifier: Apache-2.0
// Fair waiting (lock.hpp, "Fair waiting") across processes, against a real Redis: waiters that
// arrive one after another while the lock is held get it in arrival order, and a waiter killed
// at the head of the line does not strand the others.
//
// Each waiter is a redis_lock_worker process ("waiter" mode); it appends its id to the list
// "order" while it holds the lock, so the list is the order of the holds. The holder is this
// process, so the instant of its release is known.
//
// Seen failing: EDGELOCK_FAIR_TEST_MUTATION=unfair runs the waiters without fair waiting (the
// arrival-order test fails: polling waiters win in any order); =no_recheck gives them a
// re-check period and entry TTL of a minute (the dead-head test fails: nobody notices that the
// head of the line died). The Sentinel test was seen failing against a client that drops the
// channel's messages (read_wake_ups returning on every message): "woken by the release", twice
// in two runs.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "edgelock/blocking_lock.hpp"
#include "edgelock/testing/child_process.hpp"
#include "edgelock/testing/redis_client.hpp"
#include "edgelock/testing/redis_process.hpp"
#include "redis_test_util.hpp"

namespace {

using edgelock::redis_tests::options_for;
using edgelock::testing::child_process;
using edgelock::testing::eventually;
using edgelock::testing::redis_client;
using edgelock::testing::redis_server;

constexpr const char* lock_name = "fair-lock";
constexpr const char* queue_key = "{fair-lock}:queue";

// The waiters in line: the queue's tokens but the holder's (it stands at the head until its
// release).
long long waiters_in_line(edgelock::testing::redis_client& client) {
    const std::string holder = client.exists(lock_name) ? client.get(lock_name) : std::string();
    long long waiters = 0;
    for (const auto& member : client.command({"ZRANGE", queue_key, "0", "-1"}).elements) {
        if (member.text != holder) ++waiters;
    }
    return waiters;
}
// The waiters' channels with a subscriber: each waiting acquire() listens on its own (the
// queue key, ":" and its token), where the release that makes it the holder wakes it.
std::vector<std::string> waiting_channels(redis_client& client) {
    std::vector<std::string> channels;
    for (const auto& c :
         client.command({"PUBSUB", "CHANNELS", std::string(queue_key) + ":*"}).elements)
        channels.push_back(c.text);
    return channels;
}
long long channel_subscribers(redis_client& client) {
    return static_cast<long long>(waiting_channels(client).size());
}

// Error replies the server sent so far with the ERR prefix (an unknown command among them).
long long err_replies(redis_client& client) {
    const std::string stat = client.info_field("errorstats", "errorstat_ERR");  // "count=N"
    const std::size_t at = stat.find("count=");
    return at == std::string::npos ? 0 : std::stoll(stat.substr(at + 6));
}

constexpr std::int64_t recheck_ms = 200;
constexpr std::int64_t entry_ttl_ms = 1300;  // above recheck + 2 attempt timeouts (500 ms each)
// How long a waiter may take, beyond the dead head's entry expiring and one re-check, to take
// the lock: process scheduling on a loaded 2-core machine, not the protocol.
constexpr std::int64_t liveness_margin_ms = 1500;

std::string mutation() {
    const char* value = std::getenv("EDGELOCK_FAIR_TEST_MUTATION");
    return value != nullptr ? value : "";
}

struct waiter_process {
    std::string id;
    std::unique_ptr<child_process> process;
};

// Starts waiter `id` and returns once it stands in line (or, unfair, after a fixed gap), so
// the arrival order is the order of the calls.
waiter_process start_waiter(const redis_server& server, redis_client& client, const std::string& id,
                            long long in_line_before) {
    const std::string m = mutation();
    const bool fair = m != "unfair";
    const std::int64_t recheck = m == "no_recheck" ? 60'000 : recheck_ms;
    const std::int64_t entry_ttl = m == "no_recheck" ? 130'000 : entry_ttl_ms;
    edgelock::testing::spawn_options options;
    options.pipe_stdio = true;
    waiter_process w{
        id, std::make_unique<child_process>(
                std::vector<std::string>{EDGELOCK_LOCK_WORKER, "waiter", server.url(), lock_name,
                                         fair ? "1" : "0", std::to_string(recheck),
                                         std::to_string(entry_ttl), id},
                options)};
    if (fair) {
        EXPECT_TRUE(eventually([&] { return waiters_in_line(client) > in_line_before; },
                               std::chrono::seconds(5)))
            << "waiter " << id << " stands in line";
    } else {
        // Unfair waiters (the mutation) leave no trace in Redis to wait for: a gap in time is
        // all that orders their arrivals.
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
    }
    return w;
}

// The waiter's "acquired <id> <ms>" line: when it took the lock, on the shared monotonic clock.
std::int64_t acquired_at(waiter_process& w,
                         std::chrono::milliseconds within = std::chrono::seconds(60)) {
    const auto line = w.process->read_line(within);
    const std::string expected = "acquired " + w.id + " ";
    EXPECT_TRUE(line && line->rfind(expected, 0) == 0)
        << w.id << ": " << line.value_or("(no output)");
    if (!line || line->rfind(expected, 0) != 0) return -1;
    return std::stoll(line->substr(expected.size()));
}

void expect_clean_exit(waiter_process& w) {
    EXPECT_EQ(w.process->read_line(std::chrono::seconds(10)).value_or("(no output)"), "released")
        << w.id;
    const auto status = w.process->wait_exit(std::chrono::seconds(10));
    EXPECT_TRUE(status && WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << w.id;
}

std::vector<std::string> holds_in_order(redis_client& client) {
    std::vector<std::string> ids;
    for (const auto& e : client.command({"LRANGE", "order", "0", "-1"}).elements)
        ids.push_back(e.text);
    return ids;
}

// The holder: this process, fair like the waiters, so its release wakes the head of the line.
std::unique_ptr<edgelock::blocking::lock> hold_lock(const redis_server& server) {
    auto holder = std::make_unique<edgelock::blocking::lock>();
    auto options = options_for(lock_name, {server.url()}, 5000);
    options.fair = true;
    EXPECT_FALSE(holder->open(options));
    EXPECT_FALSE(holder->acquire(std::chrono::seconds(0)));
    return holder;
}

TEST(fair_waiting, five_waiter_processes_get_the_lock_in_arrival_order) {
    redis_server server;
    redis_client client(server.port());
    auto holder = hold_lock(server);

    std::vector<waiter_process> waiters;
    for (int i = 1; i <= 5; ++i)
        waiters.push_back(start_waiter(server, client, std::to_string(i), i - 1));
    if (mutation() != "unfair") {
        EXPECT_TRUE(
            eventually([&] { return channel_subscribers(client) == 5; }, std::chrono::seconds(5)))
            << "every waiter waits for a wake-up";
    }
    ASSERT_FALSE(holder->release());

    for (auto& w : waiters) acquired_at(w);
    for (auto& w : waiters) expect_clean_exit(w);
    EXPECT_EQ(holds_in_order(client), (std::vector<std::string>{"1", "2", "3", "4", "5"}));
    EXPECT_EQ(client.command({"EXISTS", lock_name, queue_key}).integer, 0)
        << "the line is left empty";
}

TEST(fair_waiting, a_waiter_killed_at_the_head_of_the_line_does_not_strand_the_others) {
    redis_server server;
    redis_client client(server.port());
    auto holder = hold_lock(server);

    waiter_process head = start_waiter(server, client, "1", 0);
    std::vector<waiter_process> waiters;
    waiters.push_back(start_waiter(server, client, "2", 1));
    waiters.push_back(start_waiter(server, client, "3", 2));
    head.process->kill(SIGKILL);  // its entry stays in line until it expires

    const std::int64_t released_ms = edgelock::blocking::now_ms();
    ASSERT_FALSE(holder->release());  // publishes the dead head's token: nobody answers it

    const std::chrono::milliseconds bound(entry_ttl_ms + recheck_ms + liveness_margin_ms);
    const std::int64_t second_ms = acquired_at(waiters[0], 2 * bound);
    const std::int64_t third_ms = acquired_at(waiters[1], 2 * bound);
    ASSERT_TRUE(second_ms >= 0 && third_ms >= 0)
        << "both waiters took the lock within " << 2 * bound.count() << " ms";
    for (auto& w : waiters) expect_clean_exit(w);
    std::cout << "after the release: waiter 2 took the lock in " << second_ms - released_ms
              << " ms, waiter 3 " << third_ms - second_ms << " ms later" << std::endl;
    EXPECT_EQ(holds_in_order(client), (std::vector<std::string>{"2", "3"}));
    EXPECT_LE(second_ms - released_ms, entry_ttl_ms + recheck_ms + liveness_margin_ms)
        << "the dead head's entry expires, and the next waiter's re-check finds the lock free";
    EXPECT_LE(third_ms - second_ms, recheck_ms + liveness_margin_ms);
}

// The subscriber is subscribed only while an acquire() waits: a holder (or an idle lock) is
// sent nothing, so the channel's traffic neither piles up in Redis's output buffer for it nor
// comes back as stale wake-ups on the next wait, which subscribes again and is woken as fast.

// One waiter, woken only by the release: its re-checks and backoff are a minute apart.
// Returns the channel it waited on.
std::string wait_until_woken(edgelock::blocking::lock& waiter, edgelock::blocking::lock& holder,
                             redis_client& client) {
    std::error_code result = make_error_code(edgelock::errc::busy);
    std::thread waiting([&] { result = waiter.acquire(std::chrono::seconds(20)); });
    EXPECT_TRUE(edgelock::testing::eventually([&] { return channel_subscribers(client) == 1; },
                                              std::chrono::seconds(5)))
        << "the waiter subscribes while it waits";
    const std::vector<std::string> channels = waiting_channels(client);
    EXPECT_FALSE(holder.release());
    waiting.join();
    EXPECT_FALSE(result) << result.message();
    return channels.empty() ? std::string() : channels[0];
}

// The release hands the lock to the head of the line and the head's acquire() returns on the
// message alone (lock.hpp, "Fair waiting"): no attempt of its own ends the wait, yet the
// event hook hears the acquisition as the attempt that succeeded, as for any other.
TEST(fair_waiting, a_waiter_handed_the_lock_by_the_release_reports_its_acquisition) {
    redis_server server;
    redis_client client(server.port());
    std::mutex mutex;
    std::vector<edgelock::blocking::lock_event> events;
    edgelock::blocking::lock waiter;
    auto options = options_for(lock_name, {server.url()}, 5000);
    options.fair = true;
    options.recheck_ms = 60'000;  // only the release can end the wait in time
    options.queue_entry_ttl_ms = 130'000;
    options.on_event = [&](const edgelock::blocking::lock_event& e) {
        const std::lock_guard<std::mutex> guard(mutex);
        events.push_back(e);
    };
    ASSERT_FALSE(waiter.open(options));
    ASSERT_FALSE(waiter.acquire(std::chrono::seconds(0)));  // connected before the wait
    ASSERT_FALSE(waiter.release());
    auto holder = hold_lock(server);
    std::error_code acquired = make_error_code(edgelock::errc::invalid_state);
    std::thread waiting([&] { acquired = waiter.acquire(std::chrono::seconds(30)); });
    ASSERT_TRUE(
        eventually([&] { return channel_subscribers(client) == 1; }, std::chrono::seconds(5)));
    // The refused attempt is told after everything before it: what comes next is the wait's.
    ASSERT_TRUE(eventually(
        [&] {
            const std::lock_guard<std::mutex> guard(mutex);
            return std::any_of(events.begin(), events.end(), [](const auto& e) {
                return e.kind == edgelock::blocking::lock_event_kind::attempt && e.code;
            });
        },
        std::chrono::seconds(5)));
    {
        const std::lock_guard<std::mutex> guard(mutex);
        events.clear();
    }
    ASSERT_FALSE(holder->release());
    waiting.join();
    EXPECT_FALSE(acquired) << acquired.message();
    ASSERT_TRUE(eventually(
        [&] {
            const std::lock_guard<std::mutex> guard(mutex);
            return std::any_of(events.begin(), events.end(), [](const auto& e) {
                return e.kind == edgelock::blocking::lock_event_kind::attempt && !e.code;
            });
        },
        std::chrono::seconds(5)))
        << "the acquisition is told";
}

TEST(fair_waiting, the_subscriber_is_unsubscribed_while_the_lock_is_held_or_idle) {
    redis_server server;
    redis_client client(server.port());
    auto options = options_for(lock_name, {server.url()}, 5000);
    options.fair = true;
    options.recheck_ms = 60'000;
    options.queue_entry_ttl_ms = 130'000;
    options.retry_delay_ms_min = 60'000;
    options.retry_delay_ms_max = 60'000;
    edgelock::blocking::lock holder;
    edgelock::blocking::lock waiter;
    ASSERT_FALSE(holder.open(options));
    ASSERT_FALSE(waiter.open(options));
    ASSERT_FALSE(holder.acquire(std::chrono::seconds(0)));
    const std::string first_wait = wait_until_woken(waiter, holder, client);
    ASSERT_TRUE(waiter.held());

    EXPECT_TRUE(edgelock::testing::eventually([&] { return channel_subscribers(client) == 0; },
                                              std::chrono::seconds(5)))
        << "a holder is not subscribed";
    const std::string payload(1024, 'x');
    for (int i = 0; i < 2000; ++i) client.command({"PUBLISH", first_wait, payload});
    const std::string clients = client.command({"CLIENT", "LIST", "TYPE", "pubsub"}).text;
    EXPECT_EQ(clients.find(" sub=1 "), std::string::npos) << clients;
    EXPECT_EQ(clients.find("omem=0"), clients.find("omem="))
        << "nothing waits for the subscriber: " << clients;

    // The next wait, the other way round: the subscriber kept its connection and subscribes
    // again, and only the release wakes the new waiter.
    ASSERT_FALSE(waiter.release());
    ASSERT_FALSE(holder.acquire(std::chrono::seconds(0)));
    EXPECT_NE(wait_until_woken(waiter, holder, client), first_wait) << "a channel per wait";
    EXPECT_TRUE(waiter.held());
    EXPECT_FALSE(waiter.release());
    EXPECT_TRUE(edgelock::testing::eventually([&] { return channel_subscribers(client) == 0; },
                                              std::chrono::seconds(5)));
}

// A waiter whose acquire() gives up and whose lock is destroyed at once leaves the line
// before the destructor returns: the waiter behind it is woken by the holder's release,
// long before the abandoned entry could have expired (its TTL is longer than the wait).
TEST(fair_waiting, a_waiter_that_gives_up_and_is_destroyed_leaves_the_line_at_once) {
    redis_server server;
    redis_client client(server.port());
    auto holder = hold_lock(server);
    constexpr std::int64_t long_entry_ttl_ms = 20'000;
    auto options = options_for(lock_name, {server.url()}, 5000);
    options.fair = true;
    options.recheck_ms = 8'000;
    options.queue_entry_ttl_ms = long_entry_ttl_ms;
    options.retry_delay_ms_min = 8'000;
    options.retry_delay_ms_max = 8'000;

    auto leaving = std::make_unique<edgelock::blocking::lock>();
    ASSERT_FALSE(leaving->open(options));
    std::error_code left = make_error_code(edgelock::errc::ok);
    std::thread leaving_wait([&] {
        left = leaving->acquire(std::chrono::milliseconds(1500));
        leaving.reset();  // destroyed the moment it gives up
    });
    ASSERT_TRUE(edgelock::testing::eventually([&] { return waiters_in_line(client) == 1; },
                                              std::chrono::seconds(5)));

    edgelock::blocking::lock behind;
    ASSERT_FALSE(behind.open(options));
    std::error_code result = make_error_code(edgelock::errc::busy);
    std::thread waiting([&] { result = behind.acquire(std::chrono::seconds(10)); });
    EXPECT_TRUE(edgelock::testing::eventually([&] { return waiters_in_line(client) == 2; },
                                              std::chrono::seconds(5)))
        << "the second waiter is in line behind the first";
    leaving_wait.join();
    EXPECT_EQ(left, edgelock::errc::busy) << "it gave up: the lock was still held";
    EXPECT_EQ(waiters_in_line(client), 1) << "the destroyed waiter left the line";

    EXPECT_FALSE(holder->release());
    waiting.join();  // within its 10 s wait, half the abandoned entry's TTL
    EXPECT_FALSE(result) << result.message();
    EXPECT_TRUE(behind.held());
    EXPECT_FALSE(behind.release());
}

// cancel() from another thread ends a waiting acquire() with cancelled, and the waiter leaves
// the line as it ends: the waiter behind it takes the lock at the holder's release, well within
// the cancelled entry's 20 s TTL. The same lock then acquires normally (the cancel was taken),
// and a cancel that comes between two calls ends the next acquire() at once.
TEST(fair_waiting, a_cancelled_waiter_leaves_the_line_at_once) {
    redis_server server;
    redis_client client(server.port());
    auto holder = hold_lock(server);
    auto options = options_for(lock_name, {server.url()}, 5000);
    options.fair = true;
    options.recheck_ms = 8'000;
    options.queue_entry_ttl_ms = 20'000;

    edgelock::blocking::lock cancelled;
    ASSERT_FALSE(cancelled.open(options));
    std::error_code first = make_error_code(edgelock::errc::ok);
    std::thread first_wait([&] { first = cancelled.acquire(std::chrono::seconds(60)); });
    ASSERT_TRUE(edgelock::testing::eventually([&] { return waiters_in_line(client) == 1; },
                                              std::chrono::seconds(5)));
    edgelock::blocking::lock behind;
    ASSERT_FALSE(behind.open(options));
    std::error_code second = make_error_code(edgelock::errc::busy);
    std::thread second_wait([&] { second = behind.acquire(std::chrono::seconds(10)); });
    ASSERT_TRUE(edgelock::testing::eventually([&] { return waiters_in_line(client) == 2; },
                                              std::chrono::seconds(5)));

    cancelled.cancel();
    first_wait.join();  // the test's own timeout bounds it: without the cancel, 60 s
    EXPECT_EQ(first, edgelock::errc::cancelled) << first.message();
    EXPECT_EQ(waiters_in_line(client), 1) << "the cancelled waiter left the line";
    EXPECT_FALSE(holder->release());
    second_wait.join();
    EXPECT_FALSE(second) << second.message();
    EXPECT_FALSE(behind.release());

    edgelock::blocking::hold hold;
    EXPECT_FALSE(cancelled.acquire(std::chrono::seconds(5), &hold)) << "the cancel was taken";
    EXPECT_EQ(hold.token, client.get(lock_name)) << "the hold names the token in the key";
    EXPECT_FALSE(cancelled.release());
    cancelled.cancel();
    EXPECT_EQ(cancelled.acquire(std::chrono::seconds(5)), edgelock::errc::cancelled)
        << "a cancel between two calls ends the next one";
}

// A subscriber that cannot subscribe (SUBSCRIBE renamed away) or is dropped while waiting never
// fails the acquire: the waiter falls back to its re-checks, and takes the lock once it is free.
void expect_acquired_without_wake_ups(redis_server& server, bool kill_subscriber) {
    redis_client client(server.port());
    auto holder = hold_lock(server);
    edgelock::blocking::lock waiter;
    auto options = options_for(lock_name, {server.url()}, 5000);
    options.fair = true;
    options.recheck_ms = recheck_ms;
    options.queue_entry_ttl_ms = entry_ttl_ms;
    ASSERT_FALSE(waiter.open(options));
    const long long errors_before = err_replies(client);
    std::error_code result = make_error_code(edgelock::errc::busy);
    std::thread waiting([&] { result = waiter.acquire(std::chrono::seconds(8)); });
    EXPECT_TRUE(eventually([&] { return waiters_in_line(client) == 1; }, std::chrono::seconds(5)));
    // Subscribed, or refused: the refusal of the renamed SUBSCRIBE is an ERR reply.
    EXPECT_TRUE(eventually(
        [&] {
            return kill_subscriber ? channel_subscribers(client) == 1
                                   : err_replies(client) > errors_before;
        },
        std::chrono::seconds(5)))
        << (kill_subscriber ? "the waiter subscribed" : "the waiter's SUBSCRIBE was refused");
    if (kill_subscriber) {
        EXPECT_EQ(client.command({"CLIENT", "KILL", "TYPE", "pubsub"}).integer, 1)
            << "the waiter's subscriber";
    }
    const std::int64_t released_ms = edgelock::blocking::now_ms();
    EXPECT_FALSE(holder->release());
    waiting.join();
    std::cout << "the waiter took the lock " << edgelock::blocking::now_ms() - released_ms
              << " ms after the release" << std::endl;
    EXPECT_FALSE(result) << result.message();
    EXPECT_TRUE(waiter.held());
    EXPECT_FALSE(waiter.release());
}

TEST(fair_waiting, a_server_that_refuses_subscribe_only_delays_the_waiter_to_its_recheck) {
    redis_server server({"--rename-command", "SUBSCRIBE", ""});
    expect_acquired_without_wake_ups(server, false);
}

TEST(fair_waiting, a_subscriber_dropped_while_waiting_only_delays_the_waiter) {
    redis_server server;
    expect_acquired_without_wake_ups(server, true);
}

// Behind Sentinel, with a password and a db: the subscriber finds the master through the
// sentinels and logs in as the command connection does. The waiter backs off and re-checks
// only once a minute (its backoff draws below 60 s, so it may still poll by chance, about once
// in 20 runs within the 3 s looked at): the wake-up from the release is what hands it the lock.
TEST(fair_waiting, behind_sentinel_with_a_password_and_a_db_the_release_wakes_the_waiter) {
    edgelock::testing::sentinel_topology topology({"--requirepass", "pw"}, "pw");
    auto options_of = [&](std::int64_t recheck) {
        edgelock::blocking::lock_options options;
        options.name = lock_name;
        options.sentinels = topology.sentinel_urls();
        options.master_name = edgelock::testing::sentinel_topology::master_name;
        options.master_password = "pw";
        options.master_db = 2;
        options.ttl_ms = 5000;
        options.fair = true;
        options.recheck_ms = recheck;
        options.queue_entry_ttl_ms = 2 * (recheck + 500);
        options.retry_delay_ms_min = recheck;
        options.retry_delay_ms_max = recheck;
        return options;
    };
    edgelock::blocking::lock holder;
    ASSERT_FALSE(holder.open(options_of(recheck_ms)));
    ASSERT_FALSE(holder.acquire(std::chrono::seconds(0)));

    edgelock::blocking::lock waiter;
    ASSERT_FALSE(waiter.open(options_of(60'000)));
    std::error_code result = make_error_code(edgelock::errc::busy);
    std::thread waiting([&] { result = waiter.acquire(std::chrono::seconds(10)); });
    redis_client master("127.0.0.1", topology.master_port(), "pw");
    const bool subscribed = edgelock::testing::eventually(
        [&] {
            const auto channels =
                master.command({"PUBSUB", "CHANNELS", std::string(queue_key) + ":*"});
            return channels.elements.size() == 1;
        },
        std::chrono::seconds(5));
    EXPECT_TRUE(subscribed) << "the waiter's subscriber on the master";
    EXPECT_FALSE(holder.release());
    EXPECT_TRUE(
        edgelock::testing::eventually([&] { return waiter.held(); }, std::chrono::seconds(3)))
        << "woken by the release";
    waiting.join();
    EXPECT_FALSE(result) << result.message();
    if (!result) {
        EXPECT_FALSE(waiter.release());
    }
}

}  // namespace
