// SPDX-License-Identifier: Apache-2.0
// The watchdog keeps a held key alive past its TTL; a holder paused beyond the TTL loses the
// lock to another process, learns it when resumed, and its fenced write is refused. Closing
// the lock (its destructor) while on_lost acquires again leaves nothing held.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "edgelock/blocking_lock.hpp"
#include "edgelock/testing/child_process.hpp"
#include "edgelock/testing/redis_client.hpp"
#include "edgelock/testing/redis_process.hpp"
#include "redis_test_util.hpp"

namespace {

using namespace std::chrono_literals;
using edgelock::redis_tests::fenced_write;
using edgelock::redis_tests::options_for;
using edgelock::testing::child_process;
using edgelock::testing::eventually;
using edgelock::testing::redis_client;
using edgelock::testing::redis_server;

// Long enough that a renewal thread delayed by a loaded machine (renewals every ttl/3) still
// keeps the key: the test checks the watchdog, not the scheduler.
constexpr std::int64_t ttl_ms = 600;

// Polls the key every 2 ms for `duration`; returns how many polls found it missing.
int polls_missing(redis_client& client, const std::string& key,
                  std::chrono::milliseconds duration) {
    int missing = 0;
    const auto until = std::chrono::steady_clock::now() + duration;
    while (std::chrono::steady_clock::now() < until) {
        if (!client.exists(key)) ++missing;
        std::this_thread::sleep_for(2ms);
    }
    return missing;
}

TEST(watchdog, a_hold_of_three_ttls_keeps_the_key_alive) {
    redis_server server;
    redis_client client(server.port());
    edgelock::blocking::lock lock;
    ASSERT_FALSE(lock.open(options_for("job", {server.url()}, ttl_ms)));
    edgelock::blocking::hold hold;
    ASSERT_FALSE(lock.try_acquire(&hold));

    EXPECT_EQ(polls_missing(client, "job", std::chrono::milliseconds(3 * ttl_ms + 100)), 0);
    EXPECT_TRUE(lock.held());
    EXPECT_FALSE(lock.lost());
    EXPECT_GT(client.pttl("job"), 0);
    EXPECT_FALSE(lock.release());
    EXPECT_FALSE(client.exists("job"));
}

// The observation hook (lock_options::on_event) of a short hold: the connection, the
// attempt, the renewals (each extending validity) and the loss after an outside DEL, in that
// order. The attempt is reported on the acquiring thread, the renewals on the helper's.
TEST(watchdog, the_event_hook_sees_the_connection_attempt_renewals_and_loss) {
    using edgelock::blocking::lock_event;
    using kind = edgelock::blocking::lock_event_kind;
    redis_server server;
    redis_client client(server.port());
    std::mutex mutex;
    std::vector<lock_event> seen;
    std::vector<std::thread::id> threads;
    edgelock::blocking::lock_options options = options_for("hooked", {server.url()}, ttl_ms);
    options.on_event = [&](const lock_event& e) {
        std::lock_guard<std::mutex> guard(mutex);
        seen.push_back(e);
        threads.push_back(std::this_thread::get_id());
    };
    const auto count = [&](kind k) {
        std::lock_guard<std::mutex> guard(mutex);
        return std::count_if(seen.begin(), seen.end(),
                             [k](const lock_event& e) { return e.kind == k; });
    };
    edgelock::blocking::lock lock;
    ASSERT_FALSE(lock.open(options));
    edgelock::blocking::hold hold;
    ASSERT_FALSE(lock.try_acquire(&hold));
    ASSERT_TRUE(eventually([&] { return count(kind::renewed) >= 2; }, 10s));
    client.command({"DEL", "hooked"});
    ASSERT_TRUE(eventually([&] { return count(kind::lost) == 1; }, 10s));
    EXPECT_TRUE(lock.lost());
    EXPECT_EQ(lock.release(), edgelock::errc::expired);

    std::lock_guard<std::mutex> guard(mutex);
    ASSERT_GE(seen.size(), 5u);
    EXPECT_EQ(seen[0].kind, kind::connected);
    EXPECT_EQ(seen[0].instance, 0u);
    EXPECT_FALSE(seen[0].code);
    EXPECT_EQ(seen[1].kind, kind::attempt);
    EXPECT_FALSE(seen[1].code);
    EXPECT_EQ(seen[1].valid_until_ms, hold.valid_until_ms);
    EXPECT_EQ(threads[0], std::this_thread::get_id()) << "the acquiring thread does its I/O";
    EXPECT_EQ(threads[1], std::this_thread::get_id());
    std::int64_t valid_until_ms = hold.valid_until_ms;
    std::size_t i = 2;
    for (; i < seen.size() && seen[i].kind == kind::renewed; ++i) {
        EXPECT_GT(seen[i].valid_until_ms, valid_until_ms) << "each renewal extends the lease";
        valid_until_ms = seen[i].valid_until_ms;
        EXPECT_NE(threads[i], std::this_thread::get_id()) << "renewals are the helper's";
    }
    EXPECT_GE(i, 4u) << "two renewals before the loss";
    ASSERT_LT(i, seen.size());
    EXPECT_EQ(seen[i].kind, kind::lost);
    EXPECT_EQ(seen[i].code, edgelock::errc::token_gone);
}

TEST(watchdog, without_renewal_the_same_hold_loses_its_key) {
    // The control for the test above: the polling would have seen a vanished key.
    redis_server server;
    redis_client client(server.port());
    std::atomic<int> lost_calls{0};
    edgelock::blocking::lock lock;
    auto options = options_for("job", {server.url()}, ttl_ms);
    options.watchdog = false;
    options.on_lost = [&lost_calls](std::error_code ec) {
        if (ec == edgelock::errc::expired) ++lost_calls;
    };
    ASSERT_FALSE(lock.open(options));
    ASSERT_FALSE(lock.try_acquire());
    EXPECT_GT(polls_missing(client, "job", std::chrono::milliseconds(3 * ttl_ms + 100)), 0);
    EXPECT_FALSE(lock.held());
    EXPECT_TRUE(eventually([&] { return lost_calls.load() == 1; }, 2s));
    EXPECT_EQ(lock.release(), edgelock::errc::expired);
}

TEST(watchdog, reentrant_holds_need_one_release_each_and_the_destructor_releases_the_rest) {
    redis_server server;
    redis_client client(server.port());
    {
        edgelock::blocking::lock lock;
        ASSERT_FALSE(lock.open(options_for("nested", {server.url()}, ttl_ms)));
        ASSERT_FALSE(lock.try_acquire());
        ASSERT_FALSE(lock.try_acquire()) << "the owner may acquire again";
        ASSERT_FALSE(lock.try_acquire());
        EXPECT_FALSE(lock.release());
        EXPECT_TRUE(client.exists("nested")) << "two holds are left";
        edgelock::blocking::lock other;
        ASSERT_FALSE(other.open(options_for("nested", {server.url()}, ttl_ms)));
        EXPECT_EQ(other.try_acquire(), edgelock::errc::busy);
    }
    EXPECT_FALSE(client.exists("nested")) << "the destructor released the remaining holds";
}

// An on_lost that takes its time: it records each code it is called with, then waits until
// the test lets it go (bounded, so a broken client cannot hang the test).
struct slow_lost_handler {
    std::mutex mutex;
    std::condition_variable opened;
    std::vector<std::error_code> codes;
    bool gate_open = false;

