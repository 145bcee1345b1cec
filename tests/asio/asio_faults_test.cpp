// SPDX-License-Identifier: Apache-2.0
// Bad input and network faults against the async client: each ends in a clear error_code,
// within the configured timeouts, and the client works once the fault is gone.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

#include "asio_test_util.hpp"
#include "edgelock/async_client.hpp"
#include "edgelock/scripts.hpp"
#include "edgelock/testing/redis_client.hpp"
#include "edgelock/testing/redis_process.hpp"
#include "edgelock/testing/scripted_server.hpp"
#include "edgelock/testing/tcp_proxy.hpp"

namespace {

using namespace edgelock::asio_tests;
using edgelock::errc;
using edgelock::transport_errc;
using edgelock::async::client;
using edgelock::async::lock_handle;
using edgelock::testing::redis_client;
using edgelock::testing::redis_server;
using edgelock::testing::scripted_reply;
using edgelock::testing::scripted_server;
using edgelock::testing::tcp_proxy;

// A client on its own io_context with one lock, for the tests below.
struct fixture {
    explicit fixture(const std::string& url, std::int64_t ttl_ms = 1000, std::string name = "x")
        : name_(std::move(name)) {
        open_code = owner.open(config_for({url}));
        if (!open_code) {
            EXPECT_FALSE(owner.add_lock(lock_for(name_, ttl_ms), handle));
        }
    }
    std::string name_;
    asio::io_context io{1};
    client owner{io};
    std::error_code open_code;
    lock_handle handle;
};

// ---- configuration and addresses -----------------------------------------------------------

TEST(asio_faults, malformed_urls_and_configurations_are_refused_by_open) {
    asio::io_context io{1};
    client owner(io);
    for (const char* url : {"http://127.0.0.1:6379", "redis://", "redis://host:0",
                            "redis://host:99999", "redis://host:6379/x", "redis://[::1", ""}) {
        EXPECT_EQ(owner.open(config_for({url})), errc::invalid_config) << url;
        lock_handle handle;
        EXPECT_EQ(owner.add_lock(lock_for("x"), handle), transport_errc::not_open)
            << "never opened";
    }
    EXPECT_EQ(owner.open(config_for({"redis://127.0.0.1:1", "redis://127.0.0.1:2"})),
              errc::invalid_instances);
    EXPECT_EQ(owner.open(config_for({})), errc::invalid_config) << "no instances and no sentinels";
    auto config = config_for({"redis://127.0.0.1:1"});
    config.command_timeout_ms = 0;
    EXPECT_EQ(owner.open(config), errc::invalid_config);
    config = config_for({"redis://127.0.0.1:1"});
    config.sentinels = {"redis://127.0.0.1:2"};
    EXPECT_EQ(owner.open(config), errc::invalid_config) << "instances and sentinels at once";
    config = config_for({});
    config.sentinels = {"redis://127.0.0.1:2"};
    EXPECT_EQ(owner.open(config), errc::invalid_config) << "sentinels without a master name";

    // Usable afterwards: the same object opens a good configuration and locks.
    redis_server server;
    ASSERT_FALSE(owner.open(config_for({server.url()})));
    EXPECT_EQ(owner.open(config_for({server.url()})), transport_errc::already_open);
    lock_handle handle;
    ASSERT_FALSE(owner.add_lock(lock_for("x"), handle));
    EXPECT_EQ(owner.add_lock(lock_for(""), handle), errc::invalid_name);
    EXPECT_FALSE(acquire(owner, handle, 1s).ec);
    EXPECT_FALSE(release(owner, handle).ec);
}

TEST(asio_faults, an_unknown_host_is_reported_as_such) {
    fixture f("redis://no-such-host.invalid:6379");
    ASSERT_FALSE(f.open_code);
    const auto start = std::chrono::steady_clock::now();
    const outcome ready = wait_ready(f.owner);
    ASSERT_TRUE(ready.done);
    EXPECT_TRUE(ready.ec == transport_errc::unknown_host ||
                ready.ec == transport_errc::connect_timeout)
        << ready.ec.message();
    EXPECT_LT(elapsed_ms(start), 500 + 300) << "at most the connect timeout";
    const outcome got = acquire(f.owner, f.handle, 0ms);
    EXPECT_EQ(got.ec, f.owner.instance_last_error(0)) << got.ec.message();
}

TEST(asio_faults, a_refused_connection_then_a_server_that_comes_up) {
    redis_server server;
    server.stop();
    fixture f(server.url());
    const outcome ready = wait_ready(f.owner);
    EXPECT_EQ(ready.ec, std::errc::connection_refused) << ready.ec.message();
    const outcome got = acquire(f.owner, f.handle, 0ms);
    EXPECT_EQ(got.ec, std::errc::connection_refused) << got.ec.message();
    EXPECT_EQ(release(f.owner, f.handle).ec, errc::not_held);
    server.start();
    const outcome later = acquire(f.owner, f.handle, 3s);
    EXPECT_FALSE(later.ec) << "reconnected in the background: " << later.ec.message();
    EXPECT_FALSE(release(f.owner, f.handle).ec);
}

TEST(asio_faults, a_wrong_password_or_user_fails_authentication) {
    redis_server server({"--requirepass", "secret"});
    {
        redis_client admin("127.0.0.1", server.port(), "secret");
        admin.command({"ACL", "SETUSER", "locker", "on", ">lockpass", "~*", "+@all"});
    }
    for (const std::string& url :
         {server.url("wrong"), server.url("lockpass", "nobody"), server.url()}) {
        fixture f(url);
        const outcome ready = wait_ready(f.owner);
        // No password at all: NOAUTH, a password is required; a wrong one: refused.
        const transport_errc expected =
            url == server.url() ? transport_errc::auth_required : transport_errc::auth_failed;
        EXPECT_EQ(ready.ec, expected) << url << ": " << ready.ec.message();
        EXPECT_EQ(acquire(f.owner, f.handle, 0ms).ec, expected) << url;
    }
    asio::io_context io{1};
    client owner(io);
    for (const std::string& url : {server.url("secret"), server.url("lockpass", "locker")}) {
        ASSERT_FALSE(owner.open(config_for({url})));
        lock_handle handle;
        ASSERT_FALSE(owner.add_lock(lock_for("x"), handle));
        EXPECT_FALSE(wait_ready(owner).ec) << url;
        EXPECT_FALSE(acquire(owner, handle, 0ms).ec) << url;
        EXPECT_FALSE(release(owner, handle).ec);
        owner.close();  // then open() again with the next credentials
    }
}

TEST(asio_faults, the_database_comes_from_the_url) {
    redis_server server;
    fixture f(server.url() + "/3", 1000, "in-db-3");
    ASSERT_FALSE(acquire(f.owner, f.handle, 1s).ec);
    redis_client admin(server.port());
    EXPECT_FALSE(admin.exists("in-db-3"));
    admin.command({"SELECT", "3"});
    EXPECT_TRUE(admin.exists("in-db-3"));
    EXPECT_FALSE(release(f.owner, f.handle).ec);

    fixture out_of_range(server.url() + "/500");
    EXPECT_EQ(wait_ready(out_of_range.owner).ec, transport_errc::select_failed);
}

// ---- replies Redis should not send ------------------------------------------------------------

TEST(asio_faults, an_error_reply_is_reported_and_the_lock_works_afterwards) {
    redis_server server;
    redis_client admin(server.port());
    admin.command({"HSET", "typed", "field", "value"});  // SET ... GET's answer: WRONGTYPE
    fixture f(server.url(), 1000, "typed");
    EXPECT_EQ(acquire(f.owner, f.handle, 0ms).ec, errc::wrong_kind) << "the key holds another kind";
    EXPECT_TRUE(f.owner.instance_connected(0)) << "an error reply is not a broken connection";
    admin.command({"DEL", "typed"});
    ASSERT_FALSE(acquire(f.owner, f.handle, 0ms).ec);
    EXPECT_FALSE(release(f.owner, f.handle).ec);
}

// A fake Redis whose first `bad_left` lock answers are `bad`, then correct ones. It refuses
// the handshake's SCRIPT LOADs, which the client ignores (it then relies on EVAL fallback).
scripted_server::responder bad_then_good(std::atomic<int>& bad_left, scripted_reply bad) {
    return [&bad_left, bad](const std::vector<std::string>& args) {
        if (args[0] == "PING") return scripted_reply{"+PONG\r\n"};
        if (args[0] == "SCRIPT")
            return scripted_reply{"-ERR no scripts here\r\n"};  // ignored by the client
        if (args[0] == "INFO" || args[0] == "CONFIG")
            return edgelock::testing::long_running_node_reply(args);
        if (bad_left.fetch_sub(1) > 0) return bad;
        // The lock's acquire is SET NX PX GET (nil: the key was free) or, fenced, the script.
        if (args[0] == "SET") return scripted_reply{"$-1\r\n"};
        const bool acquire =
            args.size() > 1 && args[1] == std::string(edgelock::acquire_script.digest.data(), 40);
        return scripted_reply{acquire ? ":0\r\n" : ":1\r\n"};
    };
}

TEST(asio_faults, an_unexpected_reply_type_is_reported_and_the_lock_works_afterwards) {
    std::atomic<int> bad_left{1};
    scripted_server fake(bad_then_good(bad_left, {"*1\r\n$2\r\nno\r\n"}));
    fixture f(fake.url());
    EXPECT_EQ(acquire(f.owner, f.handle, 0ms).ec, errc::unexpected_reply);
    ASSERT_FALSE(acquire(f.owner, f.handle, 1s).ec);
    EXPECT_FALSE(release(f.owner, f.handle).ec);
}

TEST(asio_faults, bytes_that_are_not_resp_are_a_protocol_error) {
    std::atomic<int> bad_left{1};
    scripted_server fake(bad_then_good(bad_left, {"?garbage\r\n"}));
    fixture f(fake.url());
    EXPECT_EQ(acquire(f.owner, f.handle, 0ms).ec, errc::protocol_error);
    EXPECT_EQ(f.owner.instance_last_error(0), errc::protocol_error);
    ASSERT_FALSE(acquire(f.owner, f.handle, 1s).ec) << "reconnected";
    EXPECT_FALSE(release(f.owner, f.handle).ec);
}

TEST(asio_faults, a_server_closing_in_the_middle_of_a_reply) {
    std::atomic<int> bad_left{1};
    scripted_server fake(bad_then_good(bad_left, {":12", true}));
    fixture f(fake.url());
    EXPECT_EQ(acquire(f.owner, f.handle, 0ms).ec, transport_errc::connection_closed);
    ASSERT_FALSE(acquire(f.owner, f.handle, 1s).ec);
    EXPECT_FALSE(release(f.owner, f.handle).ec);
}

// ---- the network, through the fault proxy -----------------------------------------------------

TEST(asio_faults, a_reset_in_the_middle_of_a_reply) {
    redis_server server;
    tcp_proxy proxy(server.port());
    fixture f(proxy.url(), 1000, "cut");
    ASSERT_FALSE(wait_ready(f.owner).ec);
    proxy.reset_after(2);  // "$-1\r\n" arrives as "$-", then RST
    const auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(acquire(f.owner, f.handle, 0ms).ec, std::errc::connection_reset);
    EXPECT_LT(elapsed_ms(start), 1000);
    EXPECT_FALSE(f.owner.held(f.handle));
    proxy.pass();
    // The cut attempt's key may still be there (its cleanup was cut too): it expires by TTL.
    const outcome again = acquire(f.owner, f.handle, 3s);
    ASSERT_FALSE(again.ec) << again.ec.message();
    EXPECT_FALSE(release(f.owner, f.handle).ec);
}

TEST(asio_faults, a_server_that_never_answers_costs_at_most_the_timeouts) {
    redis_server server;
    tcp_proxy proxy(server.port());
    fixture f(proxy.url(), 1000, "hang");
    ASSERT_FALSE(wait_ready(f.owner).ec);
    proxy.blackhole();
    const auto start = std::chrono::steady_clock::now();
    const outcome got = acquire(f.owner, f.handle, 0ms);
    EXPECT_EQ(got.ec, errc::no_quorum) << got.ec.message();
    EXPECT_LT(elapsed_ms(start), 100 + 400)
        << "the attempt timeout (ttl/10), not the command timeout";
    // The connection itself is declared dead after the command timeout and replaced.
    EXPECT_TRUE(run_until(
        f.io, [&] { return f.owner.instance_last_error(0) == transport_errc::command_timeout; },
        1s));
    proxy.pass();
    const outcome again = acquire(f.owner, f.handle, 3s);
    ASSERT_FALSE(again.ec) << again.ec.message();
    EXPECT_FALSE(release(f.owner, f.handle).ec);
}

TEST(asio_faults, a_reply_delayed_beyond_the_ttl_is_a_failure_never_a_hold) {
    redis_server server;
    tcp_proxy proxy(server.port());
    asio::io_context io{1};
    client owner(io);
    auto config = config_for({proxy.url()});
    config.command_timeout_ms = 3000;  // the transport waits longer than the lease
    ASSERT_FALSE(owner.open(config));
    ASSERT_FALSE(wait_ready(owner).ec);
    edgelock::lock_config lock_config = lock_for("slow", 400);
    lock_config.attempt_timeout_ms = 400;  // the core waits as long as the lease lasts
    lock_handle handle;
    ASSERT_FALSE(owner.add_lock(lock_config, handle));

    proxy.delay(500ms);
    const outcome got = acquire(owner, handle, 0ms);
    EXPECT_EQ(got.ec, errc::validity_expired) << got.ec.message();
    EXPECT_FALSE(owner.held(handle));
    redis_client admin(server.port());
    EXPECT_TRUE(edgelock::testing::eventually(
        [&] {
            run_for(io, 10ms);
            return !admin.exists("slow");
        },
        2s))
        << "the late SET was deleted again";
    proxy.pass();
    const outcome again = acquire(owner, handle, 2s);
    ASSERT_FALSE(again.ec) << again.ec.message();
    EXPECT_FALSE(release(owner, handle).ec);
}

}  // namespace
