// SPDX-License-Identifier: Apache-2.0
// The async client's lock table against a real redis-server: what a slot carries over when a
// lock is removed and another added, and what a handle names across close() and open().
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "asio_test_util.hpp"
#include "edgelock/async_client.hpp"
#include "edgelock/assert.hpp"
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

// Ends a death-test child: gtest assertions do not report from there, an exit code does.
[[noreturn]] void child_exit(int code, const char* why) {
    std::fprintf(stderr, "%s\n", why);
    std::fflush(stderr);
    std::_Exit(code);
}

// Says which invariant broke before aborting, so the death test shows it.
void print_and_abort(const char* expression, const char* file, int line) {
    std::fprintf(stderr, "EDGELOCK_ASSERT(%s) failed at %s:%d\n", expression, file, line);
    std::fflush(stderr);
    std::abort();
}

// Ten add / acquire / release (cancelling it) / remove cycles on a one-slot table while the
// server answers nothing: every cancelled acquire leaves its SET and clean-up in flight.
[[noreturn]] void cycle_one_slot_against_a_frozen_server(redis_server& server) {
    edgelock::set_assert_handler(print_and_abort);
    asio::io_context io{1};
    client owner(io);
    auto config = config_for({server.url()});
    config.locks_max = 1;
    config.command_timeout_ms = 5000;
    if (owner.open(config) || wait_ready(owner).ec) child_exit(2, "not connected");
    server.freeze();
    int refused = 0;
    for (int cycle = 0; cycle < 10; ++cycle) {
        lock_handle handle;
        const std::error_code added = owner.add_lock(lock_for("slow"), handle);
        if (added == transport_errc::table_full) {
            ++refused;
            run_for(io, 10ms);
            continue;
        }
        if (added) child_exit(3, "add_lock failed otherwise than table_full");
        owner.async_acquire(handle, 0ms, [](std::error_code, std::int64_t) {});
        owner.async_release(handle, [](std::error_code) {});
        run_for(io, 10ms);
        if (owner.remove_lock(handle)) child_exit(4, "remove_lock refused an idle lock");
        std::fprintf(stderr, "cycle %d: added and removed\n", cycle + 1);
    }
    if (refused == 0) child_exit(5, "the slot was reused while its requests were in flight");
    server.thaw();
    lock_handle handle;
    if (!run_until(
            io, [&] { return !owner.add_lock(lock_for("slow"), handle); }, 5s)) {
        child_exit(6, "the slot never came back after the server answered");
    }
    if (acquire(owner, handle, 0ms).ec || release(owner, handle).ec)
        child_exit(7, "no lock afterwards");
    child_exit(0, "ok");
}

TEST(asio_lock_table_slow_server, a_slow_server_never_overflows_the_requests_in_flight) {
    redis_server server;
    EXPECT_EXIT(cycle_one_slot_against_a_frozen_server(server), ::testing::ExitedWithCode(0), "");
    server.thaw();  // in case the child died while the server was frozen
}

class asio_lock_table : public ::testing::Test {
protected:
    void SetUp() override {
        config.locks_max = 1;  // every lock takes the same slot
        ASSERT_FALSE(owner.open(config));
        ASSERT_FALSE(wait_ready(owner).ec);
    }

    lock_handle add(std::string_view name) {
        lock_handle handle;
        EXPECT_TRUE(run_until(
            io, [&] { return !owner.add_lock(lock_for(name, 900), handle); }, 2s))
            << "the slot is free once the replies to its last requests arrived";
        return handle;
    }

    redis_server server;
    redis_client admin{server.port()};
    asio::io_context io{1};
    client owner{io};
    edgelock::async::client_config config = config_for({server.url()});
};

TEST_F(asio_lock_table, a_lost_handler_that_removes_its_lock_is_not_inherited_by_the_next) {
    const lock_handle first = add("table:first");
    int first_calls = 0;
    std::error_code removed = transport_errc::lock_busy;
    ASSERT_FALSE(owner.set_lost_handler(first, [&, first](std::error_code) {
        ++first_calls;
        removed = owner.remove_lock(first);
    }));
    ASSERT_FALSE(acquire(owner, first, 0ms).ec);
    admin.command({"DEL", "table:first"});
    ASSERT_TRUE(run_until(
        io, [&] { return first_calls == 1; }, 2s));
    EXPECT_FALSE(removed) << removed.message();

    const lock_handle second = add("table:second");  // no lost handler of its own
    EXPECT_EQ(second.index, first.index) << "the same slot";
    ASSERT_FALSE(acquire(owner, second, 0ms).ec);
    admin.command({"DEL", "table:second"});
    ASSERT_TRUE(run_until(
        io, [&] { return owner.status(second).state == lock_state::lost; }, 2s));
    run_for(io, 50ms);
    EXPECT_EQ(first_calls, 1) << "the first lock's handler ran for the second lock";
}

TEST_F(asio_lock_table, handles_from_before_close_name_nothing_after_open) {
    const lock_handle old_lock = add("old:lock");
    ASSERT_FALSE(acquire(owner, old_lock, 0ms).ec);
    lock_handle new_lock;
    {
        scoped_lock guard(owner, old_lock);
        owner.close();
        ASSERT_FALSE(owner.open(config));
        const outcome ready = wait_ready(owner);
        ASSERT_FALSE(ready.ec) << ready.ec.message();
        new_lock = add("new:lock");
        ASSERT_FALSE(acquire(owner, new_lock, 0ms).ec);
        EXPECT_EQ(owner.status(old_lock).state, lock_state::unconfigured) << "a stale handle";
    }  // the guard releases the old handle
    run_for(io, 100ms);
    EXPECT_TRUE(owner.held(new_lock)) << "the old guard released the new lock";
    EXPECT_TRUE(admin.exists("new:lock"));
    EXPECT_FALSE(release(owner, new_lock).ec);
}

}  // namespace
