// SPDX-License-Identifier: Apache-2.0
// Fair waiting (lock.hpp, "Fair waiting"): wake-ups, when a waiter looks again after a failed
// attempt, and the cleanup that leaves the line or keeps a waiter's place in it.
#include <algorithm>
#include <string_view>

#include "edgelock/lock.hpp"

namespace edgelock {

errc lock::on_wake(std::int64_t now_ms, std::string_view message) noexcept {
    if (const errc code = check_input(now_ms); code != errc::ok) return code;
    advance();
    const std::array<char, token_hex_bytes> token = token_hex();
    const bool for_us = message.empty() || message == std::string_view(token.data(), token.size());
    if (!wants_wake_ups() || !for_us) return errc::ok;
    // In line under the restart guard: the lock may not be taken before it ends.
    if (joining_) return errc::ok;
    if (state_ == lock_state::backing_off) {
        timer_ms_ = now_ms_;
        advance();
    } else {
        wake_pending_ = true;  // the attempt in flight may have been refused just before
    }
    return errc::ok;
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
    }
}

}  // namespace edgelock
