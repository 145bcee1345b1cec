// SPDX-License-Identifier: Apache-2.0
// The async client's API without a Redis: handler storage, error codes, misuse of handles.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "asio_test_util.hpp"
#include "edgelock/async_client.hpp"
#include "edgelock/asio_handler_slot.hpp"

namespace {

using namespace edgelock::asio_tests;
using edgelock::errc;
using edgelock::transport_errc;
using edgelock::async::client;
using edgelock::async::lock_handle;
using edgelock::async::detail::handler_slot;

// Counts its live copies, so the tests see every handler destroyed exactly once.
struct tracked {
    std::shared_ptr<int> alive = std::make_shared<int>(0);
    explicit tracked(int* calls) : calls_(calls) {}
    void operator()(std::error_code) const { ++*calls_; }
    int* calls_;
};

TEST(handler_slot, completes_once_and_empties_itself) {
    int calls = 0;
    handler_slot slot;
    EXPECT_TRUE(slot.empty());
    tracked handler(&calls);
    std::weak_ptr<int> watch = handler.alive;
    slot.emplace_with_code(std::move(handler));
    EXPECT_FALSE(slot.empty());
    EXPECT_FALSE(watch.expired());
    slot.complete({});
    EXPECT_EQ(calls, 1);
    EXPECT_TRUE(slot.empty());
    EXPECT_TRUE(watch.expired()) << "the handler is destroyed after its call";
    slot.complete({});
    EXPECT_EQ(calls, 1) << "an empty slot calls nothing";
}

TEST(handler_slot, moves_and_resets_without_leaking) {
    int calls = 0;
    tracked handler(&calls);
    std::weak_ptr<int> watch = handler.alive;
    handler_slot first;
    first.emplace_with_code(std::move(handler));
    handler_slot second(std::move(first));
    EXPECT_TRUE(first.empty());
    EXPECT_FALSE(second.empty());
    second.reset();
    EXPECT_TRUE(watch.expired());
    EXPECT_EQ(calls, 0);
}

TEST(handler_slot, a_handler_may_refill_its_own_slot_while_running) {
    handler_slot slot;
    std::string log;
    slot.emplace_with_value([&](std::error_code, std::int64_t value) {
        log += "first:" + std::to_string(value) + ";";
        slot.emplace_with_value(
            [&](std::error_code, std::int64_t v) { log += "second:" + std::to_string(v); });
    });
    slot.complete({}, 7);
    slot.complete({}, 8);
    EXPECT_EQ(log, "first:7;second:8");
}

TEST(handler_slot, call_leaves_the_handler_in_place) {
    handler_slot slot;
    int calls = 0;
    slot.emplace_with_value(
        [&](std::error_code, std::int64_t value) { calls += static_cast<int>(value); });
    slot.call({}, 1);
    slot.call({}, 10);
    EXPECT_EQ(calls, 11);
    EXPECT_FALSE(slot.empty());
    handler_slot empty;
    empty.call({});  // calls nothing
    EXPECT_TRUE(empty.empty());
}

TEST(asio_client_api, every_misuse_completes_with_its_code_and_never_inside_the_call) {
    asio::io_context io{1};
    client owner(io);
    lock_handle nothing;
    bool called_inside = true;
    std::error_code not_open;
    owner.async_acquire(nothing, 0ms, [&](std::error_code ec, std::int64_t) { not_open = ec; });
    called_inside = bool(not_open);
    EXPECT_FALSE(called_inside) << "completions are posted, never run inside the initiating call";
    run_until(
        io, [&] { return bool(not_open); }, 1s);
    EXPECT_EQ(not_open, transport_errc::not_open);
    EXPECT_EQ(wait_ready(owner).ec, transport_errc::not_open);

    // A port nothing listens on: the client works, connections just fail.
    auto config = config_for({"redis://127.0.0.1:1"});
    config.locks_max = 2;
    ASSERT_FALSE(owner.open(config));
    lock_handle a;
    lock_handle b;
    lock_handle c;
    ASSERT_FALSE(owner.add_lock(lock_for("a"), a));
    ASSERT_FALSE(owner.add_lock(lock_for("b"), b));
    EXPECT_EQ(owner.add_lock(lock_for("c"), c), transport_errc::table_full);
    ASSERT_FALSE(owner.remove_lock(b));
    edgelock::lock_config waits = lock_for("b", 10'000);
    waits.replicas_to_wait = 1;
    waits.replica_wait_ms = 500;  // the command timeout of config_for()
    EXPECT_EQ(owner.add_lock(waits, b), errc::invalid_config)
        << "WAIT would outlast the command timeout";
    waits.replica_wait_ms = 400;
    ASSERT_FALSE(owner.add_lock(waits, b));
    EXPECT_EQ(owner.status(a).state, edgelock::lock_state::idle);

    EXPECT_EQ(acquire(owner, nothing, 0ms).ec, transport_errc::invalid_handle);
    EXPECT_EQ(release(owner, a).ec, errc::not_held);
    EXPECT_EQ(acquire(owner, a, -1ms).ec, errc::invalid_wait);

    std::error_code first;
    std::error_code second;
    owner.async_acquire(a, 200ms, [&](std::error_code ec, std::int64_t) { first = ec; });
    owner.async_acquire(a, 0ms, [&](std::error_code ec, std::int64_t) { second = ec; });
    EXPECT_EQ(owner.remove_lock(a), transport_errc::lock_busy);
    run_until(
        io, [&] { return first && second; }, 2s);
    EXPECT_EQ(second, transport_errc::operation_in_progress);
    EXPECT_EQ(first, std::errc::connection_refused)
        << "the last attempt's cause, no quorum of the one instance, is that instance's failure: "
        << first.message();
    EXPECT_EQ(owner.status(a).last_cause, errc::no_quorum);

    ASSERT_FALSE(owner.remove_lock(a));
    EXPECT_EQ(owner.remove_lock(a), transport_errc::invalid_handle) << "stale handle";
    EXPECT_EQ(acquire(owner, a, 0ms).ec, transport_errc::invalid_handle);
    ASSERT_FALSE(owner.add_lock(lock_for("c"), c)) << "the freed slot is reused";
    EXPECT_EQ(c.index, a.index);
    EXPECT_NE(c.generation, a.generation);

    // close() aborts what is pending; the client opens again afterwards.
    std::error_code aborted;
    owner.async_acquire(b, 5s, [&](std::error_code ec, std::int64_t) { aborted = ec; });
    owner.close();
    run_until(
        io, [&] { return bool(aborted); }, 1s);
    EXPECT_EQ(aborted, std::errc::operation_canceled);
    EXPECT_FALSE(owner.held(b));
    EXPECT_FALSE(owner.open(config));
}

// Fair waiting lines up in one Redis: a Redlock client refuses a fair lock with its own code.
TEST(asio_client_api, a_fair_lock_needs_a_single_instance) {
    asio::io_context io{1};
    client redlock(io);
    ASSERT_FALSE(redlock.open(
        config_for({"redis://127.0.0.1:1", "redis://127.0.0.1:2", "redis://127.0.0.1:3"})));
    edgelock::lock_config fair = lock_for("fair", 10'000);
    fair.fair = true;
    lock_handle handle;
    EXPECT_EQ(redlock.add_lock(fair, handle), errc::invalid_instances);
    EXPECT_FALSE(redlock.add_lock(lock_for("plain", 10'000), handle))
        << "the same lock without fair";

    client single(io);
    auto config = config_for({"redis://127.0.0.1:1"});
    ASSERT_FALSE(single.open(config));
    edgelock::lock_config short_entries = fair;
    short_entries.recheck_ms = 1000;
    short_entries.queue_entry_ttl_ms = 1500;  // not above recheck + the attempt timeout (1 s)
    EXPECT_EQ(single.add_lock(short_entries, handle), errc::invalid_config);
    ASSERT_FALSE(single.add_lock(fair, handle));

    // Nothing to connect to: the wait ends with the instance's failure, the subscriber's
    // attempts meanwhile fail nothing; closed and opened again, a fair lock is added anew.
    EXPECT_EQ(acquire(single, handle, 300ms).ec, std::errc::connection_refused);
    single.close();
    ASSERT_FALSE(single.open(config));
    ASSERT_FALSE(single.add_lock(fair, handle));
    ASSERT_FALSE(single.add_lock(fair, handle)) << "two fair locks of one name share a channel";
    EXPECT_EQ(acquire(single, handle, 100ms).ec, std::errc::connection_refused);
}

}  // namespace
