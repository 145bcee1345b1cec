// SPDX-License-Identifier: Apache-2.0
// edgelock session: a lock's way through Redis Cluster, written once for every client.
//
// In a cluster deployment every lock is a single-instance lock (instance 0) whose instance is
// the master of its name's slot (cluster.hpp's slot_map; the companion keys share the slot,
// keys.hpp). Its route says which node that is now:
//
//   target_of       where its next request goes: the node an ASK named, for the one request
//                   it redirected, after ASKING (the importing node serves any key of the
//                   slot after ASKING, so no other request may go there so: one whose key is
//                   still on the old node would be granted twice); else the slot's master
//   begin_writes    before writing its requests: the target, or nothing yet. A WAIT goes
//                   where the writes it confirms went. A lock moves to another node only
//                   once its requests in flight on the old one are back, so its requests run
//                   in the order it wrote them; and it hears the move as a change of
//                   connection (lock::on_io_error), so a WAIT not yet written never confirms
//                   a write on another node
//   deliver_cluster_answer   a reply to one of its requests: a MOVED updates the map (which
//                   is then read again), an ASK points the lock at the importing node, and
//                   the request goes again (lock::on_redirect: a redirected command did not
//                   run); past redirects_max in a row it is the error it is, kept as
//                   too_many_redirects. Anything else is deliver_answer's (lock_traffic.hpp)
//
// A route is a few bytes beside each lock; it allocates nothing.
#pragma once

#include <cstdint>
#include <string_view>

#include "edgelock/lock.hpp"
#include "edgelock/session/cluster.hpp"
#include "edgelock/session/lock_traffic.hpp"

namespace edgelock::session {

struct lock_route {
    std::uint16_t slot = 0;
    std::uint8_t home = slot_map::no_master;  // the node its requests were last written to
    std::uint8_t ask = slot_map::no_master;   // an ASK for the request it redirected
    std::uint32_t ask_reads = 0;              // slot_map::reads() when the ASK came
    std::uint8_t redirects = 0;               // redirects followed in a row, no answer between
    // What the last deliver_cluster_answer() followed: none for an answer (lock_meter counts
    // it: redirected()).
    redirect::kind followed = redirect::kind::none;
};

// The route of a lock named `name` (a valid lock name), on no node yet.
lock_route route_of(std::string_view name) noexcept;

struct route_target {
    std::uint8_t node = slot_map::no_master;  // no_master: none known
    bool asking = false;                      // each request goes after ASKING
};

// Where the lock's next request goes: the node of an ASK not yet used (asking) while the map
// has not been read since it came, else the master of the lock's slot (no_master when the map
// has none).
route_target target_of(const lock_route& route, const slot_map& map) noexcept;

struct [[nodiscard]] route_step {
    route_target to;     // to.node no_master: write nothing now; asking: write one request
                         // (write_requests' asking writes one): the ASK is used up
    bool moved = false;  // the lock left its last node: tell it the new node's start
                         // (lock::on_node_started) before writing, as on a new connection
    std::uint8_t left = slot_map::no_master;  // with moved: the node it left, if any
    errc code = errc::ok;                     // the lock's, from on_io_error
};

// Before writing the lock's queued requests for `instance`: where they go now; a WAIT next in
// line goes to the route's home, the node of the writes before it. Nothing goes
// (to.node no_master) while the slot has no known master (the map is then marked stale: a
// node that answered before the slot was served, or a MOVED to a node the table had no room
// for, is read past), or while requests are still in flight on the node the lock leaves. When it
// leaves one, the lock first hears on_io_error for the instance (nothing is in flight then: only an
// unwritten WAIT is dropped, and the write it would confirm counts as failed) and the route's home
// becomes the target. code: ok, or the lock's own from on_io_error (events_pending: drain
// poll_event() and call again; the route is unchanged).
route_step begin_writes(lock& core, std::uint8_t instance, lock_route& route, slot_map& map,
                        std::int64_t now) noexcept;

// A move is a failover (lock_metrics::failovers) when the lock leaves a node it had lost (its
// connection there ended) for the slot's master; an ASK's hop and a MOVED from a node still
// reached are redirects, counted as such.
inline bool is_failover(const route_step& step, bool left_node_lost) noexcept {
    return step.moved && !step.to.asking && step.left != slot_map::no_master && left_node_lost;
}

// Hands the reply to one of the lock's requests on `instance`, which node `from` sent, to the
// lock. MOVED and ASK (parse_redirect) are followed: MOVED tells the map (stale from then on)
// and ends an ASK in force, ASK adds the importing node to the map and points the route at
// it, and the request is queued again (lock::on_redirect). The redirect that would be the
// (redirects_max + 1)-th in a row is delivered as the error it is and kept in `last` as
// too_many_redirects; an ASK to a node the map has no room for, as no_slot_map. Any other
// reply ends the run of redirects and is deliver_answer's.
// Returns deliver_answer's codes, or on_redirect's (ok when the redirect was followed;
// events_pending: nothing changed, drain poll_event() and hand it over again).
errc deliver_cluster_answer(lock& core, std::uint8_t instance, lock_route& route, slot_map& map,
                            const reply_node& reply, const node_address& from, std::int64_t now,
                            failure& last, error_text* text = nullptr) noexcept;

}  // namespace edgelock::session