    void operator()(std::error_code ec) {
        std::unique_lock<std::mutex> held(mutex);
        codes.push_back(ec);
        opened.wait_for(held, 20s, [this] { return gate_open; });
    }
    std::size_t calls() {
        std::lock_guard<std::mutex> held(mutex);
        return codes.size();
    }
    void open_gate() {
        std::lock_guard<std::mutex> held(mutex);
        gate_open = true;
        opened.notify_all();
    }
};

// A server of its own and an on_lost callback that blocks until the test opens its gate. The
// fixture outlives each test's lock, whose destructor waits for the callback thread.
class watchdog_slow_on_lost : public ::testing::Test {
protected:
    edgelock::blocking::lock_options options() {
        auto options = options_for("job", {server.url()}, ttl_ms);
        options.on_lost = [this](std::error_code ec) { handler(ec); };
        return options;
    }
    // Takes a hold and loses it to an outside delete: on_lost is told (and blocks there),
    // and release() reports the hold expired.
    void lose_a_hold(edgelock::blocking::lock& lock) {
        ASSERT_FALSE(lock.try_acquire());
        client.command({"DEL", "job"});
        ASSERT_TRUE(eventually([&] { return handler.calls() == 1; }, 5s))
            << "the first loss is reported";
        EXPECT_EQ(lock.release(), edgelock::errc::expired);
    }

