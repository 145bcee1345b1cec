// SPDX-License-Identifier: Apache-2.0
#include "edgelock/sim/redis_model.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>
#include <initializer_list>
#include <limits>
#include <system_error>

#include "edgelock/assert.hpp"
#include "edgelock/limits.hpp"
#include "edgelock/scripts.hpp"
#include "edgelock/sim/addresses.hpp"
#include "edgelock/sim/clock.hpp"
#include "edgelock/sim/resp_text.hpp"
#include "edgelock/sim/script_digest.hpp"

namespace edgelock::sim {
namespace {

constexpr std::int64_t fsync_interval_us = 1'000'000;
constexpr std::string_view noscript_reply = "-NOSCRIPT No matching script. Please use EVAL.\r\n";

// The digest the client carries for a script (script::digest): what names the client's
// EVALSHA in its traces and the scenarios' request hooks. The model's own digest
// (script_digest.hpp) is what its cache answers to.
std::string_view digest_of(const script& s) { return {s.digest.data(), s.digest.size()}; }

char upper(char c) noexcept { return (c >= 'a' && c <= 'z') ? static_cast<char>(c - 32) : c; }

}  // namespace

bool equals_ignoring_case(std::string_view a, std::string_view b) noexcept {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (upper(a[i]) != upper(b[i])) return false;
    }
    return true;
}

namespace {

struct known_script {
    script_id id;
    const script* which;
    const char* name;
};

// In script_id's order.
constexpr std::array<known_script, static_cast<std::size_t>(script_id::none)> known_scripts{{
    {script_id::acquire, &acquire_script, "acquire"},
    {script_id::raise, &raise_script, "raise"},
    {script_id::renew, &renew_script, "renew"},
    {script_id::release, &release_script, "release"},
    {script_id::fair_acquire, &fair_acquire_script, "fair_acquire"},
    {script_id::fair_release, &fair_release_script, "fair_release"},
    {script_id::permit_acquire, &permit_acquire_script, "permit_acquire"},
    {script_id::permit_renew, &permit_renew_script, "permit_renew"},
    {script_id::permit_release, &permit_release_script, "permit_release"},
    {script_id::fair_permit_acquire, &fair_permit_acquire_script, "fair_permit_acquire"},
    {script_id::fair_permit_release, &fair_permit_release_script, "fair_permit_release"},
}};

}  // namespace

script_id script_by_digest(std::string_view digest) noexcept {
    for (const known_script& k : known_scripts) {
        if (digest == digest_of(*k.which)) return k.id;
    }
    return script_id::none;
}

script_id script_by_text(std::string_view text) noexcept {
    for (const known_script& k : known_scripts) {
        if (text == k.which->text) return k.id;
    }
    return script_id::none;
}

const char* to_string(script_id id) noexcept {
    const auto index = static_cast<std::size_t>(id);
    return index < known_scripts.size() ? known_scripts[index].name : "none";
}

namespace {

// "<kind><decimal>\r\n" at `at`: its number, and `at` moved past the line.
bool read_header(std::string_view bytes, std::size_t& at, char kind, std::int64_t& value) noexcept {
    if (at >= bytes.size() || bytes[at] != kind) return false;
    const std::size_t end = bytes.find("\r\n", at + 1);
    if (end == std::string_view::npos) return false;
    if (!parse_integer(bytes.substr(at + 1, end - at - 1), value)) return false;
    at = end + 2;
    return true;
}

// One request at the start of `bytes`, read as Redis reads a client's multibulk ("*<n>\r\n",
// then n times "$<length>\r\n<bytes>\r\n") with the model's own code, not the client's RESP
// reader, so a client's framing bug meets a model that disagrees with it: the bytes it took,
// with out->count, or 0 when they do not start with one whole request of at most
// request_args_max arguments. A count of 0 or less is a whole request of none (Redis skips
// it; parse_request refuses it, and the node answers a protocol error).
std::size_t read_multibulk(std::string_view bytes, request_view* out) noexcept {
    std::size_t at = 0;
    std::int64_t count = 0;
    if (!read_header(bytes, at, '*', count)) return 0;
    if (count > static_cast<std::int64_t>(request_args_max)) return 0;
    const std::size_t args = count > 0 ? static_cast<std::size_t>(count) : 0;
    for (std::size_t i = 0; i < args; ++i) {
        std::int64_t length = 0;
        if (!read_header(bytes, at, '$', length)) return 0;
        // Compared before any cast: a length past the bytes (2^32 and more on a 32-bit build
        // among them) is no whole request.
        const auto room = static_cast<std::int64_t>(bytes.size() - at) - 2;
        if (length < 0 || length > room) return 0;
        const auto size = static_cast<std::size_t>(length);
        if (bytes.substr(at + size, 2) != "\r\n") return 0;
        if (out != nullptr) out->args[i] = bytes.substr(at, size);
        at += size + 2;
    }
    if (out != nullptr) out->count = args;
    return at;
}

}  // namespace

