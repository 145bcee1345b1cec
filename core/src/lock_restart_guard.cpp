// SPDX-License-Identifier: Apache-2.0
// The restart guard (lock.hpp, "Restarts"): what the lock knows of when each instance's
// process started, which instances may count toward a lease, and taking an instance that
// restarted out of a running attempt or hold.
#include <algorithm>

#include "edgelock/lock.hpp"

namespace edgelock {

errc lock::on_node_started(std::uint8_t instance, const node_start& start,
                           std::int64_t now_ms) noexcept {
    if (const errc code = check_input(now_ms); code != errc::ok) return code;
    if (instance >= instances_) return errc::invalid_instance;
    if (start.started_ms < -now_ms_limit || start.started_ms > now_ms_limit)
        return errc::invalid_time;
    advance();
    record_start(instance, start);
    if (restart_guard_ms_ == 0) return errc::ok;
    const bool running = state_ == lock_state::acquiring || state_ == lock_state::confirming ||
                         state_ == lock_state::held;
    const bool restarted = start.restarted && !start.durable;
    if (running && !excluded(instance) &&
        (restarted || counts_from_ms(instance) > lease_start_ms_)) {
        exclude(instance);
    }
    return errc::ok;
}

// Kept whether the guard is on or not (a later configure() may turn it on). A durable
// process forgets nothing from now on, but one that was not when it last (re)started may
// already have forgotten keys: only a durable process that restarted (and loaded its data)
// clears what was known.
void lock::record_start(std::uint8_t instance, const node_start& start) noexcept {
    std::int64_t& known = node_started_ms_[instance];
    if (!start.durable) {
        known = std::min(start.started_ms, now_ms_);
    } else if (start.restarted) {
        known = no_reading_ms;
    }
}

// The first instant of the caller's clock from which leases may count `instance`.
std::int64_t lock::counts_from_ms(std::uint8_t instance) const noexcept {
    const std::int64_t started = node_started_ms_[instance];
    return started == no_reading_ms ? no_reading_ms : started + restart_guard_ms_;
}

// The earliest instant a quorum of instances counts: the quorum-th smallest counts_from_ms(),
// or now when that is past (a restart noticed during the attempt kept it out of this one only).
std::int64_t lock::guard_until_ms() const noexcept {
    std::array<std::int64_t, instances_max> from{};
    for (std::uint8_t i = 0; i < instances_; ++i) {
        std::uint8_t at = i;  // insertion sort: at most instances_max entries
        for (; at > 0 && from[at - 1] > counts_from_ms(i); --at) from[at] = from[at - 1];
        from[at] = counts_from_ms(i);
    }
    return std::max(from[quorum() - 1], now_ms_);
}

std::uint8_t lock::countable() const noexcept {
    std::uint8_t count = 0;
    for (std::uint8_t i = 0; i < instances_; ++i) count += excluded(i) ? 0 : 1;
    return count;
}

// An attempt whose lease starts now counts only the instances whose guard ended by now: the
// others are kept out of it from the start, and not asked.
void lock::exclude_not_counting_yet() noexcept {
    excluded_ = 0;
    for (std::uint8_t i = 0; i < instances_; ++i) {
        if (counts_from_ms(i) > lease_start_ms_) excluded_ |= static_cast<std::uint8_t>(1u << i);
    }
}

// Takes a restarted instance out of the running attempt or hold: an OK it gave no longer
// counts, a request of the round not yet written is not sent, and a hold left with fewer
// than a quorum is lost.
void lock::exclude(std::uint8_t instance) noexcept {
    excluded_ |= static_cast<std::uint8_t>(1u << instance);
    if (state_ == lock_state::held && countable() < quorum()) {
        lose(errc::node_restarted);  // before a running renewal can read it as refusals
        return;
    }
    if (!round_decided_ && round_kind_ != request_kind::release) {
        outcome& result = results_[instance];
        if (result == outcome::ok) {
            --tally_.ok;
            result = outcome::pending;
            ++tally_.pending;
            record(instance, outcome::failed);
        } else if (result == outcome::pending && rings_[instance].drop_unsent_current()) {
            record(instance, outcome::failed);
        }
    }
}

}  // namespace edgelock
