// SPDX-License-Identifier: Apache-2.0
#include "edgelock/sim/redis_model.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <limits>
#include <system_error>

#include "edgelock/assert.hpp"
#include "edgelock/limits.hpp"
#include "edgelock/resp_reader.hpp"
#include "edgelock/scripts.hpp"
#include "edgelock/sim/addresses.hpp"
#include "edgelock/sim/clock.hpp"

namespace edgelock::sim {
namespace {

constexpr std::int64_t fsync_interval_us = 1'000'000;
constexpr std::string_view noscript_reply = "-NOSCRIPT No matching script. Please use EVAL.\r\n";
constexpr std::string_view readonly_reply =
    "-READONLY You can't write against a read only replica.\r\n";
constexpr std::string_view nil_reply = "$-1\r\n";

std::string_view digest_of(const script& s) { return {s.digest.data(), s.digest.size()}; }

char upper(char c) noexcept { return (c >= 'a' && c <= 'z') ? static_cast<char>(c - 32) : c; }

// Redis's string2ll: an optional '-' and decimal digits without leading zeros that fit in
// int64. from_chars takes the '-' and refuses what overflows; it takes no '+' or space.
bool parse_integer(std::string_view text, std::int64_t& out) {
    const bool negative = !text.empty() && text[0] == '-';
    const std::string_view digits = negative ? text.substr(1) : text;
    if (digits.empty() || (digits[0] == '0' && (digits.size() > 1 || negative))) return false;
    std::int64_t value = 0;
    const char* const last = text.data() + text.size();
    const auto [end, error] = std::from_chars(text.data(), last, value);
    if (error != std::errc{} || end != last) return false;
    out = value;
    return true;
}

void append_bulk(std::string& reply, std::string_view text) {
    reply += '$';
    reply += std::to_string(text.size());
    reply += "\r\n";
    reply += text;
    reply += "\r\n";
}

void append_integer(std::string& reply, std::int64_t value) {
    reply += ':';
    reply += std::to_string(value);
    reply += "\r\n";
}

void append_error(std::string& reply, std::string_view text) {
    reply += '-';
    reply += text;
    reply += "\r\n";
}

}  // namespace

bool equals_ignoring_case(std::string_view a, std::string_view b) noexcept {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (upper(a[i]) != upper(b[i])) return false;
    }
    return true;
}

script_id script_by_digest(std::string_view digest) noexcept {
    if (digest == digest_of(acquire_script)) return script_id::acquire;
    if (digest == digest_of(raise_script)) return script_id::raise;
    if (digest == digest_of(renew_script)) return script_id::renew;
    if (digest == digest_of(release_script)) return script_id::release;
    if (digest == digest_of(fair_acquire_script)) return script_id::fair_acquire;
    if (digest == digest_of(fair_release_script)) return script_id::fair_release;
    return script_id::none;
}

script_id script_by_text(std::string_view text) noexcept {
    if (text == acquire_script.text) return script_id::acquire;
    if (text == raise_script.text) return script_id::raise;
    if (text == renew_script.text) return script_id::renew;
    if (text == release_script.text) return script_id::release;
    if (text == fair_acquire_script.text) return script_id::fair_acquire;
    if (text == fair_release_script.text) return script_id::fair_release;
    return script_id::none;
}

std::string_view script_digest(script_id id) noexcept {
    switch (id) {
        case script_id::acquire: return digest_of(acquire_script);
        case script_id::raise: return digest_of(raise_script);
        case script_id::renew: return digest_of(renew_script);
        case script_id::release: return digest_of(release_script);
        case script_id::fair_acquire: return digest_of(fair_acquire_script);
        case script_id::fair_release: return digest_of(fair_release_script);
        default: return {};
    }
}