bool parse_request(const char* data, std::size_t size, request_view& out) noexcept {
    const std::string_view bytes(data, size);
    return read_multibulk(bytes, &out) == size && out.count > 0;
}

bool split_pipeline(std::string_view bytes, std::vector<std::string_view>& out) {
    std::size_t offset = 0;
    while (offset < bytes.size()) {
        const std::size_t taken = read_multibulk(bytes.substr(offset), nullptr);
        if (taken == 0) return false;
        out.push_back(bytes.substr(offset, taken));
        offset += taken;
    }
    return !out.empty();
}

script_id request_script(const request_view& r) noexcept {
    if (r.count < 2) return script_id::none;
    if (equals_ignoring_case(r.args[0], "SET")) return script_id::acquire;  // the native form
    if (equals_ignoring_case(r.args[0], "EVALSHA")) return script_by_digest(r.args[1]);
    if (equals_ignoring_case(r.args[0], "EVAL")) return script_by_text(r.args[1]);
    return script_id::none;
}

script_id classify_request(std::string_view bytes) noexcept {
    constexpr std::string_view evalsha = "$7\r\nEVALSHA\r\n$40\r\n";
    constexpr std::string_view eval = "$4\r\nEVAL\r\n$";
    constexpr std::size_t header = 4;  // "*N\r\n" with N < 10
    if (bytes.size() > header && bytes.substr(header, evalsha.size()) == evalsha) {
        return script_by_digest(bytes.substr(header + evalsha.size(), 40));
    }
    if (bytes.size() > header && bytes.substr(header, eval.size()) == eval) {
        const std::size_t length_start = header + eval.size();
        const std::size_t length_end = bytes.find('\r', length_start);
        if (length_end != std::string_view::npos) {
            std::int64_t length = 0;
            if (parse_integer(bytes.substr(length_start, length_end - length_start), length) &&
                length >= 0) {
                return script_by_text(
                    bytes.substr(length_end + 2, static_cast<std::size_t>(length)));
            }
        }
    }
    request_view r;
    return parse_request(bytes.data(), bytes.size(), r) ? request_script(r) : script_id::none;
}

redis_node::redis_node(std::uint8_t id, persistence persist, std::int64_t fsync_phase_us)
    : id_(id), persist_(persist), fsync_phase_us_(fsync_phase_us) {}

// ---- requests ---------------------------------------------------------------------------

void redis_node::receive(std::uint8_t client, std::uint32_t epoch, std::string_view bytes,
                         std::int64_t wall_ms, std::int64_t now_us, node_output& out) {
    EDGELOCK_ASSERT(up_);
    EDGELOCK_ASSERT(client < clients_.size());
    client_state& c = clients_[client];
    if (c.epoch != epoch) {
        c = client_state{};
        c.epoch = epoch;
    }
    if (c.blocked) {
        c.queued.emplace_back(bytes);
        return;
    }
    execute(client, bytes, wall_ms, now_us, out);
}

