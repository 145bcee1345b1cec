// SPDX-License-Identifier: Apache-2.0
#include "edgelock/testing/redis_process.hpp"

#include <arpa/inet.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <deque>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <thread>
#include <utility>

#include "edgelock/testing/redis_client.hpp"
#include "edgelock/testing/tls_material.hpp"
#include "temp_dir.hpp"

namespace edgelock::testing {
namespace {

using detail::make_temp_dir;
using detail::remove_dir;

constexpr int start_attempts_max = 5;
constexpr std::chrono::milliseconds probe_timeout{200};

std::string tail_of(const std::string& path, std::size_t lines) {
    std::ifstream in(path);
    std::deque<std::string> last;
    std::string line;
    while (std::getline(in, line)) {
        last.push_back(line);
        if (last.size() > lines) last.pop_front();
    }
    std::string out;
    for (const std::string& l : last) out += l + "\n";
    return out;
}

bool is_up(const redis_reply& reply) {
    return (reply.type == redis_reply::kind::status && reply.text == "PONG") ||
           (reply.is_error() && reply.text.rfind("NOAUTH", 0) == 0);
}

// How a readiness probe talks TLS: with the client certificate (tls-auth-clients yes wants
// one), and trusting any server certificate, since it only asks whether the process is up.
client_tls probe_tls(const tls_material& material) {
    client_tls options = client_tls::with_client_cert(material);
    options.verify_server = false;
    return options;
}

// One PING over TLS; as answers_ping() below.
bool answers_tls_ping(std::uint16_t port, const client_tls& probe) {
    try {
        redis_client client(loopback_host, port, probe, "", "", probe_timeout);
        return is_up(client.command({"PING"}));
    } catch (const std::exception&) {
        return false;  // not listening yet, or still starting
    }
}

// One PING. True for PONG, and for NOAUTH (a password-protected server that is up).
bool answers_ping(std::uint16_t port) {
    timeval tv{0, 200'000};
    redisContext* c = redisConnectWithTimeout(loopback_host, port, tv);
    if (c == nullptr) return false;
    bool up = false;
    if (c->err == 0) {
        redisSetTimeout(c, tv);
        auto* reply = static_cast<redisReply*>(redisCommand(c, "PING"));
        if (reply != nullptr) {
            const std::string text = reply->str ? std::string(reply->str, reply->len) : "";
            up = (reply->type == REDIS_REPLY_STATUS && text == "PONG") ||
                 (reply->type == REDIS_REPLY_ERROR && text.rfind("NOAUTH", 0) == 0);
            freeReplyObject(reply);
        }
    }
    redisFree(c);
    return up;
}

// Waits for PING (over TLS when `tls` is set); false when the process exited first or the
// time ran out.
bool wait_ready(child_process& process, std::uint16_t port, const tls_material* tls) {
    const std::optional<client_tls> probe = tls ? std::optional(probe_tls(*tls)) : std::nullopt;
    const auto until = std::chrono::steady_clock::now() + start_timeout;
    while (std::chrono::steady_clock::now() < until) {
        if (!process.running()) return false;
        if (probe ? answers_tls_ping(port, *probe) : answers_ping(port)) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
}

std::string scheme(bool tls) { return tls ? "rediss://" : "redis://"; }

// The certificate and key a TLS server presents.
std::pair<std::string, std::string> presented(const tls_setup& tls) {
    const tls_material& m = *tls.material;
    switch (tls.presents) {
        case tls_setup::certificate::expired: return {m.expired_cert(), m.expired_key()};
        case tls_setup::certificate::wrong_name: return {m.wrong_name_cert(), m.wrong_name_key()};
        case tls_setup::certificate::valid: break;
    }
    return {m.server_cert(), m.server_key()};
}

// Where a sentinel listens: `port` plain, or `port` for TLS only, presenting the material's
// server certificate to its clients and to the servers and sentinels it connects to.
std::string sentinel_listening(std::uint16_t port, const tls_material* tls) {
    if (tls == nullptr) return "port " + std::to_string(port) + "\n";
    return "port 0\n"
           "tls-port " +
           std::to_string(port) +
           "\n"
           "tls-cert-file " +
           tls->server_cert() +
           "\n"
           "tls-key-file " +
           tls->server_key() +
           "\n"
           "tls-ca-cert-file " +
           tls->ca_file() +
           "\n"
           "tls-replication yes\n"
           "tls-auth-clients no\n";
}

}  // namespace

std::uint16_t free_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) throw std::runtime_error("free_port: socket failed");
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    socklen_t size = sizeof addr;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &size) != 0) {
        ::close(fd);
        throw std::runtime_error("free_port: bind failed");
    }
    ::close(fd);
    return ntohs(addr.sin_port);
}

