// SPDX-License-Identifier: Apache-2.0
#include "edgelock/session/lock_metrics.hpp"

#include <cerrno>
#include <limits>

namespace edgelock::session {
namespace {

std::int64_t saturating_add(std::int64_t a, std::int64_t b) noexcept {
    constexpr std::int64_t top = std::numeric_limits<std::int64_t>::max();
    return a > top - b ? top : a + b;
}

template <typename Array>
void add_each(Array& into, const Array& from) noexcept {
    for (std::size_t i = 0; i < into.size(); ++i) into[i] += from[i];
}

template <typename Enum>
std::size_t index(Enum value) noexcept {
    return static_cast<std::size_t>(value);
}

acquire_outcome classify_lock_code(errc code) noexcept {
    switch (code) {
        case errc::ok: return acquire_outcome::acquired;
        case errc::busy: return acquire_outcome::busy;
        case errc::wait_timeout: return acquire_outcome::wait_timeout;
        case errc::no_quorum: return acquire_outcome::no_quorum;
        case errc::restart_guard: return acquire_outcome::restart_guard;
        case errc::validity_expired: return acquire_outcome::validity_expired;
        case errc::not_replicated: return acquire_outcome::not_replicated;
        case errc::token_gone: return acquire_outcome::token_gone;
        case errc::fence_exhausted: return acquire_outcome::fence_exhausted;
        case errc::cancelled: return acquire_outcome::cancelled;
        case errc::io_error: return acquire_outcome::unreachable;
        default: return acquire_outcome::error;
    }
}

}  // namespace

void latency_histogram::record(std::int64_t ms) noexcept {
    const std::int64_t sample = ms < 0 ? 0 : ms;
    std::size_t bucket = 0;
    while (bucket < latency_bounds_ms.size() && sample > latency_bounds_ms[bucket]) ++bucket;
    ++counts[bucket];
    ++count;
    sum_ms = saturating_add(sum_ms, sample);
}

void latency_histogram::add(const latency_histogram& other) noexcept {
    add_each(counts, other.counts);
    count += other.count;
    sum_ms = saturating_add(sum_ms, other.sum_ms);
}

// Transport failures are the network's or the server's state; the few that describe the
// caller's own setup (bad TLS files, an address already open) still count as unreachable:
// from the lock's side the instance could not be used.
acquire_outcome classify_acquire(const failure& heard) noexcept {
    switch (heard.from) {
        case failure::domain::none: return acquire_outcome::acquired;
        case failure::domain::lock: return classify_lock_code(static_cast<errc>(heard.value));
        case failure::domain::transport: return acquire_outcome::unreachable;
        case failure::domain::system:
            // ECANCELED: the async client closed while the acquire ran.
            return heard.value == ECANCELED ? acquire_outcome::cancelled
                                            : acquire_outcome::unreachable;
    }
    return acquire_outcome::error;
}

loss_cause classify_loss(errc code) noexcept {
    switch (code) {
        case errc::token_gone: return loss_cause::token_gone;
        case errc::node_restarted: return loss_cause::node_restarted;
        case errc::clock_stepped_back: return loss_cause::clock_stepped_back;
        default: return loss_cause::expired;
    }
}

release_outcome classify_release(const failure& heard) noexcept {
    if (!heard) return release_outcome::released;
    if (heard == failure::of(errc::expired)) return release_outcome::expired;
    return release_outcome::failed;
}

const char* to_string(acquire_outcome outcome) noexcept {
    static constexpr std::array<const char*, acquire_outcome_count> names = {
        "acquired",         "busy",           "wait_timeout", "no_quorum",       "restart_guard",
        "validity_expired", "not_replicated", "token_gone",   "fence_exhausted", "cancelled",
        "unreachable",      "error"};
    return index(outcome) < names.size() ? names[index(outcome)] : "error";
}

const char* to_string(loss_cause cause) noexcept {
    static constexpr std::array<const char*, loss_cause_count> names = {
        "expired", "token_gone", "node_restarted", "clock_stepped_back"};
    return index(cause) < names.size() ? names[index(cause)] : "expired";
}

const char* to_string(release_outcome outcome) noexcept {
    static constexpr std::array<const char*, release_outcome_count> names = {"released", "expired",
                                                                             "failed"};
    return index(outcome) < names.size() ? names[index(outcome)] : "failed";
}

void lock_metrics::add(const lock_metrics& other) noexcept {
    add_each(acquires, other.acquires);
    acquire_latency.add(other.acquire_latency);
    acquire_wait.add(other.acquire_wait);
    handover_gap.add(other.handover_gap);
    renewals_ok += other.renewals_ok;
    renewals_late += other.renewals_late;
    renewal_failures += other.renewal_failures;
    add_each(losses, other.losses);
    add_each(releases, other.releases);
    connects += other.connects;
    reconnects += other.reconnects;
    failovers += other.failovers;
    redirects_moved += other.redirects_moved;
    redirects_ask += other.redirects_ask;
    requests_in_flight += other.requests_in_flight;
}

void lock_meter::acquire_started(std::int64_t now_ms) noexcept {
    started_ms_ = now_ms;
    acquiring_ = true;
    woken_ = false;
}

void lock_meter::woken(std::int64_t now_ms) noexcept {
    if (!acquiring_ || woken_) return;  // the first wake-up of this acquire is the handover
    woken_ms_ = now_ms;
    woken_ = true;
}

void lock_meter::acquire_ended(const failure& heard, std::uint16_t attempts,
                               std::int64_t valid_until_ms, std::int64_t now_ms) noexcept {
    const acquire_outcome outcome = classify_acquire(heard);
    ++counts_.acquires[index(outcome)];
    if (!acquiring_) return;  // a reentrant acquire: the hold and its instants stay
    acquiring_ = false;
    if (outcome == acquire_outcome::acquired) {
        held_since_ms_ = now_ms;
        lease_end_ms_ = valid_until_ms;
    }
    if (attempts > 1) {
        counts_.acquire_wait.record(now_ms - started_ms_);
    } else if (outcome == acquire_outcome::acquired) {
        counts_.acquire_latency.record(now_ms - started_ms_);
    }
    if (woken_ && outcome == acquire_outcome::acquired) {
        counts_.handover_gap.record(now_ms - woken_ms_);
    }
}

void lock_meter::renewed(std::int64_t valid_until_ms, std::int64_t now_ms) noexcept {
    ++counts_.renewals_ok;
    if (lease_end_ms_ - now_ms < renew_interval_ms_) ++counts_.renewals_late;
    lease_end_ms_ = valid_until_ms;
}

void lock_meter::lost(errc code) noexcept { ++counts_.losses[index(classify_loss(code))]; }

void lock_meter::released(const failure& heard) noexcept {
    ++counts_.releases[index(classify_release(heard))];
}

void lock_meter::connected(link_record& link, link_kind kind,
                           const node_address& reached) noexcept {
    ++counts_.connects;
    const bool same_node = link.ever_ready && link.last.same_node(reached);
    if (same_node) ++counts_.reconnects;
    if (kind == link_kind::followed_master && link.ever_ready && !same_node) {
        ++counts_.reconnects;  // the instance's connection made again, to another master
        ++counts_.failovers;
    }
    link.last = reached;
    link.ever_ready = true;
}

void lock_meter::redirected(redirect::kind followed) noexcept {
    if (followed == redirect::kind::moved) ++counts_.redirects_moved;
    if (followed == redirect::kind::ask) ++counts_.redirects_ask;
}

}  // namespace edgelock::session