void redis_node::execute(std::uint8_t client, std::string_view bytes, std::int64_t wall_ms,
                         std::int64_t now_us, node_output& out) {
    sync_durable(now_us);
    client_state& c = clients_[client];
    out.replies.push_back(node_output::reply{client, c.epoch, {}});
    std::string& reply = out.replies.back().bytes;
    request_view r;
    if (!parse_request(bytes.data(), bytes.size(), r)) {
        append_error(reply, "ERR Protocol error");
        return;
    }
    // Redis Cluster: ASKING holds for the next command only; the redirects come before the
    // gates below, as in processCommand.
    const bool asked = c.asking;
    c.asking = false;
    if (cluster_enabled()) {
        if (cluster_command(c, r, reply) || cluster_refuses(asked, r, wall_ms, reply)) {
            c.wait_offset = offset_;
            return;
        }
    }
    if (refuse_unready(r, now_us, reply)) return;
    const std::string_view command = r.args[0];
    const bool by_text = equals_ignoring_case(command, "EVAL");
    const std::size_t effects_before = out.effects.size();
    judge_claim_before(client, command, out);
    if (equals_ignoring_case(command, "WAIT")) {
        wait(client, r, now_us, reply, out);
        if (c.blocked) out.replies.pop_back();
    } else if (!answer_handshake(r, wall_ms, reply)) {
        if (by_text || equals_ignoring_case(command, "EVALSHA")) {
            eval(r, by_text, wall_ms, reply, out);
        } else if (!keyspace_command(r, false, wall_ms, reply, out)) {
            append_error(reply, "ERR unknown command");
        }
    }
    // Redis notes the replication offset after every command a connection runs, its own
    // writes or not (processCommand: c->woff = server.master_repl_offset), and WAIT waits for
    // that: a read after another connection's write waits for that write too.
    c.wait_offset = offset_;
    judge_claim_after(client, effects_before, out);
}

// The claim check's two rules, as the node sees a client's connection (checker.hpp):
//   - a WAIT follows a write of the connection's own since its last WAIT: WAIT counts the
//     replicas that acknowledged what this connection wrote, so the lock confirms a claim on
//     the connection that wrote it, never on a later one;
//   - a replica runs a write (a claim, a renewal, a fence's raise) only on a connection that
//     asked it ROLE: a client that reaches a node through a sentinel checks its role before it
//     counts anything there. The node cannot tell a client that ignores a "slave" answer from
//     one that pipelined a claim behind the question and drops its answer: that is left to
//     the outcome checks (overlap, oracle).
void redis_node::judge_claim_before(std::uint8_t client, std::string_view command,
                                    node_output& out) {
    client_state& c = clients_[client];
    if (equals_ignoring_case(command, "ROLE")) c.asked_role = true;
    if (!equals_ignoring_case(command, "WAIT")) return;
    if (!c.wrote_since_wait) {
        out.claim_faults.push_back("c" + std::to_string(client) + " sent node " +
                                   std::to_string(id_) +
                                   " a WAIT on a connection that wrote nothing since it was made "
                                   "or since its last WAIT: it confirms no claim");
    }
    c.wrote_since_wait = false;
}

void redis_node::judge_claim_after(std::uint8_t client, std::size_t effects_before,
                                   node_output& out) {
    client_state& c = clients_[client];
    if (out.effects.size() == effects_before) return;
    c.wrote_since_wait = true;
    if (is_master() || c.asked_role) return;
    out.claim_faults.push_back("c" + std::to_string(client) + " wrote " +
                               out.effects[effects_before].key + " on node " + std::to_string(id_) +
                               ", a replica it never asked ROLE");
}

// ---- Redis 7.0's gates before a command runs ----------------------------------------------

