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
//       releases; one on a hold whose lease ended before the call loses it and returns
//       expired (never a new hold in its place);
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
#include "lock_model_support.hpp"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>
#include <rapidcheck/state.h>

namespace {

using namespace lock_model;

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
        finish(facts, call.str(), got,
               {errc::ok, errc::expired, errc::invalid_wait, errc::invalid_state});
        check_reentrant_over_an_ended_hold(facts, got);
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

    // (c) An acquire() on a hold whose lease had ended before the call (its loss not yet
    // heard) nests in nothing: it loses that hold and returns expired, never a new hold.
    void check_reentrant_over_an_ended_hold(const call_facts& facts, errc got) {
        const bool ended_hold = facts.phase_before == phase::holding && !facts.was_held;
        if (got == errc::expired && !ended_hold)
            fail("(c) acquire() returned expired with no hold that had ended");
        if (ended_hold && got == errc::ok)
            fail("(c) an acquire() on a hold whose lease had ended started a new hold");
        if (got == errc::expired && phase_ != phase::lost)
            fail("(c) acquire() returned expired but the hold was not lost");
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
                             errc::wait_timeout, errc::cancelled, errc::clock_stepped_back,
                             errc::wrong_kind, errc::permits_mismatch})) {
                    fail("(e) acquire_failed with an undocumented code");
                }
                if (!one_of(e.cause,
                            {errc::ok, errc::busy, errc::no_quorum, errc::validity_expired,
                             errc::token_gone, errc::not_replicated, errc::fence_exhausted,
                             errc::restart_guard, errc::wrong_kind, errc::permits_mismatch})) {
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

}  // namespace