    redis_server server;
    redis_client client{server.port()};
    slow_lost_handler handler;
};

TEST_F(watchdog_slow_on_lost, a_slow_lost_callback_does_not_stop_the_renewal_of_the_next_hold) {
    {
        edgelock::blocking::lock lock;
        ASSERT_FALSE(lock.open(options()));
        ASSERT_NO_FATAL_FAILURE(lose_a_hold(lock));

        ASSERT_FALSE(lock.try_acquire()) << "a new hold while the callback still runs";
        EXPECT_EQ(polls_missing(client, "job", std::chrono::milliseconds(3 * ttl_ms + 100)), 0)
            << "the new hold is renewed while the callback runs";
        EXPECT_TRUE(lock.held());
        EXPECT_FALSE(lock.lost());
        handler.open_gate();
        EXPECT_FALSE(lock.release());
    }  // the destructor waits for the callback thread: every call has been made by now
    std::lock_guard<std::mutex> held(handler.mutex);
    ASSERT_EQ(handler.codes.size(), 1u) << "one call, for the one hold that was lost";
    EXPECT_EQ(handler.codes[0], edgelock::errc::token_gone);
}

TEST_F(watchdog_slow_on_lost,
       a_loss_whose_hold_was_released_before_its_callback_could_run_is_not_reported) {
    {
        edgelock::blocking::lock lock;
        ASSERT_FALSE(lock.open(options()));
        ASSERT_NO_FATAL_FAILURE(lose_a_hold(lock));

        ASSERT_FALSE(lock.try_acquire());
        client.command({"DEL", "job"});  // the second hold is lost while the first callback runs
        ASSERT_TRUE(eventually([&] { return lock.lost(); }, 5s)) << "the second loss is noticed";
        EXPECT_EQ(lock.lost_reason(), edgelock::errc::token_gone);
        EXPECT_EQ(lock.release(), edgelock::errc::expired)
            << "the caller learns of it from release()";
        handler.open_gate();
    }
    std::lock_guard<std::mutex> held(handler.mutex);
    ASSERT_EQ(handler.codes.size(), 1u) << "no callback for the hold released before its turn";
    EXPECT_EQ(handler.codes[0], edgelock::errc::token_gone);
}

// The second hold is lost while the callback for the first still runs, so its notice waits.
// A reentrant acquire() then nests in a hold that is gone: it returns expired rather than
// start a new hold that would make the notice stale, and on_lost hears the loss once free.
TEST_F(watchdog_slow_on_lost,
       a_reentrant_acquire_over_a_loss_not_yet_told_fails_and_the_loss_is_told) {
    {
        edgelock::blocking::lock lock;
        ASSERT_FALSE(lock.open(options()));
        ASSERT_NO_FATAL_FAILURE(lose_a_hold(lock));

        ASSERT_FALSE(lock.try_acquire());
        client.command({"DEL", "job"});  // lost while the first callback runs
        ASSERT_TRUE(eventually([&] { return lock.lost(); }, 5s)) << "the second loss is noticed";
        EXPECT_EQ(lock.try_acquire(), edgelock::errc::expired)
            << "a new hold took the place of one whose loss was never told";
        EXPECT_TRUE(lock.lost());
        handler.open_gate();
        ASSERT_TRUE(eventually([&] { return handler.calls() == 2; }, 5s))
            << "the second loss is told";
        EXPECT_EQ(lock.release(), edgelock::errc::expired);
        ASSERT_FALSE(lock.try_acquire()) << "a new hold once the loss was told and released";
        EXPECT_FALSE(lock.release());
    }
    std::lock_guard<std::mutex> held(handler.mutex);
    ASSERT_EQ(handler.codes.size(), 2u);
    EXPECT_EQ(handler.codes[1], edgelock::errc::token_gone);
}

// While on_lost runs for a loss, the thread that took the hold may not have heard yet, and
// an on_lost that calls release() would end whatever hold it finds: another thread's
// acquire() starts no hold until the call has returned.
TEST_F(watchdog_slow_on_lost, an_acquire_while_on_lost_runs_for_the_loss_waits_for_its_return) {
    {
        edgelock::blocking::lock lock;
        ASSERT_FALSE(lock.open(options()));
        ASSERT_FALSE(lock.try_acquire());
        client.command({"DEL", "job"});
        ASSERT_TRUE(eventually([&] { return handler.calls() == 1; }, 5s)) << "the loss is told";
        EXPECT_EQ(lock.try_acquire(), edgelock::errc::expired)
            << "a new hold began while on_lost was still telling of the loss";
        EXPECT_FALSE(client.exists("job"));
        handler.open_gate();
        EXPECT_TRUE(eventually([&] { return !lock.try_acquire(); }, 5s))
            << "a new hold once on_lost returned";
        EXPECT_TRUE(client.exists("job"));
        EXPECT_FALSE(lock.release());
    }
    std::lock_guard<std::mutex> held(handler.mutex);
    EXPECT_EQ(handler.codes.size(), 1u);
}

// Without on_lost, the caller hears of a loss from lost() or release(): until release() has
// reported it, an acquire() (a reentrant one, as here) starts no hold in its place.
TEST(watchdog, without_on_lost_an_acquire_after_a_loss_fails_until_release_reports_it) {
    redis_server server;
    redis_client client(server.port());
    edgelock::blocking::lock lock;
    ASSERT_FALSE(lock.open(options_for("job", {server.url()}, ttl_ms)));
    ASSERT_FALSE(lock.try_acquire());
    client.command({"DEL", "job"});
    ASSERT_TRUE(eventually([&] { return lock.lost(); }, 5s)) << "the renewal finds it gone";
    EXPECT_EQ(lock.try_acquire(), edgelock::errc::expired)
        << "a new hold took the place of one whose loss was never heard";
    EXPECT_FALSE(client.exists("job"));
    EXPECT_TRUE(lock.lost());
    EXPECT_EQ(lock.release(), edgelock::errc::expired);
    EXPECT_FALSE(lock.lost());
    ASSERT_FALSE(lock.try_acquire()) << "a new hold once release() reported the loss";
    EXPECT_TRUE(client.exists("job"));
    EXPECT_FALSE(lock.release());
}

// An on_lost that acquires again, as a job that wants its lock back would: at the first loss
// it waits until the test lets it go (bounded), then calls acquire(wait) and keeps the result.
struct reacquiring_handler {
    edgelock::blocking::lock* lock = nullptr;
    std::chrono::milliseconds wait{0};
    std::mutex mutex;
    std::condition_variable changed;
    bool called = false;
    bool gate_open = false;
    bool returned = false;
    std::error_code result;

