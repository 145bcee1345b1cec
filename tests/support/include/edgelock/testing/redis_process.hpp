// SPDX-License-Identifier: Apache-2.0
// edgelock test support: real redis-server / redis-sentinel processes and topologies.
//
// Every process binds 127.0.0.1 on a free port, runs in its own temporary directory (its
// config, log and any dump live there; the directory is removed with the object) and starts
// with `--save '' --enable-debug-command local --repl-diskless-sync-delay 0`, and AOF with
// appendfsync always unless started volatile (see `persistence` below).
// The binaries are found in PATH. Constructors return once the process answers PING; they
// throw std::runtime_error (with the tail of the process's log) when it does not within
// start_timeout. Destructors SIGKILL the process and reap it, so a failing test leaves
// nothing behind; see child_process.hpp for what happens when the test process itself dies.
//
//   redis_server      one redis-server: stop/start (same port), restart, freeze/thaw (SIGSTOP)
//   redis_sentinel    one redis-sentinel monitoring a master
//   redis_masters     N independent masters (Redlock)
//   sentinel_topology primary + replica + 3 sentinels (quorum 2), fast failover settings
//
// Servers, sentinels and topologies also run TLS-only (`--port 0`, a `--tls-port`), with the
// certificates of a tls_material (tls_material.hpp): see tls_setup. Their readiness PING then
// goes over TLS with the material's client certificate and checks nothing of the server's
// (a server presenting an expired certificate is up all the same).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "edgelock/testing/child_process.hpp"

