// SPDX-License-Identifier: Apache-2.0
// edgelock session: the rules between one instance's connection (connection.hpp) and the locks
// that use it, written once for every transport (asio, hiredis, the simulator's clients).
// The transport keeps its own loop shape (completion handlers, poll(2), simulated events);
// every decision on the way from the lock to the socket and back is made here:
//
//   write_requests     a lock's queued requests onto the connection while it accepts them
//                      (ready, or pipelined behind the node's handshake), each tracked so
//                      its reply is routed back to (owner, tag)
//   deliver_answer     a reply the connection routed to a lock; Redis's error replies are kept as
//                      the instance's last failure, which the lock's verdict may name
//   tell_node_started  the restart guard: what the connection read of the node's process,
//                      told before any request is written on it
//   warns_of_eviction  whether the node read deserves the client's eviction warning
//   lock_hears_close   whether the locks on the instance must hear that its connection
//                      ended, or the connection only moved on
//   hear_close         what a lock hears then: on_io_error, and when the connection may not connect
//                      again before its reconnect delay ends, its queued requests given up too
//   give_up_unsent     an instance that cannot be reached now: its queued requests fail at
//                      once, not at the end of the round
//   wake_ms            when the transport must look at the connection again
//
// The lock refuses input while its event queue is full (events_pending): callers drain
// poll_event() before each call that feeds it, as lock.hpp asks after every call in.
//
// Each call below lists what it returns. The codes are the lock's own (lock.hpp), passed on
// unchanged. A caller that drained the events first, with a configured lock, an instance
// below its count and a monotonic reading, gets only ok back (and from deliver_answer, the
// reply's error_reply or unexpected_reply): the clients assert that rather than drop it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "edgelock/assert.hpp"
#include "edgelock/lock.hpp"
#include "edgelock/session/fixed_text.hpp"
#include "edgelock/session/limits.hpp"
#include "edgelock/session/node_facts.hpp"
#include "edgelock/session/connection.hpp"
#include "edgelock/session/transport_errc.hpp"

