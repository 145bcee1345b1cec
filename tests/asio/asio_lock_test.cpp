// SPDX-License-Identifier: Apache-2.0
// The async client against one real redis-server: locking, contention, many locks on one
// connection, the watchdog, the lost callback, the RAII guard, the script cache, and time
// spent in handlers.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "asio_test_util.hpp"
#include "edgelock/async_client.hpp"
#include "edgelock/testing/redis_client.hpp"
#include "edgelock/testing/redis_process.hpp"

namespace {

using namespace edgelock::asio_tests;
using edgelock::errc;
using edgelock::lock_state;
using edgelock::transport_errc;
using edgelock::async::client;
using edgelock::async::lock_handle;
using edgelock::async::scoped_lock;
using edgelock::testing::redis_client;
using edgelock::testing::redis_server;

bool is_token(const std::string& value) {
    if (value.size() != 32) return false;
    for (char c : value) {
        if ((c < '0' || c > '9') && (c < 'a' || c > 'f')) return false;
    }
    return true;
}

class asio_lock : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_FALSE(owner.open(config_for({server.url()})));
        ASSERT_FALSE(wait_ready(owner).ec);
    }

    lock_handle add(std::string_view name, std::int64_t ttl_ms = 1000) {
        lock_handle handle;
        EXPECT_FALSE(owner.add_lock(lock_for(name, ttl_ms), handle));
        return handle;
    }

    redis_server server;
    redis_client admin{server.port()};
    asio::io_context io{1};
    client owner{io};
};

TEST_F(asio_lock, acquires_with_a_fresh_token_each_time_and_releases) {
    const lock_handle handle = add("plain", 2000);
    EXPECT_EQ(owner.instance_endpoint(0), "127.0.0.1:" + std::to_string(server.port()));
    EXPECT_TRUE(owner.instance_connected(0));

    const auto start = std::chrono::steady_clock::now();
    const outcome first = acquire(owner, handle, 0ms);
    const auto end = std::chrono::steady_clock::now();
    ASSERT_TRUE(first.done);
    ASSERT_FALSE(first.ec) << first.ec.message();
    EXPECT_EQ(first.fence, 0) << "no fencing configured";
    const edgelock::async::lock_status held = owner.status(handle);
    EXPECT_TRUE(held.held);
    EXPECT_EQ(held.state, lock_state::held);
    // The client reads its clock (whole milliseconds) between `start` and `end`.
    EXPECT_GE(held.valid_until, start + 2000ms - 22ms - 1ms);
    EXPECT_LE(held.valid_until, end + 2000ms - 22ms) << "validity counts from before the reply";
    const std::string token = admin.get("plain");
    EXPECT_TRUE(is_token(token)) << token;
    EXPECT_GT(admin.pttl("plain"), 1000);

    const outcome released = release(owner, handle);
    ASSERT_TRUE(released.done);
    EXPECT_FALSE(released.ec) << released.ec.message();
    EXPECT_FALSE(admin.exists("plain"));
    EXPECT_FALSE(owner.held(handle));
    EXPECT_EQ(release(owner, handle).ec, errc::not_held);

    ASSERT_FALSE(acquire(owner, handle, 0ms).ec);
    EXPECT_NE(admin.get("plain"), token) << "every acquire draws a new token";
    EXPECT_FALSE(release(owner, handle).ec);
}

TEST_F(asio_lock, two_clients_exclude_each_other_and_the_waiter_gets_it_after_release) {
    client other(io);
    ASSERT_FALSE(other.open(config_for({server.url()})));
    ASSERT_FALSE(wait_ready(other).ec);
    const lock_handle mine = add("shared");
    lock_handle theirs;
    ASSERT_FALSE(other.add_lock(lock_for("shared"), theirs));

    ASSERT_FALSE(acquire(owner, mine, 0ms).ec);
    EXPECT_EQ(acquire(other, theirs, 0ms).ec, errc::busy);
    EXPECT_FALSE(other.held(theirs));

    auto waiter = std::make_shared<outcome>();
    other.async_acquire(theirs, 5s, [waiter](std::error_code ec, std::int64_t) {
        waiter->done = true;
        waiter->ec = ec;
    });
    run_for(io, 200ms);
    EXPECT_FALSE(waiter->done) << "still held by the first client";
    ASSERT_FALSE(release(owner, mine).ec);
    ASSERT_TRUE(run_until(
        io, [&] { return waiter->done; }, 2s));
    EXPECT_FALSE(waiter->ec) << waiter->ec.message();
    EXPECT_TRUE(other.held(theirs));
    EXPECT_EQ(acquire(owner, mine, 0ms).ec, errc::busy) << "now the other way round";
    EXPECT_FALSE(release(other, theirs).ec);
}

