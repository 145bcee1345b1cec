// SPDX-License-Identifier: Apache-2.0
// Redis before 7.0, as a real redis-server answers through redis6_front (tests/support): both
// clients lock with their default settings (the restart guard and the eviction check read
// INFO; the acquire tries SET NX PX GET first), and the CLI's check reads the node.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "../asio/asio_test_util.hpp"
#include "edgelock/async_client.hpp"
#include "edgelock/error_code.hpp"
#include "edgelock/blocking_lock.hpp"
#include "edgelock/testing/redis6_front.hpp"
#include "edgelock/testing/redis_client.hpp"
#include "edgelock/testing/redis_process.hpp"
#include "redis_test_util.hpp"

namespace {

using namespace std::chrono_literals;
using edgelock::testing::redis6_front;
using edgelock::testing::redis_client;
using edgelock::testing::redis_reply;
using edgelock::testing::redis_server;

TEST(old_server, the_front_refuses_what_redis_6_does_not_know_and_forwards_the_rest) {
    redis_server server;
    redis6_front front(server.port());
    redis_client c(front.port());
    const redis_reply several = c.command({"INFO", "server", "persistence"});
    EXPECT_TRUE(several.is_error());
    EXPECT_EQ(several.text, "ERR syntax error");
    EXPECT_EQ(c.command({"SET", "k", "v", "NX", "PX", "1000", "GET"}).text, "ERR syntax error");
    EXPECT_EQ(c.info_field("server", "redis_version"), "7.0.15") << "one section is fine";
    EXPECT_NE(c.command({"INFO"}).text.find("uptime_in_seconds:"), std::string::npos);
    EXPECT_EQ(c.command({"SET", "k", "v", "NX", "PX", "1000"}).text, "OK");
    EXPECT_EQ(front.refused(), 2u);
}

TEST(old_server, the_blocking_client_locks_with_the_default_settings) {
    redis_server server;  // AOF always: the restart guard counts it at once
    redis6_front front(server.port());
    edgelock::blocking::lock lock;
    edgelock::blocking::lock_options options =
        edgelock::redis_tests::options_for("job", {front.url()}, 5000);
    ASSERT_TRUE(options.restart_guard);
    ASSERT_NE(options.eviction, edgelock::session::eviction_check::off);
    ASSERT_FALSE(lock.open(options));
    const std::error_code got = lock.try_acquire();
    ASSERT_FALSE(got) << got.message();
    EXPECT_TRUE(redis_client(server.port()).exists("job"));
    EXPECT_GE(front.refused(), 1u)
        << "SET NX PX GET was tried and refused, then the script took it";
    EXPECT_FALSE(lock.release());
    EXPECT_FALSE(redis_client(server.port()).exists("job"));
}

TEST(old_server, the_asio_client_locks_with_the_default_settings) {
    namespace at = edgelock::asio_tests;
    redis_server server;
    redis6_front front(server.port());
    asio::io_context io{1};
    edgelock::async::client client(io);
    edgelock::async::client_config config = at::config_for({front.url()});
    config.restart_guard = true;
    config.eviction = edgelock::session::eviction_check::warn;
    ASSERT_FALSE(client.open(config));
    edgelock::async::lock_handle handle;
    ASSERT_FALSE(client.add_lock(at::lock_for("job", 5000), handle));
    const at::outcome got = at::acquire(client, handle, 0ms, 3s);
    ASSERT_TRUE(got.done);
    ASSERT_FALSE(got.ec) << got.ec.message();
    EXPECT_TRUE(redis_client(server.port()).exists("job"));
    EXPECT_GE(front.refused(), 1u);
    EXPECT_FALSE(at::release(client, handle).ec);
    EXPECT_FALSE(redis_client(server.port()).exists("job"));
}

}  // namespace
