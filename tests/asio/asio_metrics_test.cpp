// SPDX-License-Identifier: Apache-2.0
// The async client's metrics (client::metrics(), per lock and for the client) and its event
// hook (client_config::on_event) against a real redis-server: what each acquire, release,
// renewal, loss and reconnect adds; counts of removed locks stay in the client's; a fair
// waiter's handover gap runs from the release's message.
#include <gtest/gtest.h>

#include <memory>
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
using edgelock::async::client;
using edgelock::async::lock_handle;
using edgelock::session::acquire_outcome;
using edgelock::session::loss_cause;
using edgelock::session::release_outcome;
using edgelock::testing::redis_client;
using edgelock::testing::redis_server;

std::uint64_t acquires(const edgelock::session::lock_metrics& m, acquire_outcome outcome) {
    return m.acquires[static_cast<std::size_t>(outcome)];
}
std::uint64_t releases(const edgelock::session::lock_metrics& m, release_outcome outcome) {
    return m.releases[static_cast<std::size_t>(outcome)];
}

TEST(asio_metrics, acquires_and_releases_are_counted_per_lock_and_for_the_client) {
    redis_server server;
    asio::io_context io{1};
    client owner(io);
    std::vector<edgelock::lock_event> seen;
    auto config = config_for({server.url()});
    config.on_event = [&seen](const edgelock::lock_event& e) { seen.push_back(e); };
    ASSERT_FALSE(owner.open(config));
    ASSERT_FALSE(wait_ready(owner).ec);
    lock_handle first;
    lock_handle second;
    ASSERT_FALSE(owner.add_lock(lock_for("metered", 5000), first));
    ASSERT_FALSE(owner.add_lock(lock_for("metered", 5000), second));

    ASSERT_FALSE(acquire(owner, first, 0ms).ec);
    EXPECT_EQ(acquire(owner, second, 0ms).ec, errc::busy);
    EXPECT_EQ(acquire(owner, second, 60ms).ec, errc::busy);
    ASSERT_FALSE(acquire(owner, first, 0ms).ec) << "reentrant";
    ASSERT_FALSE(release(owner, first).ec);
    ASSERT_FALSE(release(owner, first).ec);

    const edgelock::session::lock_metrics a = owner.metrics(first);
    EXPECT_EQ(acquires(a, acquire_outcome::acquired), 2u);
    EXPECT_EQ(a.acquire_latency.count, 1u) << "the reentrant acquire has no latency";
    EXPECT_EQ(releases(a, release_outcome::released), 1u) << "only the one that ended the hold";
    EXPECT_EQ(a.connects, 0u) << "connections are the client's";
    const edgelock::session::lock_metrics b = owner.metrics(second);
    EXPECT_EQ(acquires(b, acquire_outcome::busy), 2u);
    EXPECT_EQ(b.acquire_wait.count, 1u);

    ASSERT_FALSE(owner.remove_lock(second));
    const edgelock::session::lock_metrics all = owner.metrics();
    EXPECT_EQ(acquires(all, acquire_outcome::busy), 2u) << "a removed lock's counts stay";
    EXPECT_EQ(all.acquired(), 2u);
    EXPECT_EQ(all.connects, 1u);
    EXPECT_EQ(owner.metrics(second).acquired(), 0u) << "a stale handle reads nothing";

    ASSERT_GE(seen.size(), 2u);
    EXPECT_EQ(seen.front().kind, edgelock::lock_event_kind::connected);
    EXPECT_EQ(seen.back().kind, edgelock::lock_event_kind::released);
    EXPECT_EQ(seen.back().lock, "metered");
    EXPECT_FALSE(seen.back().code);
}

TEST(asio_metrics, renewals_a_loss_and_a_reconnect_are_counted) {
    redis_server server;
    redis_client admin(server.port());
    asio::io_context io{1};
    client owner(io);
    ASSERT_FALSE(owner.open(config_for({server.url()})));
    ASSERT_FALSE(wait_ready(owner).ec);
    lock_handle handle;
    ASSERT_FALSE(owner.add_lock(lock_for("renewed", 300), handle));
    std::error_code lost;
    ASSERT_FALSE(owner.set_lost_handler(handle, [&lost](std::error_code ec) { lost = ec; }));
    ASSERT_FALSE(acquire(owner, handle, 0ms).ec);
    ASSERT_TRUE(run_until(
        io, [&] { return owner.metrics(handle).renewals_ok >= 2; }, 10s));
    admin.command({"DEL", "renewed"});
    ASSERT_TRUE(run_until(
        io, [&] { return static_cast<bool>(lost); }, 10s));
    EXPECT_EQ(lost, errc::token_gone);
    EXPECT_EQ(release(owner, handle).ec, errc::expired);
    edgelock::session::lock_metrics m = owner.metrics(handle);
    EXPECT_EQ(m.losses[static_cast<std::size_t>(loss_cause::token_gone)], 1u);
    EXPECT_EQ(releases(m, release_outcome::expired), 1u);

    ASSERT_FALSE(acquire(owner, handle, 0ms).ec);
    server.stop();  // the hold's renewals now fail, and it ends as expired
    ASSERT_TRUE(run_until(
        io, [&] { return lost == errc::expired; }, 10s));
    m = owner.metrics(handle);
    EXPECT_GE(m.renewal_failures, 1u);
    EXPECT_EQ(m.losses[static_cast<std::size_t>(loss_cause::expired)], 1u);
    EXPECT_EQ(release(owner, handle).ec, errc::expired);

    server.start();
    ASSERT_TRUE(run_until(
        io, [&] { return owner.metrics().reconnects >= 1; }, 10s));
    m = owner.metrics();
    EXPECT_EQ(m.failovers, 0u) << "the same server, not another master";
    EXPECT_GE(m.connects, 2u);
}

