// SPDX-License-Identifier: Apache-2.0
// Property tests of the lock, driven by RapidCheck.
//
// lock_model: random sequences of calls (acquire with and without a wait, release, a reply
// of every plausible kind to the oldest request in flight on an instance, connection
// failures, clock steps, timer ticks) run against the real lock, for N = 1, 3 and 5 with
// fencing, the watchdog, WAIT for replicas and a ttl-long attempt budget switched on and off
// at random. Replies: nil, our own token, another token, "ERR syntax error", other errors or
// a script's answer to SET NX PX GET; success, refusal, errors, NOSCRIPT or a wrong type to
// the scripts and WAIT. After every call the harness drains the events, writes out and
// decodes every queued request, and checks what lock.hpp promises, from the calls, the
// events and the wire alone (no model of how the lock decides):
//   (a) the lease: held(t) is never true at or after valid_until_ms(); acquired and renewed
//       never carry a validity already over; a held lock never asks to be woken after its
//       lease ends;
//   (b) validity never exceeds ttl - drift from the claims: whenever `acquired` or `renewed`
//       is emitted, and whenever held(now), a quorum of distinct instances answered success
//       to a claim (acquire, or renew) of the current token written at some t with
//       t + ttl - drift >= valid_until, not followed by a release of that token, and (with
//       replicas_to_wait) confirmed by a WAIT after it on the same connection; `acquired`
//       carries exactly attempt start + ttl - drift, and renewals never shorten the lease;
//   (c) reentrant holds: hold_count() follows the calls, a reentrant acquire queues
//       `acquired` at once with the same fence and validity, only the last release() sends
//       releases;
//   (d) every request carries a token acquire() started with; claims carry the current one;
//       renewals start only in a call that began with the lock held;
//   (e) every call returns a code its comment documents, under the condition it names
//       (invalid_wait, invalid_state, not_held, invalid_instance, unexpected_reply with
//       nothing in flight, error_reply for an error reply, ok for NOSCRIPT or SET's syntax
//       error), and every event carries a documented code;
//   (f) fence tokens: 0 without fencing; with it, the largest counter of the winning
//       attempt's successful acquires, raised (N > 1) to exactly that on a quorum before it
//       is handed out; a fenced acquire is never SET NX PX GET;
//   (s) the events follow the state machine of lock_state and event_type: acquired and
//       acquire_failed end an acquire, renewed and lost only while holding, released after
//       the last release() (expired_before after lost), and state() agrees with them;
//   and backoff: a retry is due within retry_delay_ms_max, never after now + wait.
//
// lock_model_race: two locks compete over an in-test Redis (a map per instance, keys expiring
// exactly on time, the four scripts executed by the semantics scripts.hpp documents,
// NOSCRIPT after a script flush, SET NX PX GET as Redis 7.0 runs it, or "ERR syntax error"
// for it on an instance playing an older Redis, each with odds of 1 in 4) with random clock
// steps, delivery orders, dropped connections and server swaps (a failover or upgrade to the
// other version). The two must never both be held at one instant; a held lock's validity
// must never outlast its token on a quorum of instances; fence tokens must strictly increase
// from one holder to the next. Two scripted families add what random schedules rarely
// reach: a second lock trying just before the first one's unrenewed lease ends, and a
// retried acquire whose earlier SET landed and whose cleanup was lost to a script flush, so
// that SET NX PX GET hands it back its own token, with a key that expires an attempt early.
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

