// SPDX-License-Identifier: Apache-2.0
// One table of faults, each run through both clients: the async client
// (edgelock::async::client) and the blocking client (edgelock::blocking::lock). Both drive the
// same session layer (session/), so for the same fault they must report the same
// std::error_code: from a single-instance acquire with zero wait, and from the instance's
// last error (async client::instance_last_error(0), blocking lock::instance_error(0)).
//
// Every row builds its fault from real redis-server / redis-sentinel processes on loopback
// (tests/support), the fault proxy or the scripted fake server, once for each client: each
// client meets a fresh copy of the same fault, so nothing one client did (a key left by a cut
// attempt, a reconnect) is seen by the other. A row's `verify` checks afterwards that the
// fault was still in place when the client ran (still loading, still no failover, ...), so a
// row cannot pass or fail on a fault that had gone away.
//
// Each row is one test (transport_table/fault.<row>): its servers start in well under a
// second and the clients use 500 ms connect and command timeouts, so no row takes ~5 s.
// The lock's TTL is 1 s (an attempt of 100 ms, the core's default tenth), except where the
// acquire makes a TLS connection (tls_ttl_ms below).
//
// The TLS rows (rediss://, tests/support's tls_material) also show each client usable after
// the failure: where the fault is the server's, `heal` puts a healthy server behind the same
// address (the fault proxy's retarget) and the same client object must then take the lock.
//
// Beyond the table, one longer scenario is written once and run through both clients the
// same way: a Sentinel failover while locks are held (transport_sentinel, below).
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "../asio/asio_test_util.hpp"
#include "edgelock/async_client.hpp"
#include "edgelock/error_code.hpp"
#include "edgelock/blocking_lock.hpp"
#include "edgelock/testing/child_process.hpp"
#include "edgelock/testing/redis_client.hpp"
#include "edgelock/testing/redis_process.hpp"
#include "edgelock/testing/refused_port.hpp"
#include "edgelock/testing/scripted_server.hpp"
#include "edgelock/testing/tcp_proxy.hpp"
#include "edgelock/testing/tls_material.hpp"
#include "edgelock/tls_options.hpp"
#include "redis_test_util.hpp"

