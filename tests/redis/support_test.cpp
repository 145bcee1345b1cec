// The test infrastructure itself: processes start, stop, restart and freeze; the proxy's
// fault modes do what they say; the scripted server answers as scripted.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <stdexcept>

#include "edgelock/testing/redis_client.hpp"
#include "edgelock/testing/redis_process.hpp"
#include "edgelock/testing/scripted_server.hpp"
#include "edgelock/testing/tcp_proxy.hpp"

namespace {

using namespace std::chrono_literals;
using edgelock::testing::redis_client;
using edgelock::testing::redis_server;
using edgelock::testing::scripted_reply;
using edgelock::testing::scripted_server;
using edgelock::testing::tcp_proxy;

bool process_exists(pid_t pid) { return ::kill(pid, 0) == 0; }

TEST(redis_server_test, starts_restarts_on_the_same_port_and_is_gone_after_destruction) {
    pid_t pid = 0;
    {
        redis_server server({}, edgelock::testing::persistence::volatile_);
        pid = server.pid();
        redis_client client(server.port());
        client.set("k", "v");
        EXPECT_EQ(client.get("k"), "v");
        EXPECT_EQ(client.command({"CONFIG", "GET", "save"}).elements.at(1).text, "");

        const std::uint16_t port = server.port();
        server.restart();
        EXPECT_EQ(server.port(), port);
        EXPECT_NE(server.pid(), pid);
        redis_client again(server.port());
        EXPECT_FALSE(again.exists("k")) << "no persistence: a restart forgets everything";
        pid = server.pid();
    }
    EXPECT_FALSE(process_exists(pid));
}

TEST(redis_server_test, a_frozen_server_accepts_but_never_answers) {
    redis_server server;
    server.freeze();
    redis_client client("127.0.0.1", server.port(), "", "", 200ms);
    EXPECT_THROW(client.command({"PING"}), std::runtime_error);
    server.thaw();
    redis_client fresh(server.port());
    EXPECT_EQ(fresh.command({"PING"}).text, "PONG");
}

TEST(redis_server_test, extra_arguments_reach_the_server) {
    redis_server server({"--requirepass", "secret"});
    EXPECT_THROW(redis_client("127.0.0.1", server.port(), "wrong"), std::runtime_error);
    redis_client client("127.0.0.1", server.port(), "secret");
    EXPECT_EQ(client.command({"PING"}).text, "PONG");
}

TEST(sentinel_topology_test, fails_over_when_the_primary_freezes) {
    edgelock::testing::sentinel_topology topology;
    const std::uint16_t first = topology.master_port();
    ASSERT_EQ(first, topology.primary().port());
    redis_client primary(first);
    primary.set("k", "v");
    primary.command({"WAIT", "1", "1000"});
    topology.primary().freeze();
    const std::uint16_t second = topology.wait_for_failover(first);
    EXPECT_EQ(second, topology.replica().port());
    redis_client promoted(second);
    EXPECT_EQ(promoted.role(), "master");
    EXPECT_EQ(promoted.get("k"), "v");
    topology.primary().thaw();
}

TEST(tcp_proxy_test, passes_delays_blackholes_and_resets) {
    redis_server server;
    tcp_proxy proxy(server.port());
    redis_client client("127.0.0.1", proxy.port(), "", "", 500ms);
    client.set("k", "value");
    EXPECT_EQ(client.get("k"), "value");

    proxy.delay(150ms);
    const auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(client.get("k"), "value");
    EXPECT_GE(std::chrono::steady_clock::now() - start, 300ms) << "150 ms each way";

    proxy.blackhole();
    EXPECT_THROW(client.get("k"), std::runtime_error);

    proxy.pass();
    redis_client second("127.0.0.1", proxy.port(), "", "", 500ms);
    EXPECT_EQ(second.get("k"), "value");

    proxy.reset_after(3);  // "$5\r\nvalue\r\n" is cut after "$5\r"
    EXPECT_THROW(second.get("k"), std::runtime_error);
    proxy.pass();
    redis_client third("127.0.0.1", proxy.port(), "", "", 500ms);
    EXPECT_EQ(third.get("k"), "value");
    proxy.close_all();
    EXPECT_THROW(third.get("k"), std::runtime_error);
    EXPECT_EQ(proxy.connections_accepted(), 3u);
}

TEST(scripted_server_test, answers_as_scripted) {
    scripted_server fake([](const std::vector<std::string>& args) {
        if (args.at(0) == "PING") return scripted_reply{"*2\r\n:1\r\n:2\r\n"};
        return scripted_reply{"-ERR scripted\r\n", true};
    });
    redis_client client("127.0.0.1", fake.port(), "", "", 500ms);
    const auto reply = client.command({"PING"});
    ASSERT_EQ(reply.elements.size(), 2u);
    EXPECT_EQ(reply.elements[1].integer, 2);
    EXPECT_TRUE(client.command({"GET", "x"}).is_error());
    EXPECT_EQ(fake.commands_received(), 2u);
}

}  // namespace
