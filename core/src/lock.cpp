// SPDX-License-Identifier: Apache-2.0
#include "edgelock/lock.hpp"

#include <algorithm>
#include <cstring>
#include <system_error>

#include "edgelock/assert.hpp"
#include "edgelock/keys.hpp"

namespace edgelock {

static_assert(sizeof(lock) <= 640, "one lock object must stay within 640 bytes");

namespace {

// Timer work one call may cascade through (a backoff ending starts an attempt, and so on).
constexpr int due_timer_steps_max = 4;

// A semaphore's permit count. Quorums of independent masters do not bound its holders
// (lock.hpp, "Semaphores").
errc check_permits(const lock_config& config) noexcept {
    if (config.permits == 0 || config.permits > permits_max) return errc::invalid_config;
    return config.permits > 1 && config.instances > 1 ? errc::invalid_instances : errc::ok;
}

// Refusals no retry can mend: an exhausted fence counter, a name held as the other kind (a
// lock used as a semaphore, or the reverse), a semaphore held with another number of permits.
bool is_incurable(errc cause) noexcept {
    return cause == errc::fence_exhausted || cause == errc::wrong_kind ||
           cause == errc::permits_mismatch;
}

}  // namespace

// ---- configuration and calls in --------------------------------------------------------

errc lock::configure(const lock_config& config) noexcept {
    if (state_ != lock_state::unconfigured && state_ != lock_state::idle &&
        state_ != lock_state::lost) {
        return errc::invalid_state;
    }
    // Queued and in-flight requests were encoded for the old name, TTL and instances: new
    // ones would re-encode them, and a changed instance count would strand their replies.
    if (has_requests()) return errc::invalid_state;
    if (config.name.empty() || config.name.size() > name_bytes_max) return errc::invalid_name;
    if (is_companion_key(config.name)) return errc::invalid_name;
    if (config.ttl_ms <= 0 || config.ttl_ms > ttl_ms_max) return errc::invalid_ttl;
    if (config.instances == 0 || config.instances % 2 == 0 || config.instances > instances_max) {
        return errc::invalid_instances;
    }
    if (const errc permits = check_permits(config); permits != errc::ok) return permits;
    const lock_config resolved = resolve(config);
    const std::int64_t ttl = config.ttl_ms;
    const std::int64_t drift = resolved.drift_ms;
    const std::int64_t renew = resolved.renew_interval_ms;
    const std::int64_t attempt = resolved.attempt_timeout_ms;
    const std::int64_t delay_min = resolved.retry_delay_ms_min;
    const std::int64_t delay_max = resolved.retry_delay_ms_max;
    if (drift >= ttl) return errc::invalid_config;
    // Every duration is bounded whatever the flags say: each is added to now_ms somewhere.
    if (renew > ttl_ms_max || config.replica_wait_ms > ttl_ms_max) return errc::invalid_config;
    if (config.watchdog && (renew <= 0 || renew >= ttl - drift)) return errc::invalid_config;
    if (attempt > ttl) return errc::invalid_config;
    if (delay_min > delay_max || delay_max > wait_ms_max) return errc::invalid_config;
    const std::int64_t replica_wait = resolved.replica_wait_ms;
    if (config.replicas_to_wait > 0 && (replica_wait <= 0 || replica_wait >= attempt)) {
        return errc::invalid_config;  // WAIT's answer must come back within the attempt
    }
    if (config.restart_guard_ms > ttl_ms_max) return errc::invalid_config;
    const std::int64_t guard = resolved.restart_guard_ms;
    const std::int64_t recheck = resolved.recheck_ms;
    const std::int64_t entry_ttl = resolved.queue_entry_ttl_ms;
    if (config.fair) {
        if (config.instances != 1) return errc::invalid_config;
        if (recheck > wait_ms_max || entry_ttl > ttl_ms_max) return errc::invalid_config;
        // A waiter's entry must outlive the gap between two of its scripts' runs: up to an
        // attempt timeout for the reply, recheck_ms, and an attempt timeout for the next
        // request to arrive. Otherwise it drops out of the line while it still waits.
        if (entry_ttl <= recheck + 2 * attempt) return errc::invalid_config;
    }

    // What was learned of the instances belongs to their indices: a new count renumbers them.
    if (config.instances != instances_) {
        node_started_ms_.fill(no_reading_ms);
        scripted_acquire_ = 0;
    }
    std::memcpy(name_.data(), config.name.data(), config.name.size());
    name_size_ = static_cast<std::uint8_t>(config.name.size());
    instances_ = config.instances;
    fencing_ = config.fencing;
    watchdog_ = config.watchdog;
    ttl_ms_ = ttl;
    drift_ms_ = drift;
    renew_interval_ms_ = renew;
    attempt_timeout_ms_ = attempt;
    retry_delay_ms_min_ = delay_min;
    retry_delay_ms_max_ = delay_max;
    replicas_to_wait_ = config.replicas_to_wait;
    replica_wait_ms_ = replica_wait;
    restart_guard_ms_ = guard;
    fair_ = config.fair;
    permits_ = config.permits;
    recheck_ms_ = recheck;
    queue_entry_ttl_ms_ = entry_ttl;
    state_ = lock_state::idle;
    return errc::ok;
}

errc lock::acquire(std::int64_t now_ms, std::int64_t wait_ms, const owner_token& token) noexcept {
    if (wait_ms < 0 || wait_ms > wait_ms_max) return errc::invalid_wait;
    const bool holding = state_ == lock_state::held;  // as far as the caller has heard
    if (const errc code = check_input(now_ms); code != errc::ok) return code;
    advance();
    // A reentrant acquire whose hold ended before it (its lease ran out, or the clock
    // stepped back), unnoticed until this call, nests in a hold that is gone: that hold is
    // lost (the event says so) and the call fails, rather than start a new hold its caller
    // would take for the old one, kept all along.
    if (holding && state_ != lock_state::held) return errc::expired;
    if (state_ == lock_state::held) {
        if (hold_count_ == holds_max) return errc::invalid_state;
        ++hold_count_;
        event e;
        e.type = event_type::acquired;
        e.fence = fence_;
        e.valid_until_ms = valid_until_ms_;
        push_event(e);
        return errc::ok;
    }
    if (state_ != lock_state::idle && state_ != lock_state::lost) return errc::invalid_state;

    take_token(token);
    retrying_ = wait_ms > 0;
    acquire_started_ms_ = now_ms_;
    grants_trusted_ = true;
    wait_deadline_ms_ = now_ms_ + wait_ms;
    attempts_ = 0;
    last_cause_ = errc::ok;
    may_be_in_line_ = false;
    start_attempt();
    return errc::ok;
}

errc lock::release(std::int64_t now_ms) noexcept {
    if (const errc code = check_input(now_ms); code != errc::ok) return code;
    advance();
    switch (state_) {
        case lock_state::held:
            if (hold_count_ > 1) {
                --hold_count_;
                return errc::ok;
            }
            start_release();
            return errc::ok;
        case lock_state::acquiring:
        case lock_state::backing_off:
        case lock_state::confirming: abandon_attempt(errc::cancelled); return errc::ok;
        case lock_state::lost: {
            state_ = lock_state::idle;
            event e;
            e.type = event_type::released;
            e.expired_before = true;
            push_event(e);
            return errc::ok;
        }
        case lock_state::idle: return errc::not_held;
        default: return errc::invalid_state;
    }
}

// What a reply (or a redirect) answers: the oldest request in flight on `instance`, once the
// input is accepted.
errc lock::take_answered(std::uint8_t instance, std::int64_t now_ms, request& sent,
                         bool& token_replaced) noexcept {
    if (const errc code = check_input(now_ms); code != errc::ok) return code;
    if (instance >= instances_) return errc::invalid_instance;
    advance();
    if (rings_[instance].in_flight() == 0) return errc::unexpected_reply;
    sent = pop_in_flight(instance, token_replaced);
    return errc::ok;
}

errc lock::on_reply(std::uint8_t instance, const reply_node& reply, std::int64_t now_ms) noexcept {
    request sent{};
    bool token_replaced = false;
    errc code = take_answered(instance, now_ms, sent, token_replaced);
    if (code != errc::ok) return code;
    handle_reply(instance, sent, token_replaced, reply, code);
    return code;
}

errc lock::on_redirect(std::uint8_t instance, std::int64_t now_ms) noexcept {
    request sent{};
    bool token_replaced = false;
    if (const errc code = take_answered(instance, now_ms, sent, token_replaced); code != errc::ok)
        return code;
    // A redirect means the command did not run: sending it again cannot run it twice.
    const bool resend = sent.current || resendable(instance, sent, token_replaced);
    if (resend && requeue(instance, sent, sent.eval)) return errc::ok;
    if (sent.current) record(instance, outcome::failed);
    return errc::ok;
}

errc lock::on_io_error(std::uint8_t instance, std::int64_t now_ms) noexcept {
    if (const errc code = check_input(now_ms); code != errc::ok) return code;
    if (instance >= instances_) return errc::invalid_instance;
    advance();
    give_up_in_flight(instance);
    grants_trusted_ = false;  // the next connection may reach a restarted node (lock_fair.cpp)
    return errc::ok;
}

errc lock::give_up_unsent(std::uint8_t instance, std::int64_t now_ms) noexcept {
    // Refused before anything is taken from the queue, so that a refused call gives up nothing.
    if (const errc code = input_refusal(now_ms); code != errc::ok) return code;
    // As if written on the failed connection before it failed: given up with it below, and
    // whatever the call queues from here on (a decided round's cleanup) waits for the next.
    if (instance < instances_) rings_[instance].mark_all_sent();
    return on_io_error(instance, now_ms);
}

// The requests in flight on `instance` are lost with its connection.
void lock::give_up_in_flight(std::uint8_t instance) noexcept {
    while (rings_[instance].in_flight() > 0) {
        bool token_replaced = false;
        const request lost = pop_in_flight(instance, token_replaced);
        if (!lost.current) {
            // A cleanup lost with the connection (its SET may have run): it goes again on the
            // next one while a key it must delete can still be there.
            if (stale_release_worth_resending(instance, lost, token_replaced))
                requeue(instance, lost, lost.eval);
            continue;
        }
        // A release may be retried on the next connection: it only ever deletes our token.
        if (lost.kind() == request_kind::release && requeue(instance, lost, lost.eval)) continue;
        record(instance, outcome::failed);  // given up with its connection
    }
    forget_unconfirmable(instance);
    // The next connection may reach another server (a failover, an upgrade): ask it anew.
    scripted_acquire_ = static_cast<std::uint8_t>(scripted_acquire_ & ~(1u << instance));
}

// WAIT counts the replicas that acknowledged its own connection's writes, so on a new
// connection it confirms nothing. When the connection to `instance` fails, a claim it took
// in the running round can no longer be confirmed: the instance counts as failed, and a WAIT
// still queued for it (never written) is dropped with it.
void lock::forget_unconfirmable(std::uint8_t instance) noexcept {
    if (replicas_to_wait_ == 0 || round_decided_) return;
    if (round_kind_ == request_kind::replicate) {
        if (rings_[instance].drop_unsent_current()) record(instance, outcome::failed);
        return;
    }
    if (results_[instance] != outcome::ok) return;
    EDGELOCK_ASSERT(tally_.ok > 0);
    --tally_.ok;
    results_[instance] = outcome::pending;
    ++tally_.pending;
    record(instance, outcome::failed);
}

errc lock::on_timer(std::int64_t now_ms) noexcept {
    if (const errc code = check_input(now_ms); code != errc::ok) return code;
    advance();
    return errc::ok;
}

// ---- calls out -------------------------------------------------------------------------

bool lock::has_requests() const noexcept {
    for (std::uint8_t i = 0; i < instances_; ++i) {
        if (rings_[i].size() > 0) return true;
    }
    return false;
}

bool lock::has_request(std::uint8_t instance) const noexcept {
    if (instance >= instances_) return false;
    return rings_[instance].has_unsent();
}

std::uint8_t lock::requests_in_flight(std::uint8_t instance) const noexcept {
    return instance < instances_ ? rings_[instance].in_flight() : 0;
}

bool lock::next_request_waits(std::uint8_t instance) const noexcept {
    if (instance >= instances_ || !rings_[instance].has_unsent()) return false;
    const request_ring& ring = rings_[instance];
    return ring.at(ring.in_flight()).kind() == request_kind::replicate;
}

write_result lock::write_request(std::uint8_t instance, char* out, std::size_t capacity) noexcept {
    if (instance >= instances_) return {errc::invalid_instance, 0};
    request_ring& ring = rings_[instance];
    if (!ring.has_unsent()) return {errc::invalid_state, 0};
    request& next = ring.next_unsent();
    next.native = next.kind() == request_kind::acquire && !next.eval && native_acquire(instance);
    const std::size_t size = encode(next, out, capacity);
    if (size == 0) return {errc::buffer_too_small, 0};
    ring.mark_sent();
    return {errc::ok, size};
}

std::int64_t lock::next_deadline_ms() const noexcept {
    switch (state_) {
        case lock_state::acquiring:
        case lock_state::confirming:
        case lock_state::releasing: return round_deadline_ms_;
        case lock_state::backing_off: return timer_ms_;
        case lock_state::held:
            if (!round_decided_) return round_deadline_ms_;  // never after valid_until
            if (watchdog_) return std::min(timer_ms_, valid_until_ms_);
            return valid_until_ms_;
        default: return no_deadline_ms;
    }
}

bool lock::poll_event(event& out) noexcept {
    if (event_count_ == 0) return false;
    out = events_[event_head_];
    event_head_ = static_cast<std::uint8_t>((event_head_ + 1) % events_max);
    --event_count_;
    return true;
}

// A reading earlier than the last input's is a clock gone backwards: not held (fail closed).
bool lock::held(std::int64_t now_ms) const noexcept {
    return state_ == lock_state::held && now_ms >= now_ms_ && now_ms < valid_until_ms_;
}

std::array<char, token_hex_bytes> lock::token_hex() const noexcept {
    return tokens_.hex(tokens_.current());
}

std::size_t lock::wake_channel(char* out, std::size_t capacity) const noexcept {
    if (state_ == lock_state::unconfigured) return 0;
    const std::array<char, token_hex_bytes> token = token_hex();
    return write_wake_channel(name(), std::string_view(token.data(), token.size()), out, capacity);
}

// ---- time ------------------------------------------------------------------------------

// Why a call in at now_ms is refused, if it is; changes nothing.
errc lock::input_refusal(std::int64_t now_ms) const noexcept {
    if (state_ == lock_state::unconfigured) return errc::invalid_state;
    if (now_ms < -now_ms_limit || now_ms > now_ms_limit) return errc::invalid_time;
    if (events_max - event_count_ < events_per_call_max) return errc::events_pending;
    return errc::ok;
}

errc lock::check_input(std::int64_t now_ms) noexcept {
    if (const errc code = input_refusal(now_ms); code != errc::ok) return code;
    if (now_ms_ != no_reading_ms && now_ms < now_ms_) step_back(now_ms);
    now_ms_ = now_ms;
    return errc::ok;
}

// The caller's clock went backwards (a reset, a wrapped 32-bit tick): every instant the lock
// keeps belongs to the old timeline, so none can be trusted. It fails closed: a hold ends at
// once (lost), a running acquire ends (acquire_failed), a release goes on (it only ever
// deletes our token) under a deadline the next line re-arms on the new timeline.
void lock::step_back(std::int64_t now_ms) noexcept {
    // Cleanups may go on for a TTL at most (stale_release_worth_resending): from now.
    claims_settled_ms_ = std::min(claims_settled_ms_, now_ms);
    // A start read on the old timeline may lie far ahead on the new one: count it as now.
    for (std::int64_t& started : node_started_ms_) {
        if (started != no_reading_ms) started = std::min(started, now_ms);
    }
    switch (state_) {
        case lock_state::held: lose(errc::clock_stepped_back); break;
        case lock_state::acquiring:
        case lock_state::backing_off:
        case lock_state::confirming: abandon_attempt(errc::clock_stepped_back); break;
        case lock_state::releasing: round_deadline_ms_ = now_ms + attempt_timeout_ms_; break;
        default: break;
    }
}

void lock::advance() noexcept {
    int steps = 0;
    while (run_due_timer()) {
        ++steps;
        EDGELOCK_ASSERT(steps <= due_timer_steps_max);
    }
}

// Runs the one piece of timer work that is due, if any; true when it did.
bool lock::run_due_timer() noexcept {
    switch (state_) {
        case lock_state::acquiring:
        case lock_state::confirming:
        case lock_state::releasing:
            if (now_ms_ < round_deadline_ms_) return false;
            fail_pending();
            return true;
        case lock_state::backing_off:
            if (now_ms_ < timer_ms_) return false;
            start_attempt();
            return true;
        case lock_state::held:
            if (now_ms_ >= valid_until_ms_) {
                lose(errc::expired);
                return true;
            }
            if (!round_decided_) {
                if (now_ms_ < round_deadline_ms_) return false;
                fail_pending();
                return true;
            }
            if (!watchdog_ || now_ms_ < timer_ms_) return false;
            start_renewal();
            return true;
        default: return false;
    }
}

// ---- rounds ----------------------------------------------------------------------------

void lock::start_round(request_kind kind) noexcept {
    retire_round();
    round_kind_ = kind;
    round_decided_ = false;
    round_start_ms_ = now_ms_;
    tally_ = round_tally{};
    for (std::uint8_t i = 0; i < instances_; ++i) results_[i] = outcome::none;
}

// Ends the running round for good: its requests still in flight become stale.
void lock::retire_round() noexcept {
    round_decided_ = true;
    for (std::uint8_t i = 0; i < instances_; ++i) rings_[i].clear_current();
}

// Queues the running round's `kind` request on every instance in `targets` and decides the
// round once, after the loop. An instance without room fails at once; deciding inside the
// loop would queue cleanup releases ahead of the claims of later instances, whose SETs would
// then land after their own DEL and keep our key for a whole TTL.
void lock::send_round(request_kind kind, const instance_set& targets) noexcept {
    // A claim needs room for the release that may have to follow it.
    const std::size_t free_slots_needed = kind == request_kind::release ? 1 : 2;
    for (std::uint8_t i = 0; i < instances_; ++i) {
        if (!targets[i]) continue;
        const bool in_line_only = kind == request_kind::acquire && joining_;
        if (enqueue(i, kind, true, false, free_slots_needed, in_line_only)) {
            results_[i] = outcome::pending;
            ++tally_.pending;
        } else {
            results_[i] = outcome::failed;
            ++tally_.failed;
        }
    }
    decide();
}

lock::instance_set lock::all_instances() const noexcept {
    instance_set all{};
    for (std::uint8_t i = 0; i < instances_; ++i) all[i] = true;
    return all;
}

lock::instance_set lock::counting_instances() const noexcept {
    instance_set counting{};
    for (std::uint8_t i = 0; i < instances_; ++i) counting[i] = !excluded(i);
    return counting;
}

// Instances the restart guard keeps out of this lease are not asked; with fewer than a
// quorum left none is, and the attempt fails with restart_guard at once. But a fair waiter
// whose wait reaches the guard's end joins the line meanwhile (and keeps its entry alive),
// so the guard delays its take without losing its place.
void lock::start_attempt() noexcept {
    ++attempts_;
    wake_pending_ = false;
    start_round(request_kind::acquire);
    state_ = lock_state::acquiring;
    lease_start_ms_ = now_ms_;
    fence_candidate_ = 0;
    round_deadline_ms_ = std::min(now_ms_ + attempt_timeout_ms_, now_ms_ + ttl_ms_ - drift_ms_);
    exclude_not_counting_yet();
    const bool quorum_counts = countable() >= quorum();
    joining_ = fair_ && !quorum_counts && retrying_ && guard_until_ms() <= wait_deadline_ms_;
    const instance_set asked = quorum_counts ? counting_instances()
                               : joining_    ? all_instances()
                                             : instance_set{};
    send_round(request_kind::acquire, asked);
}

// A confirmation round (fence raise or WAIT) goes to the instances that succeeded in the
// previous round: only they can confirm, and a quorum of them must.
void lock::start_confirmation(request_kind kind) noexcept {
    instance_set holders{};
    for (std::uint8_t i = 0; i < instances_; ++i) holders[i] = results_[i] == outcome::ok;
    start_round(kind);
    state_ = lock_state::confirming;
    round_deadline_ms_ =
        std::min(now_ms_ + attempt_timeout_ms_, lease_start_ms_ + ttl_ms_ - drift_ms_);
    send_round(kind, holders);
}

// After a round the quorum passed: the next confirmation it needs, or the hold itself.
void lock::confirm_or_hold(request_kind after) noexcept {
    if (after == request_kind::acquire && fencing_ && instances_ > 1) {
        start_confirmation(request_kind::raise);
    } else if (after != request_kind::replicate && replicas_to_wait_ > 0) {
        start_confirmation(request_kind::replicate);
    } else {
        become_held();
    }
}

// A renewal round gives up on silent instances after the attempt timeout, so a frozen
// instance does not hold the watchdog until validity ends: the others may still confirm.
void lock::start_renewal() noexcept {
    start_round(request_kind::renew);
    round_deadline_ms_ = std::min(now_ms_ + attempt_timeout_ms_, valid_until_ms_);
    send_round(request_kind::renew, counting_instances());
}

void lock::start_release() noexcept {
    start_round(request_kind::release);
    state_ = lock_state::releasing;
    round_deadline_ms_ = now_ms_ + attempt_timeout_ms_;
    send_round(request_kind::release, all_instances());
}

// The round's deadline passed: whoever has not answered has failed.
void lock::fail_pending() noexcept {
    for (std::uint8_t i = 0; i < instances_; ++i) {
        if (results_[i] == outcome::pending) record(i, outcome::failed);
    }
    EDGELOCK_ASSERT(tally_.pending == 0);
    EDGELOCK_ASSERT(round_decided_);
}

void lock::decide() noexcept {
    if (round_decided_) return;
    switch (round_kind_) {
        case request_kind::acquire: decide_attempt(); break;
        case request_kind::raise: decide_confirmation(); break;
        case request_kind::replicate:
            if (state_ == lock_state::held) {
                decide_renewal();
            } else {
                decide_confirmation();
            }
            break;
        case request_kind::renew: decide_renewal(); break;
        case request_kind::release:
            if (tally_.pending == 0) finish_release();
            break;
    }
}

void lock::decide_attempt() noexcept {
    if (joining_) {
        // Joined (or not): the lock may not be taken before the guard ends either way. An
        // incurable refusal (an exhausted fence counter, a name of the other kind) comes before
        // the script joins, and waiting cannot help.
        if (tally_.pending > 0) return;
        const bool incurable = tally_.incurable > instances_ - quorum();
        fail_attempt(incurable ? tally_.incurable_why : errc::restart_guard);
        return;
    }
    const std::uint8_t needed = quorum();
    const bool still_valid = now_ms_ < lease_start_ms_ + ttl_ms_ - drift_ms_;
    if (tally_.ok >= needed) {
        if (still_valid) {
            confirm_or_hold(request_kind::acquire);
        } else {
            fail_attempt(errc::validity_expired);
        }
        return;
    }
    const bool quorum_impossible = tally_.ok + tally_.pending < needed;
    if (quorum_impossible) {
        // Incurable refusals that leave no possible quorum need an operator (no retry can
        // help): say so before "busy". A minority of them fails like any other instance.
        if (tally_.incurable > instances_ - needed) {
            fail_attempt(tally_.incurable_why);
        } else if (tally_.refused > 0) {
            fail_attempt(errc::busy);
        } else if (guard_until_ms() > now_ms_) {
            fail_attempt(errc::restart_guard);  // too few instances count yet to be asked
        } else {
            fail_attempt(still_valid ? errc::no_quorum : errc::validity_expired);
        }
    }
}

void lock::decide_confirmation() noexcept {
    const std::uint8_t needed = quorum();
    if (tally_.ok >= needed) {
        if (now_ms_ < lease_start_ms_ + ttl_ms_ - drift_ms_) {
            confirm_or_hold(round_kind_);
        } else {
            fail_attempt(errc::validity_expired);
        }
        return;
    }
    // Holders that took part are the only ones that can confirm.
    const std::uint8_t possible = static_cast<std::uint8_t>(tally_.ok + tally_.pending);
    if (possible >= needed) return;
    if (tally_.refused == 0) {
        fail_attempt(errc::no_quorum);
    } else {
        fail_attempt(round_kind_ == request_kind::raise ? errc::token_gone : errc::not_replicated);
    }
}

// A renewal, and with replicas_to_wait > 0 the WAIT that must follow it before validity is
// extended (lock.hpp: a replica that never saw the renewal may be promoted). round_start_ms_
// stays the renewal's start through its WAIT: validity counts from there.
void lock::decide_renewal() noexcept {
    const std::uint8_t needed = quorum();
    const bool waiting = round_kind_ == request_kind::replicate;
    if (tally_.ok >= needed) {
        if (!waiting && replicas_to_wait_ > 0) {
            start_renewal_confirmation();
            return;
        }
        retire_round();
        valid_until_ms_ = std::max(valid_until_ms_, round_start_ms_ + ttl_ms_ - drift_ms_);
        timer_ms_ = round_start_ms_ + renew_interval_ms_;
        event e;
        e.type = event_type::renewed;
        e.valid_until_ms = valid_until_ms_;
        push_event(e);
        return;
    }
    if (!waiting && tally_.refused > countable() - needed) {
        lose(errc::token_gone);
        return;
    }
    // Unreachable instances may come back, and replicas may catch up: try again soon,
    // while validity lasts. Only the instances that renewed take part in the WAIT round.
    if (tally_.ok + tally_.pending < needed) {
        retire_round();
        timer_ms_ = renewal_retry_ms();
    }
}

// After the retry delay, but no later than the last instant a renewal given its attempt
// timeout still ends within validity: a retry delay longer than what is left of the lease
// must not let a lease lapse that one more try would have kept.
std::int64_t lock::renewal_retry_ms() const noexcept {
    const std::int64_t after_delay = now_ms_ + retry_delay_ms_min_;
    const std::int64_t last_useful = valid_until_ms_ - attempt_timeout_ms_;
    return last_useful > now_ms_ ? std::min(after_delay, last_useful) : after_delay;
}

void lock::start_renewal_confirmation() noexcept {
    instance_set renewed{};
    for (std::uint8_t i = 0; i < instances_; ++i) renewed[i] = results_[i] == outcome::ok;
    const std::int64_t renewal_start_ms = round_start_ms_;
    start_round(request_kind::replicate);
    round_start_ms_ = renewal_start_ms;
    round_deadline_ms_ = std::min(now_ms_ + attempt_timeout_ms_, valid_until_ms_);
    send_round(request_kind::replicate, renewed);
}

// ---- transitions -----------------------------------------------------------------------

// An incurable refusal (is_incurable) stays: waiting cannot help. The restart guard ends at
// guard_until_ms(): waiting helps when the wait reaches it, and the next attempt starts no
// earlier.
void lock::fail_attempt(errc cause) noexcept {
    retire_round();
    last_cause_ = cause;
    const bool guarded = cause == errc::restart_guard;
    const std::int64_t guard_until = guard_until_ms();
    const bool waiting_helps =
        retrying_ && !is_incurable(cause) && !(guarded && guard_until > wait_deadline_ms_);
    const bool backing_off = waiting_helps && now_ms_ < wait_deadline_ms_;
    clean_up_everywhere(backing_off ? line::keep_place : line::leave);
    if (backing_off) {
        state_ = lock_state::backing_off;
        timer_ms_ = std::min(resume_ms(cause, guard_until), wait_deadline_ms_);
        return;
    }
    state_ = lock_state::idle;
    event e;
    e.type = event_type::acquire_failed;
    e.code = waiting_helps ? errc::wait_timeout : cause;
    e.cause = cause;
    if (guarded) e.guard_until_ms = guard_until;
    push_event(e);
}

// Ends the running acquire() for good (cancelled, or the clock stepped back). An attempt in
// flight may have written: clean up behind it. One that failed already (backing off) queued
// its cleanup then, but a fair waiter must still leave the line.
void lock::abandon_attempt(errc why) noexcept {
    const bool in_flight = state_ != lock_state::backing_off;
    retire_round();
    if (in_flight || fair_) clean_up_everywhere(line::leave);
    state_ = lock_state::idle;
    event e;
    e.type = event_type::acquire_failed;
    e.code = why;
    e.cause = last_cause_;
    push_event(e);
}

// The end of a transition out of a round: the round retired, the state it leads to, and how
// many holds the caller has from now on.
void lock::end_round(lock_state next, std::uint16_t holds) noexcept {
    retire_round();
    state_ = next;
    hold_count_ = holds;
}

void lock::become_held() noexcept {
    end_round(lock_state::held, 1);
    fence_ = fencing_ ? fence_candidate_ : 0;
    valid_until_ms_ = lease_start_ms_ + ttl_ms_ - drift_ms_;
    timer_ms_ = lease_start_ms_ + renew_interval_ms_;
    event e;
    e.type = event_type::acquired;
    e.fence = fence_;
    e.valid_until_ms = valid_until_ms_;
    push_event(e);
}

void lock::lose(errc why) noexcept {
    end_round(lock_state::lost, 0);
    clean_up_everywhere(line::leave);
    event e;
    e.type = event_type::lost;
    e.code = why;
    push_event(e);
}

void lock::finish_release() noexcept {
    end_round(lock_state::idle, 0);
    event e;
    e.type = event_type::released;
    e.expired_before = tally_.refused >= quorum();
    e.instances_released = tally_.ok;
    push_event(e);
}

// ---- answers ---------------------------------------------------------------------------

void lock::record(std::uint8_t instance, outcome result) noexcept {
    if (result == outcome::ok && excluded(instance) && round_kind_ != request_kind::release) {
        result = outcome::failed;  // it restarted since: its key may be gone
    }
    if (results_[instance] == outcome::pending) {
        EDGELOCK_ASSERT(tally_.pending > 0);
        --tally_.pending;
    }
    results_[instance] = result;
    switch (result) {
        case outcome::ok: ++tally_.ok; break;
        case outcome::refused: ++tally_.refused; break;
        case outcome::failed: ++tally_.failed; break;
        default: EDGELOCK_ASSERT(false);
    }
    decide();
}

// A stale release refused with NOSCRIPT may go again, as EVAL, at the back of the queue,
// when that cannot delete a key we set after it: its token slot must still hold the token it
// was written with (no later acquire() reused the slot while it was in flight), and no
// request of ours that sets or extends that token may follow it on this connection. Replies
// come in order, so any such request sent after the release is still queued or in flight
// now; anything sent later is queued behind the re-sent release and runs after it. (The
// release of the previous acquire()'s token goes too: a fair waiter that gave up must still
// leave the line.)
bool lock::resendable(std::uint8_t instance, const request& sent,
                      bool token_replaced) const noexcept {
    if (sent.kind() != request_kind::release || token_replaced) return false;
    const request_ring& ring = rings_[instance];
    for (std::uint8_t n = 0; n < ring.size(); ++n) {
        const request& later = ring.at(n);
        if (later.kind() != request_kind::release && later.token_slot == sent.token_slot)
            return false;
    }
    return true;
}

// A stale release lost with its connection goes again when re-sending is safe (resendable())
// and still useful: every claim of the token ran before it left flight (its reply came or
// its connection dropped), so no key of ours outlives the last of them by more than a TTL
// (and the drift allowance, for Redis's clock running slow).
bool lock::stale_release_worth_resending(std::uint8_t instance, const request& lost,
                                         bool token_replaced) const noexcept {
    if (!resendable(instance, lost, token_replaced)) return false;
    // The previous acquire()'s release goes again only for a fair lock, as after NOSCRIPT:
    // that token may still stand in the line (a waiter's leave, a holder's release). It goes
    // until answered, or until a second acquire() reuses its slot (resendable()).
    if (lost.token_slot != tokens_.current()) return fair_;
    // A fair lock's cleanup also takes our entry out of the line, which may outlive the key.
    const std::int64_t useful_ms =
        fair_ ? std::max(ttl_ms_ + drift_ms_, queue_entry_ttl_ms_) : ttl_ms_ + drift_ms_;
    return now_ms_ < claims_settled_ms_ + useful_ms;
}

// ---- requests, tokens, events ----------------------------------------------------------

bool lock::enqueue(std::uint8_t instance, request_kind kind, bool current, bool eval,
                   std::size_t free_slots_needed, bool in_line_only) noexcept {
    request r{};
    r.kind_bits = static_cast<std::uint8_t>(kind) & 7u;
    r.eval = eval ? 1 : 0;
    r.current = current ? 1 : 0;
    r.token_slot = tokens_.current() & 1u;
    r.native = 0;  // chosen when written (write_request)
    r.in_line_only = in_line_only ? 1 : 0;
    if (!rings_[instance].push(r, free_slots_needed)) return false;
    if (fair_ && kind == request_kind::acquire) may_be_in_line_ = true;
    return true;
}

// Queues `sent` again (refused with NOSCRIPT, or lost with its connection) as it was: the same
// kind, token and round, in the form `eval` asks.
bool lock::requeue(std::uint8_t instance, request sent, bool eval) noexcept {
    sent.eval = eval ? 1 : 0;
    sent.native = 0;
    return rings_[instance].push(sent, 1);
}

// The oldest request in flight on `instance`; token_replaced says whether a later acquire()
// reused its token slot meanwhile (the slot no longer holds the token it was written with).
lock::request lock::pop_in_flight(std::uint8_t instance, bool& token_replaced) noexcept {
    const request first = rings_[instance].pop_in_flight(token_replaced);
    const bool claim = first.kind() == request_kind::acquire || first.kind() == request_kind::renew;
    if (claim && first.token_slot == tokens_.current()) claims_settled_ms_ = now_ms_;
    return first;
}

// A new acquire() brings a new token. The previous token stays for cleanup releases still
// waiting to be written; ones older than that (two acquire() calls ago, never written) are
// dropped, and their keys expire by TTL.
void lock::take_token(const owner_token& token) noexcept {
    const std::uint8_t slot = tokens_.next();
    for (std::uint8_t i = 0; i < instances_; ++i) rings_[i].reuse_token_slot(slot);
    tokens_.take(token);
    std::uint64_t seed = 0;
    for (std::size_t i = 0; i < token_bytes; ++i) seed = (seed << 8 | seed >> 56) ^ token[i];
    backoff_.seed(seed);
}

void lock::push_event(const event& e) noexcept {
    EDGELOCK_ASSERT(event_count_ < events_max);
    events_[(event_head_ + event_count_) % events_max] = e;
    ++event_count_;
}

}  // namespace edgelock