// A lease that ran out while the io_context did not run is ended by the next acquire call
// itself: that call fails with expired (a loss, counted as one) and starts nothing; after the
// release the next call starts a new hold, measured as one from its own call (not as a
// reentrant acquire), and a reentrant acquire is counted but told as no attempt.
TEST(asio_metrics, an_acquire_after_an_unnoticed_expiry_is_refused_and_the_next_is_a_new_hold) {
    redis_server server;
    asio::io_context io{1};
    client owner(io);
    std::vector<edgelock::lock_event> attempts;
    auto config = config_for({server.url()});
    config.on_event = [&attempts](const edgelock::lock_event& e) {
        if (e.kind == edgelock::lock_event_kind::attempt) attempts.push_back(e);
    };
    ASSERT_FALSE(owner.open(config));
    ASSERT_FALSE(wait_ready(owner).ec);
    lock_handle handle;
    edgelock::lock_config short_lease = lock_for("overdue", 200);
    short_lease.watchdog = false;
    ASSERT_FALSE(owner.add_lock(short_lease, handle));
    ASSERT_FALSE(acquire(owner, handle, 0ms).ec);
    ASSERT_FALSE(acquire(owner, handle, 0ms).ec) << "reentrant";
    EXPECT_EQ(attempts.size(), 1u) << "the reentrant acquire made no attempt";
    std::this_thread::sleep_for(300ms);  // the lease runs out with nothing running to see it
    EXPECT_EQ(acquire(owner, handle, 0ms).ec, errc::expired);
    EXPECT_EQ(release(owner, handle).ec, errc::expired);
    const auto fourth_call = std::chrono::steady_clock::now();
    ASSERT_FALSE(acquire(owner, handle, 0ms).ec);
    const std::int64_t fourth_call_ms = elapsed_ms(fourth_call);
    const edgelock::session::lock_metrics m = owner.metrics(handle);
    EXPECT_EQ(acquires(m, acquire_outcome::acquired), 3u);
    EXPECT_EQ(m.losses[static_cast<std::size_t>(loss_cause::expired)], 1u);
    EXPECT_EQ(m.acquire_latency.count, 2u) << "the fourth acquire started a hold of its own";
    ASSERT_EQ(attempts.size(), 2u);
    // + 1: the client's readings and this difference are each cut to the millisecond.
    EXPECT_LE(attempts.back().elapsed_ms, fourth_call_ms + 1)
        << "measured from the fourth call, not the first";
}

// The event hook is the user's code too: a slow one must not come between the lease's check
// and the acquire's handler, which hears of success only while the lease runs.
TEST(asio_metrics, a_slow_event_hook_never_makes_a_success_of_an_ended_lease) {
    redis_server server;
    asio::io_context io{1};
    client owner(io);
    auto config = config_for({server.url()});
    config.on_event = [](const edgelock::lock_event& e) {
        if (e.kind == edgelock::lock_event_kind::attempt) std::this_thread::sleep_for(400ms);
    };
    ASSERT_FALSE(owner.open(config));
    ASSERT_FALSE(wait_ready(owner).ec);
    lock_handle handle;
    edgelock::lock_config short_lease = lock_for("hooked", 300);  // shorter than the hook
    short_lease.watchdog = false;
    ASSERT_FALSE(owner.add_lock(short_lease, handle));
    bool done = false;
    std::error_code heard;
    bool held_when_heard = false;
    owner.async_acquire(handle, 0ms, [&](std::error_code ec, std::int64_t) {
        done = true;
        heard = ec;
        held_when_heard = owner.held(handle);
    });
    ASSERT_TRUE(run_until(
        io, [&] { return done; }, 3s));
    EXPECT_TRUE(heard || held_when_heard) << "success told for a lease that had already ended";
    EXPECT_FALSE(heard) << "the hook ran after the handler: " << heard.message();
}