// ---- redis_server ------------------------------------------------------------------------

redis_server::redis_server(std::vector<std::string> extra_args, persistence kept)
    : extra_args_(std::move(extra_args)), kept_(kept) {
    start_on_a_free_port();
}

redis_server::redis_server(const tls_setup& tls, std::vector<std::string> extra_args,
                           persistence kept)
    : extra_args_(std::move(extra_args)), kept_(kept), tls_(tls) {
    start_on_a_free_port();
}

void redis_server::start_on_a_free_port() {
    dir_ = make_temp_dir("redis");
    for (int attempt = 1;; ++attempt) {
        port_ = free_port();
        launch();
        if (wait_ready(process_, port_, tls_ ? tls_->material : nullptr)) return;
        const std::string log = log_tail();
        process_.kill();
        if (attempt == start_attempts_max ||
            log.find("Address already in use") == std::string::npos) {
            remove_dir(dir_);
            throw std::runtime_error("redis-server did not start on port " + std::to_string(port_) +
                                     ":\n" + log);
        }
    }
}

redis_server::~redis_server() {
    process_.kill();
    remove_dir(dir_);
}

// A plain server listens on port_; a TLS one on port_ for TLS and nowhere else.
std::vector<std::string> redis_server::listening_args() const {
    if (!tls_) return {"--port", std::to_string(port_)};
    const auto [cert, key] = presented(*tls_);
    return {"--port",
            "0",
            "--tls-port",
            std::to_string(port_),
            "--tls-cert-file",
            cert,
            "--tls-key-file",
            key,
            "--tls-ca-cert-file",
            tls_->material->ca_file(),
            "--tls-auth-clients",
            tls_->require_client_cert ? "yes" : "no",
            "--tls-replication",
            "yes"};
}

void redis_server::launch() {
    std::vector<std::string> argv = {"redis-server"};
    const std::vector<std::string> listening = listening_args();
    argv.insert(argv.end(), listening.begin(), listening.end());
    argv.insert(argv.end(),
                {"--bind", loopback_host, "--dir", dir_, "--logfile", dir_ + "/redis.log",
                 "--daemonize", "no", "--save", "", "--appendonly",
                 kept_ == persistence::durable ? "yes" : "no", "--appendfsync", "always",
                 "--enable-debug-command", "local", "--repl-diskless-sync-delay", "0"});
    argv.insert(argv.end(), extra_args_.begin(), extra_args_.end());
    spawn_options options;
    options.output_path = dir_ + "/stdout.log";
    process_ = child_process(argv, options);
}

std::string redis_server::url(const std::string& password, const std::string& user) const {
    std::string credentials;
    if (!password.empty()) credentials = user + ":" + password + "@";
    return scheme(tls_.has_value()) + credentials + loopback_host + ":" + std::to_string(port_);
}

void redis_server::stop() noexcept { process_.kill(); }

void redis_server::start() {
    if (process_.running()) return;
    launch();
    if (!wait_ready(process_, port_, tls_ ? tls_->material : nullptr)) {
        const std::string log = log_tail();
        process_.kill();
        throw std::runtime_error("redis-server did not restart on port " + std::to_string(port_) +
                                 ":\n" + log);
    }
}