namespace edgelock::testing {

class redis_client;
class tls_material;

inline constexpr const char* loopback_host = "127.0.0.1";
inline constexpr std::chrono::milliseconds start_timeout{10'000};

// A TCP port on 127.0.0.1 that was free a moment ago (bound to 0 and closed again). Another
// process may take it before the caller binds it; redis_server retries with a new port then.
std::uint16_t free_port();

// What a redis_server keeps across a restart. The clients' restart guard (lock.hpp,
// "Restarts") counts a durable node at once and keeps any other out for a TTL after its start,
// so tests that are not about the guard start durable servers, the deployment the guard
// recommends; the guard's own tests (and those about forgetting) start volatile ones.
enum class persistence {
    durable,   // AOF with appendfsync always: a restart keeps every acknowledged write
    volatile_  // no RDB, no AOF: a restart comes back empty
};

// How a redis_server runs TLS-only: `--port 0 --tls-port <free port>`, the certificate chosen
// below and its key, the material's CA for the certificates of clients (and of the servers it
// replicates from), `--tls-auth-clients yes|no --tls-replication yes`. Made implicitly from a
// tls_material for the usual case: `redis_server server(material);`.
struct tls_setup {
    // The certificate the server presents; a client that verifies accepts only `valid`.
    enum class certificate {
        valid,      // server_cert(): for IP:127.0.0.1, IP:::1, DNS:localhost
        expired,    // expired_cert(): "certificate has expired"
        wrong_name  // wrong_name_cert(): for DNS:other.invalid only, a name mismatch
    };

    tls_setup(const tls_material& tls) : material(&tls) {}  // implicit on purpose, see above

    const tls_material* material;  // must outlive the server
    certificate presents = certificate::valid;
    // tls-auth-clients yes: a client without a certificate from the material's CA is refused
    // (under TLS 1.3 after its handshake, on its first read).
    bool require_client_cert = false;
};

class redis_server {
public:
    // Starts a master. `extra_args` are appended to the command line, e.g.
    // {"--requirepass", "secret"} or {"--replicaof", "127.0.0.1", "6400"}.
    explicit redis_server(std::vector<std::string> extra_args = {},
                          persistence kept = persistence::durable);
    // The same, TLS-only: port() is the TLS port, url() is "rediss://...". Stop, start,
    // restart and freeze work as for a plain server.
    explicit redis_server(const tls_setup& tls, std::vector<std::string> extra_args = {},
                          persistence kept = persistence::durable);
    ~redis_server();
    redis_server(const redis_server&) = delete;
    redis_server& operator=(const redis_server&) = delete;

    std::uint16_t port() const noexcept { return port_; }
    pid_t pid() const noexcept { return process_.pid(); }
    std::string host() const { return loopback_host; }
    // "redis://127.0.0.1:<port>" ("rediss://" over TLS); with credentials when given (they are
    // not checked).
    std::string url(const std::string& password = "", const std::string& user = "") const;
    // How it runs TLS; nullopt for a plain server.
    const std::optional<tls_setup>& tls() const noexcept { return tls_; }
    // The temporary directory of this process.
    const std::string& dir() const noexcept { return dir_; }

    bool running() noexcept { return process_.running(); }
    // SIGKILL and reap: a crash (a volatile server loses its data set).
    void stop() noexcept;
    // Starts again on the same port with the same arguments and waits for PING. Throws if the
    // port cannot be bound again.
    void start();
    void restart();
    // SIGSTOP / SIGCONT: the port keeps accepting TCP connections (the kernel's backlog) but
    // nothing is answered: a hung server.
    void freeze();
    void thaw();

    // The last lines of the process's log (for failure messages).
    std::string log_tail(std::size_t lines = 20) const;

private:
    void start_on_a_free_port();
    void launch();
    std::vector<std::string> listening_args() const;

    std::vector<std::string> extra_args_;
    persistence kept_ = persistence::durable;
    std::optional<tls_setup> tls_;
    std::string dir_;
    std::uint16_t port_ = 0;
    child_process process_;
};

class redis_sentinel {
public:
    struct settings {
        std::string master_name = "mymaster";
        std::uint16_t master_port = 0;
        int quorum = 2;
        int down_after_ms = 1000;
        int failover_timeout_ms = 3000;
        std::string auth_pass;  // the masters' password, when they have one
        // TLS-only when set: `port 0`, `tls-port`, the material's server certificate (also
        // presented to the servers and sentinels it connects to, over TLS), its CA,
        // `tls-replication yes`, `tls-auth-clients no`. Must outlive the sentinel.
        const tls_material* tls = nullptr;
    };
    explicit redis_sentinel(const settings& s);
    ~redis_sentinel();
    redis_sentinel(const redis_sentinel&) = delete;
    redis_sentinel& operator=(const redis_sentinel&) = delete;

    std::uint16_t port() const noexcept { return port_; }
    pid_t pid() const noexcept { return process_.pid(); }
    // "redis://127.0.0.1:<port>", or "rediss://" over TLS.
    std::string url() const;
    void stop() noexcept { process_.kill(); }
    void freeze() { process_.freeze(); }
    void thaw() { process_.thaw(); }
    std::string log_tail(std::size_t lines = 20) const;

private:
    settings settings_;
    std::string dir_;
    std::uint16_t port_ = 0;
    child_process process_;
};

// N independent masters, e.g. 5 for Redlock.
class redis_masters {
public:
    explicit redis_masters(std::size_t count, const std::vector<std::string>& extra_args = {},
                           persistence kept = persistence::durable);
    std::size_t size() const noexcept { return servers_.size(); }
    redis_server& operator[](std::size_t i) { return *servers_.at(i); }
    std::vector<std::string> urls() const;

private:
    std::vector<std::unique_ptr<redis_server>> servers_;
};

// A primary, one replica of it and three sentinels (quorum 2, down-after 1000 ms, failover
// timeout 3000 ms). The constructor returns when the replica's link is up and every sentinel
// knows the replica and the two other sentinels, so a failover can be authorised at once.
// A failover after freezing or stopping the primary takes about 3 s.
class sentinel_topology {
public:
    static constexpr const char* master_name = "mymaster";

    // `server_args` go to both redis-servers (e.g. a password; then pass the same password
    // as `auth_pass` so the sentinels and the replica can log in).
    explicit sentinel_topology(const std::vector<std::string>& server_args = {},
                               const std::string& auth_pass = "");
    // The same, all TLS-only: both servers as `tls` says (they must present the valid
    // certificate: their peers verify it), the replica replicating over TLS, the sentinels as
    // redis_sentinel::settings::tls says. sentinel_urls() are rediss://, and master_port() and
    // wait_for_failover() ask over TLS with the material's client certificate.
    explicit sentinel_topology(const tls_setup& tls,
                               const std::vector<std::string>& server_args = {},
                               const std::string& auth_pass = "");
    sentinel_topology(const sentinel_topology&) = delete;
    sentinel_topology& operator=(const sentinel_topology&) = delete;

    redis_server& primary() { return *primary_; }  // the initial master
    redis_server& replica() { return *replica_; }  // the initial replica
    redis_sentinel& sentinel(std::size_t i) { return *sentinels_.at(i); }
    std::vector<std::string> sentinel_urls() const;

    // The master's port as the sentinels report it now (asks each until one answers).
    std::uint16_t master_port();
    // Waits until the sentinels report a master other than `old_port` and that server says it
    // is a master. Returns the new port; throws after `timeout`.
    std::uint16_t wait_for_failover(std::uint16_t old_port,
                                    std::chrono::milliseconds timeout = std::chrono::seconds(20));
    // The server (primary or replica) listening on `port`.
    redis_server& server_on(std::uint16_t port);

private:
    void build(const std::vector<std::string>& server_args);
    std::unique_ptr<redis_server> make_server(const std::vector<std::string>& args) const;
    // An admin client for a server or sentinel of this topology, over TLS when it runs TLS.
    redis_client admin(std::uint16_t port, const std::string& password,
                       std::chrono::milliseconds timeout) const;

    std::string auth_pass_;
    std::optional<tls_setup> tls_;
    std::unique_ptr<redis_server> primary_;
    std::unique_ptr<redis_server> replica_;
    std::vector<std::unique_ptr<redis_sentinel>> sentinels_;
};

// Polls `condition` every 10 ms until it is true (returns true) or `timeout` passes (false).
template <typename Condition>
bool eventually(Condition condition, std::chrono::milliseconds timeout) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (!condition()) {
        if (std::chrono::steady_clock::now() >= until) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
}

}  // namespace edgelock::testing