// A handler that closes the client and opens it again: the new session's hook hears nothing
// of the old session's locks.
TEST(asio_metrics, a_hook_of_the_next_session_hears_nothing_of_the_last) {
    redis_server server;
    asio::io_context io{1};
    client owner(io);
    int first_heard = 0;
    int second_heard = 0;
    auto first = config_for({server.url()});
    first.on_event = [&](const edgelock::lock_event& e) {
        if (e.kind == edgelock::lock_event_kind::attempt) ++first_heard;
    };
    auto second = config_for({server.url()});
    second.on_event = [&](const edgelock::lock_event& e) {
        if (e.kind == edgelock::lock_event_kind::attempt) ++second_heard;
    };
    ASSERT_FALSE(owner.open(first));
    ASSERT_FALSE(wait_ready(owner).ec);
    lock_handle handle;
    ASSERT_FALSE(owner.add_lock(lock_for("reopened", 5000), handle));
    bool done = false;
    std::error_code reopened;
    owner.async_acquire(handle, 0ms, [&](std::error_code ec, std::int64_t) {
        done = true;
        EXPECT_FALSE(ec) << ec.message();
        owner.close();
        reopened = owner.open(second);
    });
    ASSERT_TRUE(run_until(
        io, [&] { return done; }, 3s));
    ASSERT_FALSE(reopened) << reopened.message();
    io.run_for(50ms);
    EXPECT_EQ(second_heard, 0) << "the old session's attempt reached the new session's hook";
    EXPECT_EQ(first_heard, 0) << "the hook heard of the hold after its session ended";
}

TEST(asio_metrics, an_acquire_ended_by_close_counts_as_cancelled) {
    redis_server server;
    asio::io_context io{1};
    client holder(io);
    client waiter(io);
    ASSERT_FALSE(holder.open(config_for({server.url()})));
    ASSERT_FALSE(waiter.open(config_for({server.url()})));
    ASSERT_FALSE(wait_ready(holder).ec);
    ASSERT_FALSE(wait_ready(waiter).ec);
    lock_handle held;
    lock_handle waiting;
    ASSERT_FALSE(holder.add_lock(lock_for("closed", 5000), held));
    ASSERT_FALSE(waiter.add_lock(lock_for("closed", 5000), waiting));
    ASSERT_FALSE(acquire(holder, held, 0ms).ec);
    auto result = std::make_shared<outcome>();
    waiter.async_acquire(waiting, 10s, [result](std::error_code ec, std::int64_t) {
        result->done = true;
        result->ec = ec;
    });
    run_for(io, 50ms);
    waiter.close();
    ASSERT_TRUE(run_until(
        io, [&] { return result->done; }, 5s));
    EXPECT_EQ(result->ec, std::errc::operation_canceled);
    EXPECT_EQ(acquires(waiter.metrics(), acquire_outcome::cancelled), 1u);
}

TEST(asio_metrics, a_fair_handover_records_its_gap_from_the_release) {
    redis_server server;
    asio::io_context io{1};
    client holder(io);
    client waiter(io);
    ASSERT_FALSE(holder.open(config_for({server.url()})));
    ASSERT_FALSE(waiter.open(config_for({server.url()})));
    ASSERT_FALSE(wait_ready(holder).ec);
    ASSERT_FALSE(wait_ready(waiter).ec);
    edgelock::lock_config fair = lock_for("handed", 20'000);
    fair.fair = true;
    fair.recheck_ms = 5000;  // the release's message hands it over, not a re-check
    lock_handle held;
    lock_handle waiting;
    ASSERT_FALSE(holder.add_lock(fair, held));
    ASSERT_FALSE(waiter.add_lock(fair, waiting));
    ASSERT_FALSE(acquire(holder, held, 0ms).ec);
    auto result = std::make_shared<outcome>();
    waiter.async_acquire(waiting, 20s, [result](std::error_code ec, std::int64_t) {
        result->done = true;
        result->ec = ec;
    });
    redis_client admin(server.port());
    ASSERT_TRUE(run_until(
        io,
        [&] {
            return admin.command({"ZCARD", "{handed}:queue"}).integer >= 1;
        },
        10s));
    run_for(io, 100ms);  // apart in time from the subscription's "look now", no release
    const auto release_started = std::chrono::steady_clock::now();
    ASSERT_FALSE(release(holder, held).ec);
    ASSERT_TRUE(run_until(
        io, [&] { return result->done; }, 10s));
    const std::int64_t bound_ms = elapsed_ms(release_started);
    ASSERT_FALSE(result->ec) << result->ec.message();
    const edgelock::session::lock_metrics m = waiter.metrics(waiting);
    EXPECT_EQ(m.handover_gap.count, 1u);
    // + 1: the client's readings and this difference are each cut to the millisecond.
    EXPECT_LE(m.handover_gap.sum_ms, bound_ms + 1) << "the gap starts at the release's message";
    EXPECT_EQ(m.acquire_wait.count, 1u);
    ASSERT_FALSE(release(waiter, waiting).ec);
}

}  // namespace