namespace edgelock::session {

enum class write_stop : std::uint8_t {
    done,           // nothing queued any more for this instance
    not_accepting,  // the connection takes no lock requests now (connecting, asking a sentinel,
                    // reading the node, closing, or holding a WAIT back: fault_points.hpp's
                    // delay_wait): they stay queued for the next one, or for the hold's end
    full,           // the sink has no room for the next request: write again once it drained
    failed,         // the sink's write failed: the connection is closing, the request is in flight
                    // on it and is given up with it (lock_hears_close)
};

struct [[nodiscard]] write_report {
    std::size_t written = 0;
    write_stop stop = write_stop::done;
};

// Writes `core`'s queued requests for `instance` through `sink`, which offers
//   char* cursor(); std::size_t room();   where the next request's bytes go, and how many fit
//   bool commit(std::size_t size);        they are the connection's to send; false when that
//                                         failed (the sink closed the connection: on_io_error)
// Each request is tracked on the connection before it is committed, so a write that fails drops it
// with the connection, as a request in flight. With `asking` (Redis Cluster: the request an
// ASK redirected, cluster_route.hpp) one request goes, after an ASKING in the same commit,
// tracked as the connection's own, and only once the connection is ready; the rest wait for
// the next call.
// Returns the requests written and why it stopped: done when nothing is queued for the
// instance any more (or, asking, once its one request is written), not_accepting when the
// connection takes no lock requests now (or holds the next, a WAIT, back), full when the sink lacks
// room for the next request, failed when the sink's commit failed. The lock's write_request()
// cannot refuse a queued request otherwise (invalid_instance, invalid_state): that is asserted, as
// is room on the connection for every request the lock can have out. ASKING as a request, into
// out[0, capacity). Returns its size, or 0 when it does not fit.
std::size_t write_asking(char* out, std::size_t capacity) noexcept;

// The fault point delay_wait (fault_points.hpp): the lock's next request is a WAIT, held back
// now. A client, without fault points, tests one pointer.
inline bool wait_held_back(const lock& core, std::uint8_t instance, connection& connection,
                           std::int64_t now) noexcept {
    return connection.faults() != nullptr && core.next_request_waits(instance) &&
           connection.holds_wait(now);
}

template <typename Sink>
write_report write_requests(lock& core, std::uint8_t instance, connection& connection,
                            std::uint32_t owner, std::uint32_t tag, std::int64_t now, Sink& sink,
                            bool asking = false) noexcept {
    write_report report;
    while (core.has_request(instance)) {
        if (!connection.accepts_requests() || (asking && !connection.ready()) ||
            wait_held_back(core, instance, connection, now)) {
            report.stop = write_stop::not_accepting;
            return report;
        }
        const std::size_t prefix = asking ? write_asking(sink.cursor(), sink.room()) : 0;
        if (asking && prefix == 0) {
            report.stop = write_stop::full;
            return report;
        }
        const write_result written =
            core.write_request(instance, sink.cursor() + prefix, sink.room() - prefix);
        if (written.code == errc::buffer_too_small) {
            report.stop = write_stop::full;
            return report;
        }
        EDGELOCK_ASSERT(written.code == errc::ok);
        // The caller sized the connection's in-flight storage for every request the lock can have
        // out (and an ASKING beside each).
        const bool tracked =
            (!asking || connection.track_asking(now)) && connection.track(owner, tag, now);
        EDGELOCK_ASSERT(tracked);
        ++report.written;
        if (!sink.commit(prefix + written.size)) {
            report.stop = write_stop::failed;
            return report;
        }
        if (asking) return report;  // the ASK covers that one request
    }
    return report;
}

// The text of an instance's last error reply, as Redis sent it ("ERR ..."), cut to
// error_text_bytes_max: what a message shows after the code error_reply.
using error_text = fixed_text<error_text_bytes_max>;

// Hands `reply` (the connection's answer for this lock) to the lock. An error reply or a reply the
// request cannot produce counts as the instance's failure for the running round, and is kept
// in `last` for the caller's error report; with `text`, an error reply's text is kept there
// too (and emptied for unexpected_reply), so the report can say what Redis said.
// Returns ok (NOSCRIPT to a script and a syntax error to the native acquire included: the
// lock sends the request again), or error_reply when Redis answered with an error,
// unexpected_reply when the reply's type cannot answer the request or nothing is in flight on
// the instance (both kept in `last`), invalid_instance when `instance` is not below the
// lock's instance count, invalid_state when the lock is unconfigured, invalid_time when now
// is outside [-now_ms_limit, now_ms_limit], events_pending when the lock's event queue lacks
// room (the reply was not used: drain poll_event() and hand it over again).
errc deliver_answer(lock& core, std::uint8_t instance, const reply_node& reply, std::int64_t now,
                    failure& last, error_text* text = nullptr) noexcept;

// After the connection's node_read: with the restart guard on, the lock hears when the node's
// process started and whether its data survives a restart (lock::on_node_started); with it
// off, nothing.
// Returns ok (always, with the guard off), or invalid_instance when `instance` is not below
// the lock's instance count, invalid_state when the lock is unconfigured, invalid_time when
// now or the node's start is outside [-now_ms_limit, now_ms_limit], events_pending when the
// lock's event queue lacks room (nothing was told: drain poll_event() and call again).
errc tell_node_started(lock& core, std::uint8_t instance, const connection& connection,
                       bool restart_guard, std::int64_t now) noexcept;
// The same with a start read earlier (a client tells the locks it adds later what its
// connections read before).
errc tell_node_started(lock& core, std::uint8_t instance, const node_start& start,
                       bool restart_guard, std::int64_t now) noexcept;

// After node_read: whether the client's warning hook should hear eviction_warning() of
// this node. Returns true when the check is warn and the node may evict keys, false
// otherwise; refuse is the connection's own (connection_setup::refuse_evicting): such a connection
// never gets this far.
bool warns_of_eviction(eviction_check check, const connection& connection) noexcept;

// The connection ended (on_closed gave `closed`; `dropped` lock requests were in
// flight on it, counting one whose write failed). The locks on the instance must hear it
// (lock::on_io_error), as lock.hpp asks whenever the connection changes, unless the connection only
// moved on: nothing of the locks' was on it (it never became ready and dropped no request)
// and it connects again at once (a sentinel named the master, or failed with another to ask).
// Returns true when the connection was ready, a request was dropped with it, or the connection may
// not connect again now; false otherwise.
bool lock_hears_close(const connection_end& closed, std::size_t dropped,
                      const connection& connection, std::int64_t now) noexcept;

// A connection the lock must hear of ended (lock_hears_close): requests in flight on it are
// given up (lock::on_io_error), and so are the ones queued for the instance when the connection is
// in its reconnect delay (give_up_unsent); otherwise they wait for the next connection, made
// at once.
// Returns ok, or invalid_instance when `instance` is not below the lock's instance count,
// invalid_state when the lock is unconfigured, invalid_time when now is outside
// [-now_ms_limit, now_ms_limit], events_pending when the lock's event queue lacks room
// (nothing was given up: drain poll_event() and call again).
errc hear_close(lock& core, std::uint8_t instance, const connection& connection,
                std::int64_t now) noexcept;

// The instance cannot be reached now: its connection is idle and may not connect before the
// reconnect delay ends. The requests queued for it are given up at once, with the
// connection's failure (lock::on_io_error after taking them out of the queue), rather than
// waiting for a connection until the round's deadline; releases are queued again, as
// on_io_error does.
// Returns ok, or invalid_instance when `instance` is not below the lock's instance count,
// invalid_state when the lock is unconfigured, invalid_time when now is outside
// [-now_ms_limit, now_ms_limit], events_pending when the lock's event queue lacks room
// (nothing was dropped or given up: drain poll_event() and call again).
errc give_up_unsent(lock& core, std::uint8_t instance, std::int64_t now) noexcept;

// Whether requests for the instance should be given up. Returns true when the connection is idle
// and may not connect now (its reconnect delay runs), false otherwise.
bool unreachable_now(const connection& connection, std::int64_t now) noexcept;

// When the transport must look at the connection again. Returns the connection's connect, handshake
// or reply deadline while it is not idle; when idle, the instant it may connect again (never before
// now) if it wants a connection (one that keeps its connections up always does; one that connects
// on demand, when requests wait for it), else no_deadline_ms.
std::int64_t wake_ms(const connection& connection, bool wants_connection,
                     std::int64_t now) noexcept;

}  // namespace edgelock::session