namespace {

bool named_one_of(std::string_view command, std::initializer_list<std::string_view> names) {
    for (const std::string_view name : names) {
        if (equals_ignoring_case(command, name)) return true;
    }
    return false;
}

// The write commands of the model: on a replica they go on to READONLY, which Redis checks
// before the stale-data gate.
bool is_write_command(std::string_view command) {
    return named_one_of(command, {"SET", "DEL", "PEXPIRE", "PERSIST", "INCR", "INCRBY", "ZADD",
                                  "ZREM", "ZREMRANGEBYSCORE"});
}

// Flagged ok-stale in Redis 7.0's command table (EVAL and EVALSHA are too, but a script
// without a shebang loses the flag, so the lock's scripts meet MASTERDOWN).
bool allowed_stale(std::string_view command) {
    return named_one_of(command, {"INFO", "ROLE", "CONFIG", "SCRIPT", "TIME", "AUTH", "HELLO",
                                  "SELECT", "PUBLISH", "SUBSCRIBE"});
}

// Flagged ok-loading in Redis 7.0's command table.
bool allowed_loading(std::string_view command) {
    return named_one_of(command, {"INFO", "ROLE", "CONFIG", "TIME", "AUTH", "HELLO", "SELECT",
                                  "PUBLISH", "SUBSCRIBE"});
}

}  // namespace

// processCommand's checks, in its order, for the states the model has: true with the error
// in `reply` when the command does not run.
bool redis_node::refuse_unready(const request_view& r, std::int64_t now_us,
                                std::string& reply) const {
    const std::string_view command = r.args[0];
    if (!is_master() && replica_read_only_ && is_write_command(command))
        return false;  // READONLY comes first
    const bool stale = !is_master() && !master_link_up_ && !serve_stale_data_;
    if (stale && !allowed_stale(command)) {
        append_error(reply,
                     "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set "
                     "to 'no'.");
        return true;
    }
    if (now_us < loading_until_us_ && !allowed_loading(command)) {
        append_error(reply, "LOADING Redis is loading the dataset in memory");
        return true;
    }
    return false;
}

// ---- what a new connection says first ----------------------------------------------------

// PING, ROLE, INFO, CONFIG GET and SCRIPT LOAD: the session's handshake (session/
// handshake.hpp). None writes, so a replica answers them too. Returns false for any other
// command.
bool redis_node::answer_handshake(const request_view& r, std::int64_t wall_ms, std::string& reply) {
    const std::string_view command = r.args[0];
    if (equals_ignoring_case(command, "PING") && r.count == 1) {
        reply += "+PONG\r\n";
    } else if (equals_ignoring_case(command, "ROLE") && r.count == 1) {
        append_role(reply);
    } else if (equals_ignoring_case(command, "INFO")) {
        if (redis_6_ && r.count > 2) {
            append_error(reply, "ERR syntax error");
        } else {
            append_info(wall_ms, reply);
        }
    } else if (equals_ignoring_case(command, "CONFIG") && r.count == 3 &&
               equals_ignoring_case(r.args[1], "GET")) {
        if (config_get_refused_) {
            append_error(reply,
                         "NOPERM User default has no permissions to run the 'config|get' command");
        } else {
            append_fsync_policy(reply);
        }
    } else if (equals_ignoring_case(command, "AUTH") || equals_ignoring_case(command, "SELECT")) {
        answer_auth_or_select(r, reply);
    } else if (equals_ignoring_case(command, "SCRIPT") && r.count == 2 &&
               equals_ignoring_case(r.args[1], "FLUSH")) {
        // SCRIPT FLUSH: the cache (and the interpreter) emptied, as a restart empties them.
        scripts_.clear();
        engine_.reset();
        reply += "+OK\r\n";
    } else if (equals_ignoring_case(command, "SCRIPT") && r.count == 3 &&
               equals_ignoring_case(r.args[1], "LOAD")) {
        if (script_load_refused_) {
            append_error(reply,
                         "NOPERM User default has no permissions to run the 'script|load' command");
            return true;
        }
        const cached_script* cached = cache_script(r.args[2], reply);
        if (cached != nullptr) append_bulk(reply, {cached->digest.data(), cached->digest.size()});
    } else {
        return false;
    }
    return true;
}

