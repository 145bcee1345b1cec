// SPDX-License-Identifier: Apache-2.0
// What the lock's property tests share (lock_model_test.cpp, lock_race_test.cpp): the
// configurations drawn, tokens, the requests decoded from the wire, the events and codes
// named, and the exception that ends a broken property.
#pragma once

#include "edgelock/lock.hpp"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>
#include <rapidcheck/state.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <functional>
#include <exception>
#include <initializer_list>
#include <limits>
#include <map>
#include <memory>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "edgelock/assert.hpp"
#include "edgelock/errc.hpp"
#include "edgelock/keys.hpp"
#include "edgelock/limits.hpp"
#include "edgelock/resp_reader.hpp"
#include "edgelock/scripts.hpp"

namespace lock_model {

using edgelock::errc;
using edgelock::event;
using edgelock::event_type;
using edgelock::lock_state;
using edgelock::reply_node;
using edgelock::reply_type;

constexpr std::string_view lock_name = "orders:42";
constexpr std::int64_t retry_delay_ms_min = 10;
constexpr std::int64_t retry_delay_ms_max = 200;
constexpr std::size_t trace_lines_max = 40;

// ---- configurations ----------------------------------------------------------------------

struct setup {
    std::uint8_t instances = 1;
    bool fencing = false;
    bool watchdog = true;
    std::int64_t ttl_ms = 1000;
    std::uint8_t replicas_to_wait = 0;  // WAIT after the acquire (and the raise)
    bool long_attempt = false;          // attempt timeout = ttl: the deadline is validity's end

    int quorum() const { return instances / 2 + 1; }
    // The defaults lock_config documents, computed here rather than read from the lock.
    std::int64_t drift_ms() const { return ttl_ms / 100 + 2; }
    std::int64_t renew_interval_ms() const { return ttl_ms / 3; }
    std::int64_t attempt_timeout_ms() const {
        return long_attempt ? ttl_ms : std::max<std::int64_t>(ttl_ms / 10, 1);
    }
    std::int64_t lease_ms() const { return ttl_ms - drift_ms(); }
    std::int64_t replica_wait_ms() const { return attempt_timeout_ms() / 2; }

