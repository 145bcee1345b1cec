// SPDX-License-Identifier: Apache-2.0
// The test infrastructure itself: processes start, stop, restart and freeze; the proxy's
// fault modes do what they say; the scripted server answers as scripted; TLS-only servers and
// sentinels, their certificates and the TLS admin client.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include <chrono>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>

#include "edgelock/testing/child_process.hpp"
#include "edgelock/testing/redis_client.hpp"
#include "edgelock/testing/redis_process.hpp"
#include "edgelock/testing/refused_port.hpp"
#include "edgelock/testing/scripted_server.hpp"
#include "edgelock/testing/tcp_proxy.hpp"
#include "edgelock/testing/tls_material.hpp"

namespace {

using namespace std::chrono_literals;
using edgelock::testing::client_tls;
using edgelock::testing::redis_client;
using edgelock::testing::redis_server;
using edgelock::testing::scripted_reply;
using edgelock::testing::scripted_server;
using edgelock::testing::tcp_proxy;
using edgelock::testing::tls_material;
using edgelock::testing::tls_setup;

bool process_exists(pid_t pid) { return ::kill(pid, 0) == 0; }

// The message a TLS client's connection (or first command) fails with; "" when it works.
std::string tls_failure(std::uint16_t port, const client_tls& options,
                        const std::string& host = "127.0.0.1") {
    try {
        redis_client client(host, port, options, "", "", 2s);
        client.command({"PING"});
        return "";
    } catch (const std::runtime_error& e) {
        return e.what();
    }
}

testing::AssertionResult contains(const std::string& text, const std::string& part) {
    if (text.find(part) != std::string::npos) return testing::AssertionSuccess();
    return testing::AssertionFailure() << "\"" << text << "\" does not contain \"" << part << "\"";
}

std::string read_file(const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

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

TEST(tls_server_test, answers_ping_set_and_get_over_tls_only) {
    tls_material material;
    redis_server server(material);
    EXPECT_EQ(server.url(), "rediss://127.0.0.1:" + std::to_string(server.port()));
    EXPECT_EQ(server.url("pw", "me"), "rediss://me:pw@127.0.0.1:" + std::to_string(server.port()));

    redis_client client(server.port(), client_tls::with_client_cert(material));
    EXPECT_EQ(client.command({"PING"}).text, "PONG");
    client.set("k", std::string(100'000, 'x'));  // more than one TLS record each way
    EXPECT_EQ(client.get("k"), std::string(100'000, 'x'));
    EXPECT_EQ(client.command({"CONFIG", "GET", "port"}).elements.at(1).text, "0")
        << "no plain port";
    EXPECT_TRUE(client.command({"NO-SUCH-COMMAND"}).is_error()) << "error replies are replies";

    server.restart();
    redis_client again(server.port(), client_tls::with_client_cert(material));
    EXPECT_EQ(again.get("k"), std::string(100'000, 'x')) << "durable by default, over TLS too";
}

TEST(tls_server_test, a_plain_client_gets_no_pong) {
    tls_material material;
    redis_server server(material);
    const std::string cli = edgelock::testing::find_in_path("redis-cli");
    ASSERT_FALSE(cli.empty()) << "redis-cli (redis-tools) is not in PATH";

    edgelock::testing::spawn_options options;
    options.output_path = server.dir() + "/redis-cli.out";
    edgelock::testing::child_process plain({cli, "-p", std::to_string(server.port()), "PING"},
                                           options);
    const auto status = plain.wait_exit(5s);
    ASSERT_TRUE(status.has_value()) << "redis-cli hung";
    EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) != 0);
    const std::string output = read_file(options.output_path);
    EXPECT_FALSE(contains(output, "PONG"));
    // Redis reads the 5 bytes of a TLS record header, finds no TLS and closes with the rest
    // of the command unread: the kernel resets the connection.
    EXPECT_TRUE(contains(output, "Connection reset by peer"));

    EXPECT_THROW(redis_client(server.port()).command({"PING"}), std::runtime_error);
}

TEST(tls_server_test, requires_a_client_certificate_when_told_to) {
    tls_material material;
    tls_setup tls(material);
    tls.require_client_cert = true;
    redis_server server(tls);

    // TLS 1.3 finishes the client's handshake before the server has checked its certificate:
    // the refusal arrives as an alert on the first read.
    EXPECT_TRUE(contains(tls_failure(server.port(), client_tls::without_client_cert(material)),
                         "tlsv13 alert certificate required"));
    redis_client client(server.port(), client_tls::with_client_cert(material));
    EXPECT_EQ(client.command({"PING"}).text, "PONG");
}

TEST(tls_server_test, a_verifying_client_refuses_every_certificate_but_the_valid_one) {
    tls_material material;
    tls_setup expired(material);
    expired.presents = tls_setup::certificate::expired;
    tls_setup wrong_name(material);
    wrong_name.presents = tls_setup::certificate::wrong_name;
    redis_server valid_server(material);
    redis_server expired_server(expired);  // up all the same: readiness does not verify
    redis_server wrong_name_server(wrong_name);

    const client_tls verifying = client_tls::with_client_cert(material);
    EXPECT_EQ(tls_failure(valid_server.port(), verifying), "");
    EXPECT_TRUE(contains(tls_failure(expired_server.port(), verifying), "certificate has expired"));
    EXPECT_TRUE(contains(tls_failure(wrong_name_server.port(), verifying), "IP address mismatch"));
    EXPECT_TRUE(contains(tls_failure(wrong_name_server.port(), verifying, "localhost"),
                         "hostname mismatch"));
    EXPECT_EQ(tls_failure(valid_server.port(), verifying, "localhost"), "")
        << "DNS:localhost is in the SAN";

    // redis-server sends its CA along with its certificate (OpenSSL completes the chain from
    // tls-ca-cert-file), so a client that trusts another CA sees an untrusted root.
    client_tls other_ca = verifying;
    other_ca.ca_file = material.other_ca_file();
    EXPECT_TRUE(contains(tls_failure(valid_server.port(), other_ca),
                         "self-signed certificate in certificate chain"));

    client_tls trusting_anything = verifying;
    trusting_anything.verify_server = false;
    EXPECT_EQ(tls_failure(expired_server.port(), trusting_anything), "");
    EXPECT_EQ(tls_failure(wrong_name_server.port(), trusting_anything), "");
}

TEST(tls_server_test, a_frozen_tls_server_times_out_the_handshake_and_commands) {
    tls_material material;
    redis_server server(material);
    redis_client connected("127.0.0.1", server.port(), client_tls::with_client_cert(material), "",
                           "", 200ms);
    server.freeze();
    const auto start = std::chrono::steady_clock::now();
    const client_tls options = client_tls::with_client_cert(material);
    EXPECT_THROW(redis_client("127.0.0.1", server.port(), options, "", "", 200ms),
                 std::runtime_error);
    EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
    EXPECT_THROW(connected.command({"PING"}), std::runtime_error);
    server.thaw();
    EXPECT_THROW(connected.command({"PING"}), std::runtime_error) << "dropped after the timeout";
    redis_client fresh(server.port(), client_tls::with_client_cert(material));
    EXPECT_EQ(fresh.command({"PING"}).text, "PONG");
}

TEST(sentinel_topology_test, fails_over_over_tls_when_the_primary_freezes) {
    tls_material material;
    edgelock::testing::sentinel_topology topology(material);
    for (const std::string& url : topology.sentinel_urls()) {
        EXPECT_EQ(url.rfind("rediss://127.0.0.1:", 0), 0u) << url;
    }
    EXPECT_EQ(topology.primary().url().rfind("rediss://", 0), 0u);
    const std::uint16_t first = topology.master_port();
    ASSERT_EQ(first, topology.primary().port());

    redis_client primary(first, client_tls::with_client_cert(material));
    primary.set("k", "v");
    EXPECT_EQ(primary.command({"WAIT", "1", "1000"}).integer, 1)
        << "the replica replicates over TLS";
    topology.primary().freeze();
    const std::uint16_t second = topology.wait_for_failover(first);
    EXPECT_EQ(second, topology.replica().port());
    redis_client promoted(second, client_tls::with_client_cert(material));
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

// errno of a connect (or, with `reuse`, of a bind as redis-server does it, SO_REUSEADDR) to
// the loopback port; 0 when it worked.
int loopback_errno(std::uint16_t port, bool bind_with_reuse) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port);
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    const auto* where = reinterpret_cast<const sockaddr*>(&addr);
    const int rc =
        bind_with_reuse ? ::bind(fd, where, sizeof addr) : ::connect(fd, where, sizeof addr);
    const int error = rc == 0 ? 0 : errno;
    ::close(fd);
    return error;
}

// The port is refused and nobody else can bind it while the object lives; then it is free.
TEST(refused_port_test, refuses_connections_and_keeps_others_off_until_destroyed) {
    std::uint16_t port = 0;
    {
        const edgelock::testing::refused_port refused;
        port = refused.port();
        EXPECT_EQ(refused.url(), "redis://127.0.0.1:" + std::to_string(port));
        EXPECT_EQ(loopback_errno(port, false), ECONNREFUSED);
        EXPECT_EQ(loopback_errno(port, true), EADDRINUSE);
        EXPECT_THROW(redis_server({"--port", std::to_string(port)}), std::runtime_error)
            << "a server given the port cannot listen on it";
    }
    EXPECT_EQ(loopback_errno(port, true), 0) << "released with the object";
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