void redis_server::restart() {
    stop();
    start();
}

void redis_server::freeze() { process_.freeze(); }

void redis_server::thaw() { process_.thaw(); }

std::string redis_server::log_tail(std::size_t lines) const {
    return tail_of(dir_ + "/redis.log", lines) + tail_of(dir_ + "/stdout.log", lines);
}

// ---- redis_sentinel ----------------------------------------------------------------------

redis_sentinel::redis_sentinel(const settings& s) : settings_(s) {
    dir_ = make_temp_dir("redis");
    for (int attempt = 1;; ++attempt) {
        port_ = free_port();
        const std::string config_path = dir_ + "/sentinel.conf";
        {
            std::ofstream config(config_path, std::ios::trunc);
            config << sentinel_listening(port_, s.tls) << "bind " << loopback_host << "\n"
                   << "dir " << dir_ << "\n"
                   << "logfile " << dir_ << "/sentinel.log\n"
                   << "daemonize no\n"
                   << "sentinel resolve-hostnames no\n"
                   << "sentinel monitor " << s.master_name << " " << loopback_host << " "
                   << s.master_port << " " << s.quorum << "\n"
                   << "sentinel down-after-milliseconds " << s.master_name << " " << s.down_after_ms
                   << "\n"
                   << "sentinel failover-timeout " << s.master_name << " " << s.failover_timeout_ms
                   << "\n"
                   << "sentinel parallel-syncs " << s.master_name << " 1\n";
            if (!s.auth_pass.empty())
                config << "sentinel auth-pass " << s.master_name << " " << s.auth_pass << "\n";
        }
        spawn_options options;
        options.output_path = dir_ + "/stdout.log";
        process_ = child_process({"redis-sentinel", config_path}, options);
        if (wait_ready(process_, port_, s.tls)) return;
        const std::string log = log_tail();
        process_.kill();
        if (attempt == start_attempts_max ||
            log.find("Address already in use") == std::string::npos) {
            remove_dir(dir_);
            throw std::runtime_error("redis-sentinel did not start:\n" + log);
        }
    }
}

redis_sentinel::~redis_sentinel() {
    process_.kill();
    remove_dir(dir_);
}

std::string redis_sentinel::url() const {
    return scheme(settings_.tls != nullptr) + loopback_host + ":" + std::to_string(port_);
}

std::string redis_sentinel::log_tail(std::size_t lines) const {
    return tail_of(dir_ + "/sentinel.log", lines) + tail_of(dir_ + "/stdout.log", lines);
}

// ---- redis_masters -----------------------------------------------------------------------

redis_masters::redis_masters(std::size_t count, const std::vector<std::string>& extra_args,
                             persistence kept) {
    for (std::size_t i = 0; i < count; ++i)
        servers_.push_back(std::make_unique<redis_server>(extra_args, kept));
}

std::vector<std::string> redis_masters::urls() const {
    std::vector<std::string> out;
    for (const auto& s : servers_) out.push_back(s->url());
    return out;
}

// ---- sentinel_topology -------------------------------------------------------------------

sentinel_topology::sentinel_topology(const std::vector<std::string>& server_args,
                                     const std::string& auth_pass)
    : auth_pass_(auth_pass) {
    build(server_args);
}

sentinel_topology::sentinel_topology(const tls_setup& tls,
                                     const std::vector<std::string>& server_args,
                                     const std::string& auth_pass)
    : auth_pass_(auth_pass), tls_(tls) {
    if (tls.presents != tls_setup::certificate::valid) {
        throw std::invalid_argument(
            "sentinel_topology: the replica and the sentinels verify the servers' "
            "certificates; present the valid one");
    }
    build(server_args);
}