namespace {

using namespace std::chrono_literals;
using edgelock::errc;
using edgelock::transport_errc;
using edgelock::testing::child_process;
using edgelock::testing::eventually;
using edgelock::testing::long_running_node_reply;
using edgelock::testing::redis_client;
using edgelock::testing::redis_sentinel;
using edgelock::testing::redis_server;
using edgelock::testing::scripted_reply;
using edgelock::testing::scripted_server;
using edgelock::testing::sentinel_topology;
using edgelock::testing::spawn_options;
using edgelock::testing::tcp_proxy;
using edgelock::testing::tls_material;
using edgelock::testing::tls_setup;

constexpr const char* lock_name = "table";
constexpr const char* master_name = "mymaster";

// ---- the table's types ---------------------------------------------------------------------

// One fault, built for one client. Either `instances` (one URL) or `sentinels` + master_name.
struct fault_env {
    std::vector<std::string> instances;
    std::vector<std::string> sentinels;
    // Connect and take and release the lock once before the fault (for faults that must hit
    // an established connection); then `inject` makes the fault.
    bool prime = false;
    std::function<void()> inject = [] {};
    // After the client ran: the fault was still there (EXPECTs).
    std::function<void()> verify = [] {};
    // The clients' TLS options (for rediss:// rows).
    edgelock::tls_options tls;
    // The lock's TTL; each attempt of the acquire may take a tenth of it (the core's default).
    std::int64_t ttl_ms = 1000;
    // When set: ends the fault after the failed acquire; the same client must then acquire.
    std::function<void()> heal;
    // The servers, proxies and fakes, stopped when the environment goes.
    std::vector<std::shared_ptr<void>> keep;
};

struct fault_row {
    std::string name;
    std::function<fault_env()> setup;  // throws when the fault cannot be built
    std::error_code acquire;           // expected from acquire(0 ms); {} is success
    std::error_code last_error;        // expected instance error of instance 0; {} is none
};

// gtest prints a failing test's parameter: its name.
void PrintTo(const fault_row& row, std::ostream* out) { *out << row.name; }

// What one client reported.
struct observed {
    bool completed = false;  // the acquire returned (asio: its handler ran)
    std::error_code acquire;
    std::error_code last_error;
    std::int64_t acquire_ms = 0;
    bool healed = false;  // with a `heal`: the same client acquired afterwards
};

std::string describe(const std::error_code& ec) {
    if (!ec) return "ok";
    std::ostringstream out;
    out << ec.category().name() << ":" << ec.value() << " (" << ec.message() << ")";
    return out.str();
}

// ---- building blocks for the faults ----------------------------------------------------------

// 1 when PING on `port` answers LOADING now.
bool answers_loading(std::uint16_t port) {
    try {
        redis_client probe("127.0.0.1", port, "", "", 200ms);
        const auto reply = probe.command({"PING"});
        return reply.is_error() && reply.text.rfind("LOADING", 0) == 0;
    } catch (const std::exception&) {
        return false;  // not listening yet
    }
}

long long eval_calls(redis_client& admin) {
    const std::string stats = admin.info_field("commandstats", "cmdstat_eval");
    const std::size_t at = stats.find("calls=");
    return at == std::string::npos ? 0 : std::stoll(stats.substr(at + 6));
}

// 1. Nothing listens on the port: the TCP connect is refused.
fault_env nothing_listens() {
    fault_env env;
    auto port = std::make_shared<edgelock::testing::refused_port>();
    env.instances = {port->url()};
    env.keep.push_back(port);
    return env;
}

// 2. A reset (RST) in the middle of a reply: through the fault proxy, on a connection that
// is up (primed), the acquire's reply ":0\r\n" arrives as ":0", then the proxy resets the
// client's connection. The socket reports ECONNRESET: std::errc::connection_reset.
fault_env reset_mid_reply() {
    fault_env env;
    auto server = std::make_shared<redis_server>();
    auto proxy = std::make_shared<tcp_proxy>(server->port());
    env.instances = {proxy->url()};
    env.prime = true;
    env.inject = [p = proxy.get()] { p->reset_after(2); };
    env.keep = {server, proxy};
    return env;
}

// 2b. The same cut made by an orderly close (FIN) instead: the scripted fake answers the
// handshake, then sends ":12" of a reply and closes. End of stream:
// transport_errc::connection_closed.
fault_env close_mid_reply() {
    fault_env env;
    auto fake = std::make_shared<scripted_server>([](const std::vector<std::string>& args) {
        if (args.at(0) == "PING") return scripted_reply{"+PONG\r\n"};
        if (args.at(0) == "SCRIPT") return scripted_reply{"+OK\r\n"};  // the preload: not checked
        if (args.at(0) == "INFO" || args.at(0) == "CONFIG") return long_running_node_reply(args);
        return scripted_reply{":12", true};
    });
    env.instances = {fake->url()};
    env.keep = {fake};
    return env;
}

// 3. A server with --requirepass, given the wrong password: AUTH is refused.
fault_env wrong_password() {
    fault_env env;
    auto server =
        std::make_shared<redis_server>(std::vector<std::string>{"--requirepass", "secret"});
    env.instances = {server->url("wrong")};
    env.keep = {server};
    return env;
}

// 3b. The same server given no password: PING is refused with NOAUTH, which is not a wrong
// password but a missing one (transport_errc::auth_required).
fault_env missing_password() {
    fault_env env;
    auto server =
        std::make_shared<redis_server>(std::vector<std::string>{"--requirepass", "secret"});
    env.instances = {server->url()};
    env.keep = {server};
    return env;
}

// 3c. A server that takes the connection and never answers (a hung process, or a proxy whose
// backend is gone): the scripted fake reads every command and sends nothing. The handshake
// runs out at the connect timeout (500 ms) with the connection up: handshake_timeout, not
// connect_timeout. The acquire (ttl 1 s: a 100 ms attempt) has given up by then.
fault_env silent_server() {
    fault_env env;
    auto fake = std::make_shared<scripted_server>(
        [](const std::vector<std::string>&) { return scripted_reply{}; });
    env.instances = {fake->url()};
    env.verify = [f = fake.get()] {
        EXPECT_GT(f->commands_received(), 0u) << "the connection was up";
    };
    env.keep = {fake};
    return env;
}

// 4. The only instance is a replica (REPLICAOF another, live server): the handshake's INFO
// says role:slave, and a node named directly that is a replica fails the connection with
// transport_errc::not_master before any lock request (a sentinel-named one is checked with
// ROLE instead); the acquire reports that cause.
fault_env readonly_replica() {
    fault_env env;
    auto master = std::make_shared<redis_server>();
    auto replica = std::make_shared<redis_server>(
        std::vector<std::string>{"--replicaof", "127.0.0.1", std::to_string(master->port())});
    env.instances = {replica->url()};
    env.verify = [port = replica->port()] { EXPECT_EQ(redis_client(port).role(), "slave"); };
    env.keep = {master, replica};
    return env;
}

// 5. A replica with replica-serve-stale-data no whose master is down: it answers MASTERDOWN
// to everything but INFO and the like, PING included, so the handshake fails with
// transport_errc::master_down before the acquire's request is answered.
fault_env masterdown_replica() {
    fault_env env;
    auto master = std::make_shared<redis_server>();
    auto replica = std::make_shared<redis_server>(
        std::vector<std::string>{"--replicaof", "127.0.0.1", std::to_string(master->port())});
    redis_client admin(replica->port());
    if (!eventually([&] { return admin.info_field("replication", "master_link_status") == "up"; },
                    5s)) {
        throw std::runtime_error("the replica never linked to its master");
    }
    // Set only now: with it from the start the replica answers MASTERDOWN until its first
    // sync, and its start (which waits for PONG) would race that sync.
    admin.command({"CONFIG", "SET", "replica-serve-stale-data", "no"});
    master->stop();
    if (!eventually([&] { return admin.info_field("replication", "master_link_status") == "down"; },
                    5s)) {
        throw std::runtime_error("the replica did not notice its master stopping");
    }
    env.instances = {replica->url()};
    env.verify = [port = replica->port()] {
        redis_client probe(port);
        EXPECT_EQ(probe.info_field("replication", "master_link_status"), "down");
        EXPECT_EQ(probe.command({"PING"}).text.rfind("MASTERDOWN", 0), 0u) << "still MASTERDOWN";
    };
    env.keep = {master, replica};
    return env;
}

// 6. A real server loading its dataset: 20,000 keys saved to an RDB, loaded again with
// key-load-delay 100 µs a key (over 2 s of LOADING; the client's turn takes milliseconds).
// Started here rather than by redis_server, whose start waits for PONG, i.e. for the load
// to end. PING gets LOADING, so the handshake fails with transport_errc::loading.
fault_env loading_server() {
    fault_env env;
    auto seed = std::make_shared<redis_server>();
    {
        redis_client admin(seed->port());
        admin.command({"DEBUG", "POPULATE", "20000"});
        if (admin.command({"SAVE"}).is_error()) throw std::runtime_error("SAVE failed");
    }
    seed->stop();  // its directory (and dump.rdb) stays until `seed` goes
    spawn_options output;
    output.output_path = seed->dir() + "/loading.log";
    auto loader = std::make_shared<child_process>(
        std::vector<std::string>{"redis-server", "--port", std::to_string(seed->port()), "--bind",
                                 "127.0.0.1", "--dir", seed->dir(), "--save", "", "--appendonly",
                                 "no", "--key-load-delay", "100",
                                 "--loading-process-events-interval-bytes", "1024"},
        output);
    const std::uint16_t port = seed->port();
    env.keep = {loader, seed};
    if (!eventually([&] { return answers_loading(port); }, 5s)) {
        throw std::runtime_error("the server never answered LOADING");
    }
    env.instances = {seed->url()};
    env.verify = [port] {
        EXPECT_TRUE(answers_loading(port)) << "the load ended before the client was done";
    };
    return env;
}

// 7. NOSCRIPT: SCRIPT FLUSH on a connection that is up (primed). The handshake of a new
// connection loads the scripts again, so a restart never gets to NOSCRIPT: the flush on a
// live connection is the case. The core falls back to EVAL: the acquire succeeds, and a
// NOSCRIPT handled that way is no instance error.
fault_env flushed_scripts() {
    fault_env env;
    auto server = std::make_shared<redis_server>();
    auto admin = std::make_shared<redis_client>(server->port());
    env.instances = {server->url()};
    env.prime = true;
    env.inject = [a = admin.get()] {
        a->command({"SCRIPT", "FLUSH"});
        a->command({"CONFIG", "RESETSTAT"});
    };
    env.verify = [a = admin.get()] {
        EXPECT_GE(eval_calls(*a), 1) << "the acquire fell back to EVAL";
    };
    env.keep = {server, admin};
    return env;
}

// 8. A sentinel monitoring a master that is then stopped, before any failover (there is no
// replica to promote, and down-after is a minute): the sentinel still names the dead master,
// and connecting to it is refused.
fault_env sentinel_dead_master() {
    fault_env env;
    auto master = std::make_shared<redis_server>();
    redis_sentinel::settings s;
    s.master_name = master_name;
    s.master_port = master->port();
    s.quorum = 1;
    s.down_after_ms = 60'000;
    s.failover_timeout_ms = 60'000;
    auto sentinel = std::make_shared<redis_sentinel>(s);
    master->stop();
    env.sentinels = {sentinel->url()};
    env.verify = [sentinel_port = sentinel->port(), port = master->port()] {
        const auto named = redis_client(sentinel_port)
                               .command({"SENTINEL", "get-master-addr-by-name", master_name});
        ASSERT_EQ(named.elements.size(), 2u);
        EXPECT_EQ(named.elements[1].text, std::to_string(port)) << "no failover happened";
    };
    env.keep = {master, sentinel};
    return env;
}

// 8b. A server at maxclients (--maxclients 1, its one connection held by an admin client):
// Redis answers a new connection with "-ERR max number of clients reached" before reading
// anything, and closes it. The refusal reaches the client as the reply to its first handshake
// command: a full server, retried after the reconnect delay, not an error reply to a command.
fault_env full_server() {
    fault_env env;
    auto server = std::make_shared<redis_server>(std::vector<std::string>{"--maxclients", "1"});
    std::shared_ptr<redis_client> admin;
    // The server's own start-up probe may not be gone yet: its slot frees as Redis reads EOF.
    const bool connected = eventually(
        [&] {
            try {
                auto candidate = std::make_shared<redis_client>(server->port());
                if (candidate->command({"PING"}).is_error()) return false;
                admin = candidate;
                return true;
            } catch (const std::exception&) {
                return false;
            }
        },
        5s);
    if (!connected) throw std::runtime_error("no admin connection to the full server");
    env.instances = {server->url()};
    env.verify = [a = admin.get()] {
        EXPECT_EQ(a->info_field("clients", "connected_clients"), "1") << "still full";
    };
    env.keep = {server, admin};
    return env;
}

// ---- TLS ---------------------------------------------------------------------------------------

// A TLS fault behind the fault proxy: clients connect to the proxy (rediss:// unless `plain`
// says otherwise), which forwards to `faulty` until heal() retargets it to a healthy server.
// The TTL of the rows whose acquire makes a TLS connection: its attempt (1 s) must cover
// the TCP connect, the TLS handshake (verifying the server's chain, signing with the client's
// key under mutual TLS) and Redis's handshake before the lock request can go out. That takes
// a few milliseconds natively, but about 100 ms on an emulated ARM CPU (qemu-user translates
// all of OpenSSL's code again once a process starts its first thread, as the blocking client
// does in open()), and more under valgrind: a 100 ms attempt would make a slow handshake
// read as no_quorum, and hide the alert of a refused client certificate behind it.
constexpr std::int64_t tls_ttl_ms = 10'000;

struct tls_fault {
    std::shared_ptr<tls_material> material = std::make_shared<tls_material>();
    fault_env env;

