// SPDX-License-Identifier: Apache-2.0
// edgelock session: what a lock did, counted. Both clients keep these (the async client per
// lock and for the whole client, the blocking client per lock) and hand them out as a plain
// snapshot; the CLI writes them for Prometheus, the C API copies them out. Written once here
// so that the two clients count the same things the same way.
//
// Fixed sizes only: counters and histograms of fixed buckets, no heap, no clock (the caller
// passes its monotonic milliseconds), so counting costs a few additions per event and
// nothing is allocated in steady state.
//
// What is counted, and from which instant to which:
//   acquires[outcome]   each acquire call's verdict (the code the caller heard), by class
//   acquire_latency     call -> acquired, for acquires that succeeded at their first attempt:
//                       what the network and Redis cost when nobody is in the way
//   acquire_wait        call -> verdict, for acquires that made more than one attempt
//                       (contended, or retried after failures): time spent waiting
//   handover_gap        fair locks: the wake-up that told this waiter the lock was released
//                       -> acquired. Only acquires woken by a release message count
//   renewals_ok         renewals a quorum confirmed; renewals_late: of those, confirmed with
//                       less than one renew interval of the previous lease left (at least one
//                       round slipped: slow replies, failed instances, a paused process)
//   renewal_failures    an instance that failed its part of a renewal (a reply, a timeout, a
//                       dropped connection); the lease may still be renewed by the others
//   losses[cause]       holds that ended without release()
//   releases[outcome]   the last release()'s verdict
//   connects            connections made (handshake done) that carry lock traffic;
//                       reconnects: of those, made again for a link whose earlier connection
//                       ended: to the same node, or for an instance behind Sentinel to the
//                       master it names now (a link a cluster client gives to another node
//                       starts afresh: its first connection is no reconnect)
//   failovers           the lock reached a different master for the same instance or slot
//                       after losing the old one: an instance's connection made again, through
//                       Sentinel, to another master; a cluster lock moved to its slot's new
//                       master after its connection to the old one ended
//   redirects_moved,    cluster replies that sent a request elsewhere and were followed: MOVED
//   redirects_ask       (the slot lives on another master now), ASK (the slot is migrating: one
//                       request, on the importing master)
//   requests_in_flight  a gauge: requests written and not yet answered, when the snapshot
//                       was taken (filled by the client at the snapshot)
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "edgelock/errc.hpp"
#include "edgelock/session/address.hpp"
#include "edgelock/session/cluster.hpp"
#include "edgelock/session/transport_errc.hpp"