const char* to_string(script_id id) noexcept {
    switch (id) {
        case script_id::acquire: return "acquire";
        case script_id::raise: return "raise";
        case script_id::renew: return "renew";
        case script_id::release: return "release";
        case script_id::fair_acquire: return "fair_acquire";
        case script_id::fair_release: return "fair_release";
        default: return "none";
    }
}

bool parse_request(const char* data, std::size_t size, request_view& out) noexcept {
    std::array<reply_node, request_args_max + 1> nodes{};
    const parse_result parsed = parse_reply(data, size, nodes.data(), nodes.size());
    if (parsed.code != errc::ok || parsed.consumed != size) return false;
    if (nodes[0].type != reply_type::array || nodes[0].elements == 0) return false;
    if (nodes[0].elements > request_args_max || parsed.nodes != nodes[0].elements + 1) return false;
    out.count = nodes[0].elements;
    for (std::size_t i = 0; i < out.count; ++i) {
        if (nodes[i + 1].type != reply_type::bulk_string) return false;
        out.args[i] = nodes[i + 1].text;
    }
    return true;
}

bool split_pipeline(std::string_view bytes, std::vector<std::string_view>& out) {
    std::array<reply_node, request_args_max + 1> nodes{};
    std::size_t offset = 0;
    while (offset < bytes.size()) {
        const parse_result parsed =
            parse_reply(bytes.data() + offset, bytes.size() - offset, nodes.data(), nodes.size());
        if (parsed.code != errc::ok) return false;
        out.push_back(bytes.substr(offset, parsed.consumed));
        offset += parsed.consumed;
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
    const std::size_t effects_before = out.effects.size();
    const std::string_view command = r.args[0];
    if (equals_ignoring_case(command, "WAIT")) {
        wait(client, r, now_us, reply, out);
        if (c.blocked) out.replies.pop_back();
        return;
    }
    if (answer_handshake(r, wall_ms, reply)) return;
    if (equals_ignoring_case(command, "EVALSHA") || equals_ignoring_case(command, "EVAL")) {
        const bool by_text = equals_ignoring_case(command, "EVAL");
        if (r.count < 3) {
            append_error(reply, "ERR wrong number of arguments");
            return;
        }
        const script_id id = by_text ? script_by_text(r.args[1]) : script_by_digest(r.args[1]);
        const std::uint8_t bit = static_cast<std::uint8_t>(1u << static_cast<unsigned>(id));
        if (id == script_id::none && by_text) {
            append_error(reply, "ERR the model runs only edgelock's six scripts");
            return;
        }
        if (id == script_id::none || (!by_text && (scripts_cached_ & bit) == 0)) {
            reply += noscript_reply;
            return;
        }
        scripts_cached_ = static_cast<std::uint8_t>(scripts_cached_ | bit);
        if (!is_master()) {
            reply += readonly_reply;
            return;
        }
        run_script(id, r, 2, wall_ms, reply, out);
    } else if (equals_ignoring_case(command, "SET")) {
        set_command(r, wall_ms, reply, out);
    } else if (equals_ignoring_case(command, "DEL") && r.count == 2) {
        if (!is_master()) {
            reply += readonly_reply;
            return;
        }
        const bool existed = find(r.args[1], wall_ms, out.effects) != nullptr;
        if (existed) erase(r.args[1], out.effects);
        append_integer(reply, existed ? 1 : 0);
    } else {
        append_error(reply, "ERR unknown command");
    }
    if (out.effects.size() != effects_before) c.last_write_offset = offset_;
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
    } else if (equals_ignoring_case(command, "SCRIPT") && r.count == 3 &&
               equals_ignoring_case(r.args[1], "LOAD")) {
        if (script_load_refused_) {
            append_error(reply,
                         "NOPERM User default has no permissions to run the 'script|load' command");
            return true;
        }
        const script_id id = script_by_text(r.args[2]);
        if (id == script_id::none) {
            append_error(reply, "ERR the model runs only edgelock's six scripts");
            return true;
        }
        scripts_cached_ =
            static_cast<std::uint8_t>(scripts_cached_ | (1u << static_cast<unsigned>(id)));
        append_bulk(reply, script_digest(id));
    } else {
        return false;
    }
    return true;
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

namespace {

// What each script reads: KEYS and ARGV up to these counts. More are ignored, as Lua ignores
// them (the acquires count KEYS to know whether to fence: `#KEYS > 1`, `#KEYS > 3`).
struct script_shape {
    std::int64_t keys_min;
    std::size_t argc;
};

script_shape shape_of(script_id id) noexcept {
    switch (id) {
        case script_id::acquire: return {1, 2};
        case script_id::raise: return {2, 2};
        case script_id::renew: return {1, 2};
        case script_id::release: return {1, 1};
        case script_id::fair_acquire: return {3, 3};
        case script_id::fair_release: return {3, 1};
        default: return {0, 0};
    }
}

}  // namespace

// numkeys at r.args[first]; keys then arguments follow.
void redis_node::run_script(script_id id, const request_view& r, std::size_t first,
                            std::int64_t wall_ms, std::string& reply, node_output& out) {
    script_call call;
    if (!parse_script_call(id, r, first, call, reply)) return;
    const std::string_view* keys = call.keys;
    const std::string_view* argv = call.argv;
    if (refuses_exhausted_fence(id, call, wall_ms, reply, out.effects)) return;
    switch (id) {
        case script_id::fair_acquire: {
            const bool join = call.argc > 3 && argv[3] == "join";
            fair_acquire_script(keys, call.numkeys > 3, argv[0], call.number, call.entry_ttl_ms,
                                join, wall_ms, reply, out);
            return;
        }
        case script_id::fair_release:
            fair_release_script(keys, argv[0], call.argc > 1 && argv[1] == "stay", wall_ms, reply,
                                out);
            return;
        case script_id::acquire:
            acquire_script(keys, call.numkeys > 1, argv[0], call.number,
                           find(keys[0], wall_ms, out.effects), wall_ms, reply, out);
            return;
        case script_id::raise:
            raise_script(keys, argv, call.number, wall_ms, reply, out.effects);
            return;
        case script_id::renew:
        case script_id::release: {
            redis_entry* lock = find(keys[0], wall_ms, out.effects);
            if (lock == nullptr || lock->value != argv[0]) {
                append_integer(reply, 0);
                return;
            }
            if (id == script_id::renew) {
                set(keys[0], lock->value, wall_ms + call.number, out.effects);
            } else {
                erase(keys[0], out.effects);
            }
            append_integer(reply, 1);
            return;
        }
        default: EDGELOCK_ASSERT(false);
    }
}

// Splits a script call's keys and arguments and reads its numbers, answering Redis's (or
// the script's) error for a malformed one. False when it was refused.
bool redis_node::parse_script_call(script_id id, const request_view& r, std::size_t first,
                                   script_call& call, std::string& reply) const {
    if (!parse_integer(r.args[first], call.numkeys) || call.numkeys < 1 ||
        first + 1 + static_cast<std::size_t>(call.numkeys) > r.count) {
        append_error(reply, "ERR bad number of keys");
        return false;
    }
    call.keys = &r.args[first + 1];
    call.argv = call.keys + call.numkeys;
    call.argc = r.count - first - 1 - static_cast<std::size_t>(call.numkeys);
    const script_shape shape = shape_of(id);
    if (call.argc < shape.argc || call.numkeys < shape.keys_min) {
        append_error(reply, "ERR wrong number of arguments for the script");
        return false;
    }
    const bool numbers_ok = (shape.argc < 2 || parse_integer(call.argv[1], call.number)) &&
                            (shape.argc < 3 || parse_integer(call.argv[2], call.entry_ttl_ms));
    if (!numbers_ok) append_error(reply, "ERR value is not an integer or out of range");
    return numbers_ok;
}

// A fenced acquire checks its counter first, as the script does: an exhausted counter
// leaves the lock untouched, and is made persistent so it cannot expire and restart below
// the tokens it handed out. True when the acquire was refused so.
bool redis_node::refuses_exhausted_fence(script_id id, const script_call& call,
                                         std::int64_t wall_ms, std::string& reply,
                                         std::vector<repl_op>& effects) {
    const bool fenced_acquire = (id == script_id::acquire && call.numkeys > 1) ||
                                (id == script_id::fair_acquire && call.numkeys > 3);
    if (!fenced_acquire) return false;
    const std::string_view fence_key = call.keys[id == script_id::acquire ? 1 : 3];
    const redis_entry* fence = find(fence_key, wall_ms, effects);
    if (fence == nullptr || fence->value != "9223372036854775807") return false;
    if (fence->expire_at_ms >= 0) set(fence_key, fence->value, -1, effects);
    append_error(reply, "FENCE_EXHAUSTED the fence counter is at 2^63-1");
    return true;
}

// raise: the lock's holder moves the fence counter up to `number` (never down).
void redis_node::raise_script(const std::string_view* keys, const std::string_view* argv,
                              std::int64_t number, std::int64_t wall_ms, std::string& reply,
                              std::vector<repl_op>& effects) {
    const redis_entry* lock = find(keys[0], wall_ms, effects);
    if (lock == nullptr || lock->value != argv[0]) {
        append_integer(reply, 0);
        return;
    }
    const redis_entry* fence = find(keys[1], wall_ms, effects);
    std::int64_t current = 0;
    if (fence != nullptr && !parse_integer(fence->value, current)) {
        append_error(reply, "ERR value is not an integer or out of range");
        return;
    }
    // SET clears the expiry and the script's PEXPIRE sets it again, moved or not (on a key
    // that exists: a raise to 0 of no counter leaves none).
    if (current < number) {
        set(keys[1], argv[1], wall_ms + fence_ttl_ms, effects);
    } else if (fence != nullptr) {
        set(keys[1], fence->value, wall_ms + fence_ttl_ms, effects);
    }
    append_integer(reply, 1);
}

// SET key value [NX] [PX ms] [GET], as far as the lock's acquire uses it: with GET the reply
// is the value the key had (nil for none), and with NX an existing key is left alone.
void redis_node::set_command(const request_view& r, std::int64_t wall_ms, std::string& reply,
                             node_output& out) {
    std::vector<repl_op>& effects = out.effects;
    bool nx = false;
    bool get = false;
    std::int64_t px = -1;
    bool valid = r.count >= 3;
    for (std::size_t i = 3; valid && i < r.count; ++i) {
        if (equals_ignoring_case(r.args[i], "NX")) {
            nx = true;
        } else if (equals_ignoring_case(r.args[i], "GET")) {
            get = true;
        } else if (equals_ignoring_case(r.args[i], "PX") && i + 1 < r.count) {
            valid = parse_integer(r.args[++i], px) && px > 0;
        } else {
            valid = false;
        }
    }
    if (!valid || (nx && get && redis_6_)) {
        append_error(reply, "ERR syntax error");
        return;
    }
    if (!is_master()) {
        reply += readonly_reply;
        return;
    }
    const redis_entry* existing = find(r.args[1], wall_ms, effects);
    const std::string before = existing != nullptr ? existing->value : std::string();
    const bool granted = existing == nullptr || (!nx && before != r.args[2]);
    if (existing == nullptr || !nx) set(r.args[1], r.args[2], px > 0 ? wall_ms + px : -1, effects);
    if (granted)
        out.grants.push_back(
            node_output::grant{std::string(r.args[1]), std::string(r.args[2]), false, -1});
    if (!get) {
        reply += existing != nullptr && nx ? nil_reply : std::string_view("+OK\r\n");
    } else if (existing != nullptr) {
        append_bulk(reply, before);
    } else {
        reply += nil_reply;
    }
}

// The acquire script once its arguments are checked: SET NX PX (the same token may set it
// again), then with fencing the counter's INCR, keeping the counter's own expiry.
void redis_node::acquire_script(const std::string_view* keys, bool fencing, std::string_view token,
                                std::int64_t ttl_ms, const redis_entry* lock, std::int64_t wall_ms,
                                std::string& reply, node_output& out) {
    if (ttl_ms <= 0) {
        append_error(reply, "ERR invalid expire time in 'set' command");
        return;
    }
    if (lock != nullptr && lock->value != token) {
        reply += nil_reply;
        return;
    }
    if (lock == nullptr)
        out.grants.push_back(
            node_output::grant{std::string(keys[0]), std::string(token), false, -1});
    set(keys[0], token, wall_ms + ttl_ms, out.effects);
    if (!fencing) {
        append_integer(reply, 0);
        return;
    }
    raise_fence(keys[1], wall_ms, reply, out.effects);
}

// INCR of the fence counter, raised to the clock in microseconds when below it (the
// scripts' TIME), with the expiry fence_ttl_ms; the reply is the new value.
void redis_node::raise_fence(std::string_view key, std::int64_t wall_ms, std::string& reply,
                             std::vector<repl_op>& effects) {
    const redis_entry* fence = find(key, wall_ms, effects);
    std::int64_t value = 0;
    if (fence != nullptr && !parse_integer(fence->value, value)) {
        append_error(reply, "ERR value is not an integer or out of range");
        return;
    }
    // The counter never falls behind the clock in microseconds, as the real script's TIME
    // (scripts.hpp): a restart that set it back cannot hand out tokens given before. Then
    // the script's PEXPIRE: the counter lives fence_ttl_ms from this write.
    const std::string incremented = std::to_string(std::max(value + 1, wall_ms * 1000));
    set(key, incremented, wall_ms + fence_ttl_ms, effects);
    append_bulk(reply, incremented);
}

// ---- the fair scripts (scripts.hpp: fair_acquire, fair_release) ---------------------------

namespace {

std::vector<zset_member>::iterator find_member(std::vector<zset_member>& set,
                                               std::string_view member) {
    return std::find_if(set.begin(), set.end(),
                        [&](const zset_member& m) { return m.member == member; });
}

// ZADD: a new member, or a new score for one already there; Redis's order kept.
void zadd(std::vector<zset_member>& set, std::int64_t score, std::string_view member) {
    const auto found = find_member(set, member);
    if (found != set.end()) set.erase(found);
    const zset_member added{score, std::string(member)};
    const auto at = std::lower_bound(
        set.begin(), set.end(), added, [](const zset_member& a, const zset_member& b) {
            return a.score != b.score ? a.score < b.score : a.member < b.member;
        });
    set.insert(at, added);
}

bool zrem(std::vector<zset_member>& set, std::string_view member) {
    const auto found = find_member(set, member);
    if (found == set.end()) return false;
    set.erase(found);
    return true;
}

}  // namespace

std::vector<zset_member> decode_zset(std::string_view value) {
    std::vector<zset_member> out;
    std::size_t at = 0;
    while (at < value.size()) {
        const std::size_t space = value.find(' ', at);
        const std::size_t end = value.find('\n', at);
        if (space == std::string_view::npos || end == std::string_view::npos || space > end) break;
        zset_member m;
        if (!parse_integer(value.substr(at, space - at), m.score)) break;
        m.member = std::string(value.substr(space + 1, end - space - 1));
        out.push_back(std::move(m));
        at = end + 1;
    }
    return out;
}

std::string encode_zset(const std::vector<zset_member>& members) {
    std::string out;
    for (const zset_member& m : members) {
        out += std::to_string(m.score);
        out += ' ';
        out += m.member;
        out += '\n';
    }
    return out;
}

std::vector<zset_member> redis_node::load_zset(std::string_view key, std::int64_t wall_ms,
                                               std::vector<repl_op>& effects) {
    const redis_entry* e = find(key, wall_ms, effects);
    return e != nullptr ? decode_zset(e->value) : std::vector<zset_member>{};
}

void redis_node::store_zset(std::string_view key, const std::vector<zset_member>& members,
                            std::int64_t wall_ms, std::vector<repl_op>& effects) {
    const redis_entry* e = find(key, wall_ms, effects);
    if (members.empty()) {
        if (e != nullptr) erase(key, effects);
        return;
    }
    set(key, encode_zset(members), e != nullptr ? e->expire_at_ms : -1, effects);
}

void redis_node::purge_queue(std::string_view queue, std::string_view qttl, std::int64_t now_ms,
                             std::vector<repl_op>& effects) {
    std::vector<zset_member> expiries = load_zset(qttl, now_ms, effects);
    std::vector<zset_member> line = load_zset(queue, now_ms, effects);
    bool line_changed = false;
    std::size_t gone = 0;
    while (gone < expiries.size() && expiries[gone].score <= now_ms) {
        line_changed = zrem(line, expiries[gone].member) || line_changed;
        ++gone;
    }
    if (gone > 0) {
        expiries.erase(expiries.begin(), expiries.begin() + static_cast<std::ptrdiff_t>(gone));
        store_zset(qttl, expiries, now_ms, effects);
    }
    // Heads without an expiry entry could never expire: they go too.
    while (!line.empty() && find_member(expiries, line.front().member) == expiries.end()) {
        line.erase(line.begin());
        line_changed = true;
    }
    if (line_changed) store_zset(queue, line, now_ms, effects);
}

// Sets `token`'s expiry in the line to now + entry_ttl_ms and keeps both line keys alive at
// least that long.
void redis_node::refresh_line_entry(const std::string_view* keys, std::string_view token,
                                    std::int64_t entry_ttl_ms, std::int64_t wall_ms,
                                    std::vector<repl_op>& effects) {
    std::vector<zset_member> expiries = load_zset(keys[2], wall_ms, effects);
    zadd(expiries, wall_ms + entry_ttl_ms, token);
    store_zset(keys[2], expiries, wall_ms, effects);
    for (std::size_t i = 1; i <= 2; ++i) {
        const redis_entry* e = find(keys[i], wall_ms, effects);
        if (e == nullptr) continue;  // PEXPIRE of a missing key does nothing
        const std::int64_t pttl = e->expire_at_ms < 0 ? -1 : e->expire_at_ms - wall_ms;
        if (pttl < entry_ttl_ms) set(keys[i], e->value, wall_ms + entry_ttl_ms, effects);
    }
}

// KEYS lock queue qttl [fence], ARGV token ttl_ms entry_ttl_ms ["join"]. `now` is the
// script's TIME in ms, the node's wall clock, as the script computes it.
void redis_node::fair_acquire_script(const std::string_view* keys, bool fencing,
                                     std::string_view token, std::int64_t ttl_ms,
                                     std::int64_t entry_ttl_ms, bool join, std::int64_t wall_ms,
                                     std::string& reply, node_output& out) {
    std::vector<repl_op>& effects = out.effects;
    if (ttl_ms <= 0 || entry_ttl_ms <= 0) {
        append_error(reply, "ERR invalid expire time in 'pexpire' command");
        return;
    }
    const std::int64_t now = wall_ms;
    purge_queue(keys[1], keys[2], now, effects);
    const redis_entry* lock = find(keys[0], wall_ms, effects);
    const std::string holder = lock != nullptr ? lock->value : std::string();
    std::vector<zset_member> line = load_zset(keys[1], wall_ms, effects);
    const std::string head = line.empty() ? std::string() : line.front().member;
    const std::int64_t head_score = line.empty() ? now + 1 : line.front().score;
    const auto ours = find_member(line, token);
    const std::int64_t our_score = ours != line.end() ? ours->score : -1;
    const bool ours_held = lock != nullptr && holder == token;
    const bool took = !join && (ours_held || (lock == nullptr && (head.empty() || head == token)));
    if (took && ours_held) {
        set(keys[0], token, wall_ms + ttl_ms, effects);  // PEXPIRE
    } else if (took) {
        set(keys[0], token, wall_ms + ttl_ms, effects);
        out.grants.push_back(
            node_output::grant{std::string(keys[0]), std::string(token), true, our_score});
    } else if (ours == line.end()) {
        const std::int64_t last = line.empty() ? 0 : line.back().score;
        zadd(line, std::max(now, last + 1), token);
        store_zset(keys[1], line, wall_ms, effects);
    }
    if (took && head != token) {  // the taker stands at the head until its release
        zadd(line, head_score - 1, token);
        store_zset(keys[1], line, wall_ms, effects);
    }
    refresh_line_entry(keys, token, entry_ttl_ms, wall_ms, effects);
    if (!took) {
        if (lock == nullptr && !head.empty() && head != token) {
            out.published.push_back(node_output::publication{std::string(keys[1]), head});
        }
        reply += nil_reply;
        return;
    }
    if (!fencing) {
        append_integer(reply, 0);
        return;
    }
    raise_fence(keys[3], wall_ms, reply, effects);
}

// KEYS lock queue qttl, ARGV token ["stay"]: the compare-and-delete first, then the line's
// upkeep (a waiter that stays keeps its entry).
void redis_node::fair_release_script(const std::string_view* keys, std::string_view token,
                                     bool stay, std::int64_t wall_ms, std::string& reply,
                                     node_output& out) {
    std::vector<repl_op>& effects = out.effects;
    const redis_entry* lock = find(keys[0], wall_ms, effects);
    const bool ours = lock != nullptr && lock->value == token;
    if (ours) erase(keys[0], effects);
    if (!stay) {
        std::vector<zset_member> line = load_zset(keys[1], wall_ms, effects);
        if (zrem(line, token)) store_zset(keys[1], line, wall_ms, effects);
        std::vector<zset_member> expiries = load_zset(keys[2], wall_ms, effects);
        if (zrem(expiries, token)) store_zset(keys[2], expiries, wall_ms, effects);
    }
    purge_queue(keys[1], keys[2], wall_ms, effects);
    const std::vector<zset_member> line = load_zset(keys[1], wall_ms, effects);
    if (!line.empty() && find(keys[0], wall_ms, effects) == nullptr) {
        out.published.push_back(
            node_output::publication{std::string(keys[1]), line.front().member});
    }
    append_integer(reply, ours ? 1 : 0);
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
        append_error(reply, "ERR WAIT cannot be used with replica instances.");
        return;
    }
    client_state& c = clients_[client];
    const std::int64_t acked = acked_replicas(c.last_write_offset);
    if (acked >= replicas) {
        append_integer(reply, acked);
        return;
    }
    c.blocked = true;
    c.wait_replicas = replicas;
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
        const std::int64_t acked = acked_replicas(c.last_write_offset);
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
    const std::uint32_t epoch = clients_[client].epoch;
    clients_[client] = client_state{};
    clients_[client].epoch = epoch;
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
    scripts_cached_ = 0;
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
    replicas_ = static_cast<std::uint8_t>(replicas_ | (1u << replica));
}

void redis_node::detach_replica(std::uint8_t replica) noexcept {
    replicas_ = static_cast<std::uint8_t>(replicas_ & ~(1u << replica));
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
            erase(key, effects);  // expired: deleted on access, and the DEL replicated
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
    ++offset_;
}

void redis_node::erase(std::string_view key, std::vector<repl_op>& effects) {
    effects.emplace_back();
    repl_op& op = effects.back();
    op.del = true;
    op.key = key;
    apply_local(op);
    ++offset_;
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