TEST_F(asio_lock, a_release_while_acquiring_cancels_the_acquire) {
    client other(io);
    ASSERT_FALSE(other.open(config_for({server.url()})));
    const lock_handle mine = add("cancel");
    lock_handle theirs;
    ASSERT_FALSE(other.add_lock(lock_for("cancel"), theirs));
    ASSERT_FALSE(acquire(owner, mine, 0ms).ec);

    std::vector<std::string> order;
    other.async_acquire(theirs, 5s, [&](std::error_code ec, std::int64_t) {
        order.push_back("acquire:" +
                        std::string(ec == errc::cancelled ? "cancelled" : ec.message()));
    });
    run_for(io, 100ms);
    other.async_release(theirs,
                        [&](std::error_code ec) { order.push_back("release:" + ec.message()); });
    ASSERT_TRUE(run_until(
        io, [&] { return order.size() == 2; }, 2s));
    EXPECT_EQ(order, (std::vector<std::string>{"acquire:cancelled", "release:Success"}));
    EXPECT_TRUE(owner.held(mine)) << "the first owner is untouched";
    EXPECT_FALSE(release(owner, mine).ec);
}

TEST_F(asio_lock, reentrant_acquires_count_holds_and_only_the_last_release_deletes) {
    edgelock::lock_config config = lock_for("nested", 2000);
    config.fencing = true;
    lock_handle handle;
    ASSERT_FALSE(owner.add_lock(config, handle));
    const outcome first = acquire(owner, handle, 0ms);
    ASSERT_FALSE(first.ec);
    EXPECT_GE(first.fence, 1);
    const outcome second = acquire(owner, handle, 0ms);
    ASSERT_FALSE(second.ec);
    EXPECT_EQ(second.fence, first.fence);
    EXPECT_EQ(owner.status(handle).hold_count, 2);

    EXPECT_FALSE(release(owner, handle).ec);
    EXPECT_TRUE(admin.exists("nested")) << "one hold left";
    EXPECT_FALSE(release(owner, handle).ec);
    EXPECT_FALSE(admin.exists("nested"));
    ASSERT_FALSE(acquire(owner, handle, 0ms).ec);
    EXPECT_GT(owner.status(handle).fence, first.fence) << "fence tokens increase";
    EXPECT_FALSE(release(owner, handle).ec);
}

// The exact token near the counter's end, then a refusal that names the cause at once.
TEST_F(asio_lock, the_fence_counter_ends_at_2_pow_63_minus_1_with_fence_exhausted) {
    edgelock::lock_config config = lock_for("last", 2000);
    config.fencing = true;
    lock_handle handle;
    ASSERT_FALSE(owner.add_lock(config, handle));
    admin.set("{last}:fence", "9223372036854775806");
    const outcome last = acquire(owner, handle, 0ms);
    ASSERT_FALSE(last.ec);
    EXPECT_EQ(last.fence, 9223372036854775807);
    EXPECT_FALSE(release(owner, handle).ec);
    const outcome refused = acquire(owner, handle, 5s);
    EXPECT_EQ(refused.ec, errc::fence_exhausted) << refused.ec.message();
    EXPECT_FALSE(admin.exists("last"));
}

