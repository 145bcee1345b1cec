// SPDX-License-Identifier: Apache-2.0
// Bad input and network faults: every one ends in a clear error_code within the configured
// timeouts, and the same lock object works once the fault is gone.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "edgelock/blocking_lock.hpp"
#include "edgelock/scripts.hpp"
#include "edgelock/testing/redis_client.hpp"
#include "edgelock/testing/redis_process.hpp"
#include "edgelock/testing/scripted_server.hpp"
#include "edgelock/testing/tcp_proxy.hpp"
#include "redis_test_util.hpp"

namespace {

using namespace std::chrono_literals;
using edgelock::transport_errc;
using edgelock::blocking::now_ms;
using edgelock::redis_tests::elapsed_ms;
using edgelock::redis_tests::options_for;
using edgelock::testing::eventually;
using edgelock::testing::long_running_node_reply;
using edgelock::testing::redis_client;
using edgelock::testing::redis_server;
using edgelock::testing::scripted_reply;
using edgelock::testing::scripted_server;
using edgelock::testing::tcp_proxy;

// ---- the acquire path slower than the lease ------------------------------------------------

TEST(faults, a_reply_delayed_beyond_the_ttl_is_a_failure_never_a_hold) {
    redis_server server;
    tcp_proxy proxy(server.port());
    edgelock::blocking::lock lock;
    auto options = options_for("slow", {proxy.url()}, 400);
    options.attempt_timeout_ms = 400;   // the core waits for the reply as long as the lease lasts
    options.command_timeout_ms = 3000;  // the transport waits longer still
    ASSERT_FALSE(lock.open(options));
    ASSERT_FALSE(lock.try_acquire());  // connect first, so only the round trip is delayed
    ASSERT_FALSE(lock.release());

    proxy.delay(500ms);
    EXPECT_EQ(lock.try_acquire(), edgelock::errc::validity_expired);
    EXPECT_FALSE(lock.held());
    redis_client client(server.port());
    EXPECT_FALSE(client.exists("slow")) << "the late SET was deleted again";

    proxy.pass();
    edgelock::blocking::hold hold;
    const std::int64_t before = now_ms();
    ASSERT_FALSE(lock.try_acquire(&hold)) << "usable once the network is fast again";
    const std::int64_t after = now_ms();
    // t0 is read between `before` and `after` (never the same millisecond for sure).
    EXPECT_GE(hold.valid_until_ms, before + 400 - 6);
    EXPECT_LE(hold.valid_until_ms, after + 400 - 6) << "validity counts from before the reply";
    EXPECT_FALSE(lock.release());
}

TEST(faults, a_delay_within_the_ttl_still_acquires_with_the_delay_taken_off_the_lease) {
    redis_server server;
    tcp_proxy proxy(server.port());
    edgelock::blocking::lock lock;
    auto options = options_for("slowish", {proxy.url()}, 2000);
    options.attempt_timeout_ms = 1000;
    options.command_timeout_ms = 3000;
    ASSERT_FALSE(lock.open(options));
    proxy.delay(100ms);
    edgelock::blocking::hold hold;
    const std::int64_t before = now_ms();
    ASSERT_FALSE(lock.try_acquire(&hold));
    const std::int64_t after = now_ms();
    EXPECT_GE(after - before, 200);
    EXPECT_GE(hold.valid_until_ms, before + 2000 - 22);
    EXPECT_LT(hold.valid_until_ms, after + 2000 - 22 - 150) << "the round trip was not ignored";
    EXPECT_FALSE(lock.release());
}

// An attempt timed out and its cleanup release was on the wire when the connection dropped,
// after the late SET had run: the release goes again on the next connection, and the key is
// gone at once instead of blocking every other owner for the whole TTL.
TEST(faults, a_cleanup_lost_with_a_dropped_connection_is_sent_again_on_the_next) {
    redis_server server;
    tcp_proxy proxy(server.port());
    edgelock::blocking::lock lock;
    auto options = options_for("orphan", {proxy.url()}, 20'000);
    options.attempt_timeout_ms = 300;
    options.command_timeout_ms = 5000;
    ASSERT_FALSE(lock.open(options));
    ASSERT_FALSE(lock.try_acquire());  // connect first, so only the round trip is delayed
    ASSERT_FALSE(lock.release());

    // The SET runs at ~1.5 s; the cleanup, written when the attempt timed out at ~0.3 s,
    // would run at ~1.8 s. The connection drops in between.
    proxy.delay(1500ms);
    std::atomic<bool> set_ran{false};
    std::atomic<bool> still_there_after_drop{false};
    std::size_t connections_at_drop = 0;
    std::thread dropper([&] {
        redis_client watcher(server.port());
        set_ran = eventually([&] { return watcher.exists("orphan"); }, 5s);
        connections_at_drop = proxy.connections_accepted();
        proxy.close_all();
        proxy.pass();
        still_there_after_drop = watcher.exists("orphan");
    });
    // A failed try_acquire cleans up before it returns (up to the command timeout).
    EXPECT_EQ(lock.try_acquire(), edgelock::errc::no_quorum);
    dropper.join();
    ASSERT_TRUE(set_ran) << "the late SET ran";
    ASSERT_TRUE(still_there_after_drop)
        << "the first cleanup had not run when the connection dropped";

    redis_client client(server.port());
    EXPECT_TRUE(eventually([&] { return !client.exists("orphan"); }, 5s))
        << "the key would stay " << client.pttl("orphan") << " ms more";
    EXPECT_GT(proxy.connections_accepted(), connections_at_drop) << "deleted over a new connection";
    edgelock::blocking::hold hold;
    EXPECT_FALSE(lock.try_acquire(&hold)) << "the lock works afterwards";
    EXPECT_FALSE(lock.release());
}

// ---- addresses, credentials, URLs ------------------------------------------------------------

TEST(faults, an_unknown_host_is_reported_as_such) {
    edgelock::blocking::lock lock;
    ASSERT_FALSE(lock.open(options_for("x", {"redis://no-such-host.invalid:6379"})));
    const auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(lock.try_acquire(), transport_errc::unknown_host);
    EXPECT_LT(elapsed_ms(start), 3000);
    EXPECT_EQ(lock.instance_error(0), transport_errc::unknown_host);
}

TEST(faults, a_refused_connection_then_a_server_that_comes_up) {
    redis_server server;
    server.stop();
    edgelock::blocking::lock lock;
    ASSERT_FALSE(lock.open(options_for("x", {server.url()})));
    EXPECT_EQ(lock.try_acquire(), std::errc::connection_refused);
    EXPECT_EQ(lock.release(), edgelock::errc::not_held);
    server.start();
    ASSERT_FALSE(lock.try_acquire());
    EXPECT_FALSE(lock.release());
}

TEST(faults, a_wrong_password_or_user_fails_authentication) {
    redis_server server({"--requirepass", "secret"});
    {
        redis_client admin("127.0.0.1", server.port(), "secret");
        admin.command({"ACL", "SETUSER", "locker", "on", ">lockpass", "~*", "+@all"});
    }
    for (const std::string& url :
         {server.url("wrong"), server.url("lockpass", "nobody"), server.url()}) {
        edgelock::blocking::lock lock;
        ASSERT_FALSE(lock.open(options_for("x", {url})));
        const std::error_code ec = lock.try_acquire();
        // Without a password, the handshake's PING gets NOAUTH: a password is required.
        const transport_errc expected =
            url == server.url() ? transport_errc::auth_required : transport_errc::auth_failed;
        EXPECT_EQ(ec, expected) << url << ": " << ec.message();
    }
    for (const std::string& url : {server.url("secret"), server.url("lockpass", "locker")}) {
        edgelock::blocking::lock lock;
        ASSERT_FALSE(lock.open(options_for("x", {url})));
        EXPECT_FALSE(lock.try_acquire()) << url;
        EXPECT_FALSE(lock.release());
    }
}

TEST(faults, the_database_comes_from_the_url) {
    redis_server server;
    edgelock::blocking::lock lock;
    ASSERT_FALSE(lock.open(options_for("in-db-3", {server.url() + "/3"})));
    ASSERT_FALSE(lock.try_acquire());
    redis_client client(server.port());
    EXPECT_FALSE(client.exists("in-db-3"));
    client.command({"SELECT", "3"});
    EXPECT_TRUE(client.exists("in-db-3"));
    EXPECT_FALSE(lock.release());

    edgelock::blocking::lock out_of_range;
    ASSERT_FALSE(out_of_range.open(options_for("x", {server.url() + "/500"})));
    EXPECT_EQ(out_of_range.try_acquire(), transport_errc::select_failed);
}

TEST(faults, malformed_urls_and_options_are_refused_by_open) {
    for (const char* url : {"http://127.0.0.1:6379", "redis://", "redis://host:0",
                            "redis://host:99999", "redis://host:6379/x", "redis://[::1", ""}) {
        edgelock::blocking::lock lock;
        EXPECT_EQ(lock.open(options_for("x", {url})), edgelock::errc::invalid_config) << url;
        EXPECT_EQ(lock.try_acquire(), edgelock::errc::invalid_state) << "never opened";
    }
    edgelock::blocking::lock lock;
    EXPECT_EQ(lock.open(options_for("", {"redis://127.0.0.1:1"})), edgelock::errc::invalid_name);
    EXPECT_EQ(lock.open(options_for("x", {"redis://127.0.0.1:1", "redis://127.0.0.1:2"})),
              edgelock::errc::invalid_instances);
    EXPECT_EQ(lock.open(options_for("x", {})), edgelock::errc::invalid_config);
    auto options = options_for("x", {"redis://127.0.0.1:1"});
    options.command_timeout_ms = 0;
    EXPECT_EQ(lock.open(options), edgelock::errc::invalid_config);
}

// ---- replies Redis should not send -----------------------------------------------------------

TEST(faults, an_error_reply_is_reported_and_the_lock_works_afterwards) {
    redis_server server;
    redis_client client(server.port());
    client.command({"HSET", "typed", "field", "value"});  // SET ... GET's answer: WRONGTYPE
    edgelock::blocking::lock lock;
    ASSERT_FALSE(lock.open(options_for("typed", {server.url()})));
    EXPECT_EQ(lock.try_acquire(), edgelock::errc::wrong_kind) << "the key holds another kind";
    EXPECT_EQ(lock.instance_error(0), edgelock::errc::error_reply);
    client.command({"DEL", "typed"});
    ASSERT_FALSE(lock.try_acquire());
    EXPECT_FALSE(lock.release());
}

// A fake Redis whose first answers are `bad`, then correct ones (nil for SET NX PX GET, 0 for
// the acquire script, 1 otherwise).
scripted_server::responder bad_then_good(std::atomic<int>& bad_left, scripted_reply bad) {
    return [&bad_left, bad](const std::vector<std::string>& args) {
        if (args.at(0) == "PING") return scripted_reply{"+PONG\r\n"};  // the handshake
        if (args.at(0) == "SCRIPT") return scripted_reply{"+OK\r\n"};  // the client's preload
        if (args.at(0) == "INFO" || args.at(0) == "CONFIG") return long_running_node_reply(args);
        if (bad_left.fetch_sub(1) > 0) return bad;
        // The lock's acquire is SET NX PX GET (nil: the key was free) or, fenced, the script.
        if (args[0] == "SET") return scripted_reply{"$-1\r\n"};
        const bool acquire =
            args.size() > 1 && args[1] == std::string(edgelock::acquire_script.digest.data(), 40);
        return scripted_reply{acquire ? ":0\r\n" : ":1\r\n"};
    };
}

TEST(faults, an_unexpected_reply_type_is_reported_and_the_lock_works_afterwards) {
    std::atomic<int> bad_left{1};
    scripted_server fake(bad_then_good(bad_left, {"*1\r\n$2\r\nno\r\n"}));
    edgelock::blocking::lock lock;
    ASSERT_FALSE(lock.open(options_for("x", {fake.url()})));
    EXPECT_EQ(lock.try_acquire(), edgelock::errc::unexpected_reply);
    ASSERT_FALSE(lock.try_acquire());
    EXPECT_FALSE(lock.release());
}

TEST(faults, bytes_that_are_not_resp_are_a_protocol_error) {
    std::atomic<int> bad_left{1};
    scripted_server fake(bad_then_good(bad_left, {"?garbage\r\n"}));
    edgelock::blocking::lock lock;
    ASSERT_FALSE(lock.open(options_for("x", {fake.url()})));
    EXPECT_EQ(lock.try_acquire(), edgelock::errc::protocol_error);
    ASSERT_FALSE(lock.try_acquire());
    EXPECT_FALSE(lock.release());
}

TEST(faults, a_server_closing_in_the_middle_of_a_reply) {
    std::atomic<int> bad_left{1};
    scripted_server fake(bad_then_good(bad_left, {":12", true}));
    edgelock::blocking::lock lock;
    ASSERT_FALSE(lock.open(options_for("x", {fake.url()})));
    EXPECT_EQ(lock.try_acquire(), transport_errc::connection_closed);
    ASSERT_FALSE(lock.try_acquire());
    EXPECT_FALSE(lock.release());
}

TEST(faults, a_reset_in_the_middle_of_a_reply) {
    redis_server server;
    tcp_proxy proxy(server.port());
    edgelock::blocking::lock lock;
    ASSERT_FALSE(lock.open(options_for("cut", {proxy.url()})));
    proxy.reset_after(2);  // "$-1\r\n" arrives as "$-", then RST
    const auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(lock.try_acquire(), std::errc::connection_reset);
    EXPECT_LT(elapsed_ms(start), 2000);
    EXPECT_FALSE(lock.held());
    proxy.pass();
    // The cut attempt's key may still be there (its cleanup was cut too): it expires by TTL.
    ASSERT_FALSE(lock.acquire(3s));
    EXPECT_FALSE(lock.release());
}

TEST(faults, a_server_that_never_answers_costs_at_most_the_timeouts) {
    redis_server server;
    tcp_proxy proxy(server.port());
    edgelock::blocking::lock lock;
    auto options = options_for("hang", {proxy.url()}, 1000);
    ASSERT_FALSE(lock.open(options));
    proxy.blackhole();
    const auto start = std::chrono::steady_clock::now();
    const std::error_code ec = lock.try_acquire();
    // The connection is accepted but the handshake never answered: the handshake timeout (the
    // attempt's own timeout may end it first).
    EXPECT_TRUE(ec == edgelock::errc::no_quorum || ec == transport_errc::handshake_timeout)
        << ec.message();
    EXPECT_LT(elapsed_ms(start), 100 + 500 + 500)
        << "attempt timeout, then the cleanup's command timeout";
    proxy.pass();
    ASSERT_FALSE(lock.acquire(3s));
    EXPECT_FALSE(lock.release());
}

}  // namespace
