// SPDX-License-Identifier: Apache-2.0
// Fair waiting (lock.hpp, "Fair waiting"): wake-ups and grants, when a waiter looks again after
// a failed attempt, and the cleanup that leaves the line or keeps a waiter's place in it.
#include <algorithm>
#include <charconv>
#include <string_view>

#include "edgelock/keys.hpp"
#include "edgelock/lock.hpp"

namespace edgelock {

namespace {

// A grant names a waiter's token, a space and the fence token of the hold (0 unfenced), in
// decimal without a sign or a leading zero; the fence goes to `fence`.
bool is_grant_for(std::string_view message, std::string_view token, std::int64_t& fence) {
    const std::size_t at = token.size() + 1;
    if (message.size() <= at || !wake_names(message, token)) return false;
    // Not substr(): its out-of-range check would link a throwing path into the core.
    const std::string_view digits(message.data() + at, message.size() - at);
    if (digits.size() > 1 && digits[0] == '0') return false;
    if (digits[0] < '0' || digits[0] > '9') return false;
    std::int64_t value = 0;
    const char* const last = digits.data() + digits.size();
    const auto [end, error] = std::from_chars(digits.data(), last, value);
    if (error != std::errc{} || end != last) return false;
    fence = value;
    return true;
}

}  // namespace

errc lock::on_wake(std::int64_t now_ms, std::string_view message) noexcept {
    if (const errc code = check_input(now_ms); code != errc::ok) return code;
    advance();
    const std::array<char, token_hex_bytes> token = token_hex();
    const std::string_view ours(token.data(), token.size());
    std::int64_t fence = -1;  // a grant's, or -1 for a wake-up
    const bool for_us = message.empty() || message == ours || is_grant_for(message, ours, fence);
    if (!wants_wake_ups() || !for_us) return errc::ok;
    // In line under the restart guard: the lock may not be taken before it ends.
    if (joining_) return errc::ok;
    if (state_ == lock_state::backing_off) {
        // A grant we cannot take as it is is a wake-up: the attempt takes the key it holds.
        if (fence < 0 || !take_grant(fence)) timer_ms_ = now_ms_;
        advance();
    } else {
        wake_pending_ = true;  // the attempt in flight may have been refused just before
    }
    return errc::ok;
}

// A release handed us the free lock (scripts.hpp, fair_release): the key holds our token
// until our entry in the line expires. That entry was last renewed by an attempt of this
// acquire(), so it expires at least entry_ttl after acquire() began: the lease counts from
// there, as an attempt's counts from its send (see "Lease arithmetic"). Not from the last
// refused attempt: a grant made before it, and gone by then, may be read after its refusal.
// It is taken only when nothing else has to happen first: no WAIT (the replicas may lack the
// grant), grants still trusted (no cleanup of ours, which would delete a granted key, and no
// new connection, which may reach a node restarted under the guard: "Fair waiting"), a
// fence when fencing, the watchdog on (the grant is shorter than ttl; renewals soon restore
// it), and validity left.
bool lock::take_grant(std::int64_t fence) noexcept {
    const std::int64_t start = acquire_started_ms_;
    const std::int64_t until = start + std::min(queue_entry_ttl_ms_, ttl_ms_) - drift_ms_;
    const bool takes = permits_ == 1 && replicas_to_wait_ == 0 && watchdog_ && grants_trusted_ &&
                       (!fencing_ || fence > 0) && now_ms_ < until;
    if (!takes) return false;
    end_round(lock_state::held, 1);
    fence_ = fencing_ ? fence : 0;
    lease_start_ms_ = start;
    valid_until_ms_ = until;
    timer_ms_ = start + std::min(renew_interval_ms_, (until - start) / 3);
    event e;
    e.type = event_type::acquired;
    e.fence = fence_;
    e.valid_until_ms = valid_until_ms_;
    push_event(e);
    return true;
}

bool lock::wants_wake_ups() const noexcept {
    return fair_ && retrying_ &&
           (state_ == lock_state::acquiring || state_ == lock_state::backing_off);
}

// When the next attempt starts after a failed one. A fair waiter looks again at once after a
// wake-up that came during the attempt; refused, it waits in line for its wake-up, looking
// again after recheck_ms (the wake-up may be lost); after other failures it backs off, but
// never longer than recheck_ms. Others back off.
std::int64_t lock::resume_ms(errc cause, std::int64_t guard_until) noexcept {
    std::int64_t delay = backoff_.delay_ms(attempts_, retry_delay_ms_min_, retry_delay_ms_max_);
    if (fair_ && wake_pending_) {
        delay = 0;
    } else if (fair_) {
        delay = cause == errc::busy ? recheck_ms_ : std::min(delay, recheck_ms_);
    }
    const bool guarded = cause == errc::restart_guard;
    if (!guarded) return now_ms_ + delay;
    // A fair waiter stands in line under the guard: its next attempt joins (or, once in line,
    // renews its entry) within recheck_ms, until the guard ends. Others wait the guard out.
    if (fair_) return std::min(guard_until, now_ms_ + (joining_ ? recheck_ms_ : delay));
    return std::max(now_ms_ + delay, guard_until);
}

// Best-effort compare-and-delete wherever our token may be, including instances that
// timed out (their SET may have happened). Instances that refused a script hold another
// token; a WAIT "refusal" (too few replicas) still holds ours. Instances an attempt did not
// ask (the restart guard kept them out) hold nothing of it. A fair waiter that gives up
// (line::leave) also has its token in the line of an instance that refused: the fair
// release takes it out. One that goes on waiting (line::keep_place) keeps its place: its
// cleanup deletes only the lock key.
void lock::clean_up_everywhere(line place) noexcept {
    const bool refusal_means_other_token = round_kind_ != request_kind::replicate;
    // Our token may stand in the line wherever a fair acquire of this acquire() went: as a
    // waiter, or as the taker until it leaves (also after a hold lost with token_gone).
    const bool leave_line = fair_ && place == line::leave && may_be_in_line_;
    for (std::uint8_t i = 0; i < instances_; ++i) {
        const outcome result = results_[i];
        const bool other_token = result == outcome::refused && refusal_means_other_token;
        const bool not_asked = round_kind_ == request_kind::acquire && result == outcome::none;
        if ((other_token || not_asked) && !leave_line) continue;
        enqueue(i, request_kind::release, false, false, 1, place == line::keep_place);
        grants_trusted_ = false;  // it deletes our key, a granted one too (take_grant)
    }
}

}  // namespace edgelock