namespace edgelock::session {

// Upper bounds of the latency buckets, in milliseconds; one more bucket counts what lies
// above the last. Chosen for lock traffic: a loopback round trip is under 1 ms, a WAN one
// tens, a wait for a held lock up to its TTL and beyond.
inline constexpr std::array<std::int64_t, 14> latency_bounds_ms = {
    1, 2, 5, 10, 25, 50, 100, 250, 500, 1'000, 2'500, 5'000, 10'000, 30'000};

struct latency_histogram {
    // counts[i]: samples above latency_bounds_ms[i - 1] (or 0) and at most latency_bounds_ms[i];
    // the last: samples above the highest bound. Not cumulative (Prometheus's buckets are:
    // the exporter sums them).
    std::array<std::uint64_t, latency_bounds_ms.size() + 1> counts{};
    std::uint64_t count = 0;
    std::int64_t sum_ms = 0;  // saturates at INT64_MAX

    // A negative sample (a clock that went backwards) counts as 0.
    void record(std::int64_t ms) noexcept;
    void add(const latency_histogram& other) noexcept;
};

// An acquire's verdict by class, in the order the exporters list them.
enum class acquire_outcome : std::uint8_t {
    acquired,
    busy,              // errc::busy: another owner holds it
    wait_timeout,      // errc::wait_timeout: no attempt finished within the wait
    no_quorum,         // errc::no_quorum
    restart_guard,     // errc::restart_guard
    validity_expired,  // errc::validity_expired
    not_replicated,    // errc::not_replicated
    token_gone,        // errc::token_gone
    fence_exhausted,   // errc::fence_exhausted
    cancelled,         // errc::cancelled, or the client closed
    unreachable,       // a single instance's connection failed: socket errors, timeouts,
                       // connection_closed, no_master, not_master, loading, master_down, TLS
    error,             // anything else: error replies, protocol errors, bad input
};
inline constexpr std::size_t acquire_outcome_count = 12;

enum class loss_cause : std::uint8_t {
    expired,             // no quorum confirmed a renewal before validity ran out
    token_gone,          // Redis no longer held our token
    node_restarted,      // too few instances left that did not restart
    clock_stepped_back,  // the caller's clock went backwards
};
inline constexpr std::size_t loss_cause_count = 4;

enum class release_outcome : std::uint8_t {
    released,  // a quorum deleted our key
    expired,   // the lease had run out (or the lock was lost) before the release
    failed,    // too few instances confirmed the delete: the key ends at its TTL
};
inline constexpr std::size_t release_outcome_count = 3;

// The class of the code an acquire call reported (empty: acquired).
acquire_outcome classify_acquire(const failure& heard) noexcept;
// The class of a lost event's code (expired for any code not listed above).
loss_cause classify_loss(errc code) noexcept;
// The class of the code a release reported (empty: released).
release_outcome classify_release(const failure& heard) noexcept;

// Stable lower-case names for exporters ("acquired", "busy", ...). Never null.
const char* to_string(acquire_outcome outcome) noexcept;
const char* to_string(loss_cause cause) noexcept;
const char* to_string(release_outcome outcome) noexcept;

struct lock_metrics {
    std::array<std::uint64_t, acquire_outcome_count> acquires{};
    latency_histogram acquire_latency;
    latency_histogram acquire_wait;
    latency_histogram handover_gap;
    std::uint64_t renewals_ok = 0;
    std::uint64_t renewals_late = 0;
    std::uint64_t renewal_failures = 0;
    std::array<std::uint64_t, loss_cause_count> losses{};
    std::array<std::uint64_t, release_outcome_count> releases{};
    std::uint64_t connects = 0;
    std::uint64_t reconnects = 0;
    std::uint64_t failovers = 0;
    std::uint64_t requests_in_flight = 0;
    std::uint64_t redirects_moved = 0;
    std::uint64_t redirects_ask = 0;

    std::uint64_t acquired() const noexcept {
        return acquires[static_cast<std::size_t>(acquire_outcome::acquired)];
    }
    // Adds every counter and histogram of `other` (the gauge too).
    void add(const lock_metrics& other) noexcept;
};

// What the meter remembers of one link (an instance's connection, a cluster node's) between
// its connections. A client keeps one per link and resets it when it gives the link to
// another node.
struct link_record {
    node_address last;  // the node its last ready connection reached
    bool ever_ready = false;
};

// What a link stands for: an instance behind Sentinel reaches whichever master Sentinel names
// (another one is a failover); any other link reaches one node.
enum class link_kind : std::uint8_t { node, followed_master };

// Counts one lock's acquires, renewals, losses and releases as its client sees them, and
// keeps the instants its events measure from. The client calls it at the points named below,
// with its monotonic clock; the times between those calls become the histograms.
class lock_meter {
public:
    // The lock's renew interval, resolved (lock_config's default is ttl/3): a renewal
    // confirmed with less than this left of the lease it extended is late.
    void set_renew_interval(std::int64_t renew_interval_ms) noexcept {
        renew_interval_ms_ = renew_interval_ms;
    }
    // An acquire call started. Not called for a reentrant one, which completes at once: its
    // acquire_ended() then counts the outcome, with no latency.
    void acquire_started(std::int64_t now_ms) noexcept;
    // A fair waiter heard the message naming it: the release it waited for (a "look now"
    // after a subscription is confirmed is no release, and is not passed here).
    void woken(std::int64_t now_ms) noexcept;
    // The acquire call's verdict: `heard` is the code its caller got (empty: acquired, the
    // lease then ending at valid_until_ms); `attempts` how many attempts it started
    // (lock::attempts()).
    void acquire_ended(const failure& heard, std::uint16_t attempts, std::int64_t valid_until_ms,
                       std::int64_t now_ms) noexcept;
    // A renewal a quorum confirmed at now_ms: the lease now ends at valid_until_ms.
    void renewed(std::int64_t valid_until_ms, std::int64_t now_ms) noexcept;
    void renewal_failed() noexcept { ++counts_.renewal_failures; }
    void lost(errc code) noexcept;
    void released(const failure& heard) noexcept;
    // A connection of `link` became ready at `reached` (the rules: connects, reconnects and
    // failovers above).
    void connected(link_record& link, link_kind kind, const node_address& reached) noexcept;
    // A cluster lock moved nodes (begin_writes): a failover when is_failover() says so.
    void failed_over() noexcept { ++counts_.failovers; }
    // A reply the lock's route followed (lock_route::followed; none counts nothing).
    void redirected(redirect::kind followed) noexcept;

    const lock_metrics& counts() const noexcept { return counts_; }
    // Between acquire_started() and acquire_ended().
    bool acquiring() const noexcept { return acquiring_; }
    // For the events' elapsed_ms: since the running (or last) acquire call started, and since
    // the current (or last) hold was acquired.
    std::int64_t since_acquire_started_ms(std::int64_t now_ms) const noexcept {
        return now_ms - started_ms_;
    }
    std::int64_t held_for_ms(std::int64_t now_ms) const noexcept { return now_ms - held_since_ms_; }

private:
    lock_metrics counts_;
    std::int64_t renew_interval_ms_ = 0;
    std::int64_t started_ms_ = 0;
    std::int64_t woken_ms_ = 0;
    std::int64_t held_since_ms_ = 0;
    std::int64_t lease_end_ms_ = 0;  // the lease the next renewal extends
    bool acquiring_ = false;
    bool woken_ = false;
};

}  // namespace edgelock::session