    void operator()(std::error_code) {
        std::unique_lock<std::mutex> held(mutex);
        if (called) return;
        called = true;
        changed.notify_all();
        changed.wait_for(held, 20s, [this] { return gate_open; });
        held.unlock();
        const std::error_code acquired = lock->acquire(wait);
        held.lock();
        result = acquired;
        returned = true;
    }
    bool wait_called() {
        std::unique_lock<std::mutex> held(mutex);
        return changed.wait_for(held, 10s, [this] { return called; });
    }
    void open_gate() {
        std::lock_guard<std::mutex> held(mutex);
        gate_open = true;
        changed.notify_all();
    }
};

// A TTL long enough that a hold left behind by close is still there when the test looks, and
// renewals often enough that the outside delete is noticed at once.
edgelock::blocking::lock_options reacquiring_options(const redis_server& server,
                                                     reacquiring_handler& handler) {
    auto options = options_for("job", {server.url()}, 10'000);
    options.renew_interval_ms = 100;
    options.on_lost = [&handler](std::error_code ec) { handler(ec); };
    return options;
}

// Destroys `lock` on a thread of its own, returned once the destruction has begun (the
// thread's first step; the rest runs on).
std::thread close_on_a_thread(std::unique_ptr<edgelock::blocking::lock>& lock) {
    auto begun = std::make_shared<std::atomic<bool>>(false);
    std::thread closer([&lock, begun] {
        begun->store(true);
        lock.reset();
    });
    EXPECT_TRUE(eventually([&] { return begun->load(); }, 5s));
    return closer;
}

// After close: the callback's acquire was overtaken (cancelled), or it got the lock before
// close began and close released it; either way the key is not ours any more.
void expect_nothing_held(reacquiring_handler& handler, redis_client& client) {
    std::lock_guard<std::mutex> held(handler.mutex);
    EXPECT_TRUE(handler.returned) << "close waited for the callback";
    if (handler.result) {
        EXPECT_EQ(handler.result, edgelock::errc::cancelled) << handler.result.message();
    }
    EXPECT_FALSE(client.exists("job")) << "a hold outlived close, until its TTL";
}

TEST(watchdog, an_acquire_from_on_lost_after_close_began_leaves_nothing_held) {
    redis_server server;
    redis_client client(server.port());
    reacquiring_handler handler;
    auto lock = std::make_unique<edgelock::blocking::lock>();
    handler.lock = lock.get();
    ASSERT_FALSE(lock->open(reacquiring_options(server, handler)));
    ASSERT_FALSE(lock->try_acquire());
    client.command({"DEL", "job"});
    ASSERT_TRUE(handler.wait_called()) << "the loss is reported";

    std::thread closer = close_on_a_thread(lock);
    handler.open_gate();  // the callback's acquire now comes while close runs
    closer.join();
    expect_nothing_held(handler, client);
}

TEST(watchdog, an_acquire_from_on_lost_still_waiting_when_close_begins_leaves_nothing_held) {
    redis_server server;
    redis_client client(server.port());
    reacquiring_handler handler;
    handler.wait = 20s;
    std::atomic<int> busy_attempts{0};
    auto options = reacquiring_options(server, handler);
    options.on_event = [&busy_attempts](const edgelock::lock_event& e) {
        if (e.kind == edgelock::lock_event_kind::attempt && e.code == edgelock::errc::busy)
            ++busy_attempts;
    };
    auto lock = std::make_unique<edgelock::blocking::lock>();
    handler.lock = lock.get();
    ASSERT_FALSE(lock->open(options));
    ASSERT_FALSE(lock->try_acquire());
    client.command({"DEL", "job"});
    ASSERT_TRUE(handler.wait_called()) << "the loss is reported";
    edgelock::blocking::lock other;
    ASSERT_FALSE(other.open(options_for("job", {server.url()}, 10'000)));
    ASSERT_FALSE(other.try_acquire());
    handler.open_gate();
    ASSERT_TRUE(eventually([&] { return busy_attempts.load() > 0; }, 5s))
        << "the callback's acquire waits for the other owner";

    std::thread closer = close_on_a_thread(lock);
    EXPECT_FALSE(other.release());  // the key is free while close runs
    closer.join();
    expect_nothing_held(handler, client);
}

// "write 0 lost 1 reason expired callback 1" -> fields
std::vector<std::string> words(const std::string& line) {
    std::istringstream in(line);
    std::vector<std::string> out;
    for (std::string w; in >> w;) out.push_back(w);
    return out;
}

TEST(watchdog, a_holder_paused_beyond_the_ttl_loses_the_lock_and_its_fenced_write_is_refused) {
    redis_server server;
    redis_client client(server.port());
    edgelock::testing::spawn_options spawn;
    spawn.pipe_stdio = true;
    child_process holder(
        {EDGELOCK_LOCK_WORKER, "holder", server.url(), "job", std::to_string(ttl_ms), "resource"},
        spawn);
    const auto acquired = words(holder.read_line(10s).value_or(""));
    ASSERT_EQ(acquired.size(), 3u);
    ASSERT_EQ(acquired[0], "acquired");
    const std::int64_t first_fence = std::stoll(acquired[1]);
    ASSERT_EQ(acquired[2], "1") << "the holder's first write is accepted";

    holder.freeze();
    ASSERT_TRUE(eventually([&] { return !client.exists("job"); }, 3s))
        << "the paused holder's key expires";

    edgelock::blocking::lock second;
    auto options = options_for("job", {server.url()}, ttl_ms);
    options.fencing = true;
    ASSERT_FALSE(second.open(options));
    edgelock::blocking::hold hold;
    ASSERT_FALSE(second.acquire(2s, &hold)) << "another process takes the lock";
    EXPECT_GT(hold.fence, first_fence);
    EXPECT_EQ(fenced_write(client, "resource", hold.fence, "second"), 1);

    holder.thaw();
    holder.write_line("write");
    const std::string line = holder.read_line(10s).value_or("");
    const auto result = words(line);
    ASSERT_EQ(result.size(), 8u) << line;
    EXPECT_EQ(result[1], "0") << "the stale holder's fenced write is refused";
    EXPECT_EQ(result[3], "1") << "the holder reports lost";
    EXPECT_EQ(result[5], "expired");
    EXPECT_EQ(result[7], "1") << "the lost callback ran";
    EXPECT_EQ(client.get("resource"), "second");
    EXPECT_TRUE(second.held()) << "the stale holder's cleanup did not delete the new owner's key";

    holder.write_line("release");
    EXPECT_EQ(holder.read_line(5s).value_or(""), "release expired");
    EXPECT_TRUE(client.exists("job"));
    EXPECT_FALSE(second.release());
    holder.write_line("quit");
    EXPECT_TRUE(holder.wait_exit(5s).has_value());
}

}  // namespace