// AUTH and SELECT as a server without a password and with one database answers them: the
// simulated deployments have neither, so the session never sends them there (a real server
// has 16 databases; docs/SIMULATION.md, "Where the model differs from Redis 7.0.15").
void redis_node::answer_auth_or_select(const request_view& r, std::string& reply) const {
    if (equals_ignoring_case(r.args[0], "AUTH")) {
        if (r.count == 2) {
            append_error(reply,
                         "ERR AUTH <password> called without any password configured "
                         "for the default user. Are you sure your configuration is "
                         "correct?");
        } else if (r.count == 3) {
            append_error(reply, "WRONGPASS invalid username-password pair or user is disabled.");
        } else {
            append_error(reply, r.count < 2 ? "ERR wrong number of arguments for 'auth' command"
                                            : "ERR syntax error");
        }
        return;
    }
    std::int64_t db = 0;
    if (r.count != 2) {
        append_error(reply, "ERR wrong number of arguments for 'select' command");
    } else if (!parse_integer(r.args[1], db)) {
        append_error(reply, "ERR value is not an integer or out of range");
    } else if (db < 0 || db >= 16) {
        append_error(reply, "ERR DB index is out of range");
    } else if (db != 0) {
        append_error(reply, "ERR the simulated Redis has database 0 only");
    } else {
        reply += "+OK\r\n";
    }
}

// Redis 7's ROLE: ["master", offset, [[host, port, offset] per replica]] (a replica's port
// and offset as bulk strings, as Redis writes them), or ["slave", master host, master port,
// state, offset].
// The fields the session reads (session/node_facts.hpp). Redis counts uptime as whole seconds
// of its wall clock since the start (so it may say a second more than ran, and less after
// its clock stepped back); the run_id is new with every start of the process.
namespace {

// INFO's memory fields for a policy: a limit of 64 MB for the evicting ones.
std::string memory_section(eviction_policy policy) {
    switch (policy) {
        case eviction_policy::volatile_keys:
            return "maxmemory:67108864\r\nmaxmemory_policy:volatile-lru\r\n";
        case eviction_policy::all_keys:
            return "maxmemory:67108864\r\nmaxmemory_policy:allkeys-lru\r\n";
        case eviction_policy::noeviction: break;
    }
    return "maxmemory:0\r\nmaxmemory_policy:noeviction\r\n";
}

}  // namespace

void redis_node::append_info(std::int64_t wall_ms, std::string& reply) const {
    const std::int64_t uptime_s = floor_div(wall_ms, 1000) - floor_div(started_wall_ms_, 1000);
    char run_id[41];
    std::snprintf(run_id, sizeof run_id, "%08x%032x", static_cast<unsigned>(id_),
                  static_cast<unsigned>(runs_));
    const std::string version = redis_6_ ? "6.2.14" : "7.0.15";
    append_bulk(reply, "# Server\r\nredis_version:" + version +
                           "\r\nrun_id:" + std::string(run_id) + "\r\nuptime_in_seconds:" +
                           std::to_string(uptime_s) + "\r\n\r\n# Persistence\r\naof_enabled:" +
                           (persist_ == persistence::none ? "0" : "1") + "\r\n\r\n# Memory\r\n" +
                           memory_section(eviction_));
}

// CONFIG GET appendfsync: "everysec" is also Redis's default when AOF is off.
void redis_node::append_fsync_policy(std::string& reply) const {
    reply += "*2\r\n";
    append_bulk(reply, "appendfsync");
    append_bulk(reply, persist_ == persistence::always ? "always" : "everysec");
}

void redis_node::append_role(std::string& reply) const {
    if (!is_master()) {
        reply += "*5\r\n";
        append_bulk(reply, "slave");
        append_bulk(reply, node_host(static_cast<std::uint8_t>(master_id_)));
        append_integer(reply, redis_port);
        append_bulk(reply, "connected");
        append_integer(reply, offset_);
        return;
    }
    std::size_t replicas = 0;
    for (std::size_t r = 0; r < nodes_max; ++r) replicas += (replicas_ >> r) & 1u;
    reply += "*3\r\n";
    append_bulk(reply, "master");
    append_integer(reply, offset_);
    reply += "*" + std::to_string(replicas) + "\r\n";
    for (std::uint8_t r = 0; r < nodes_max; ++r) {
        if (((replicas_ >> r) & 1u) == 0) continue;
        reply += "*3\r\n";
        append_bulk(reply, node_host(r));
        append_bulk(reply, std::to_string(redis_port));
        append_bulk(reply, std::to_string(acked_[r]));
    }
}

