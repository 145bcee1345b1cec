// SPDX-License-Identifier: Apache-2.0
// Sentinel: what only the async client has (its readiness, its instance endpoint, fair waiting
// through its subscriber). What happens to held locks across a failover is the same for both
// clients and is run through both in tests/redis/transport_table_test.cpp
// (transport_sentinel.a_failover_keeps_replicated_holds_and_loses_expired_or_missing_ones).
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>

#include "asio_test_util.hpp"
#include "edgelock/async_client.hpp"
#include "edgelock/testing/redis_client.hpp"
#include "edgelock/testing/redis_process.hpp"
#include "edgelock/testing/scripted_server.hpp"

namespace {

using namespace edgelock::asio_tests;
using edgelock::errc;
using edgelock::async::client;
using edgelock::async::client_config;
using edgelock::async::lock_handle;
using edgelock::testing::redis_client;
using edgelock::testing::redis_server;
using edgelock::testing::scripted_reply;
using edgelock::testing::scripted_server;
using edgelock::testing::sentinel_topology;

client_config sentinel_config(sentinel_topology& topology) {
    client_config config;
    config.sentinels = topology.sentinel_urls();
    config.master_name = sentinel_topology::master_name;
    config.connect_timeout_ms = 300;
    config.command_timeout_ms = 500;
    config.reconnect_delay_min_ms = 20;
    config.reconnect_delay_max_ms = 200;
    return config;
}

// The sentinels know no master of that name: the client never becomes ready, and says why.
TEST(asio_sentinel, an_unknown_master_name_is_reported_as_no_master) {
    sentinel_topology topology;
    asio::io_context io{1};
    client unknown(io);
    client_config config = sentinel_config(topology);
    config.master_name = "no-such-master";
    ASSERT_FALSE(unknown.open(config));
    const outcome ready = wait_ready(unknown);
    ASSERT_TRUE(ready.done);
    EXPECT_EQ(ready.ec, edgelock::transport_errc::no_master) << ready.ec.message();
}

TEST(asio_sentinel, a_write_refused_as_readonly_sends_the_client_back_to_the_sentinels) {
    // A fake sentinel names server A; then A becomes a replica of B behind the client's back
    // (REPLICAOF keeps client connections open), and the fake sentinel names B.
    redis_server a;
    redis_server b;
    std::atomic<std::uint16_t> master_port{a.port()};
    scripted_server sentinel([&](const std::vector<std::string>& args) {
        if (args[0] == "SENTINEL") {
            const std::string port = std::to_string(master_port.load());
            return scripted_reply{"*2\r\n$9\r\n127.0.0.1\r\n$" + std::to_string(port.size()) +
                                  "\r\n" + port + "\r\n"};
        }
        if (args[0] == "SUBSCRIBE")
            return scripted_reply{"*3\r\n$9\r\nsubscribe\r\n$14\r\n+switch-master\r\n:1\r\n"};
        return scripted_reply{"-ERR unknown\r\n"};
    });
    asio::io_context io{1};
    client owner(io);
    client_config config;
    config.sentinels = {sentinel.url()};
    config.master_name = "fake";
    config.connect_timeout_ms = 300;
    config.command_timeout_ms = 500;
    config.reconnect_delay_min_ms = 10;
    config.reconnect_delay_max_ms = 100;
    ASSERT_FALSE(owner.open(config));
    ASSERT_FALSE(wait_ready(owner).ec);
    EXPECT_EQ(owner.instance_endpoint(0), "127.0.0.1:" + std::to_string(a.port()));
    lock_handle handle;
    ASSERT_FALSE(owner.add_lock(lock_for("moving"), handle));
    ASSERT_FALSE(acquire(owner, handle, 0ms).ec);
    ASSERT_FALSE(release(owner, handle).ec);

    redis_client(a.port()).command({"REPLICAOF", "127.0.0.1", std::to_string(b.port())});
    master_port = b.port();
    EXPECT_EQ(acquire(owner, handle, 0ms).ec, errc::error_reply)
        << "READONLY from the demoted server";
    const outcome moved = acquire(owner, handle, 3s);
    ASSERT_FALSE(moved.ec) << moved.ec.message();
    EXPECT_EQ(owner.instance_endpoint(0), "127.0.0.1:" + std::to_string(b.port()));
    EXPECT_EQ(owner.instance_last_error(0), edgelock::transport_errc::not_master);
    EXPECT_TRUE(redis_client(b.port()).exists("moving"));
    EXPECT_FALSE(release(owner, handle).ec);
}

// Fair waiting behind Sentinel: the subscriber finds the master the way the lock connection
// does, and follows a failover (+switch-master) to the new one, where the next release wakes
// the waiter again. recheck 5 s, each handover asserted within 1 s: it came from a wake-up.
TEST(asio_sentinel, fair_waiters_are_woken_on_the_master_and_after_a_failover_on_the_new_one) {
    sentinel_topology topology;
    const std::uint16_t old_master = topology.master_port();
    asio::io_context io{1};
    client first(io);
    client second(io);
    ASSERT_FALSE(first.open(sentinel_config(topology)));
    ASSERT_FALSE(second.open(sentinel_config(topology)));
    ASSERT_FALSE(wait_ready(first).ec);
    ASSERT_FALSE(wait_ready(second).ec);
    EXPECT_EQ(first.instance_endpoint(0), "127.0.0.1:" + std::to_string(old_master))
        << "the sentinels named the master";
    edgelock::lock_config fair = lock_for("fair:sentinel", 20'000);
    fair.fair = true;
    fair.recheck_ms = 5000;
    lock_handle a;
    lock_handle b;
    ASSERT_FALSE(first.add_lock(fair, a));
    ASSERT_FALSE(second.add_lock(fair, b));
    const auto subscribed_on = [](std::uint16_t port) {
        redis_client server(port);
        // The waiters' own channels: the queue key, ":" and a token each.
        const auto reply = server.command({"PUBSUB", "CHANNELS", "{fair:sentinel}:queue:*"});
        return static_cast<long long>(reply.elements.size());
    };
    const auto wait_for = [&](client& owner, lock_handle handle) {
        auto result = std::make_shared<outcome>();
        owner.async_acquire(handle, 60s, [result](std::error_code ec, std::int64_t) {
            result->done = true;
            result->ec = ec;
        });
        return result;
    };
    // Until the release has completed too: the releasing client acquires its handle again next,
    // which a release still running would refuse (operation_in_progress). The waiter's grant
    // may be handled first, as completions on two sockets come in either order.
    const auto hand_over = [&](client& owner, lock_handle held,
                               const std::shared_ptr<outcome>& next) {
        const auto start = std::chrono::steady_clock::now();
        bool released = false;
        owner.async_release(held, [&](std::error_code ec) {
            EXPECT_FALSE(ec) << ec.message();
            released = true;
        });
        run_until(
            io, [&] { return released && next->done; }, 10s);
        return elapsed_ms(start);
    };

    ASSERT_FALSE(acquire(first, a, 0ms).ec);
    auto waiter = wait_for(second, b);
    ASSERT_TRUE(run_until(
        io, [&] { return subscribed_on(old_master) == 1; }, 5s));
    std::int64_t took = hand_over(first, a, waiter);
    ASSERT_TRUE(waiter->done);
    EXPECT_FALSE(waiter->ec) << waiter->ec.message();
    EXPECT_LT(took, 1000) << "woken through the subscriber on the master";

    auto back = wait_for(first, a);
    ASSERT_TRUE(run_until(
        io, [&] { return subscribed_on(old_master) == 1; }, 5s))
        << "subscribers: " << subscribed_on(old_master);
    {
        redis_client primary(old_master);
        primary.command({"WAIT", "1", "2000"});  // the holder's key is on the replica
    }
    topology.primary().freeze();
    const std::uint16_t new_master = topology.wait_for_failover(old_master);
    ASSERT_NE(new_master, old_master);
    EXPECT_TRUE(run_until(
        io, [&] { return subscribed_on(new_master) == 1; }, 10s))
        << "the subscriber followed the failover";
    const std::string new_endpoint = "127.0.0.1:" + std::to_string(new_master);
    ASSERT_TRUE(run_until(
        io,
        [&] {
            return first.instance_connected(0) && first.instance_endpoint(0) == new_endpoint &&
                   second.instance_connected(0) && second.instance_endpoint(0) == new_endpoint;
        },
        10s))
        << "both lock connections on the new master";
    EXPECT_FALSE(back->done) << "still held by the second client";
    took = hand_over(second, b, back);
    ASSERT_TRUE(back->done);
    EXPECT_FALSE(back->ec) << back->ec.message();
    EXPECT_LT(took, 1000) << "woken through the subscriber on the new master";
    topology.primary().thaw();
    EXPECT_FALSE(release(first, a).ec);
}

}  // namespace