    edgelock::lock_config config() const {
        edgelock::lock_config config;
        config.name = lock_name;
        config.ttl_ms = ttl_ms;
        config.instances = instances;
        config.fencing = fencing;
        config.watchdog = watchdog;
        config.replicas_to_wait = replicas_to_wait;
        if (long_attempt) config.attempt_timeout_ms = ttl_ms;
        config.retry_delay_ms_min = retry_delay_ms_min;
        config.retry_delay_ms_max = retry_delay_ms_max;
        return config;
    }
};

inline std::ostream& operator<<(std::ostream& os, const setup& s) {
    return os << "N=" << int{s.instances} << " fencing=" << s.fencing << " watchdog=" << s.watchdog
              << " ttl_ms=" << s.ttl_ms << " replicas_to_wait=" << int{s.replicas_to_wait}
              << " long_attempt=" << s.long_attempt;
}

// watchdog_off_weight in 5: leases that are not renewed end exactly at valid_until, where
// the race looks for a second holder.
inline rc::Gen<setup> gen_setup(std::uint8_t instances, std::size_t watchdog_off_weight) {
    return rc::gen::exec([instances, watchdog_off_weight] {
        setup s;
        s.instances = instances;
        s.fencing = *rc::gen::arbitrary<bool>();
        s.watchdog = *rc::gen::weightedElement<bool>(
            {{5 - watchdog_off_weight, true}, {watchdog_off_weight, false}});
        s.ttl_ms = *rc::gen::element<std::int64_t>(1000, 300);
        s.replicas_to_wait = *rc::gen::weightedElement<std::uint8_t>({{4, 0}, {1, 1}, {1, 2}});
        s.long_attempt = *rc::gen::weightedElement<bool>({{3, false}, {1, true}});
        return s;
    });
}

inline std::string fence_key_for(std::string_view name) {
    std::array<char, edgelock::key_bytes_max> key{};
    const std::size_t size = edgelock::write_fence_key(name, key.data(), key.size());
    return std::string(key.data(), size);
}

// ---- tokens and the wire -----------------------------------------------------------------

// Unique by construction: random bits from the generator, then a serial number.
inline edgelock::owner_token make_token(std::uint64_t salt, std::uint64_t serial) {
    edgelock::owner_token token{};
    for (std::size_t i = 0; i < 8; ++i) {
        token[i] = static_cast<std::uint8_t>(salt >> (8 * i));
        token[8 + i] = static_cast<std::uint8_t>(serial >> (8 * i));
    }
    return token;
}

inline std::string hex_of(const edgelock::owner_token& token) {
    constexpr char digits[] = "0123456789abcdef";
    std::string hex;
    for (const std::uint8_t byte : token) {
        hex += digits[byte >> 4];
        hex += digits[byte & 0xf];
    }
    return hex;
}

// replicate: WAIT numreplicas timeout, the one request that is not a script.
enum class req_kind : std::uint8_t { acquire, raise, replicate, renew, release };
constexpr std::size_t req_kinds = 5;

inline const char* kind_name(req_kind kind) {
    switch (kind) {
        case req_kind::acquire: return "acquire";
        case req_kind::raise: return "raise";
        case req_kind::replicate: return "replicate";
        case req_kind::renew: return "renew";
        case req_kind::release: return "release";
    }
    return "?";
}

inline const edgelock::script& script_of(req_kind kind) {
    switch (kind) {
        case req_kind::acquire: return edgelock::acquire_script;
        case req_kind::raise: return edgelock::raise_script;
        case req_kind::renew: return edgelock::renew_script;
        case req_kind::replicate:
        case req_kind::release: break;
    }
    return edgelock::release_script;
}

struct wire_request {
    req_kind kind = req_kind::acquire;
    bool eval = false;
    bool native = false;  // an acquire as SET key token NX PX ttl GET rather than the script
    std::vector<std::string> keys;
    std::string token;
    bool has_number = false;
    std::int64_t number = 0;
    std::int64_t timeout_ms = 0;  // replicate only
};

inline std::string describe(const wire_request& r) {
    std::ostringstream os;
    os << kind_name(r.kind) << (r.native ? "/SET" : r.eval ? "/EVAL" : "");
    if (!r.token.empty()) os << " token=" << r.token.substr(0, 6) << "..";
    if (r.has_number) os << " arg=" << r.number;
    if (r.kind == req_kind::replicate) os << " timeout=" << r.timeout_ms;
    return os.str();
}

inline bool parse_int(std::string_view text, std::int64_t& value) {
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    return ec == std::errc() && end == text.data() + text.size();
}

// Decodes one request (a RESP array of bulk strings: EVALSHA|EVAL, digest|text, numkeys,
// keys, token, optional number; or WAIT numreplicas timeout; or SET key token NX PX ttl GET).
// Returns what is wrong with it, or an empty string.
inline std::string decode_request(const char* bytes, std::size_t size, wire_request& out) {
    std::array<reply_node, 16> nodes{};
    const edgelock::parse_result parsed =
        edgelock::parse_reply(bytes, size, nodes.data(), nodes.size());
    if (parsed.code != errc::ok)
        return std::string("not RESP: ") + edgelock::to_string(parsed.code);
    if (parsed.consumed != size) return "trailing bytes after the request";
    if (nodes[0].type != reply_type::array || nodes[0].elements + 1 != parsed.nodes) {
        return "not a flat array";
    }
    std::vector<std::string> args;
    for (std::size_t i = 1; i < parsed.nodes; ++i) {
        if (nodes[i].type != reply_type::bulk_string) return "an argument is not a bulk string";
        args.emplace_back(nodes[i].text);
    }
    if (!args.empty() && args[0] == "WAIT") {
        out.kind = req_kind::replicate;
        out.has_number = true;
        if (args.size() != 3 || !parse_int(args[1], out.number) ||
            !parse_int(args[2], out.timeout_ms)) {
            return "malformed WAIT";
        }
        return {};
    }
    if (!args.empty() && args[0] == "SET") {
        out.kind = req_kind::acquire;
        out.native = true;
        out.has_number = true;
        if (args.size() != 7 || args[3] != "NX" || args[4] != "PX" || args[6] != "GET" ||
            !parse_int(args[5], out.number)) {
            return "malformed SET";
        }
        out.keys.assign(1, args[1]);
        out.token = args[2];
        return {};
    }
    if (args.size() < 5) return "too few arguments";
    if (args[0] == "EVALSHA") {
        out.eval = false;
    } else if (args[0] == "EVAL") {
        out.eval = true;
    } else {
        return "not EVAL/EVALSHA: " + args[0];
    }
    bool known = false;
    for (const req_kind kind :
         {req_kind::acquire, req_kind::raise, req_kind::renew, req_kind::release}) {
        const edgelock::script& s = script_of(kind);
        const std::string_view wanted =
            out.eval ? s.text : std::string_view(s.digest.data(), s.digest.size());
        if (args[1] == wanted) {
            out.kind = kind;
            known = true;
        }
    }
    if (!known) return "unknown script";
    std::int64_t key_count = 0;
    if (!parse_int(args[2], key_count) || key_count < 1 || key_count > 2) return "bad numkeys";
    const std::size_t rest = 3 + static_cast<std::size_t>(key_count);
    if (args.size() < rest + 1 || args.size() > rest + 2) return "wrong argument count";
    out.keys.assign(args.begin() + 3, args.begin() + static_cast<std::ptrdiff_t>(rest));
    out.token = args[rest];
    out.has_number = args.size() == rest + 2;
    if (out.has_number && !parse_int(args[rest + 1], out.number)) return "bad number argument";
    return {};
}

// ---- events and codes ----------------------------------------------------------------------

inline const char* event_name(event_type type) {
    switch (type) {
        case event_type::acquired: return "acquired";
        case event_type::acquire_failed: return "acquire_failed";
        case event_type::renewed: return "renewed";
        case event_type::lost: return "lost";
        case event_type::released: return "released";
    }
    return "?";
}

inline std::string describe(const event& e) {
    std::ostringstream os;
    os << event_name(e.type) << "{code=" << edgelock::to_string(e.code)
       << " cause=" << edgelock::to_string(e.cause) << " fence=" << e.fence
       << " valid_until=" << e.valid_until_ms << " expired_before=" << e.expired_before
       << " instances_released=" << int{e.instances_released} << "}";
    return os.str();
}

inline bool one_of(errc code, std::initializer_list<errc> codes) {
    return std::find(codes.begin(), codes.end(), code) != codes.end();
}

inline const char* state_name(lock_state state) {
    switch (state) {
        case lock_state::unconfigured: return "unconfigured";
        case lock_state::idle: return "idle";
        case lock_state::acquiring: return "acquiring";
        case lock_state::backing_off: return "backing_off";
        case lock_state::confirming: return "confirming";
        case lock_state::held: return "held";
        case lock_state::releasing: return "releasing";
        case lock_state::lost: return "lost";
    }
    return "?";
}

// Replies whose text must outlive the call: string literals only.
constexpr std::string_view error_text = "ERR x";
constexpr std::string_view noscript_text = "NOSCRIPT No matching script. Please use EVAL.";
constexpr std::string_view exhausted_text = "FENCE_EXHAUSTED the fence counter is at 2^63-1";
// How a Redis before 7.0 answers SET with both NX and GET. WRONGTYPE, another error SET ...
// GET can give (the key holds no string), must not be taken for it.
constexpr std::string_view syntax_error_text = "ERR syntax error";
constexpr std::string_view wrongtype_text =
    "WRONGTYPE Operation against a key holding the wrong kind of value";

inline bool is_syntax_error(const reply_node& reply) {
    return reply.type == reply_type::error &&
           reply.text.substr(0, syntax_error_text.size()) == syntax_error_text;
}

// The acquire script's fence value: GET's decimal string of a counter in [1, 2^63-1].
inline bool fence_of(const reply_node& reply, std::int64_t& fence) {
    if (reply.type != reply_type::bulk_string || reply.text.empty() || reply.text[0] == '0')
        return false;
    const char* end = reply.text.data() + reply.text.size();
    const auto parsed = std::from_chars(reply.text.data(), end, fence);
    return parsed.ec == std::errc{} && parsed.ptr == end && fence > 0;
}

inline reply_node integer_reply(std::int64_t value) {
    reply_node node;
    node.type = reply_type::integer;
    node.integer = value;
    return node;
}

inline reply_node error_reply(std::string_view text) {
    reply_node node;
    node.type = reply_type::error;
    node.text = text;
    return node;
}

// ---- the properties: the real lock against what lock.hpp promises ------------------------

// Thrown by fail() after RC_FAIL (which throws first): keeps [[noreturn]] honest.
class property_broken : public std::exception {
public:
    explicit property_broken(std::string what) : what_(std::move(what)) {}
    const char* what() const noexcept override { return what_.c_str(); }

private:
    std::string what_;
};

inline void print_assertion(const char* expression, const char* file, int line) {
    std::fprintf(stderr, "EDGELOCK_ASSERT(%s) failed at %s:%d\n", expression, file, line);
}

}  // namespace lock_model