// ---- scripts ----------------------------------------------------------------------------

// The cached script of this exact text, cached now if it was not (compiled first: a script
// that does not compile is not cached, and its error is appended to `reply`).
const redis_node::cached_script* redis_node::cache_script(std::string_view text,
                                                          std::string& reply) {
    for (const cached_script& s : scripts_) {
        if (s.text == text) return &s;
    }
    cached_script added{server_script_digest(text), std::string(text)};
    const std::string_view digest{added.digest.data(), added.digest.size()};
    if (engine_.get().load(digest, text, reply) == script_not_compiled) return nullptr;
    scripts_.push_back(std::move(added));
    return &scripts_.back();
}

// EVAL text numkeys key... arg... and EVALSHA digest numkeys key... arg...: the script runs
// in the node's interpreter, its redis.call reaching script_command().
void redis_node::eval(const request_view& r, bool by_text, std::int64_t wall_ms, std::string& reply,
                      node_output& out) {
    std::int64_t numkeys = 0;
    if (r.count < 3) {
        append_error(reply, by_text ? "ERR wrong number of arguments for 'eval' command"
                                    : "ERR wrong number of arguments for 'evalsha' command");
        return;
    }
    if (!parse_integer(r.args[2], numkeys)) {
        append_error(reply, "ERR value is not an integer or out of range");
        return;
    }
    if (numkeys < 0 || static_cast<std::size_t>(numkeys) > r.count - 3) {
        append_error(reply, numkeys < 0
                                ? "ERR Number of keys can't be negative"
                                : "ERR Number of keys can't be greater than number of args");
        return;
    }
    const cached_script* script = nullptr;
    if (by_text) {
        script = cache_script(r.args[1], reply);
        if (script == nullptr) return;
    } else {
        for (const cached_script& s : scripts_) {
            const std::string_view digest{s.digest.data(), s.digest.size()};
            if (digest == r.args[1] || equals_ignoring_case(digest, r.args[1])) {
                script = &s;
                break;
            }
        }
        if (script == nullptr) {
            reply += noscript_reply;
            return;
        }
    }
    const std::string_view digest{script->digest.data(), script->digest.size()};
    script_engine& engine = engine_.get();
    const int function = engine.load(digest, script->text, reply);
    if (function == script_not_compiled) return;
    const auto keys_count = static_cast<std::size_t>(numkeys);
    script_keys_ = &r.args[3];
    script_keys_count_ = keys_count;
    script_wall_ms_ = wall_ms;
    script_out_ = &out;
    engine.run(function, digest, script_keys_, keys_count, script_keys_ + keys_count,
               r.count - 3 - keys_count, *this, reply);
    script_keys_ = nullptr;
    script_keys_count_ = 0;
    script_out_ = nullptr;
}

// A script's redis.call: the keyspace's commands at the script's time (a script sees its
// start's clock throughout, as Redis freezes it).
void redis_node::script_command(const request_view& request, std::string& reply) {
    EDGELOCK_ASSERT(script_out_ != nullptr);
    if (!keyspace_command(request, true, script_wall_ms_, reply, *script_out_)) {
        append_error(reply, "ERR Unknown Redis command called from script");
    }
}

// ---- WAIT -------------------------------------------------------------------------------

void redis_node::wait(std::uint8_t client, const request_view& r, std::int64_t now_us,
                      std::string& reply, node_output& out) {
    std::int64_t replicas = 0;
    std::int64_t timeout_ms = 0;
    if (r.count != 3 || !parse_integer(r.args[1], replicas) ||
        !parse_integer(r.args[2], timeout_ms) || timeout_ms < 0) {
        append_error(reply, "ERR wrong arguments for 'wait'");
        return;
    }
    if (!is_master()) {
        append_error(reply,
                     "ERR WAIT cannot be used with replica instances. Please also note "
                     "that since Redis 4.0 if a replica is configured to be writable "
                     "(which is not the default) writes to replicas are just local and "
                     "are not propagated.");
        return;
    }
    client_state& c = clients_[client];
    const std::int64_t acked = acked_replicas(c.wait_offset);
    if (acked >= replicas) {
        append_integer(reply, acked);
        return;
    }
    c.blocked = true;
    c.wait_replicas = replicas;
    c.wait_target = c.wait_offset;  // the command's own update below must not move it
    c.wait_deadline_us =
        timeout_ms == 0 ? std::numeric_limits<std::int64_t>::max() : now_us + timeout_ms * 1000;
    if (timeout_ms > 0) {
        out.wait_deadline_us = out.wait_deadline_us < 0
                                   ? c.wait_deadline_us
                                   : std::min(out.wait_deadline_us, c.wait_deadline_us);
    }
}

