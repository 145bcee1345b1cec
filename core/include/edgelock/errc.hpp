// SPDX-License-Identifier: Apache-2.0
// edgelock: the one error enumeration of the core.
//
// Every public function of the core returns one of these codes (or a struct carrying one);
// each function's comment lists exactly which. `errc::ok` is zero so a code converts to
// "failed?" with a comparison, never with a cast. The std::error_code adapter lives outside
// the core, with the transports.
//
// The enumeration is [[nodiscard]], and so is every call returning it: a dropped code is a
// compile error under -Werror (tests/checks/nodiscard_contract.cmake shows it). A caller acts
// on the code, asserts it where only ok is possible, or casts it to (void) with a comment
// saying why ignoring it is right.
#pragma once

#include <cstdint>

namespace edgelock {

enum class [[nodiscard]] errc : std::uint8_t{
    ok = 0,

    // Bad input from the caller. The object is unchanged and stays usable.
    invalid_name,       // lock name empty, longer than name_bytes_max, or a fence key (keys.hpp)
    invalid_ttl,        // ttl_ms <= 0 or > ttl_ms_max
    invalid_wait,       // wait_ms < 0 or > wait_ms_max
    invalid_instances,  // instance count even, zero, > instances_max, or > 1 with permits > 1
    invalid_instance,   // an instance index >= the lock's instance count
    invalid_config,     // another lock_config field out of its documented range
    invalid_state,      // the call does not fit the lock's state (e.g. acquire while releasing)
    not_held,           // release() of a lock this object does not hold
    buffer_too_small,   // the caller's output buffer cannot hold the request

    // Results of a lock operation (carried by events).
    busy,              // another owner holds the lock on too many instances
    no_quorum,         // too few instances answered in time (errors, timeouts)
    validity_expired,  // a quorum answered, but too late: no validity was left
    wait_timeout,      // the acquire wait ran out; the event also carries the last cause
    cancelled,         // release() was called while the acquire was still running
    token_gone,        // a quorum said the key no longer holds our token
    not_replicated,    // WAIT: too few replicas confirmed the acquire in time
    expired,           // validity ran out before a quorum confirmed a renewal

    // Replies and the RESP protocol.
    need_more,          // not an error: the reply is incomplete, feed more bytes
    protocol_error,     // bytes that are not RESP
    reply_too_large,    // a reply over reply_bytes_max, or a bulk over bulk_bytes_max
    too_many_elements,  // an array over array_elements_max, or a reply over nodes_max
    too_deep,           // arrays nested deeper than depth_max
    unexpected_reply,   // a reply of a type the request cannot produce, or no request pending
    error_reply,        // Redis answered with an error (other than NOSCRIPT)
    io_error,           // the transport reported a failed connection

    // The caller's clock and the event queue (added last: earlier values stay stable).
    events_pending,      // the event queue lacks room: drain poll_event() and call again
    invalid_time,        // now_ms outside [-now_ms_limit, now_ms_limit]
    clock_stepped_back,  // now_ms went below an earlier call's: the hold or attempt ended

    // Added last: earlier values stay stable.
    fence_exhausted,  // a fence counter is at 2^63-1: no higher token can be handed out

    // The restart guard (lock.hpp, "Restarts"). Added last: earlier values stay stable.
    restart_guard,   // too few instances count yet: one restarted without durable data less
                     // than the guard ago (the event's guard_until_ms says until when)
    node_restarted,  // an instance restarted during the hold, and too few are left to hold it

    // Semaphores (lock.hpp, "Semaphores"). Added last: earlier values stay stable.
    wrong_kind,        // a key of the lock's holds another kind of value (Redis's WRONGTYPE):
                       // mostly a lock's name used as a semaphore, or the reverse
    permits_mismatch,  // the semaphore is held with another number of permits
};

// A short, stable, lower-case name for logs and CLI messages ("busy", "no_quorum", ...).
// Never returns null.
const char* to_string(errc code) noexcept;

}  // namespace edgelock