void sentinel_topology::build(const std::vector<std::string>& server_args) {
    std::vector<std::string> args = server_args;
    if (!auth_pass_.empty()) {
        args.push_back("--masterauth");
        args.push_back(auth_pass_);
    }
    primary_ = make_server(args);
    std::vector<std::string> replica_args = args;
    replica_args.insert(replica_args.end(),
                        {"--replicaof", loopback_host, std::to_string(primary_->port())});
    replica_ = make_server(replica_args);

    const bool linked = eventually(
        [&] {
            redis_client c = admin(replica_->port(), auth_pass_, std::chrono::seconds(10));
            return c.info_field("replication", "master_link_status") == "up";
        },
        start_timeout);
    if (!linked)
        throw std::runtime_error("sentinel_topology: the replica never linked:\n" +
                                 replica_->log_tail());

    redis_sentinel::settings s;
    s.master_name = master_name;
    s.master_port = primary_->port();
    s.auth_pass = auth_pass_;
    s.tls = tls_ ? tls_->material : nullptr;
    for (int i = 0; i < 3; ++i) sentinels_.push_back(std::make_unique<redis_sentinel>(s));

    // Sentinels find each other through hello messages every 2 s, and the replica through the
    // master's INFO every 10 s at most: a failover needs both.
    const bool acquainted = eventually(
        [&] {
            for (const auto& sentinel : sentinels_) {
                redis_client c = admin(sentinel->port(), "", std::chrono::seconds(10));
                const redis_reply replicas = c.command({"SENTINEL", "replicas", master_name});
                const redis_reply peers = c.command({"SENTINEL", "sentinels", master_name});
                if (replicas.elements.size() != 1 || peers.elements.size() != 2) return false;
            }
            return true;
        },
        std::chrono::seconds(30));
    if (!acquainted)
        throw std::runtime_error("sentinel_topology: sentinels never saw each other:\n" +
                                 sentinels_[0]->log_tail());
}

std::unique_ptr<redis_server> sentinel_topology::make_server(
    const std::vector<std::string>& args) const {
    return tls_ ? std::make_unique<redis_server>(*tls_, args)
                : std::make_unique<redis_server>(args);
}

redis_client sentinel_topology::admin(std::uint16_t port, const std::string& password,
                                      std::chrono::milliseconds timeout) const {
    if (!tls_) return redis_client(loopback_host, port, password, "", timeout);
    const client_tls options = client_tls::with_client_cert(*tls_->material);
    return redis_client(loopback_host, port, options, password, "", timeout);
}

std::vector<std::string> sentinel_topology::sentinel_urls() const {
    std::vector<std::string> out;
    for (const auto& s : sentinels_) out.push_back(s->url());
    return out;
}

std::uint16_t sentinel_topology::master_port() {
    for (const auto& sentinel : sentinels_) {
        try {
            redis_client c = admin(sentinel->port(), "", std::chrono::milliseconds(500));
            const redis_reply r = c.command({"SENTINEL", "get-master-addr-by-name", master_name});
            if (r.elements.size() == 2)
                return static_cast<std::uint16_t>(std::stoi(r.elements[1].text));
        } catch (const std::exception&) {
            // A frozen or stopped sentinel: ask the next one.
        }
    }
    throw std::runtime_error("sentinel_topology: no sentinel reports a master");
}

std::uint16_t sentinel_topology::wait_for_failover(std::uint16_t old_port,
                                                   std::chrono::milliseconds timeout) {
    std::uint16_t found = 0;
    const bool done = eventually(
        [&] {
            const std::uint16_t port = master_port();
            if (port == old_port) return false;
            try {
                redis_client c = admin(port, auth_pass_, std::chrono::milliseconds(500));
                if (c.role() != "master") return false;
            } catch (const std::exception&) {
                return false;
            }
            found = port;
            return true;
        },
        timeout);
    if (!done)
        throw std::runtime_error("sentinel_topology: no failover:\n" + sentinels_[0]->log_tail());
    return found;
}

redis_server& sentinel_topology::server_on(std::uint16_t port) {
    if (primary_->port() == port) return *primary_;
    if (replica_->port() == port) return *replica_;
    throw std::runtime_error("sentinel_topology: no server on port " + std::to_string(port));
}

}  // namespace edgelock::testing