std::int64_t redis_node::acked_replicas(std::int64_t offset) const noexcept {
    std::int64_t count = 0;
    for (std::size_t r = 0; r < nodes_max; ++r) {
        if (((replicas_ >> r) & 1u) != 0 && acked_[r] >= offset) ++count;
    }
    return count;
}

void redis_node::unblock_ready(std::int64_t wall_ms, std::int64_t now_us, node_output& out) {
    for (std::uint8_t client = 0; client < clients_.size(); ++client) {
        client_state& c = clients_[client];
        if (!c.blocked) continue;
        const std::int64_t acked = acked_replicas(c.wait_target);
        if (acked < c.wait_replicas && now_us < c.wait_deadline_us) continue;
        c.blocked = false;
        out.replies.push_back(node_output::reply{client, c.epoch, {}});
        append_integer(out.replies.back().bytes, acked);
        while (!c.blocked && !c.queued.empty()) {
            const std::string next = std::move(c.queued.front());
            c.queued.pop_front();
            execute(client, next, wall_ms, now_us, out);
        }
    }
}

void redis_node::on_ack(std::uint8_t replica, std::int64_t offset, std::int64_t wall_ms,
                        std::int64_t now_us, node_output& out) {
    EDGELOCK_ASSERT(replica < nodes_max);
    acked_[replica] = std::max(acked_[replica], offset);
    unblock_ready(wall_ms, now_us, out);
}

void redis_node::on_wait_deadline(std::int64_t wall_ms, std::int64_t now_us, node_output& out) {
    unblock_ready(wall_ms, now_us, out);
}

void redis_node::drop_connection(std::uint8_t client) {
    EDGELOCK_ASSERT(client < clients_.size());
    // The claim check's record stays with the epoch: bytes the client sent before it closed
    // may still arrive (a paused node reads them on its return), as what they follow.
    client_state& c = clients_[client];
    client_state dropped;
    dropped.epoch = c.epoch;
    dropped.wrote_since_wait = c.wrote_since_wait;
    dropped.asked_role = c.asked_role;
    c = std::move(dropped);
}

// ---- lifecycle and replication -------------------------------------------------------------

void redis_node::evict(std::int64_t now_us, std::vector<repl_op>& effects) {
    if (!up_ || !is_master() || eviction_ == eviction_policy::noeviction) return;
    sync_durable(now_us);
    std::vector<std::string> victims;
    for (const redis_entry& e : data_) {
        if (eviction_ == eviction_policy::all_keys || e.expire_at_ms >= 0) victims.push_back(e.key);
    }
    for (const std::string& key : victims) erase(key, effects);
}

void redis_node::crash(std::int64_t now_us) {
    EDGELOCK_ASSERT(up_);
    switch (persist_) {
        case persistence::none: durable_.clear(); break;
        case persistence::everysec: sync_durable(now_us); break;
        case persistence::always: durable_ = data_; break;
    }
    up_ = false;
    data_.clear();
    scripts_.clear();
    engine_.reset();
    for (client_state& c : clients_) c = client_state{};
    acked_ = {};
}

void redis_node::restart(std::int64_t now_us, std::int64_t wall_ms) {
    EDGELOCK_ASSERT(!up_);
    up_ = true;
    ++runs_;
    started_wall_ms_ = wall_ms;
    data_ = durable_;
    master_id_ = -1;
    ++incarnation_;
    replicas_ = 0;
    fsync_tick_ = floor_div(now_us - fsync_phase_us_, fsync_interval_us);
}