    tls_fault() {
        env.tls.ca_file = material->ca_file();
        env.ttl_ms = tls_ttl_ms;
    }
    void behind_proxy(std::shared_ptr<redis_server> faulty, std::shared_ptr<redis_server> healthy,
                      bool plain = false) {
        auto proxy = std::make_shared<tcp_proxy>(faulty->port());
        env.instances = {(plain ? "redis://127.0.0.1:" : "rediss://127.0.0.1:") +
                         std::to_string(proxy->port())};
        env.heal = [p = proxy.get(), port = healthy->port()] { p->retarget(port); };
        env.keep = {material, faulty, healthy, proxy};
    }
    std::shared_ptr<redis_server> server(tls_setup::certificate presents,
                                         bool require_client_cert = false) const {
        tls_setup setup(*material);
        setup.presents = presents;
        setup.require_client_cert = require_client_cert;
        return std::make_shared<redis_server>(setup);
    }
    std::shared_ptr<redis_server> valid() const { return server(tls_setup::certificate::valid); }
};

// 9. The client trusts another CA than the one that signed the server's certificate. Its own
// configuration is the fault, so there is nothing to heal.
fault_env tls_unknown_ca() {
    tls_fault f;
    auto server = f.valid();
    f.env.instances = {server->url()};
    f.env.tls.ca_file = f.material->other_ca_file();
    f.env.keep = {f.material, server};
    return f.env;
}

// 10. The server's certificate names another host (DNS:other.invalid, not IP:127.0.0.1).
fault_env tls_name_mismatch() {
    tls_fault f;
    f.behind_proxy(f.server(tls_setup::certificate::wrong_name), f.valid());
    return f.env;
}

// 11. The server's certificate expired nine days ago.
fault_env tls_expired() {
    tls_fault f;
    f.behind_proxy(f.server(tls_setup::certificate::expired), f.valid());
    return f.env;
}

// 12. The server asks for a client certificate (tls-auth-clients yes); the client has none.
// Under TLS 1.3 the client's handshake ends first and the server's alert comes on the first
// read (or a reset on the first write, before it): either way the alert says why.
fault_env tls_client_certificate_missing() {
    tls_fault f;
    f.behind_proxy(f.server(tls_setup::certificate::valid, true), f.valid());
    return f.env;
}

// 13. rediss:// against a plain Redis port: Redis reads the ClientHello as the start of an
// inline command and waits for its end, so the handshake runs out at the connect timeout
// (500 ms). The acquire (ttl 1 s: a 100 ms attempt) has given up by then: this row keeps
// the short attempt, as nothing here needs a handshake to finish.
fault_env tls_client_plain_port() {
    tls_fault f;
    f.env.ttl_ms = 1000;
    f.behind_proxy(std::make_shared<redis_server>(), f.valid());
    return f.env;
}

// 14. redis:// against a TLS port: Redis finds no TLS record and closes without a word.
fault_env plain_client_tls_port() {
    tls_fault f;
    f.behind_proxy(f.valid(), std::make_shared<redis_server>(), true);
    return f.env;
}

// 15. A reset in the middle of the TLS handshake: the proxy passes the first 100 bytes of the
// server's answer (part of its ServerHello), then resets the client's connection.
fault_env tls_reset_mid_handshake() {
    tls_fault f;
    auto server = f.valid();
    auto proxy = std::make_shared<tcp_proxy>(server->port());
    proxy->reset_after(100);
    f.env.instances = {"rediss://127.0.0.1:" + std::to_string(proxy->port())};
    f.env.heal = [p = proxy.get()] { p->pass(); };
    f.env.keep = {f.material, server, proxy};
    return f.env;
}

// 16. Mutual TLS that works: the server asks for a client certificate and gets one.
fault_env tls_mutual() {
    tls_fault f;
    auto server = f.server(tls_setup::certificate::valid, true);
    f.env.instances = {server->url()};
    f.env.tls.cert_file = f.material->client_cert();
    f.env.tls.key_file = f.material->client_key();
    f.env.keep = {f.material, server};
    return f.env;
}

// ---- the table -------------------------------------------------------------------------------

std::error_code none() { return {}; }

const std::vector<fault_row>& rows() {
    static const std::vector<fault_row> table = {
        // name                   setup                 acquire(0 ms) instance last error
        {"connection_refused", nothing_listens, std::make_error_code(std::errc::connection_refused),
         std::make_error_code(std::errc::connection_refused)},
        {"reset_mid_reply", reset_mid_reply, std::make_error_code(std::errc::connection_reset),
         std::make_error_code(std::errc::connection_reset)},
        {"close_mid_reply", close_mid_reply, make_error_code(transport_errc::connection_closed),
         make_error_code(transport_errc::connection_closed)},
        {"wrong_password", wrong_password, make_error_code(transport_errc::auth_failed),
         make_error_code(transport_errc::auth_failed)},
        {"missing_password", missing_password, make_error_code(transport_errc::auth_required),
         make_error_code(transport_errc::auth_required)},
        {"silent_server", silent_server, make_error_code(errc::no_quorum),
         make_error_code(transport_errc::handshake_timeout)},
        {"readonly_replica", readonly_replica, make_error_code(transport_errc::not_master),
         make_error_code(transport_errc::not_master)},
        {"masterdown_replica", masterdown_replica, make_error_code(transport_errc::master_down),
         make_error_code(transport_errc::master_down)},
        {"loading", loading_server, make_error_code(transport_errc::loading),
         make_error_code(transport_errc::loading)},
        {"noscript_after_flush", flushed_scripts, none(), none()},
        {"sentinel_dead_master", sentinel_dead_master,
         std::make_error_code(std::errc::connection_refused),
         std::make_error_code(std::errc::connection_refused)},
        {"max_clients", full_server, make_error_code(transport_errc::max_clients),
         make_error_code(transport_errc::max_clients)},
        {"tls_unknown_ca", tls_unknown_ca, make_error_code(transport_errc::tls_untrusted),
         make_error_code(transport_errc::tls_untrusted)},
        {"tls_name_mismatch", tls_name_mismatch, make_error_code(transport_errc::tls_name_mismatch),
         make_error_code(transport_errc::tls_name_mismatch)},
        {"tls_expired", tls_expired, make_error_code(transport_errc::tls_expired),
         make_error_code(transport_errc::tls_expired)},
        {"tls_client_certificate_missing", tls_client_certificate_missing,
         make_error_code(transport_errc::tls_client_certificate_required),
         make_error_code(transport_errc::tls_client_certificate_required)},
        {"tls_client_plain_port", tls_client_plain_port, make_error_code(errc::no_quorum),
         make_error_code(transport_errc::tls_handshake_timeout)},
        {"plain_client_tls_port", plain_client_tls_port,
         make_error_code(transport_errc::closed_before_reply),
         make_error_code(transport_errc::closed_before_reply)},
        {"tls_reset_mid_handshake", tls_reset_mid_handshake,
         std::make_error_code(std::errc::connection_reset),
         std::make_error_code(std::errc::connection_reset)},
        {"tls_mutual", tls_mutual, none(), none()},
    };
    return table;
}

// ---- the two clients, one helper each ---------------------------------------------------------

// The async client: open, (prime), fault, one acquire with zero wait, then its instance's last
// error (waited for up to 1 s to become the expected one: the connection may be dropped
// just after the acquire's answer was delivered).
observed run_asio(const fault_row& row, fault_env& env) {
    namespace at = edgelock::asio_tests;
    observed seen;
    asio::io_context io{1};
    edgelock::async::client owner(io);
    edgelock::async::client_config config = at::config_for(env.instances);
    config.tls = env.tls;
    if (!env.sentinels.empty()) {
        config.sentinels = env.sentinels;
        config.master_name = master_name;
    }
    const std::error_code opened = owner.open(config);
    EXPECT_FALSE(opened) << "asio open: " << describe(opened);
    if (opened) return seen;
    edgelock::async::lock_handle handle;
    const std::error_code added = owner.add_lock(at::lock_for(lock_name, env.ttl_ms), handle);
    EXPECT_FALSE(added) << "asio add_lock: " << describe(added);
    if (added) return seen;
    if (env.prime) {
        const at::outcome primed = at::acquire(owner, handle, 1s);
        EXPECT_TRUE(primed.done && !primed.ec) << "asio priming acquire: " << describe(primed.ec);
        EXPECT_FALSE(at::release(owner, handle).ec) << "asio priming release";
    }
    env.inject();
    const auto start = std::chrono::steady_clock::now();
    const at::outcome got = at::acquire(owner, handle, 0ms, 3s);
    seen.acquire_ms = at::elapsed_ms(start);
    seen.completed = got.done;
    seen.acquire = got.ec;
    at::run_until(
        io, [&] { return owner.instance_last_error(0) == row.last_error; }, 1s);
    seen.last_error = owner.instance_last_error(0);
    if (got.done && !got.ec) {
        EXPECT_FALSE(at::release(owner, handle).ec) << "asio release";
    }
    if (env.heal) {
        env.heal();
        const at::outcome healed = at::acquire(owner, handle, 3s, 5s);
        seen.healed = healed.done && !healed.ec;
        EXPECT_TRUE(seen.healed) << "asio acquire after heal: " << describe(healed.ec);
        if (seen.healed) {
            EXPECT_FALSE(at::release(owner, handle).ec) << "asio release after heal";
        }
    }
    return seen;
}

// The blocking client, the same steps.
observed run_blocking(const fault_row& row, fault_env& env) {
    observed seen;
    edgelock::blocking::lock_options options =
        edgelock::redis_tests::options_for(lock_name, env.instances, env.ttl_ms);
    options.tls = env.tls;
    if (!env.sentinels.empty()) {
        options.sentinels = env.sentinels;
        options.master_name = master_name;
    }
    edgelock::blocking::lock lock;
    const std::error_code opened = lock.open(options);
    EXPECT_FALSE(opened) << "blocking open: " << describe(opened);
    if (opened) return seen;
    if (env.prime) {
        const std::error_code primed = lock.acquire(1s);
        EXPECT_FALSE(primed) << "blocking priming acquire: " << describe(primed);
        EXPECT_FALSE(lock.release()) << "blocking priming release";
    }
    env.inject();
    const auto start = std::chrono::steady_clock::now();
    seen.acquire = lock.acquire(0ms);
    seen.acquire_ms = edgelock::redis_tests::elapsed_ms(start);
    seen.completed = true;
    eventually([&] { return lock.instance_error(0) == row.last_error; }, 1s);
    seen.last_error = lock.instance_error(0);
    if (!seen.acquire) {
        EXPECT_FALSE(lock.release()) << "blocking release";
    }
    if (env.heal) {
        env.heal();
        const std::error_code healed = lock.acquire(3s);
        seen.healed = !healed;
        EXPECT_FALSE(healed) << "blocking acquire after heal: " << describe(healed);
        if (seen.healed) {
            EXPECT_FALSE(lock.release()) << "blocking release after heal";
        }
    }
    return seen;
}

// ---- the test ---------------------------------------------------------------------------------

class transport_table : public ::testing::TestWithParam<fault_row> {};

TEST_P(transport_table, both_clients_report_the_same_code) {
    const fault_row& row = GetParam();
    observed asio_seen;
    observed blocking_seen;
    {
        fault_env env = row.setup();
        asio_seen = run_asio(row, env);
        env.verify();
    }
    {
        fault_env env = row.setup();
        blocking_seen = run_blocking(row, env);
        env.verify();
    }
    std::cout << "[ row      ] " << row.name << "\n"
              << "    acquire:    asio " << describe(asio_seen.acquire) << " in "
              << asio_seen.acquire_ms << " ms | blocking " << describe(blocking_seen.acquire)
              << " in " << blocking_seen.acquire_ms << " ms | expected " << describe(row.acquire)
              << "\n"
              << "    last error: asio " << describe(asio_seen.last_error) << " | blocking "
              << describe(blocking_seen.last_error) << " | expected " << describe(row.last_error)
              << "\n"
              << "    usable afterwards: asio " << asio_seen.healed << " | blocking "
              << blocking_seen.healed << std::endl;

    ASSERT_TRUE(asio_seen.completed) << "the asio acquire never completed";
    ASSERT_TRUE(blocking_seen.completed);
    EXPECT_LT(asio_seen.acquire_ms, 2000);
    EXPECT_LT(blocking_seen.acquire_ms, 2000);

    EXPECT_EQ(asio_seen.acquire, blocking_seen.acquire)
        << "acquire: asio " << describe(asio_seen.acquire) << ", blocking "
        << describe(blocking_seen.acquire);
    EXPECT_EQ(asio_seen.acquire, row.acquire) << "asio acquire: " << describe(asio_seen.acquire);
    EXPECT_EQ(blocking_seen.acquire, row.acquire)
        << "blocking acquire: " << describe(blocking_seen.acquire);

    EXPECT_EQ(asio_seen.last_error, blocking_seen.last_error)
        << "last error: asio " << describe(asio_seen.last_error) << ", blocking "
        << describe(blocking_seen.last_error);
    EXPECT_EQ(asio_seen.last_error, row.last_error)
        << "asio last error: " << describe(asio_seen.last_error);
    EXPECT_EQ(blocking_seen.last_error, row.last_error)
        << "blocking last error: " << describe(blocking_seen.last_error);
}

// A TLS file refused at open(): the code cannot carry which, so each client's tls_error()
// names the file, its path and OpenSSL's (or the system's) reason, the same in both.
TEST(transport_tls_files, both_clients_name_the_file_they_could_not_load_and_why) {
    tls_material material;
    struct refusal {
        std::string what;
        edgelock::tls_options tls;
        edgelock::tls_file file;
        std::string path;
        std::string reason_part;  // a word of the reason, which is OpenSSL's own text
    };
    edgelock::tls_options key_as_ca;
    key_as_ca.ca_file = material.client_key();
    edgelock::tls_options ca_dir_file;
    ca_dir_file.ca_dir = material.ca_file();
    edgelock::tls_options mismatched;
    mismatched.ca_file = material.ca_file();
    mismatched.cert_file = material.client_cert();
    mismatched.key_file = material.server_key();
    edgelock::tls_options key_as_cert = mismatched;
    key_as_cert.cert_file = material.client_key();
    const std::vector<refusal> cases = {
        {"a key given as the CA file", key_as_ca, edgelock::tls_file::ca_file, key_as_ca.ca_file,
         "certificate"},
        {"a file given as the CA directory", ca_dir_file, edgelock::tls_file::ca_dir,
         ca_dir_file.ca_dir, "not a directory"},
        {"a key given as the certificate", key_as_cert, edgelock::tls_file::cert_file,
         key_as_cert.cert_file, ""},
        {"another certificate's key", mismatched, edgelock::tls_file::key_file, mismatched.key_file,
         "mismatch"},
    };
    const edgelock::testing::refused_port refused;
    const std::vector<std::string> instances = {"rediss://127.0.0.1:" +
                                                std::to_string(refused.port())};
    for (const refusal& c : cases) {
        SCOPED_TRACE(c.what);
        asio::io_context io{1};
        edgelock::async::client async_client(io);
        edgelock::async::client_config config = edgelock::asio_tests::config_for(instances);
        config.tls = c.tls;
        EXPECT_EQ(async_client.open(config), transport_errc::tls_files);
        edgelock::blocking::lock_options options =
            edgelock::redis_tests::options_for(lock_name, instances);
        options.tls = c.tls;
        edgelock::blocking::lock blocking;
        EXPECT_EQ(blocking.open(options), transport_errc::tls_files);

        for (const edgelock::tls_load_error* seen :
             {&async_client.tls_error(), &blocking.tls_error()}) {
            EXPECT_EQ(seen->file, c.file);
            EXPECT_EQ(seen->path, c.path);
            EXPECT_FALSE(seen->reason.empty());
            EXPECT_NE(seen->reason.find(c.reason_part), std::string::npos) << seen->reason;
            EXPECT_EQ(seen->reason.find('\n'), std::string::npos) << "one line";
        }
        EXPECT_EQ(async_client.tls_error().reason, blocking.tls_error().reason);
        EXPECT_EQ(describe(blocking.tls_error()), "TLS " + std::string(describe(c.file)) + " " +
                                                      c.path + ": " + blocking.tls_error().reason);
    }
}

// ---- a Sentinel failover while locks are held, through both clients ----------------------
//
// What a client does with a hold across a failover, and why: the hold is kept when the
// promoted replica has our key (it was replicated before the old master stopped) and a
// renewal reaches the new master before validity runs out; the client then goes on renewing
// there. It is reported lost with `expired` when the failover takes longer than the remaining
// validity (no renewal could be confirmed in time), and with `token_gone` when the new master
// lacks our token (the SET never replicated, or someone else took the key there). The master
// changing is not in itself a loss: the key on the master that now serves writes is the only
// authority on who holds the lock. Asynchronous replication is the risk: without WAIT
// (replicas_to_wait) an acquired key can be lost in a failover, and until our next renewal
// notices, two owners may believe they hold it; fence tokens make the protected storage
// refuse the older one.
//
// Each client meets its own topology (primary, replica, three sentinels) and holds three locks:
//   kept      15 s, WAIT for 1 replica: outlives the failover and the old master's return
//   expires   1 s: a lease shorter than the failover
//   vanishes  9 s: its key is deleted on the new master

enum failover_lock : std::size_t { kept, expires, vanishes, failover_locks };
constexpr std::array<const char*, failover_locks> failover_names = {"kept", "expires", "vanishes"};
constexpr std::array<std::int64_t, failover_locks> failover_ttls_ms = {15'000, 1000, 9000};
constexpr std::int64_t kept_replica_wait_ms = 400;

// One client as the scenario drives it. The calls come from the test's thread only.
class failover_client {
public:
    virtual ~failover_client() = default;
    // Finds the master through the sentinels and adds the three locks.
    virtual std::error_code open(sentinel_topology& topology) = 0;
    virtual std::error_code acquire(failover_lock which) = 0;  // one attempt, zero wait
    virtual std::error_code release(failover_lock which) = 0;
    virtual bool held(failover_lock which) = 0;
    // The code the lock's lost handler was called with; {} while it was not.
    virtual std::error_code lost_reported(failover_lock which) = 0;
    virtual std::int64_t validity_left_ms(failover_lock which) = 0;
    // Lets the client work (the async client's io_context runs) until done() or `timeout`.
    virtual bool wait_until(const std::function<bool()>& done,
                            std::chrono::milliseconds timeout) = 0;
    // The sentinels named `port` the new master: what the client itself reports of that.
    virtual void check_follows(std::uint16_t port) = 0;
    // Connections made to another master than the last, as the client's metrics count them.
    virtual std::uint64_t failovers_followed() = 0;
};

class asio_failover_client final : public failover_client {
public:
    std::error_code open(sentinel_topology& topology) override {
        namespace at = edgelock::asio_tests;
        edgelock::async::client_config config;
        config.sentinels = topology.sentinel_urls();
        config.master_name = sentinel_topology::master_name;
        config.connect_timeout_ms = 300;
        config.command_timeout_ms = 500;
        config.reconnect_delay_min_ms = 20;
        config.reconnect_delay_max_ms = 200;
        if (const std::error_code opened = owner_.open(config)) return opened;
        if (const std::error_code ready = at::wait_ready(owner_).ec) return ready;
        EXPECT_EQ(owner_.instance_endpoint(0), endpoint_of(topology.master_port()));
        for (std::size_t i = 0; i < failover_locks; ++i) {
            edgelock::lock_config lock = at::lock_for(failover_names[i], failover_ttls_ms[i]);
            if (i == kept) {
                lock.replicas_to_wait = 1;
                lock.replica_wait_ms = kept_replica_wait_ms;
            }
            if (const std::error_code added = owner_.add_lock(lock, handles_[i])) return added;
            const std::error_code set = owner_.set_lost_handler(
                handles_[i], [this, i](std::error_code ec) { lost_[i] = ec; });
            if (set) return set;
        }
        return {};
    }
    std::error_code acquire(failover_lock which) override {
        return edgelock::asio_tests::acquire(owner_, handles_[which], 0ms).ec;
    }
    std::error_code release(failover_lock which) override {
        return edgelock::asio_tests::release(owner_, handles_[which]).ec;
    }
    bool held(failover_lock which) override { return owner_.held(handles_[which]); }
    std::error_code lost_reported(failover_lock which) override { return lost_[which]; }
    std::int64_t validity_left_ms(failover_lock which) override {
        const auto left =
            owner_.status(handles_[which]).valid_until - std::chrono::steady_clock::now();
        return std::chrono::duration_cast<std::chrono::milliseconds>(left).count();
    }
    bool wait_until(const std::function<bool()>& done, std::chrono::milliseconds timeout) override {
        return edgelock::asio_tests::run_until(io_, done, timeout);
    }
    // The async client names the server it is connected to.
    void check_follows(std::uint16_t port) override {
        const std::string endpoint = endpoint_of(port);
        EXPECT_TRUE(wait_until(
            [&] { return owner_.instance_connected(0) && owner_.instance_endpoint(0) == endpoint; },
            5s))
            << "the client found the new master: " << owner_.instance_endpoint(0);
    }
    std::uint64_t failovers_followed() override { return owner_.metrics().failovers; }

private:
    static std::string endpoint_of(std::uint16_t port) {
        return "127.0.0.1:" + std::to_string(port);
    }

    asio::io_context io_{1};
    std::array<std::error_code, failover_locks> lost_{};  // outlives the client's handlers
    std::array<edgelock::async::lock_handle, failover_locks> handles_{};
    edgelock::async::client owner_{io_};
};

class blocking_failover_client final : public failover_client {
public:
    std::error_code open(sentinel_topology& topology) override {
        for (std::size_t i = 0; i < failover_locks; ++i) {
            edgelock::blocking::lock_options options;
            options.name = failover_names[i];
            options.sentinels = topology.sentinel_urls();
            options.master_name = sentinel_topology::master_name;
            options.ttl_ms = failover_ttls_ms[i];
            options.connect_timeout_ms = 300;
            options.command_timeout_ms = 500;
            if (i == kept) {
                options.replicas_to_wait = 1;
                options.replica_wait_ms = kept_replica_wait_ms;
            }
            // on_lost runs on a thread of its own.
            options.on_lost = [this, i](std::error_code ec) {
                std::lock_guard<std::mutex> guard(mutex_);
                lost_[i] = ec;
            };
            if (const std::error_code opened = locks_[i].open(options)) return opened;
        }
        return {};
    }
    std::error_code acquire(failover_lock which) override {
        return locks_[which].try_acquire(&holds_[which]);
    }
    std::error_code release(failover_lock which) override { return locks_[which].release(); }
    bool held(failover_lock which) override { return locks_[which].held(); }
    // The blocking client also keeps the reason: lost() and lost_reason() must agree with it.
    std::error_code lost_reported(failover_lock which) override {
        std::error_code reported;
        {
            std::lock_guard<std::mutex> guard(mutex_);
            reported = lost_[which];
        }
        if (reported) {
            EXPECT_TRUE(locks_[which].lost()) << failover_names[which];
            EXPECT_EQ(locks_[which].lost_reason(), reported) << failover_names[which];
        }
        return reported;
    }
    std::int64_t validity_left_ms(failover_lock which) override {
        return holds_[which].valid_until_ms - edgelock::blocking::now_ms();
    }
    // The helper thread renews meanwhile: only the test's thread waits.
    bool wait_until(const std::function<bool()>& done, std::chrono::milliseconds timeout) override {
        return eventually(done, timeout);
    }
    // The blocking client does not name its server: its reacquire on the new master shows it.
    void check_follows(std::uint16_t) override {}
    std::uint64_t failovers_followed() override {
        std::uint64_t followed = 0;
        for (const edgelock::blocking::lock& lock : locks_) followed += lock.metrics().failovers;
        return followed;
    }

private:
    // Declared before the locks: their destructors wait for a running on_lost.
    std::mutex mutex_;
    std::array<std::error_code, failover_locks> lost_{};
    std::array<edgelock::blocking::hold, failover_locks> holds_{};
    std::array<edgelock::blocking::lock, failover_locks> locks_;
};

// What one client did through the failover.
struct failover_observed {
    std::error_code expires_lost;
    std::error_code vanishes_lost;
    bool kept_held_past_its_first_lease = false;
    std::error_code kept_lost;
    bool kept_key_renewed_on_new_master = false;  // its PTTL there is positive
    std::error_code kept_release;
    bool kept_key_gone_after_release = false;
    std::error_code expires_release;
    std::error_code vanishes_release;
    std::error_code reacquire;  // the expired lock again, on the new master
    bool reacquired_on_new_master = false;
    std::uint64_t failovers_followed = 0;
};

// The client is made after the topology, so that it is gone before its servers are.
template <typename Client>
failover_observed run_failover() {
    failover_observed seen;
    sentinel_topology topology;
    const std::uint16_t old_master = topology.master_port();
    Client client;
    const std::error_code opened = client.open(topology);
    EXPECT_FALSE(opened) << describe(opened);
    if (opened) return seen;
    for (const failover_lock which : {kept, expires, vanishes}) {
        const std::error_code got = client.acquire(which);
        EXPECT_FALSE(got) << failover_names[which] << ": " << describe(got);
        if (got) return seen;
    }
    const std::int64_t kept_lease_ms = client.validity_left_ms(kept);
    const auto kept_acquired = std::chrono::steady_clock::now();
    redis_client(old_master).command({"WAIT", "1", "2000"});

    topology.primary().freeze();
    const std::uint16_t new_master = topology.wait_for_failover(old_master);
    EXPECT_NE(new_master, old_master);
    redis_client promoted(new_master);
    EXPECT_TRUE(promoted.exists("kept")) << "WAIT made sure the replica had the key";
    promoted.command({"DEL", "vanishes"});
    client.check_follows(new_master);

    // The short lease could not be renewed while no master answered; the renewal on the new
    // master finds no token for vanishes.
    client.wait_until([&] { return bool(client.lost_reported(expires)); }, 5s);
    seen.expires_lost = client.lost_reported(expires);
    client.wait_until([&] { return bool(client.lost_reported(vanishes)); }, 6s);
    seen.vanishes_lost = client.lost_reported(vanishes);
    // The new master has no replica until the old one comes back as one (thawed only now, so
    // that no client renews on it while it still believes it is the master): until then no
    // renewal of kept can be confirmed by WAIT, and its lease only runs down.
    topology.primary().thaw();

    // The replicated hold goes on past the lease it had before the failover, renewed on the
    // new master once the old one replicates it.
    const auto past_first_lease = kept_acquired + std::chrono::milliseconds(kept_lease_ms + 500);
    client.wait_until([&] { return std::chrono::steady_clock::now() > past_first_lease; }, 25s);
    seen.kept_held_past_its_first_lease = client.held(kept);
    seen.kept_lost = client.lost_reported(kept);
    seen.kept_key_renewed_on_new_master = promoted.pttl("kept") > 0;
    seen.kept_release = client.release(kept);
    seen.kept_key_gone_after_release = !promoted.exists("kept");

    seen.expires_release = client.release(expires);
    seen.vanishes_release = client.release(vanishes);
    seen.reacquire = client.acquire(expires);
    seen.reacquired_on_new_master = promoted.exists("expires");
    if (!seen.reacquire) {
        EXPECT_FALSE(client.release(expires));
    }
    seen.failovers_followed = client.failovers_followed();
    return seen;
}

void expect_failover_outcome(const char* client, const failover_observed& seen) {
    SCOPED_TRACE(client);
    EXPECT_EQ(seen.expires_lost, errc::expired) << describe(seen.expires_lost);
    EXPECT_EQ(seen.vanishes_lost, errc::token_gone) << describe(seen.vanishes_lost);
    EXPECT_TRUE(seen.kept_held_past_its_first_lease);
    EXPECT_FALSE(seen.kept_lost) << describe(seen.kept_lost);
    EXPECT_TRUE(seen.kept_key_renewed_on_new_master);
    EXPECT_FALSE(seen.kept_release) << describe(seen.kept_release);
    EXPECT_TRUE(seen.kept_key_gone_after_release) << "released on the new master";
    EXPECT_EQ(seen.expires_release, errc::expired) << describe(seen.expires_release);
    EXPECT_EQ(seen.vanishes_release, errc::expired) << describe(seen.vanishes_release);
    EXPECT_FALSE(seen.reacquire) << "the client works against the new master: "
                                 << describe(seen.reacquire);
    EXPECT_TRUE(seen.reacquired_on_new_master);
    EXPECT_GE(seen.failovers_followed, 1u) << "the metrics count the move to the new master";
}

TEST(transport_sentinel, a_failover_keeps_replicated_holds_and_loses_expired_or_missing_ones) {
    const failover_observed asio_seen = run_failover<asio_failover_client>();
    const failover_observed blocking_seen = run_failover<blocking_failover_client>();
    expect_failover_outcome("asio", asio_seen);
    expect_failover_outcome("blocking", blocking_seen);
}

INSTANTIATE_TEST_SUITE_P(fault, transport_table, ::testing::ValuesIn(rows()),
                         [](const ::testing::TestParamInfo<fault_row>& info) {
                             return info.param.name;
                         });

}  // namespace