namespace {

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

std::ostream& operator<<(std::ostream& os, const setup& s) {
    return os << "N=" << int{s.instances} << " fencing=" << s.fencing << " watchdog=" << s.watchdog
              << " ttl_ms=" << s.ttl_ms << " replicas_to_wait=" << int{s.replicas_to_wait}
              << " long_attempt=" << s.long_attempt;
}

// watchdog_off_weight in 5: leases that are not renewed end exactly at valid_until, where
// the race looks for a second holder.
rc::Gen<setup> gen_setup(std::uint8_t instances, std::size_t watchdog_off_weight) {
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

std::string fence_key_for(std::string_view name) {
    std::array<char, edgelock::key_bytes_max> key{};
    const std::size_t size = edgelock::write_fence_key(name, key.data(), key.size());
    return std::string(key.data(), size);
}

// ---- tokens and the wire -----------------------------------------------------------------

// Unique by construction: random bits from the generator, then a serial number.
edgelock::owner_token make_token(std::uint64_t salt, std::uint64_t serial) {
    edgelock::owner_token token{};
    for (std::size_t i = 0; i < 8; ++i) {
        token[i] = static_cast<std::uint8_t>(salt >> (8 * i));
        token[8 + i] = static_cast<std::uint8_t>(serial >> (8 * i));
    }
    return token;
}

std::string hex_of(const edgelock::owner_token& token) {
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

const char* kind_name(req_kind kind) {
    switch (kind) {
        case req_kind::acquire: return "acquire";
        case req_kind::raise: return "raise";
        case req_kind::replicate: return "replicate";
        case req_kind::renew: return "renew";
        case req_kind::release: return "release";
    }
    return "?";
}

const edgelock::script& script_of(req_kind kind) {
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

std::string describe(const wire_request& r) {
    std::ostringstream os;
    os << kind_name(r.kind) << (r.native ? "/SET" : r.eval ? "/EVAL" : "");
    if (!r.token.empty()) os << " token=" << r.token.substr(0, 6) << "..";
    if (r.has_number) os << " arg=" << r.number;
    if (r.kind == req_kind::replicate) os << " timeout=" << r.timeout_ms;
    return os.str();
}

bool parse_int(std::string_view text, std::int64_t& value) {
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    return ec == std::errc() && end == text.data() + text.size();
}

// Decodes one request (a RESP array of bulk strings: EVALSHA|EVAL, digest|text, numkeys,
// keys, token, optional number; or WAIT numreplicas timeout; or SET key token NX PX ttl GET).
// Returns what is wrong with it, or an empty string.
std::string decode_request(const char* bytes, std::size_t size, wire_request& out) {
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

const char* event_name(event_type type) {
    switch (type) {
        case event_type::acquired: return "acquired";
        case event_type::acquire_failed: return "acquire_failed";
        case event_type::renewed: return "renewed";
        case event_type::lost: return "lost";
        case event_type::released: return "released";
    }
    return "?";
}

std::string describe(const event& e) {
    std::ostringstream os;
    os << event_name(e.type) << "{code=" << edgelock::to_string(e.code)
       << " cause=" << edgelock::to_string(e.cause) << " fence=" << e.fence
       << " valid_until=" << e.valid_until_ms << " expired_before=" << e.expired_before
       << " instances_released=" << int{e.instances_released} << "}";
    return os.str();
}

bool one_of(errc code, std::initializer_list<errc> codes) {
    return std::find(codes.begin(), codes.end(), code) != codes.end();
}

const char* state_name(lock_state state) {
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

bool is_syntax_error(const reply_node& reply) {
    return reply.type == reply_type::error &&
           reply.text.substr(0, syntax_error_text.size()) == syntax_error_text;
}

// The acquire script's fence value: GET's decimal string of a counter in [1, 2^63-1].
bool fence_of(const reply_node& reply, std::int64_t& fence) {
    if (reply.type != reply_type::bulk_string || reply.text.empty() || reply.text[0] == '0')
        return false;
    const char* end = reply.text.data() + reply.text.size();
    const auto parsed = std::from_chars(reply.text.data(), end, fence);
    return parsed.ec == std::errc{} && parsed.ptr == end && fence > 0;
}

reply_node integer_reply(std::int64_t value) {
    reply_node node;
    node.type = reply_type::integer;
    node.integer = value;
    return node;
}

reply_node error_reply(std::string_view text) {
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

enum class reply_class : std::uint8_t { success, refusal, error, noscript, wrong_type };

const char* class_name(reply_class c) {
    switch (c) {
        case reply_class::success: return "success";
        case reply_class::refusal: return "refusal";
        case reply_class::error: return "error";
        case reply_class::noscript: return "noscript";
        case reply_class::wrong_type: return "wrong_type";
    }
    return "?";
}

enum class clock_step : std::uint8_t { by_amount, to_deadline, just_before_deadline };

// Where the lock stands by the events it emitted and the calls it accepted (lock.hpp's
// lock_state and event_type comments), kept apart from what state() says.
enum class phase : std::uint8_t { idle, acquiring, holding, releasing, lost };

const char* phase_name(phase p) {
    switch (p) {
        case phase::idle: return "idle";
        case phase::acquiring: return "acquiring";
        case phase::holding: return "holding";
        case phase::releasing: return "releasing";
        case phase::lost: return "lost";
    }
    return "?";
}

// The states lock_state documents for each phase.
bool state_fits(phase p, lock_state s) {
    switch (p) {
        case phase::idle: return s == lock_state::idle;
        case phase::acquiring:
            return s == lock_state::acquiring || s == lock_state::backing_off ||
                   s == lock_state::confirming;
        case phase::holding: return s == lock_state::held;
        case phase::releasing: return s == lock_state::releasing;
        case phase::lost: return s == lock_state::lost;
    }
    return false;
}

// One call, as the harness saw it before and after.
struct call_facts {
    bool was_held = false;  // held(now) before the call: the lease cannot end inside it
    phase phase_before = phase::idle;
    std::uint16_t holds_before = 0;
    std::uint16_t attempts_before = 0;
    std::int64_t fence_before = 0;
    std::int64_t valid_until_before = 0;
    bool acquire_call = false;  // acquire() returned ok
    bool release_call = false;  // release() returned ok
    bool reentrant_acquire = false;
    bool fresh_acquire = false;    // an acquire() that started a new attempt with a new token
    bool inner_release = false;    // a release() that drops a hold but not the last
    bool ended_something = false;  // an acquire_failed, lost or released came in this call
    bool reentrant_acquired_seen = false;
    bool new_attempt_done = false;  // the attempt this acquire() started ended in the call
    // A reply this call handed over after which a renew may go out while not held: our own
    // token back from a native acquire (the renew extends that key before it counts), or
    // NOSCRIPT to such a renew (it goes again). The instance, and the token it carried.
    int renew_may_follow_on = -1;
    std::string renew_may_follow_token;
};

// A request written and not yet answered or given up, in write order per instance.
struct sent_request {
    wire_request request;
    std::int64_t written_ms = 0;
    std::uint64_t seq = 0;         // write order over all instances
    std::uint32_t connection = 0;  // the instance's connection it went out on
    int batch = -1;                // acquire: the attempt (requests written together)
};

// A claim (acquire, or renew) Redis answered with success: our key there, with its expiry
// at least a TTL after the request was written. Less drift: what a lease may rely on.
struct claim {
    std::uint64_t seq = 0;
    std::uint32_t connection = 0;
    std::int64_t good_until_ms = 0;
    bool replicated = false;  // a WAIT written after it on its connection confirmed it
};

// What one instance has of one token's keys, as far as the wire tells.
struct key_record {
    std::vector<claim> claims;
    std::uint64_t gone_after_seq = 0;  // a release of it written: claims before are void
};

// The acquire requests of one attempt and what their successes returned.
struct batch_record {
    std::int64_t written_ms = 0;
    std::string token;
    std::vector<std::int64_t> counters;  // fenced successes, until the fence is fixed
    bool frozen = false;                 // a raise or WAIT went out, or it was acquired
    std::int64_t fence = 0;
};

class model_harness {
public:
    explicit model_harness(const setup& s) : s_(s), fence_key_(fence_key_for(lock_name)) {
        const errc code = lock_.configure(s.config());
        if (code != errc::ok) fail(std::string("configure: ") + edgelock::to_string(code));
    }

    model_harness(const model_harness&) = delete;
    model_harness& operator=(const model_harness&) = delete;

    void acquire(std::int64_t wait_ms, std::uint64_t salt) {
        call_facts facts = facts_before();
        const int id = static_cast<int>(tokens_.size());
        const edgelock::owner_token token = make_token(salt, static_cast<std::uint64_t>(id));
        tokens_.push_back(hex_of(token));
        const errc got = lock_.acquire(now_ms_, wait_ms, token);
        facts.acquire_call = got == errc::ok;
        facts.reentrant_acquire = got == errc::ok && facts.was_held;
        started_.push_back(got == errc::ok && !facts.was_held);
        facts.fresh_acquire = started_.back();
        if (started_.back()) {
            previous_token_ = latest_token_;
            latest_token_ = id;
            wait_deadline_ms_ = now_ms_ + wait_ms;
        }
        std::ostringstream call;
        call << "acquire(wait_ms=" << wait_ms << ", token #" << id << ")";
        finish(facts, call.str(), got, {errc::ok, errc::invalid_wait, errc::invalid_state});
        const bool wait_valid = wait_ms >= 0 && wait_ms <= edgelock::wait_ms_max;
        if (!wait_valid && got == errc::ok)
            fail("(e) acquire() took a wait outside [0, wait_ms_max]");
        if (wait_valid && got == errc::invalid_wait) fail("(e) invalid_wait for a valid wait");
        const bool busy_before =
            facts.phase_before == phase::acquiring || facts.phase_before == phase::releasing;
        if (got == errc::ok && busy_before && !facts.ended_something) {
            fail("(e) acquire() accepted while already acquiring or releasing");
        }
        if (wait_valid && got == errc::invalid_state && !busy_before &&
            facts.holds_before != edgelock::holds_max) {
            fail(std::string("(e) acquire() refused as invalid_state from ") +
                 phase_name(facts.phase_before));
        }
        if (facts.reentrant_acquire && !facts.reentrant_acquired_seen) {
            fail("(c) a reentrant acquire() queued no acquired event at once");
        }
    }

    void release() {
        call_facts facts = facts_before();
        const errc got = lock_.release(now_ms_);
        facts.release_call = got == errc::ok;
        facts.inner_release = got == errc::ok && facts.was_held && facts.holds_before > 1;
        if (facts.inner_release) --holds_seen_;
        finish(facts, "release()", got, {errc::ok, errc::not_held, errc::invalid_state});
        if (got == errc::not_held && facts.phase_before != phase::idle && !facts.ended_something) {
            fail(std::string("(e) release() said not_held from ") + phase_name(facts.phase_before));
        }
        if (got == errc::invalid_state && facts.phase_before != phase::releasing) {
            fail(std::string("(e) release() refused as invalid_state from ") +
                 phase_name(facts.phase_before));
        }
        if (got == errc::ok &&
            (facts.phase_before == phase::idle || facts.phase_before == phase::releasing)) {
            fail(std::string("(e) release() accepted from ") + phase_name(facts.phase_before));
        }
    }

    void deliver(std::uint8_t pick, reply_class kind_of_reply, std::int64_t counter, int variant,
                 bool bad_instance) {
        call_facts facts = facts_before();
        std::uint8_t instance = bad_instance ? s_.instances : pick;
        if (!bad_instance) {
            for (std::uint8_t k = 0; k < s_.instances; ++k) {
                const auto candidate = static_cast<std::uint8_t>((pick + k) % s_.instances);
                if (in_flight(candidate)) {
                    instance = candidate;
                    break;
                }
            }
        }
        const bool answering = instance < s_.instances && in_flight(instance);
        const sent_request answered = answering ? flight_[instance].front() : sent_request{};
        if (answering) flight_[instance].pop_front();
        std::string text;  // a fence value's digits or a token live here through the call
        const reply_node reply =
            answering ? make_reply(answered.request, kind_of_reply, counter, variant, text)
                      : integer_reply(1);
        if (answering && may_bring_renew(answered.request, reply)) {
            facts.renew_may_follow_on = instance;
            facts.renew_may_follow_token = answered.request.token;
        }
        if (answering) observe_reply(instance, answered, reply);
        const errc got = lock_.on_reply(instance, reply, now_ms_);
        std::ostringstream call;
        call << "on_reply(" << int{instance} << ", ";
        if (answering) {
            call << class_name(kind_of_reply) << " to " << kind_name(answered.request.kind)
                 << (answered.request.native ? "/SET" : "");
        } else {
            call << "nothing in flight";
        }
        if (reply.type == reply_type::nil) call << " nil";
        if (reply.type == reply_type::integer) call << " :" << reply.integer;
        if (reply.type == reply_type::bulk_string) call << " $" << reply.text;
        if (reply.type == reply_type::error) call << " -" << reply.text;
        call << ")";
        finish(facts, call.str(), got,
               {errc::ok, errc::invalid_instance, errc::unexpected_reply, errc::error_reply});
        check_reply_code(instance, answering, answered.request, reply, got);
    }

    bool in_flight(std::uint8_t instance) const { return !flight_[instance].empty(); }

    void io_error(std::uint8_t instance) {
        call_facts facts = facts_before();
        if (instance < s_.instances) {
            flight_[instance].clear();  // given up: done or not, nobody will say
            ++connection_[instance];
        }
        const errc got = lock_.on_io_error(instance, now_ms_);
        finish(facts, "on_io_error(" + std::to_string(instance) + ")", got,
               {errc::ok, errc::invalid_instance});
        if ((got == errc::invalid_instance) != (instance >= s_.instances)) {
            fail(
                "(e) on_io_error: invalid_instance is for an instance past the count, and only "
                "then");
        }
    }

    void timer() {
        call_facts facts = facts_before();
        const errc got = lock_.on_timer(now_ms_);
        finish(facts, "on_timer()", got, {errc::ok});
    }

    void step_clock(clock_step how, std::int64_t amount_ms) {
        call_facts facts = facts_before();
        const std::int64_t deadline = lock_.next_deadline_ms();
        const bool finite = deadline != edgelock::no_deadline_ms;
        if (how == clock_step::to_deadline && finite && deadline > now_ms_) {
            now_ms_ = deadline;
        } else if (how == clock_step::just_before_deadline && finite && deadline - 1 > now_ms_) {
            now_ms_ = deadline - 1;
        } else {
            now_ms_ += amount_ms;
        }
        finish(facts, "clock", errc::ok, {errc::ok});
    }

private:
    call_facts facts_before() const {
        call_facts facts;
        facts.was_held = lock_.held(now_ms_);
        facts.phase_before = phase_;
        facts.holds_before = lock_.hold_count();
        facts.attempts_before = lock_.attempts();
        facts.fence_before = lock_.fence();
        facts.valid_until_before = lock_.valid_until_ms();
        return facts;
    }

    // ---- the replies handed over ----

    // `text` holds a fenced acquire's digits or a token, so it must outlive the reply.
    reply_node make_reply(const wire_request& answered, reply_class c, std::int64_t counter,
                          int variant, std::string& text) const {
        if (answered.native) return make_native_reply(answered, c, counter, variant, text);
        const req_kind kind = answered.kind;
        const bool fenced_acquire = kind == req_kind::acquire && s_.fencing;
        switch (c) {
            case reply_class::success:
                if (fenced_acquire) {
                    text = std::to_string(counter);
                    reply_node node;
                    node.type = reply_type::bulk_string;
                    node.text = text;
                    return node;
                }
                if (kind == req_kind::acquire) return integer_reply(0);
                if (kind == req_kind::replicate)
                    return integer_reply(s_.replicas_to_wait + counter % 2);
                return integer_reply(1);
            case reply_class::refusal:
                if (kind == req_kind::acquire) return reply_node{};
                if (kind == req_kind::replicate)
                    return integer_reply(counter % s_.replicas_to_wait);
                return integer_reply(0);
            case reply_class::error:
                if (fenced_acquire && variant % 2 == 1) return error_reply(exhausted_text);
                // From a script, the native form's refusal is an error like any other.
                return error_reply(variant == 2 ? syntax_error_text : error_text);
            case reply_class::noscript: return error_reply(noscript_text);
            case reply_class::wrong_type: break;
        }
        reply_node node;
        switch (variant % 4) {
            case 0:
                node.type = reply_type::simple_string;
                node.text = "OK";
                return node;
            case 1:
                // A fenced acquire answers a string: an integer is the wrong type there.
                if (fenced_acquire) return integer_reply(counter);
                node.type = reply_type::bulk_string;
                node.text = "1";
                return node;
            case 2: node.type = reply_type::array; return node;
            default:
                // A value no script returns: a zero counter, or 2 for a 0/1 script.
                if (fenced_acquire) {
                    node.type = reply_type::bulk_string;
                    node.text = "0";
                    return node;
                }
                if (kind == req_kind::acquire || kind == req_kind::replicate)
                    return integer_reply(-1);
                return integer_reply(2);
        }
    }

    // SET NX PX GET's answers: nil (the key was free); the value it found, a third of the
    // successes our own token (an earlier attempt's SET landed), every refusal another one;
    // the syntax error of a Redis before 7.0 among the errors. NOSCRIPT and the script's own
    // answers are wrong for it.
    reply_node make_native_reply(const wire_request& answered, reply_class c, std::int64_t counter,
                                 int variant, std::string& text) const {
        reply_node node;
        switch (c) {
            case reply_class::success:
                if (counter % 3 != 0) return node;
                text = answered.token;
                break;
            case reply_class::refusal: text = another_token(answered.token, variant); break;
            case reply_class::error:
                if (variant % 2 == 0) return error_reply(syntax_error_text);
                return error_reply(variant == 1 ? error_text : wrongtype_text);
            case reply_class::noscript: return error_reply(noscript_text);
            case reply_class::wrong_type:
                switch (variant % 4) {
                    case 0:
                        node.type = reply_type::simple_string;  // SET without GET
                        node.text = "OK";
                        return node;
                    case 1: return integer_reply(0);  // the acquire script's success
                    case 2: node.type = reply_type::array; return node;
                    default: return integer_reply(1);
                }
        }
        node.type = reply_type::bulk_string;
        node.text = text;
        return node;
    }

    // A key's value that is not `own`: another owner's, this lock's other token, or ours with
    // its last digit changed or a digit appended (an exact match is needed).
    std::string another_token(const std::string& own, int variant) const {
        const int latest = latest_token_;
        const int other = latest >= 0 && tokens_[static_cast<std::size_t>(latest)] == own
                              ? previous_token_
                              : latest;
        switch (variant % 4) {
            case 1:
                if (other >= 0 && tokens_[static_cast<std::size_t>(other)] != own) {
                    return tokens_[static_cast<std::size_t>(other)];
                }
                break;
            case 2: {
                std::string near = own;
                near.back() = near.back() == '0' ? '1' : '0';
                return near;
            }
            case 3: return own + "0";
            default: break;
        }
        return "0123456789abcdef0123456789abcdef";  // its serial half is far above any of ours
    }

    static bool is_noscript(const reply_node& reply) {
        return reply.type == reply_type::error && reply.text.substr(0, 8) == "NOSCRIPT";
    }

    static bool may_bring_renew(const wire_request& answered, const reply_node& reply) {
        if (answered.native)
            return reply.type == reply_type::bulk_string && reply.text == answered.token;
        return answered.kind == req_kind::renew && is_noscript(reply);
    }

    static bool renew_may_follow(const call_facts& facts, std::uint8_t instance,
                                 const wire_request& r) {
        return r.kind == req_kind::renew && facts.renew_may_follow_on == instance &&
               r.token == facts.renew_may_follow_token;
    }

    // (e) on_reply's codes as its comment gives them.
    void check_reply_code(std::uint8_t instance, bool answering, const wire_request& r,
                          const reply_node& reply, errc got) {
        if (instance >= s_.instances) {
            if (got != errc::invalid_instance)
                fail("(e) on_reply past the count is not invalid_instance");
            return;
        }
        if (!answering) {
            if (got != errc::unexpected_reply)
                fail("(e) on_reply with nothing in flight is not unexpected_reply");
            return;
        }
        if (reply.type != reply_type::error) {
            if (got != errc::ok && got != errc::unexpected_reply)
                fail("(e) on_reply: a non-error reply got an error code");
            return;
        }
        const bool script = r.kind != req_kind::replicate && !r.native;
        const bool taken = (script && is_noscript(reply)) || (r.native && is_syntax_error(reply));
        if (taken && got != errc::ok)
            fail("(e) NOSCRIPT to a script, or a syntax error to SET, is not ok");
        if (!taken && r.kind != req_kind::replicate && got != errc::error_reply) {
            fail("(e) an error reply did not return error_reply");
        }
    }

    // ---- one call's aftermath ----

    void finish(call_facts& facts, const std::string& call, errc got,
                std::initializer_list<errc> documented) {
        line_.str({});
        line_ << "t=" << now_ms_ << " " << call << " -> " << edgelock::to_string(got);
        if (!one_of(got, documented))
            fail(std::string("(e) undocumented return code ") + edgelock::to_string(got));
        check_events(facts);
        after_call(facts);
        write_requests(facts);
        check_held_is_backed();
        check_lease_invariants();
        check_backoff(facts);
        push_trace(line_.str());
    }

    void check_events(call_facts& facts) {
        event e;
        std::size_t count = 0;
        while (lock_.poll_event(e)) {
            line_ << " | " << describe(e);
            if (++count > edgelock::events_per_call_max)
                fail("one call produced more than events_per_call_max events");
            check_event(facts, e);
            step_phase(facts, e);
        }
    }

    // The calls' own moves, once their events are in.
    void after_call(const call_facts& facts) {
        if (facts.acquire_call && (phase_ == phase::idle || phase_ == phase::lost) &&
            !facts.new_attempt_done) {
            phase_ = phase::acquiring;
        }
        if (facts.release_call) {
            if (phase_ == phase::holding && !facts.inner_release) phase_ = phase::releasing;
            if (phase_ == phase::acquiring)
                fail("(e) release() while acquiring queued no acquire_failed{cancelled}");
            if (phase_ == phase::lost) fail("(e) release() after lost queued no released event");
        }
        if (!state_fits(phase_, lock_.state())) {
            fail(std::string("state ") + state_name(lock_.state()) + " after the events say " +
                 phase_name(phase_));
        }
        if (lock_.hold_count() != holds_seen_) {
            fail("(c) hold_count " + std::to_string(lock_.hold_count()) +
                 ", acquire/release calls say " + std::to_string(holds_seen_));
        }
    }

    // The state machine of the events (event_type's comments and the calls' own).
    void step_phase(call_facts& facts, const event& e) {
        const bool from_call_start = phase_ == phase::idle || phase_ == phase::lost;
        switch (e.type) {
            case event_type::acquired:
                if (facts.reentrant_acquire && phase_ == phase::holding) {
                    facts.reentrant_acquired_seen = true;
                    return;
                }
                if (phase_ != phase::acquiring && !(facts.acquire_call && from_call_start)) {
                    fail(std::string("(s) acquired while ") + phase_name(phase_));
                }
                if (from_call_start) facts.new_attempt_done = true;
                phase_ = phase::holding;
                return;
            case event_type::acquire_failed:
                if (phase_ != phase::acquiring && !(facts.acquire_call && from_call_start)) {
                    fail(std::string("(s) acquire_failed while ") + phase_name(phase_));
                }
                if (e.code == errc::cancelled && !facts.release_call)
                    fail("(s) cancelled without release()");
                if (from_call_start) facts.new_attempt_done = true;
                facts.ended_something = true;
                phase_ = phase::idle;
                return;
            case event_type::renewed:
                if (phase_ != phase::holding)
                    fail(std::string("(s) renewed while ") + phase_name(phase_));
                return;
            case event_type::lost:
                if (phase_ != phase::holding)
                    fail(std::string("(s) lost while ") + phase_name(phase_));
                facts.ended_something = true;
                phase_ = phase::lost;
                return;
            case event_type::released:
                if (phase_ == phase::lost && !e.expired_before)
                    fail("(s) released after lost without expired_before");
                if (phase_ != phase::releasing &&
                    !(facts.release_call && (phase_ == phase::holding || phase_ == phase::lost))) {
                    fail(std::string("(s) released while ") + phase_name(phase_));
                }
                facts.ended_something = true;
                phase_ = phase::idle;
                return;
        }
    }

    void check_event(const call_facts& facts, const event& e) {
        switch (e.type) {
            case event_type::acquired:
                if (e.valid_until_ms <= now_ms_) fail("(a) acquired with a validity already over");
                if (facts.reentrant_acquire && phase_ == phase::holding) {
                    if (e.fence != facts.fence_before ||
                        e.valid_until_ms != facts.valid_until_before) {
                        fail("(c) a reentrant acquire changed the fence or the validity");
                    }
                    ++holds_seen_;
                    return;
                }
                check_won(e);
                holds_seen_ = 1;
                return;
            case event_type::renewed:
                if (e.valid_until_ms <= now_ms_) fail("(a) renewed with a validity already over");
                if (e.valid_until_ms < facts.valid_until_before)
                    fail("(b) a renewal shortened the lease");
                if (!backed(current_token(), e.valid_until_ms)) {
                    fail("(b) renewed to " + std::to_string(e.valid_until_ms) +
                         " beyond what a quorum of keys holds");
                }
                return;
            case event_type::lost:
                if (!one_of(e.code, {errc::expired, errc::token_gone, errc::node_restarted,
                                     errc::clock_stepped_back})) {
                    fail("(e) lost with an undocumented code");
                }
                if (e.code == errc::expired && now_ms_ < facts.valid_until_before) {
                    fail("(a) lost as expired before the validity ran out");
                }
                holds_seen_ = 0;
                return;
            case event_type::released:
                if (e.instances_released > s_.instances)
                    fail("released on more instances than exist");
                holds_seen_ = 0;
                return;
            case event_type::acquire_failed:
                if (!one_of(e.code,
                            {errc::busy, errc::no_quorum, errc::validity_expired, errc::token_gone,
                             errc::not_replicated, errc::fence_exhausted, errc::restart_guard,
                             errc::wait_timeout, errc::cancelled, errc::clock_stepped_back})) {
                    fail("(e) acquire_failed with an undocumented code");
                }
                if (!one_of(e.cause, {errc::ok, errc::busy, errc::no_quorum, errc::validity_expired,
                                      errc::token_gone, errc::not_replicated, errc::fence_exhausted,
                                      errc::restart_guard})) {
                    fail("(e) acquire_failed with an undocumented cause");
                }
                holds_seen_ = 0;
                return;
        }
        fail("(e) an event of no known type");
    }

    // (b) and (f) for an `acquired` that ends an attempt.
    void check_won(const event& e) {
        const std::string token = current_token();
        if (!backed(token, e.valid_until_ms)) {
            fail("(b) acquired until " + std::to_string(e.valid_until_ms) +
                 " beyond what a quorum of keys holds");
        }
        if (latest_batch_ < 0 || batches_[latest_batch_].token != token)
            fail("(b) acquired without an acquire sent");
        batch_record& batch = batches_[latest_batch_];
        if (e.valid_until_ms != batch.written_ms + s_.lease_ms()) {
            fail("(b) valid_until " + std::to_string(e.valid_until_ms) + " is not attempt start " +
                 std::to_string(batch.written_ms) + " + ttl - drift");
        }
        if (!batch.frozen) freeze(batch);
        if (!s_.fencing) {
            if (e.fence != 0) fail("(f) a fence handed out without fencing");
            return;
        }
        if (e.fence != batch.fence || e.fence <= 0) {
            fail("(f) fence " + std::to_string(e.fence) +
                 ", the largest counter of the winning attempt is " + std::to_string(batch.fence));
        }
        if (s_.instances > 1 && confirmed_raises(token, e.fence) < s_.quorum()) {
            fail("(f) acquired after " + std::to_string(confirmed_raises(token, e.fence)) +
                 " confirmed raises");
        }
    }

    std::string current_token() const {
        const auto hex = lock_.token_hex();
        return std::string(hex.data(), hex.size());
    }

    // (b): a quorum of instances has a key of `token` that lasts (less drift) until `until`,
    // confirmed on replicas when the lock waits for them.
    bool backed(const std::string& token, std::int64_t until) const {
        const auto found = keys_.find(token);
        if (found == keys_.end()) return false;
        int lasting = 0;
        for (const key_record& key : found->second) {
            bool lasts = false;
            for (const claim& c : key.claims) {
                if (c.seq <= key.gone_after_seq || c.good_until_ms < until) continue;
                if (s_.replicas_to_wait > 0 && !c.replicated) continue;
                lasts = true;
            }
            if (lasts) ++lasting;
        }
        return lasting >= s_.quorum();
    }

    // (a)+(b) between events too: while held(now), a quorum of keys lasts the whole lease.
    void check_held_is_backed() {
        if (lock_.held(now_ms_) && !backed(current_token(), lock_.valid_until_ms())) {
            fail("(b) held until " + std::to_string(lock_.valid_until_ms()) +
                 " beyond what a quorum of keys holds");
        }
    }

    // Instances whose latest confirmed raise for `token` carried `fence`.
    int confirmed_raises(const std::string& token, std::int64_t fence) const {
        const auto found = raised_.find(token);
        if (found == raised_.end()) return 0;
        int count = 0;
        for (const std::int64_t value : found->second) count += value == fence ? 1 : 0;
        return count;
    }

    std::int64_t& raised_on(const std::string& token, std::uint8_t instance) {
        std::vector<std::int64_t>& values = raised_[token];
        if (values.empty()) values.assign(s_.instances, 0);
        return values[instance];
    }

    key_record& key_of(const std::string& token, std::uint8_t instance) {
        std::vector<key_record>& keys = keys_[token];
        if (keys.empty()) keys.resize(s_.instances);
        return keys[instance];
    }

    // ---- the requests written ----

    void write_requests(const call_facts& facts) {
        std::array<char, edgelock::request_bytes_max> buffer{};
        const bool held_now = lock_.state() == lock_state::held;
        bool new_batch_started = false;
        for (std::uint8_t i = 0; i < s_.instances; ++i) {
            std::size_t written = 0;
            std::string renew_awaiting_release;  // token of a renew sent while not held
            while (lock_.has_request(i)) {
                if (++written > edgelock::requests_per_instance_max)
                    fail("more requests than a queue holds");
                const edgelock::write_result small = lock_.write_request(i, buffer.data(), 16);
                if (small.code != errc::buffer_too_small || small.size != 0) {
                    fail("(e) a 16-byte buffer was not refused with buffer_too_small");
                }
                const edgelock::write_result full =
                    lock_.write_request(i, buffer.data(), buffer.size());
                if (full.code != errc::ok)
                    fail(std::string("(e) write_request: ") + edgelock::to_string(full.code));
                sent_request sent;
                const std::string problem = decode_request(buffer.data(), full.size, sent.request);
                if (!problem.empty()) fail("undecodable request: " + problem);
                line_ << " | >" << int{i} << " " << describe(sent.request);
                check_request(facts, i, sent.request);
                // (d) A renewal that release()'s own timer work started just before it goes
                // out while releasing; harmless only because the release of its token follows
                // it on the same connection. (The renew after a native acquire's own token
                // is no renewal: it belongs to the attempt.)
                const wire_request& r = sent.request;
                if (r.kind == req_kind::renew && !held_now && !renew_may_follow(facts, i, r)) {
                    renew_awaiting_release = r.token;
                }
                if (r.kind == req_kind::release && r.token == renew_awaiting_release)
                    renew_awaiting_release.clear();
                sent.written_ms = now_ms_;
                sent.seq = ++seq_;
                sent.connection = connection_[i];
                if (r.kind == req_kind::acquire) sent.batch = batch_of(facts, r, new_batch_started);
                observe_written(i, sent);
                flight_[i].push_back(sent);
            }
            if (!renew_awaiting_release.empty()) {
                fail(
                    "(d) a renew sent while the lock is not held, with no release of its token "
                    "after it");
            }
            if (lock_.write_request(i, buffer.data(), buffer.size()).code != errc::invalid_state) {
                fail("(e) write_request with nothing queued is not invalid_state");
            }
        }
        if (lock_.has_request(s_.instances) ||
            lock_.write_request(s_.instances, buffer.data(), buffer.size()).code !=
                errc::invalid_instance) {
            fail("(e) an instance past the count is not invalid_instance");
        }
    }

    // An attempt's acquires go out together at its start (attempts() counts it, lock.hpp); an
    // acquire written in a call that started none is a re-send (after NOSCRIPT or a syntax
    // error) and stays in the attempt of the request it replaces.
    int batch_of(const call_facts& facts, const wire_request& r, bool& started) {
        const bool new_attempt = facts.fresh_acquire || lock_.attempts() != facts.attempts_before;
        if (new_attempt && !started) {
            started = true;
            const int id = static_cast<int>(batches_.size());
            batch_record batch;
            batch.written_ms = now_ms_;
            batch.token = r.token;
            batches_[id] = batch;
            latest_batch_ = id;
        }
        return latest_batch_;
    }

    // (c) and (d) on one request, from the wire alone.
    void check_request(const call_facts& facts, std::uint8_t instance, const wire_request& r) {
        if (r.kind == req_kind::replicate) {
            if (s_.replicas_to_wait == 0 || r.number != s_.replicas_to_wait ||
                r.timeout_ms != s_.replica_wait_ms()) {
                fail("a WAIT with the wrong arguments, or without replicas to wait for");
            }
            return;
        }
        const auto given = std::find(tokens_.begin(), tokens_.end(), r.token);
        if (given == tokens_.end() ||
            !started_[static_cast<std::size_t>(given - tokens_.begin())]) {
            fail("(d) a request carries a token no acquire() started with");
        }
        if (latest_token_ < 0) fail("(d) a request before any acquire()");
        const std::string& latest = tokens_[static_cast<std::size_t>(latest_token_)];
        const bool previous =
            previous_token_ >= 0 && r.token == tokens_[static_cast<std::size_t>(previous_token_)];
        // The one way a claim goes out with the previous token: timer work at the start of the
        // acquire() call that brought the new one started a retry of the old attempt, which
        // found no room on a quorum and failed at once (its cleanup release follows it).
        const bool queued_before_new_token =
            r.kind == req_kind::acquire && facts.fresh_acquire && previous;
        if (r.kind != req_kind::release && r.token != latest && !queued_before_new_token) {
            fail(std::string("(d) a ") + kind_name(r.kind) +
                 " carries a token other than the current one");
        }
        if (r.kind == req_kind::release && r.token != latest && !previous) {
            fail("(d) a release carries a token older than the previous acquire()");
        }
        if (r.kind == req_kind::renew && !facts.was_held && !renew_may_follow(facts, instance, r)) {
            fail("(d) a renewal started by a call that began with the lock not held");
        }
        if (r.native && s_.fencing) fail("(f) a fenced acquire went out as SET: no counter moved");
        if (r.kind == req_kind::raise && (!s_.fencing || s_.instances == 1))
            fail("(f) a raise without need");
        if (r.kind == req_kind::release && facts.inner_release) {
            fail("(c) a release() that was not the last one sent a release");
        }
        const bool two_keys =
            r.kind == req_kind::raise || (r.kind == req_kind::acquire && s_.fencing);
        if (r.keys.size() != (two_keys ? 2u : 1u) || r.keys[0] != lock_name ||
            (two_keys && r.keys[1] != fence_key_)) {
            fail("a request names the wrong keys");
        }
        const bool ttl_argument = r.kind == req_kind::acquire || r.kind == req_kind::renew;
        if (r.has_number != (r.kind != req_kind::release) ||
            (ttl_argument && r.number != s_.ttl_ms)) {
            fail("a request carries the wrong numeric argument");
        }
    }

    // ---- what went over the wire, for (b) and (f) ----

    static void freeze(batch_record& b) {
        b.frozen = true;
        b.fence = b.counters.empty() ? 0 : *std::max_element(b.counters.begin(), b.counters.end());
    }

    void observe_written(std::uint8_t instance, const sent_request& sent) {
        const wire_request& r = sent.request;
        if (r.kind == req_kind::release) {
            // From here on the key may be gone: no claim before it counts.
            key_of(r.token, instance).gone_after_seq = sent.seq;
        }
        if ((r.kind == req_kind::raise || r.kind == req_kind::replicate) && latest_batch_ >= 0) {
            // The attempt's decision is taken: its counters so far make the fence.
            batch_record& b = batches_[latest_batch_];
            if (!b.frozen && b.token == current_token()) freeze(b);
        }
        if (r.kind == req_kind::raise) {
            const batch_record& b = batches_[latest_batch_];
            if (r.token != b.token || r.number != b.fence) {
                fail("(f) a raise carries " + std::to_string(r.number) +
                     ", the largest counter of its attempt is " + std::to_string(b.fence));
            }
        }
    }

    void observe_reply(std::uint8_t instance, const sent_request& sent, const reply_node& reply) {
        const wire_request& r = sent.request;
        const bool integer = reply.type == reply_type::integer;
        const auto claimed = [&] {
            claim c;
            c.seq = sent.seq;
            c.connection = sent.connection;
            c.good_until_ms = sent.written_ms + s_.lease_ms();
            key_of(r.token, instance).claims.push_back(c);
        };
        switch (r.kind) {
            case req_kind::acquire: {
                std::int64_t fence = 0;
                // SET NX PX GET succeeds with nil; our own token back counts only once renewed.
                const bool ok = r.native     ? reply.type == reply_type::nil
                                : s_.fencing ? fence_of(reply, fence)
                                             : integer && reply.integer == 0;
                if (!ok) return;
                claimed();
                batch_record& b = batches_[sent.batch];
                if (!b.frozen) b.counters.push_back(fence);
                return;
            }
            case req_kind::renew:
                // A refusal says the key went early, a fault outside the lock (Redlock assumes
                // none): the claim is what the lease was computed from, and it keeps counting.
                if (integer && reply.integer == 1) claimed();
                return;
            case req_kind::raise:
                if (integer && reply.integer == 1) raised_on(r.token, instance) = r.number;
                return;
            case req_kind::replicate:
                // WAIT confirms every write before it on the same connection.
                if (!integer || reply.integer < s_.replicas_to_wait) return;
                for (auto& [token, keys] : keys_) {
                    for (claim& c : keys[instance].claims) {
                        if (c.connection == sent.connection && c.seq < sent.seq)
                            c.replicated = true;
                    }
                }
                return;
            case req_kind::release: return;
        }
    }

    // ---- lease and backoff ----

    // (a): whatever happened, the lease is never reported held at or past its end.
    void check_lease_invariants() {
        const std::int64_t end = lock_.valid_until_ms();
        if (lock_.held(now_ms_) && now_ms_ >= end)
            fail("(a) held(now) at or after valid_until_ms()");
        if (lock_.held(end) || lock_.held(end + 1)) fail("(a) held() true at valid_until_ms()");
        if (lock_.state() == lock_state::held && lock_.next_deadline_ms() > end) {
            fail("(a) a held lock asks to be woken after its lease ends");
        }
    }

    // Full jitter under retry_delay_ms_max, and never a retry due past the wait.
    void check_backoff(const call_facts&) {
        const bool backing_off = lock_.state() == lock_state::backing_off;
        const std::int64_t next = lock_.next_deadline_ms();
        if (backing_off && !was_backing_off_ &&
            (next < now_ms_ || next > now_ms_ + retry_delay_ms_max)) {
            fail("backoff deadline " + std::to_string(next) +
                 " outside [now, now + retry_delay_ms_max]");
        }
        if (backing_off && next > wait_deadline_ms_) {
            fail("a retry due at " + std::to_string(next) + ", after now + wait of its acquire()");
        }
        was_backing_off_ = backing_off;
    }

    // ---- failure reports ----

    void push_trace(std::string line) {
        trace_.push_back(std::move(line));
        if (trace_.size() > trace_lines_max) trace_.pop_front();
    }

    [[noreturn]] void fail(const std::string& what) {
        std::ostringstream os;
        os << what << "\n  setup: " << s_ << "\n  failing step: " << line_.str()
           << "\n  steps before it:";
        for (const std::string& line : trace_) os << "\n    " << line;
        RC_FAIL(os.str());
        throw property_broken(what);  // not reached: RC_FAIL throws
    }

    setup s_;
    edgelock::lock lock_;
    std::string fence_key_;
    std::int64_t now_ms_ = 1'000;
    std::vector<std::string> tokens_;  // by id: every token handed to acquire()
    std::vector<bool> started_;        // by id: the token started an attempt
    int latest_token_ = -1;
    int previous_token_ = -1;
    std::int64_t wait_deadline_ms_ = -1;  // the latest new acquire()'s now + wait
    phase phase_ = phase::idle;
    std::uint16_t holds_seen_ = 0;
    bool was_backing_off_ = false;
    std::array<std::deque<sent_request>, edgelock::instances_max> flight_{};
    std::array<std::uint32_t, edgelock::instances_max> connection_{};
    std::uint64_t seq_ = 0;
    std::map<std::string, std::vector<key_record>> keys_;      // by token, by instance
    std::map<std::string, std::vector<std::int64_t>> raised_;  // by token, by instance
    std::map<int, batch_record> batches_;
    int latest_batch_ = -1;
    std::ostringstream line_;
    std::deque<std::string> trace_;
};

// ---- the commands -------------------------------------------------------------------------

struct model_state {
    setup s;
};

using model_command = rc::state::Command<model_state, model_harness>;

struct acquire_command final : model_command {
    std::int64_t wait_ms;
    std::uint64_t salt;
    explicit acquire_command(const model_state& m)
        : wait_ms(*rc::gen::weightedOneOf<std::int64_t>(
              {{5, rc::gen::just<std::int64_t>(0)},
               {4, rc::gen::inRange<std::int64_t>(1, 3 * m.s.ttl_ms)},
               {1, rc::gen::element<std::int64_t>(-1, edgelock::wait_ms_max + 1)}})),
          salt(*rc::gen::arbitrary<std::uint64_t>()) {}
    void run(const model_state&, model_harness& h) const override { h.acquire(wait_ms, salt); }
    void show(std::ostream& os) const override { os << "acquire(wait_ms=" << wait_ms << ")"; }
};

struct release_command final : model_command {
    void run(const model_state&, model_harness& h) const override { h.release(); }
    void show(std::ostream& os) const override { os << "release()"; }
};

// Fence counters as Redis hands them out: mostly small, some around 2^53 (where a double
// stops being exact) and some among the counter's last values before 2^63-1. The top stays
// instances_max short of it: a burst adds the instance's index.
rc::Gen<std::int64_t> fence_counter() {
    constexpr std::int64_t two_to_53 = std::int64_t{1} << 53;
    constexpr std::int64_t top = std::numeric_limits<std::int64_t>::max() - edgelock::instances_max;
    return rc::gen::weightedOneOf<std::int64_t>(
        {{8, rc::gen::inRange<std::int64_t>(1, 1'000'000)},
         {1, rc::gen::inRange<std::int64_t>(two_to_53 - 8, two_to_53 + 8)},
         {1, rc::gen::inRange<std::int64_t>(top - 16, top + 1)}});
}

struct deliver_command final : model_command {
    std::uint8_t pick;
    reply_class kind;
    std::int64_t counter;
    int variant;
    bool bad_instance;
    explicit deliver_command(const model_state& m)
        : pick(*rc::gen::inRange<std::uint8_t>(0, m.s.instances)),
          kind(*rc::gen::weightedElement<reply_class>({{8, reply_class::success},
                                                       {3, reply_class::refusal},
                                                       {1, reply_class::error},
                                                       {1, reply_class::noscript},
                                                       {1, reply_class::wrong_type}})),
          counter(*fence_counter()),
          variant(*rc::gen::inRange(0, 4)),
          bad_instance(*rc::gen::weightedElement<bool>({{39, false}, {1, true}})) {}
    void run(const model_state&, model_harness& h) const override {
        h.deliver(pick, kind, counter, variant, bad_instance);
    }
    void show(std::ostream& os) const override {
        os << "deliver(pick=" << int{pick} << ", " << class_name(kind) << ", counter=" << counter
           << ", variant=" << variant << (bad_instance ? ", bad instance" : "") << ")";
    }
};

// One reply of the same class to the oldest request on every instance: a round answered
// at once, so that N = 5 reaches holds, renewals and refusals by a quorum often enough.
struct burst_command final : model_command {
    reply_class kind;
    std::int64_t counter;
    explicit burst_command(const model_state&)
        : kind(*rc::gen::weightedElement<reply_class>(
              {{6, reply_class::success}, {2, reply_class::refusal}, {1, reply_class::error}})),
          counter(*fence_counter()) {}
    void run(const model_state& m, model_harness& h) const override {
        for (std::uint8_t i = 0; i < m.s.instances; ++i) {
            if (h.in_flight(i)) h.deliver(i, kind, counter + i, 0, false);
        }
    }
    void show(std::ostream& os) const override {
        os << "burst(" << class_name(kind) << ", counter=" << counter << "+i)";
    }
};

struct io_error_command final : model_command {
    std::uint8_t instance;
    explicit io_error_command(const model_state& m)
        : instance(*rc::gen::weightedOneOf<std::uint8_t>(
              {{12, rc::gen::inRange<std::uint8_t>(0, m.s.instances)},
               {1, rc::gen::just(std::uint8_t{m.s.instances})}})) {}
    void run(const model_state&, model_harness& h) const override { h.io_error(instance); }
    void show(std::ostream& os) const override { os << "io_error(" << int{instance} << ")"; }
};

struct clock_command final : model_command {
    clock_step how;
    std::int64_t amount_ms;
    explicit clock_command(const model_state& m)
        : how(*rc::gen::weightedElement<clock_step>({{6, clock_step::by_amount},
                                                     {2, clock_step::to_deadline},
                                                     {1, clock_step::just_before_deadline}})),
          // Mostly within one round's reply budget, sometimes up to a whole lease.
          amount_ms(*rc::gen::weightedOneOf<std::int64_t>(
              {{3, rc::gen::inRange<std::int64_t>(0, m.s.attempt_timeout_ms())},
               {1, rc::gen::inRange<std::int64_t>(0, m.s.ttl_ms + 1)}})) {}
    void run(const model_state&, model_harness& h) const override { h.step_clock(how, amount_ms); }
    void show(std::ostream& os) const override {
        switch (how) {
            case clock_step::by_amount: os << "clock(+" << amount_ms << " ms)"; return;
            case clock_step::to_deadline: os << "clock(to the deadline)"; return;
            case clock_step::just_before_deadline: os << "clock(1 ms before the deadline)"; return;
        }
    }
};

struct timer_command final : model_command {
    void run(const model_state&, model_harness& h) const override { h.timer(); }
    void show(std::ostream& os) const override { os << "on_timer()"; }
};

rc::Gen<std::shared_ptr<const model_command>> next_command(const model_state& m) {
    using rc::state::gen::execOneOfWithArgs;
    return rc::gen::weightedOneOf<std::shared_ptr<const model_command>>({
        {20, execOneOfWithArgs<deliver_command>()(m)},
        {8, execOneOfWithArgs<burst_command>()(m)},
        {6, execOneOfWithArgs<acquire_command>()(m)},
        {3, execOneOfWithArgs<release_command>()(m)},
        {2, execOneOfWithArgs<io_error_command>()(m)},
        {8, execOneOfWithArgs<clock_command>()(m)},
        {4, execOneOfWithArgs<timer_command>()(m)},
    });
}

void print_assertion(const char* expression, const char* file, int line) {
    std::fprintf(stderr, "EDGELOCK_ASSERT(%s) failed at %s:%d\n", expression, file, line);
}

void run_model(std::uint8_t instances) {
    // (e) "never aborts": an internal assertion names itself before the abort fails the test.
    edgelock::set_assert_handler(&print_assertion);
    const setup s = *gen_setup(instances, 1);
    const model_state initial{s};
    const auto commands = *rc::gen::scale(20.0, rc::state::gen::commands(initial, &next_command));
    model_harness harness(s);
    rc::state::runAll(commands, initial, harness);
}

RC_GTEST_PROP(lock_model, one_instance_follows_the_contract, ()) { run_model(1); }
RC_GTEST_PROP(lock_model, three_instances_follow_the_contract, ()) { run_model(3); }
RC_GTEST_PROP(lock_model, five_instances_follow_the_contract, ()) { run_model(5); }

// ---- two locks over a punctual in-test Redis -------------------------------------------------

struct stored_reply {
    reply_type type = reply_type::nil;
    std::int64_t integer = 0;
    std::string text;
};

stored_reply stored_integer(std::int64_t value) {
    stored_reply r;
    r.type = reply_type::integer;
    r.integer = value;
    return r;
}

stored_reply stored_text(reply_type type, std::string_view text) {
    stored_reply r;
    r.type = type;
    r.text = std::string(text);
    return r;
}

// One Redis instance: keys expire exactly on time (present while now < expiry), the four
// scripts run by the semantics scripts.hpp documents, and EVALSHA of a script it has not seen
// as EVAL since the last flush gets NOSCRIPT. SET key value NX PX ttl GET answers the value it
// found (nil when the key was free, and only then sets it), as Redis 7.0 does; an instance
// playing an older Redis answers it "ERR syntax error" and changes nothing.
class punctual_redis {
public:
    stored_reply execute(const wire_request& r, std::int64_t now_ms) {
        // Replication is not modelled: both replicas always have everything.
        if (r.kind == req_kind::replicate) return stored_integer(2);
        if (r.native) return set_nx_get(r, now_ms);
        const auto kind = static_cast<std::size_t>(r.kind);
        if (!r.eval && !loaded_[kind]) return stored_text(reply_type::error, noscript_text);
        loaded_[kind] = true;
        entry* lock = live(r.keys[0], now_ms);
        const bool ours = lock != nullptr && lock->value == r.token;
        switch (r.kind) {
            case req_kind::acquire:
                if (lock == nullptr) {
                    keys_[r.keys[0]] = entry{r.token, now_ms + r.number};
                } else if (!ours) {
                    return stored_reply{};
                } else {
                    lock->expires_at_ms = now_ms + r.number;
                }
                if (r.keys.size() > 1) {
                    // The counter comes back as GET's string.
                    stored_reply fence;
                    fence.type = reply_type::bulk_string;
                    fence.text = std::to_string(++counters_[r.keys[1]]);
                    return fence;
                }
                return stored_integer(0);
            case req_kind::raise:
                if (!ours) return stored_integer(0);
                counters_[r.keys[1]] = std::max(counters_[r.keys[1]], r.number);
                return stored_integer(1);
            case req_kind::renew:
                if (!ours) return stored_integer(0);
                lock->expires_at_ms = now_ms + r.number;
                return stored_integer(1);
            case req_kind::release:
                if (!ours) return stored_integer(0);
                keys_.erase(r.keys[0]);
                return stored_integer(1);
            case req_kind::replicate: break;
        }
        return stored_reply{};
    }

    void flush_scripts() { loaded_.fill(false); }
    void load_scripts() { loaded_.fill(true); }
    bool before_seven() const { return before_seven_; }
    void set_before_seven(bool before) { before_seven_ = before; }

    // When `key` stops holding `token`, if nothing else touches it; now_ms when it does not.
    std::int64_t holds_until_ms(std::string_view key, const std::string& token,
                                std::int64_t now_ms) {
        const entry* e = live(std::string(key), now_ms);
        return e != nullptr && e->value == token ? e->expires_at_ms : now_ms;
    }

private:
    struct entry {
        std::string value;
        std::int64_t expires_at_ms = 0;
    };

    stored_reply set_nx_get(const wire_request& r, std::int64_t now_ms) {
        if (before_seven_) return stored_text(reply_type::error, syntax_error_text);
        const entry* found = live(r.keys[0], now_ms);
        if (found != nullptr) return stored_text(reply_type::bulk_string, found->value);
        keys_[r.keys[0]] = entry{r.token, now_ms + r.number};
        return stored_reply{};
    }

    entry* live(const std::string& key, std::int64_t now_ms) {
        const auto found = keys_.find(key);
        if (found == keys_.end()) return nullptr;
        if (now_ms >= found->second.expires_at_ms) {
            keys_.erase(found);
            return nullptr;
        }
        return &found->second;
    }

    std::map<std::string, entry> keys_;
    std::map<std::string, std::int64_t> counters_;
    std::array<bool, req_kinds> loaded_{};
    bool before_seven_ = false;
};

enum class race_action : std::uint8_t {
    acquire,
    release,
    execute,
    deliver,
    settle,
    disconnect,
    advance,
    approach,
    timer,
    flush_scripts,
    swap_server
};

struct race_step {
    race_action action = race_action::timer;
    std::uint8_t who = 0;
    std::uint8_t instance = 0;
    std::int64_t amount = 0;
};

std::ostream& operator<<(std::ostream& os, const race_step& step) {
    static constexpr const char* names[] = {"acquire", "release",       "execute",    "deliver",
                                            "settle",  "disconnect",    "advance",    "approach",
                                            "timer",   "flush_scripts", "swap_server"};
    return os << names[static_cast<int>(step.action)] << "(lock " << int{step.who} << ", instance "
              << int{step.instance} << ", " << step.amount << ")";
}

rc::Gen<race_step> gen_race_step(const setup& s) {
    return rc::gen::exec([s] {
        race_step step;
        step.action = *rc::gen::weightedElement<race_action>({{3, race_action::acquire},
                                                              {2, race_action::release},
                                                              {8, race_action::execute},
                                                              {8, race_action::deliver},
                                                              {3, race_action::settle},
                                                              {1, race_action::disconnect},
                                                              {5, race_action::advance},
                                                              {3, race_action::approach},
                                                              {1, race_action::timer},
                                                              {1, race_action::flush_scripts},
                                                              {1, race_action::swap_server}});
        step.who = *rc::gen::inRange<std::uint8_t>(0, 2);
        step.instance = *rc::gen::inRange<std::uint8_t>(0, s.instances);
        // Clock steps: mostly a fraction of one round's reply budget, sometimes up to two
        // leases. The amount also picks the acquire wait and how much of a dropped
        // connection's traffic reached Redis.
        step.amount = *rc::gen::weightedOneOf<std::int64_t>(
            {{6, rc::gen::inRange<std::int64_t>(0, s.attempt_timeout_ms() / 3 + 1)},
             {1, rc::gen::inRange<std::int64_t>(0, 2 * s.ttl_ms)}});
        return step;
    });
}

// Which instances start as a Redis before 7.0 (SET NX PX GET is a syntax error there).
using server_versions = std::array<bool, edgelock::instances_max>;

rc::Gen<server_versions> gen_before_seven() {
    return rc::gen::exec([] {
        server_versions before_seven{};
        for (bool& before : before_seven)
            before = *rc::gen::weightedElement<bool>({{3, false}, {1, true}});
        return before_seven;
    });
}

class race {
public:
    race(const setup& s, const server_versions& before_seven) : s_(s) {
        for (contender& c : contenders_) {
            if (c.lock.configure(s.config()) != errc::ok) fail("configure failed");
        }
        for (std::size_t i = 0; i < redis_.size(); ++i) {
            redis_[i].load_scripts();
            redis_[i].set_before_seven(before_seven[i]);
        }
    }

    race(const race&) = delete;
    race& operator=(const race&) = delete;

    void apply(const race_step& step) {
        trace_.push_back({now_ms_, step});  // formatted only when a check fails
        if (trace_.size() > trace_lines_max) trace_.pop_front();
        contender& c = contenders_[step.who];
        switch (step.action) {
            case race_action::acquire: {
                if (c.lock.state() != lock_state::idle && c.lock.state() != lock_state::lost)
                    return;
                const std::int64_t wait = step.amount % 3 == 0 ? 0 : step.amount;
                const auto token = make_token(static_cast<std::uint64_t>(step.amount), ++serial_);
                expect(c.lock.acquire(now_ms_, wait, token) == errc::ok, "acquire refused");
                break;
            }
            case race_action::release: {
                // Mostly releases of a hold; a quarter cancel whatever is running.
                const bool holding =
                    c.lock.state() == lock_state::held || c.lock.state() == lock_state::lost;
                if (!holding && step.amount % 4 != 0) return;
                const errc code = c.lock.release(now_ms_);
                expect(one_of(code, {errc::ok, errc::not_held, errc::invalid_state}),
                       "release code");
                break;
            }
            case race_action::execute: execute_one(step); break;
            case race_action::deliver: deliver_one(step); break;
            case race_action::settle: settle(c); break;
            case race_action::disconnect: disconnect(step); break;
            case race_action::advance: now_ms_ += step.amount; break;
            case race_action::approach: {
                // To just before the earliest deadline: where one lease ends and the other
                // lock may already win.
                const std::int64_t next = std::min(contenders_[0].lock.next_deadline_ms(),
                                                   contenders_[1].lock.next_deadline_ms());
                if (next != edgelock::no_deadline_ms)
                    now_ms_ = std::max(now_ms_, next - 1 - step.amount);
                break;
            }
            case race_action::timer: {
                const std::int64_t next = std::min(contenders_[0].lock.next_deadline_ms(),
                                                   contenders_[1].lock.next_deadline_ms());
                if (next != edgelock::no_deadline_ms) now_ms_ = std::max(now_ms_, next);
                for (contender& each : contenders_) {
                    expect(each.lock.on_timer(now_ms_) == errc::ok, "on_timer refused");
                }
                break;
            }
            case race_action::flush_scripts: redis_[step.instance].flush_scripts(); break;
            case race_action::swap_server: swap_server(step); break;
        }
        pump();
        check();
    }

private:
    struct connection {
        std::deque<wire_request> to_node;
        std::deque<stored_reply> to_client;
    };

    struct contender {
        edgelock::lock lock;
        std::array<connection, edgelock::instances_max> connections;
    };

    // Runs the oldest request of the first non-empty connection from (who, instance) on.
    void execute_one(const race_step& step) {
        for (int k = 0; k < 2 * s_.instances; ++k) {
            const int slot = (step.who * s_.instances + step.instance + k) % (2 * s_.instances);
            contender& c = contenders_[static_cast<std::size_t>(slot / s_.instances)];
            const auto instance = static_cast<std::size_t>(slot % s_.instances);
            connection& l = c.connections[instance];
            if (l.to_node.empty()) continue;
            l.to_client.push_back(redis_[instance].execute(l.to_node.front(), now_ms_));
            l.to_node.pop_front();
            return;
        }
    }

    void deliver_one(const race_step& step) {
        for (int k = 0; k < 2 * s_.instances; ++k) {
            const int slot = (step.who * s_.instances + step.instance + k) % (2 * s_.instances);
            contender& c = contenders_[static_cast<std::size_t>(slot / s_.instances)];
            const auto instance = static_cast<std::uint8_t>(slot % s_.instances);
            connection& l = c.connections[instance];
            if (l.to_client.empty()) continue;
            const stored_reply stored = l.to_client.front();
            l.to_client.pop_front();
            reply_node node;
            node.type = stored.type;
            node.integer = stored.integer;
            node.text = stored.text;
            expect(c.lock.on_reply(instance, node, now_ms_) == errc::ok,
                   "a reply from Redis refused");
            return;
        }
    }

    // A fast network for one lock: every request it has out runs, every reply comes back.
    void settle(contender& c) {
        for (std::uint8_t i = 0; i < s_.instances; ++i) {
            connection& l = c.connections[i];
            while (!l.to_node.empty()) {
                l.to_client.push_back(redis_[i].execute(l.to_node.front(), now_ms_));
                l.to_node.pop_front();
            }
            while (!l.to_client.empty()) {
                const stored_reply stored = l.to_client.front();
                l.to_client.pop_front();
                reply_node node;
                node.type = stored.type;
                node.integer = stored.integer;
                node.text = stored.text;
                expect(c.lock.on_reply(i, node, now_ms_) == errc::ok, "a reply from Redis refused");
            }
        }
    }

    // The connection drops: some of the requests sent reach Redis first, the rest and every
    // unread reply are gone.
    void disconnect(const race_step& step) {
        drop(contenders_[step.who], step.instance, step.amount);
    }

    void drop(contender& c, std::uint8_t instance, std::int64_t amount) {
        connection& l = c.connections[instance];
        const std::size_t reached = static_cast<std::size_t>(amount) % (l.to_node.size() + 1);
        for (std::size_t n = 0; n < reached; ++n) {
            redis_[instance].execute(l.to_node.front(), now_ms_);
            l.to_node.pop_front();
        }
        l.to_node.clear();
        l.to_client.clear();
        expect(c.lock.on_io_error(instance, now_ms_) == errc::ok, "on_io_error refused");
    }

    // A failover or an upgrade puts a server of the other version behind the instance, with
    // every key (replication is not modelled) and no script: both locks' connections drop.
    void swap_server(const race_step& step) {
        drop(contenders_[0], step.instance, step.amount);
        drop(contenders_[1], step.instance, step.amount / 2);
        punctual_redis& redis = redis_[step.instance];
        redis.set_before_seven(!redis.before_seven());
        redis.flush_scripts();
    }

    void pump() {
        std::array<char, edgelock::request_bytes_max> buffer{};
        for (contender& c : contenders_) {
            event e;
            while (c.lock.poll_event(e)) {
                if (e.type != event_type::acquired) continue;
                expect(e.valid_until_ms > now_ms_, "acquired with its validity already over");
                if (!s_.fencing) continue;
                if (e.fence <= last_fence_) {
                    fail("fence " + std::to_string(e.fence) + " handed out after " +
                         std::to_string(last_fence_));
                }
                last_fence_ = e.fence;
            }
            for (std::uint8_t i = 0; i < s_.instances; ++i) {
                while (c.lock.has_request(i)) {
                    const auto written = c.lock.write_request(i, buffer.data(), buffer.size());
                    expect(written.code == errc::ok, "write_request failed");
                    wire_request request;
                    const std::string problem =
                        decode_request(buffer.data(), written.size, request);
                    if (!problem.empty()) fail("undecodable request: " + problem);
                    c.connections[i].to_node.push_back(request);
                }
            }
        }
    }

    void check() {
        const bool first = contenders_[0].lock.held(now_ms_);
        const bool second = contenders_[1].lock.held(now_ms_);
        if (first && second) fail("both locks are held at once");
        // Stronger, and independent of when the clock steps land: a held lock's lease never
        // outlasts its token on a quorum. Keys only expire until the next step, so the
        // token stays on a quorum until the quorum-th latest of its expiry instants.
        for (contender& c : contenders_) {
            if (!c.lock.held(now_ms_)) continue;
            const auto hex = c.lock.token_hex();
            const std::string token(hex.data(), hex.size());
            std::vector<std::int64_t> until;
            for (std::uint8_t i = 0; i < s_.instances; ++i) {
                until.push_back(redis_[i].holds_until_ms(lock_name, token, now_ms_));
            }
            std::sort(until.begin(), until.end(), std::greater<>());
            const std::int64_t quorum_until = until[static_cast<std::size_t>(s_.quorum() - 1)];
            if (c.lock.valid_until_ms() > quorum_until) {
                fail("held until " + std::to_string(c.lock.valid_until_ms()) +
                     " but the token is on a quorum only until " + std::to_string(quorum_until));
            }
        }
    }

    void expect(bool ok, const std::string& what) {
        if (!ok) fail(what);
    }

    [[noreturn]] void fail(const std::string& what) {
        std::ostringstream os;
        os << what << " at t=" << now_ms_ << "\n  setup: " << s_ << "\n  before Redis 7.0:";
        for (std::uint8_t i = 0; i < s_.instances; ++i) os << " " << redis_[i].before_seven();
        os << "\n  steps:";
        for (const auto& [at_ms, step] : trace_) os << "\n    t=" << at_ms << " " << step;
        RC_FAIL(os.str());
        throw property_broken(what);  // not reached: RC_FAIL throws
    }

    setup s_;
    std::array<contender, 2> contenders_{};
    std::array<punctual_redis, edgelock::instances_max> redis_{};
    std::int64_t now_ms_ = 1'000;
    std::uint64_t serial_ = 0;
    std::int64_t last_fence_ = 0;
    std::deque<std::pair<std::int64_t, race_step>> trace_;
};

void run_race(std::uint8_t instances) {
    edgelock::set_assert_handler(&print_assertion);
    const setup s = *gen_setup(instances, 3);
    const server_versions before_seven = *gen_before_seven();
    const auto steps =
        *rc::gen::scale(15.0, rc::gen::container<std::vector<race_step>>(gen_race_step(s)));
    race r(s, before_seven);
    for (const race_step& step : steps) r.apply(step);
}

RC_GTEST_PROP(lock_model_race, one_instance_never_holds_twice, ()) { run_race(1); }
RC_GTEST_PROP(lock_model_race, three_instances_never_hold_twice, ()) { run_race(3); }
RC_GTEST_PROP(lock_model_race, five_instances_never_hold_twice, ()) { run_race(5); }

// A scripted family at the lease boundary, where random schedules rarely go: lock 0 acquires
// while each instance runs its request and answers after random delays (so its SETs happen
// well before it decides), is not renewed, and lock 1 tries at a random instant shortly
// before lock 0's lease ends, over a fast network. Then a few random steps.
std::vector<race_step> boundary_steps(const setup& s) {
    std::vector<race_step> steps;
    race_step step;
    step.action = race_action::acquire;  // amount 0: no wait
    steps.push_back(step);
    struct timed {
        std::int64_t at_ms;
        race_action action;
        std::uint8_t instance;
    };
    std::vector<timed> schedule;
    const std::int64_t budget = s.attempt_timeout_ms();
    for (std::uint8_t i = 0; i < s.instances; ++i) {
        // Both within the attempt's budget, so the attempt can still succeed.
        const std::int64_t run_at = *rc::gen::inRange<std::int64_t>(0, budget / 4);
        const std::int64_t reply_at =
            run_at + *rc::gen::inRange<std::int64_t>(0, budget - budget / 4);
        schedule.push_back({run_at, race_action::execute, i});
        schedule.push_back({reply_at, race_action::deliver, i});
    }
    std::stable_sort(schedule.begin(), schedule.end(),
                     [](const timed& a, const timed& b) { return a.at_ms < b.at_ms; });
    std::int64_t clock = 0;
    for (const timed& t : schedule) {
        step = race_step{};
        step.action = race_action::advance;
        step.amount = t.at_ms - clock;
        steps.push_back(step);
        clock = t.at_ms;
        step = race_step{};
        step.action = t.action;
        step.instance = t.instance;
        steps.push_back(step);
    }
    step = race_step{};
    step.action = race_action::approach;
    step.amount = *rc::gen::inRange<std::int64_t>(0, budget / 4);
    steps.push_back(step);
    step = race_step{};
    step.action = race_action::acquire;
    step.who = 1;
    steps.push_back(step);
    step.action = race_action::settle;
    steps.push_back(step);
    const auto tail =
        *rc::gen::resize(10, rc::gen::container<std::vector<race_step>>(gen_race_step(s)));
    steps.insert(steps.end(), tail.begin(), tail.end());
    return steps;
}

RC_GTEST_PROP(lock_model_race, a_second_lock_never_wins_inside_the_first_ones_lease, ()) {
    edgelock::set_assert_handler(&print_assertion);
    setup s = *gen_setup(*rc::gen::element<std::uint8_t>(1, 3, 5), 0);
    s.watchdog = false;
    const server_versions before_seven = *gen_before_seven();
    const std::vector<race_step> steps = boundary_steps(s);
    race r(s, before_seven);
    for (const race_step& step : steps) r.apply(step);
}

// A scripted family for a retried acquire whose earlier SET landed, which random schedules
// rarely reach (the failed attempt's cleanup normally deletes that key first). Lock 0
// acquires with a wait, without fencing, over Redis 7.0 instances; most run its SET at once,
// but no reply comes back before the attempt's deadline. Its cleanup releases meet a script
// flush on most instances: NOSCRIPT, and not sent again, since the retry's SET follows them
// on the connection. So the retry finds its own token there, set a whole reply budget
// before the retry's lease starts, and must renew it before the instance counts. Then lock 1
// tries shortly before lock 0's lease ends, and a few random steps follow.
std::vector<race_step> retry_steps(const setup& s) {
    std::vector<race_step> steps;
    const auto add = [&steps](race_action action, std::uint8_t who, std::uint8_t instance,
                              std::int64_t amount) {
        steps.push_back({action, who, instance, amount});
    };
    const std::int64_t budget = s.attempt_timeout_ms();
    add(race_action::acquire, 0, 0, 3 * s.ttl_ms + 1);  // not a multiple of 3: a wait
    for (std::uint8_t i = 0; i < s.instances; ++i) {
        if (!*rc::gen::weightedElement<bool>({{3, true}, {1, false}})) continue;
        add(race_action::advance, 0, 0, *rc::gen::inRange<std::int64_t>(0, budget / 4 + 1));
        add(race_action::execute, 0, i, 0);
    }
    for (std::uint8_t i = 0; i < s.instances; ++i) {
        if (*rc::gen::weightedElement<bool>({{3, true}, {1, false}}))
            add(race_action::flush_scripts, 0, i, 0);
    }
    add(race_action::timer, 0, 0, 0);  // the attempt's deadline: it fails and cleans up
    add(race_action::timer, 0, 0, 0);  // the backoff's end: the retry goes out
    add(race_action::advance, 0, 0, *rc::gen::inRange<std::int64_t>(0, budget / 4 + 1));
    // The retry's SETs, then the renews they bring (NOSCRIPT after the flush, then EVAL),
    // then WAIT with replicas to wait for.
    for (int n = 0; n < 4; ++n) add(race_action::settle, 0, 0, 0);
    add(race_action::approach, 0, 0, *rc::gen::inRange<std::int64_t>(0, budget / 4 + 1));
    add(race_action::acquire, 1, 0, 0);
    add(race_action::settle, 1, 0, 0);
    const auto tail =
        *rc::gen::resize(10, rc::gen::container<std::vector<race_step>>(gen_race_step(s)));
    steps.insert(steps.end(), tail.begin(), tail.end());
    return steps;
}

RC_GTEST_PROP(lock_model_race, a_retried_acquire_renews_the_key_its_earlier_set_left, ()) {
    edgelock::set_assert_handler(&print_assertion);
    setup s = *gen_setup(*rc::gen::element<std::uint8_t>(1, 3, 5), 3);
    s.fencing = false;
    s.long_attempt = false;  // with a ttl-long budget the first SETs' keys expire before the retry
    const std::vector<race_step> steps = retry_steps(s);
    race r(s, server_versions{});
    for (const race_step& step : steps) r.apply(step);
}

}  // namespace
