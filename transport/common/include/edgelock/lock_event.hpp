// SPDX-License-Identifier: Apache-2.0
// edgelock: what a lock's I/O did, one event at a time, for structured logs and verbose tools.
//
// Both clients report the same events through an optional hook (the blocking client's
// lock_options::on_event, the async client's client_config::on_event), and count them in the
// same metrics (edgelock/session/lock_metrics.hpp): the hook is the metrics' per-event view.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <system_error>

namespace edgelock {

enum class lock_event_kind : std::uint8_t {
    connected,       // the connection to `instance` is up: its handshake is done
    disconnected,    // the connection to `instance` ended, or could not be made: `code` says
                     // why (empty when it only moved on, e.g. to the master a sentinel named)
    attempt,         // an acquire attempt ended: `code` empty and valid_until_ms on success,
                     // else what the acquire would report for it (busy, no_quorum, or one
                     // instance's error, ...). The blocking client tells every attempt (a wait
                     // makes several); the async client, with many locks on one thread, only
                     // the one that decided the acquire, with the code its handler gets
    renewed,         // a renewal reached a quorum: the lease now ends at valid_until_ms
    renewal_failed,  // `instance` failed its part of a renewal (`code`); the lease still ends
                     // at valid_until_ms, and the next renewal is tried while it lasts
    lost,            // the hold was lost: `code` as the lost handler's
    released,        // the hold ended by release: `code` as the release reports it (empty,
                     // expired, no_quorum, ...)
};

struct lock_event {
    // connected, disconnected and renewal_failed: the instance, in configuration order (0
    // behind Sentinel); any_instance for the others.
    static constexpr std::size_t any_instance = static_cast<std::size_t>(-1);
    lock_event_kind kind = lock_event_kind::attempt;
    std::size_t instance = any_instance;
    std::error_code code;
    std::int64_t valid_until_ms = 0;  // on the client's monotonic clock; 0 when no lease
    // How long, in milliseconds on the same clock: attempt, since the acquire call started;
    // renewed, lost and released, since the hold was acquired; 0 for the others.
    std::int64_t elapsed_ms = 0;
    // The lock's name (valid during the call only). Empty for the async client's connection
    // events, which belong to no one lock.
    std::string_view lock;
};

}  // namespace edgelock