void redis_node::await_master(std::uint8_t master) noexcept {
    EDGELOCK_ASSERT(master != id_);
    master_id_ = master;
    master_incarnation_ = 0;  // no stream of it matches until follow()
    offset_ = 0;
    replicas_ = 0;
}

void redis_node::promote() {
    master_id_ = -1;
    ++incarnation_;
    replicas_ = 0;
    acked_ = {};
}

void redis_node::follow(redis_node& master, std::int64_t now_us) {
    EDGELOCK_ASSERT(master.id_ != id_);
    master_id_ = master.id_;
    master_incarnation_ = master.incarnation_;
    data_ = master.data_;
    offset_ = master.offset_;
    replicas_ = 0;
    if (persist_ != persistence::none) durable_ = data_;
    fsync_tick_ = floor_div(now_us - fsync_phase_us_, fsync_interval_us);
    master.attach_replica(id_);
    master.acked_[id_] = master.offset_;
}

void redis_node::apply(const repl_op& op, std::int64_t offset, std::int64_t now_us) {
    if (offset <= offset_) return;
    sync_durable(now_us);
    apply_local(op);
    offset_ = offset;
}

void redis_node::attach_replica(std::uint8_t replica) noexcept {
    replicas_ = static_cast<std::uint16_t>(replicas_ | (1u << replica));
}

void redis_node::detach_replica(std::uint8_t replica) noexcept {
    replicas_ = static_cast<std::uint16_t>(replicas_ & ~(1u << replica));
}

// ---- the keyspace -----------------------------------------------------------------------

const redis_entry* redis_node::peek(std::string_view key, std::int64_t wall_ms) const noexcept {
    for (const redis_entry& e : data_) {
        if (e.key != key) continue;
        if (e.expire_at_ms >= 0 && wall_ms > e.expire_at_ms) return nullptr;
        return &e;
    }
    return nullptr;
}

redis_entry* redis_node::find(std::string_view key, std::int64_t wall_ms,
                              std::vector<repl_op>& effects) {
    for (redis_entry& e : data_) {
        if (e.key != key) continue;
        if (e.expire_at_ms >= 0 && wall_ms > e.expire_at_ms) {
            // Expired: a master deletes it on access and replicates the DEL; a replica
            // reports it missing and waits for its master's DEL (expireIfNeeded), as its
            // data and its offset follow the master's stream only.
            if (is_master()) erase(key, effects);
            return nullptr;
        }
        return &e;
    }
    return nullptr;
}

void redis_node::set(std::string_view key, std::string_view value, std::int64_t expire_at_ms,
                     std::vector<repl_op>& effects) {
    effects.emplace_back();
    repl_op& op = effects.back();
    op.key = key;
    op.value = value;
    op.expire_at_ms = expire_at_ms;
    apply_local(op);
    if (is_master()) ++offset_;  // a writable replica's own writes are not replicated
}

void redis_node::erase(std::string_view key, std::vector<repl_op>& effects) {
    effects.emplace_back();
    repl_op& op = effects.back();
    op.del = true;
    op.key = key;
    apply_local(op);
    if (is_master()) ++offset_;
}

void redis_node::apply_local(const repl_op& op) {
    for (std::size_t i = 0; i < data_.size(); ++i) {
        if (data_[i].key != op.key) continue;
        if (op.del) {
            data_.erase(data_.begin() + static_cast<std::ptrdiff_t>(i));
        } else {
            data_[i].value = op.value;
            data_[i].expire_at_ms = op.expire_at_ms;
        }
        return;
    }
    if (!op.del) data_.push_back(redis_entry{op.key, op.value, op.expire_at_ms});
}

// everysec: a background fsync every second of true time (at the node's phase). Called
// before any change at now_us, so data_ still equals the data at the last tick.
void redis_node::sync_durable(std::int64_t now_us) {
    if (persist_ != persistence::everysec) return;
    const std::int64_t tick = floor_div(now_us - fsync_phase_us_, fsync_interval_us);
    if (tick <= fsync_tick_) return;
    durable_ = data_;
    fsync_tick_ = tick;
}

}  // namespace edgelock::sim