TEST_F(asio_lock, a_thousand_locks_share_one_pipelined_connection) {
    client many(io);
    auto config = config_for({server.url()});
    config.locks_max = 1000;
    ASSERT_FALSE(many.open(config));
    ASSERT_FALSE(wait_ready(many).ec);
    const long long connections_before =
        std::stoll(admin.info_field("stats", "total_connections_received"));

    std::vector<std::string> names;
    std::vector<lock_handle> handles(1000);
    for (int i = 0; i < 1000; ++i) names.push_back("many:" + std::to_string(i));
    for (int i = 0; i < 1000; ++i)
        ASSERT_FALSE(many.add_lock(lock_for(names[i], 10'000), handles[i])) << i;
    lock_handle extra;
    EXPECT_EQ(many.add_lock(lock_for("one-too-many"), extra), edgelock::transport_errc::table_full);

    int acquired = 0;
    int failed = 0;
    for (const lock_handle& h : handles) {
        many.async_acquire(h, 0ms,
                           [&](std::error_code ec, std::int64_t) { ++(ec ? failed : acquired); });
    }
    ASSERT_TRUE(run_until(
        io, [&] { return acquired + failed == 1000; }, 10s));
    EXPECT_EQ(acquired, 1000);
    EXPECT_EQ(admin.command({"DBSIZE"}).integer, 1000);
    EXPECT_EQ(std::stoll(admin.info_field("stats", "total_connections_received")),
              connections_before)
        << "no new connection: every lock used the one already open";

    int released = 0;
    for (const lock_handle& h : handles) {
        many.async_release(h, [&](std::error_code ec) { released += ec ? 0 : 1; });
    }
    ASSERT_TRUE(run_until(
        io, [&] { return released == 1000; }, 10s));
    EXPECT_EQ(admin.command({"DBSIZE"}).integer, 0);
}

TEST_F(asio_lock, the_watchdog_keeps_the_key_for_three_ttls) {
    const lock_handle handle = add("watched", 900);
    ASSERT_FALSE(acquire(owner, handle, 0ms).ec);
    const auto start = std::chrono::steady_clock::now();
    while (elapsed_ms(start) < 3 * 900) {
        run_for(io, 20ms);
        ASSERT_GT(admin.pttl("watched"), 0) << "at " << elapsed_ms(start) << " ms";
    }
    EXPECT_TRUE(owner.held(handle));
    EXPECT_GE(owner.status(handle).renewals, 6u) << "renewals every ttl/3";
    EXPECT_FALSE(release(owner, handle).ec);
    EXPECT_FALSE(admin.exists("watched"));
}

TEST_F(asio_lock, without_the_watchdog_the_key_ends_with_its_ttl) {
    edgelock::lock_config config = lock_for("unwatched", 300);
    config.watchdog = false;
    lock_handle handle;
    ASSERT_FALSE(owner.add_lock(config, handle));
    bool lost = false;
    ASSERT_FALSE(
        owner.set_lost_handler(handle, [&](std::error_code ec) { lost = ec == errc::expired; }));
    ASSERT_FALSE(acquire(owner, handle, 0ms).ec);
    EXPECT_TRUE(run_until(
        io, [&] { return lost; }, 1s))
        << "the lease ends without renewal";
    EXPECT_TRUE(edgelock::testing::eventually([&] { return !admin.exists("unwatched"); }, 1s));
    EXPECT_EQ(release(owner, handle).ec, errc::expired);
}

TEST_F(asio_lock, the_lost_callback_fires_when_the_key_is_deleted_behind_our_back) {
    const lock_handle handle = add("stolen", 900);
    std::vector<std::error_code> lost;
    ASSERT_FALSE(owner.set_lost_handler(handle, [&](std::error_code ec) { lost.push_back(ec); }));
    ASSERT_FALSE(acquire(owner, handle, 0ms).ec);
    admin.command({"DEL", "stolen"});
    const auto start = std::chrono::steady_clock::now();
    ASSERT_TRUE(run_until(
        io, [&] { return !lost.empty(); }, 2s));
    EXPECT_EQ(lost[0], errc::token_gone);
    EXPECT_LT(elapsed_ms(start), 900)
        << "noticed at the next renewal (every 300 ms), within the lease";
    EXPECT_FALSE(owner.held(handle));
    EXPECT_EQ(owner.status(handle).state, lock_state::lost);
    EXPECT_EQ(release(owner, handle).ec, errc::expired);

    // Someone else's token in the key is the same story, and the handler stays installed.
    ASSERT_FALSE(acquire(owner, handle, 0ms).ec);
    admin.set("stolen", "someone-else");
    ASSERT_TRUE(run_until(
        io, [&] { return lost.size() == 2; }, 2s));
    EXPECT_EQ(lost[1], errc::token_gone);
    EXPECT_EQ(admin.get("stolen"), "someone-else") << "never deletes another owner's key";
    EXPECT_EQ(release(owner, handle).ec, errc::expired);
}

TEST_F(asio_lock, the_scoped_lock_releases_on_scope_exit) {
    const lock_handle handle = add("guarded");
    ASSERT_FALSE(acquire(owner, handle, 0ms).ec);
    {
        scoped_lock outer;
        {
            scoped_lock guard(owner, handle);
            EXPECT_TRUE(guard.owns());
            outer = std::move(guard);
            EXPECT_FALSE(guard.owns());
        }
        EXPECT_TRUE(admin.exists("guarded")) << "ownership moved out, nothing released yet";
    }
    // Redis deletes the key before the client reads the reply: wait for both.
    ASSERT_TRUE(run_until(
        io,
        [&] { return !admin.exists("guarded") && owner.status(handle).state == lock_state::idle; },
        2s));

    ASSERT_FALSE(acquire(owner, handle, 0ms).ec);
    {
        scoped_lock guard(owner, handle);
        guard.dismiss();
    }
    run_for(io, 50ms);
    EXPECT_TRUE(owner.held(handle)) << "dismissed: still held";
    EXPECT_FALSE(release(owner, handle).ec);
    {
        scoped_lock stale(owner, handle);  // already released: the guard's release is a no-op
    }
    run_for(io, 20ms);
    EXPECT_EQ(owner.status(handle).state, lock_state::idle);
}

TEST_F(asio_lock, script_flush_falls_back_to_eval_and_locking_goes_on) {
    const lock_handle handle = add("flushed");
    ASSERT_FALSE(acquire(owner, handle, 0ms).ec);
    ASSERT_FALSE(release(owner, handle).ec);
    admin.command({"SCRIPT", "FLUSH"});
    admin.command({"CONFIG", "RESETSTAT"});
    ASSERT_FALSE(acquire(owner, handle, 0ms).ec) << "SET NX PX GET: no script needed";
    EXPECT_EQ(admin.info_field("commandstats", "cmdstat_eval"), "");
    EXPECT_TRUE(admin.exists("flushed"));
    ASSERT_FALSE(release(owner, handle).ec) << "NOSCRIPT, then EVAL";
    EXPECT_NE(admin.info_field("commandstats", "cmdstat_eval"), "") << "the script text was sent";
    EXPECT_FALSE(admin.exists("flushed"));
}

TEST_F(asio_lock, a_restarted_server_is_reconnected_and_gets_the_scripts_again) {
    admin.command({"CONFIG", "RESETSTAT"});
    const lock_handle handle = add("restarted");
    ASSERT_FALSE(acquire(owner, handle, 0ms).ec);
    ASSERT_FALSE(release(owner, handle).ec);
    server.restart();
    const outcome again = acquire(owner, handle, 3s);
    ASSERT_FALSE(again.ec) << again.ec.message();
    redis_client fresh(server.port());
    EXPECT_TRUE(fresh.exists("restarted"));
    EXPECT_FALSE(release(owner, handle).ec);
    EXPECT_EQ(fresh.info_field("commandstats", "cmdstat_eval"), "")
        << "the reconnect loaded the scripts: no NOSCRIPT, no EVAL";
    EXPECT_NE(fresh.info_field("commandstats", "cmdstat_evalsha"), "");
}

// ---- time spent in handlers, and operations that meet ---------------------------------

edgelock::lock_config unwatched(std::string_view name) {
    edgelock::lock_config config = lock_for(name, 300);
    config.watchdog = false;
    config.attempt_timeout_ms = 150;
    return config;
}

// What a handler saw when it ran.
struct seen {
    bool done = false;
    std::error_code ec;
    bool held = false;
};

TEST_F(asio_lock, a_reply_read_with_others_counts_the_time_their_handlers_took) {
    lock_handle first;
    lock_handle second;
    ASSERT_FALSE(owner.add_lock(unwatched("batch:first"), first));
    ASSERT_FALSE(owner.add_lock(unwatched("batch:second"), second));
    seen a;
    seen b;
    // Both requests wait in the frozen server's socket, so both replies come in one read.
    server.freeze();
    owner.async_acquire(first, 0ms, [&](std::error_code ec, std::int64_t) {
        a = {true, ec, owner.held(first)};
        std::this_thread::sleep_for(400ms);  // longer than the 300 ms lease
    });
    owner.async_acquire(second, 0ms, [&](std::error_code ec, std::int64_t) {
        b = {true, ec, owner.held(second)};
    });
    server.thaw();
    ASSERT_TRUE(run_until(
        io, [&] { return b.done; }, 3s));
    ASSERT_FALSE(a.ec) << a.ec.message();
    EXPECT_TRUE(a.held);
    EXPECT_TRUE(b.ec || b.held) << "success reported for a lease that had already ended";
    EXPECT_EQ(b.ec, errc::validity_expired) << b.ec.message();
}

TEST_F(asio_lock, a_reentrant_acquire_delivered_after_the_lease_ended_fails) {
    lock_handle handle;
    ASSERT_FALSE(owner.add_lock(unwatched("reentrant:late"), handle));
    std::vector<std::error_code> lost;
    ASSERT_FALSE(owner.set_lost_handler(handle, [&](std::error_code ec) { lost.push_back(ec); }));
    ASSERT_FALSE(acquire(owner, handle, 0ms).ec);
    seen again;
    owner.async_acquire(handle, 0ms, [&](std::error_code ec, std::int64_t) {
        again = {true, ec, owner.held(handle)};
    });
    std::this_thread::sleep_for(400ms);  // the io_context does not run: the lease ends first
    ASSERT_TRUE(run_until(
        io, [&] { return again.done; }, 2s));
    EXPECT_TRUE(again.ec || again.held) << "success reported for a lease that had already ended";
    EXPECT_EQ(again.ec, errc::validity_expired) << again.ec.message();
    ASSERT_TRUE(run_until(
        io, [&] { return !lost.empty(); }, 2s))
        << "the first hold ended: lost";
    EXPECT_EQ(lost[0], errc::expired);
    EXPECT_EQ(release(owner, handle).ec, errc::expired);
}

// The call itself comes after the lease ended (the io_context did not run, so no timer saw
// it): the acquire nests in a hold that is gone. The lost handler hears the loss first, the
// acquire fails with expired, no new hold starts, and the key is deleted.
TEST_F(asio_lock, a_reentrant_acquire_called_after_the_lease_ended_loses_the_hold) {
    lock_handle handle;
    ASSERT_FALSE(owner.add_lock(unwatched("reentrant:over"), handle));
    std::vector<std::string> order;
    ASSERT_FALSE(owner.set_lost_handler(handle, [&](std::error_code ec) {
        order.push_back(std::string("lost ") + (ec == errc::expired ? "expired" : ec.message()));
    }));
    ASSERT_FALSE(acquire(owner, handle, 0ms).ec);
    std::this_thread::sleep_for(400ms);  // the lease (300 ms) ends unseen
    seen again;
    owner.async_acquire(handle, 0ms, [&](std::error_code ec, std::int64_t) {
        order.push_back("acquire");
        again = {true, ec, owner.held(handle)};
    });
    ASSERT_TRUE(run_until(
        io, [&] { return again.done; }, 2s));
    EXPECT_EQ(again.ec, errc::expired) << "a new hold took the lost one's place";
    EXPECT_FALSE(again.held);
    EXPECT_EQ(order, (std::vector<std::string>{"lost expired", "acquire"}));
    EXPECT_EQ(owner.status(handle).state, lock_state::lost);
    EXPECT_EQ(release(owner, handle).ec, errc::expired) << "release() reports the loss";
    EXPECT_FALSE(acquire(owner, handle, 0ms).ec) << "a new acquire once released";
    EXPECT_FALSE(release(owner, handle).ec);
}

// Without a lost handler the caller hears of a loss only from release(): until then an
// acquire (a reentrant one, as here) completes with expired and starts no hold.
TEST_F(asio_lock, without_a_lost_handler_an_acquire_after_a_loss_fails_until_released) {
    const lock_handle handle = add("unheard", 600);
    ASSERT_FALSE(acquire(owner, handle, 0ms).ec);
    admin.command({"DEL", "unheard"});
    ASSERT_TRUE(run_until(
        io, [&] { return owner.status(handle).state == lock_state::lost; }, 3s))
        << "the renewal finds the key gone";
    EXPECT_EQ(acquire(owner, handle, 0ms).ec, errc::expired)
        << "a new hold took the place of one whose loss was never heard";
    EXPECT_FALSE(admin.exists("unheard"));
    EXPECT_EQ(release(owner, handle).ec, errc::expired);
    EXPECT_FALSE(acquire(owner, handle, 0ms).ec) << "a new hold once release() reported it";
    EXPECT_TRUE(admin.exists("unheard"));
    EXPECT_FALSE(release(owner, handle).ec);
}

TEST_F(asio_lock, an_acquire_while_the_release_runs_is_an_operation_in_progress) {
    const lock_handle handle = add("mid-release");
    ASSERT_FALSE(acquire(owner, handle, 0ms).ec);
    outcome released;
    owner.async_release(handle, [&](std::error_code ec) { released = {true, ec, 0}; });
    EXPECT_EQ(owner.status(handle).state, lock_state::releasing);
    EXPECT_EQ(acquire(owner, handle, 0ms).ec, transport_errc::operation_in_progress);
    ASSERT_TRUE(run_until(
        io, [&] { return released.done; }, 2s));
    EXPECT_FALSE(released.ec);
    EXPECT_FALSE(acquire(owner, handle, 0ms).ec) << "allowed again once released";
    EXPECT_FALSE(release(owner, handle).ec);
}

TEST_F(asio_lock, a_release_after_the_attempt_ran_out_completes_after_the_acquire) {
    const lock_handle handle = add("ran-out");  // attempts time out after 100 ms
    std::vector<std::string> order;
    std::error_code acquired;
    std::error_code released;
    server.freeze();
    owner.async_acquire(handle, 0ms, [&](std::error_code ec, std::int64_t) {
        order.push_back("acquire");
        acquired = ec;
    });
    std::this_thread::sleep_for(300ms);  // the attempt's deadline passes before its timer runs
    owner.async_release(handle, [&](std::error_code ec) {
        order.push_back("release");
        released = ec;
    });
    const bool both = run_until(
        io, [&] { return order.size() == 2; }, 2s);
    server.thaw();
    ASSERT_TRUE(both);
    EXPECT_EQ(order, (std::vector<std::string>{"acquire", "release"}));
    EXPECT_TRUE(acquired) << "no reply came";
    EXPECT_NE(acquired, errc::cancelled) << "the attempt had ended before the release";
    EXPECT_EQ(released, errc::not_held);
}

}  // namespace

namespace {

// The restart guard through the async client: a fresh server without AOF keeps the lock out
// until its start plus ttl + drift; the acquire says so and status() says until when, and a
// wait that reaches it succeeds no earlier.
TEST(asio_restart_guard, a_fresh_volatile_server_is_waited_out) {
    redis_server fresh({}, edgelock::testing::persistence::volatile_);
    asio::io_context io{1};
    client owner{io};
    ASSERT_FALSE(owner.open(config_for({fresh.url()})));
    ASSERT_FALSE(wait_ready(owner).ec);
    lock_handle handle;
    ASSERT_FALSE(owner.add_lock(lock_for("guarded", 1500), handle));
    const auto before = std::chrono::steady_clock::now();
    const outcome refused = acquire(owner, handle, 0ms);
    ASSERT_TRUE(refused.done);
    EXPECT_EQ(refused.ec, errc::restart_guard) << refused.ec.message();
    const edgelock::async::lock_status status = owner.status(handle);
    EXPECT_EQ(status.last_cause, errc::restart_guard);
    EXPECT_GE(status.guard_until, before + 1500ms - 1000ms)
        << "the connect came before the acquire";
    EXPECT_LE(status.guard_until, std::chrono::steady_clock::now() + 1517ms);

    const outcome waited = acquire(owner, handle, 5s);
    ASSERT_TRUE(waited.done);
    EXPECT_FALSE(waited.ec) << waited.ec.message();
    EXPECT_GE(std::chrono::steady_clock::now(), status.guard_until);
    EXPECT_FALSE(release(owner, handle).ec);
}

TEST(asio_restart_guard, off_in_the_client_config_reads_nothing_and_guards_nothing) {
    redis_server fresh({}, edgelock::testing::persistence::volatile_);
    asio::io_context io{1};
    client owner{io};
    edgelock::async::client_config config = config_for({fresh.url()});
    config.restart_guard = false;
    ASSERT_FALSE(owner.open(config));
    lock_handle handle;
    ASSERT_FALSE(owner.add_lock(lock_for("unguarded", 1500), handle));
    const outcome taken = acquire(owner, handle, 2s);
    ASSERT_TRUE(taken.done);
    EXPECT_FALSE(taken.ec) << taken.ec.message();
    EXPECT_FALSE(release(owner, handle).ec);
}

}  // namespace
