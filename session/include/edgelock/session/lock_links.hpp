// SPDX-License-Identifier: Apache-2.0
// edgelock session: one lock's side of its client's links, written once for the async client,
// the blocking client and the simulator. The client keeps one lock_links beside each lock and
// tells it what its links do; it decides what the lock hears, so no client decides it alone.
// (The per-node side, the slot map and the links' addresses, is cluster_links.hpp.)
//
//   instance_on    which of the lock's instances link k carries now: link i is instance i
//                  over instances; under Cluster the lock is instance 0 on its route's home
//   route_writes   Cluster, before writing the lock's queued requests: where they go
//                  (cluster_route.hpp, begin_writes). A move off a node whose link ended since the
//                  lock came to it is a failover (lock_metrics::failovers); anything else is a
//                  redirect or a first placement
//   hear_start     the restart guard: the lock hears the start of the node its link k
//                  reaches once that link's connection read it, once per connection. A lock
//                  added later, or moved to a node already linked, hears it at its first write
//   node_read      link k's connection read its node (the connection event node_read): heard anew,
//                  or, when the fault point late_node_start fires, at the lock's next write on
//                  link k (hear_late_start), as a client linking on demand hears it when an
//                  attempt's first request makes the connection
//   answer         a reply to one of the lock's requests: deliver_answer, or under Cluster
//                  deliver_cluster_answer (MOVED and ASK followed)
//   link_lost      link k's connection ended: the start it read is forgotten, and under
//                  Cluster its home's end makes the next move a failover
//   link_closed    link_lost, and the lock hears the end when the link carried its traffic
//                  (hear_close)
//
// The codes returned are the lock's own (lock_traffic.hpp): a caller that drained the lock's
// events first gets only ok back (and from answer, error_reply or unexpected_reply).
// A few bytes beside each lock; no allocation, no I/O, no clock.
#pragma once

#include <cstdint>
#include <string_view>

#include "edgelock/lock.hpp"
#include "edgelock/session/cluster.hpp"
#include "edgelock/session/cluster_links.hpp"
#include "edgelock/session/cluster_route.hpp"
#include "edgelock/session/connection.hpp"
#include "edgelock/session/fault_points.hpp"
#include "edgelock/session/lock_traffic.hpp"

namespace edgelock::session {

// route_writes' answer: the route's step, and whether its move was a failover.
struct [[nodiscard]] lock_writes {
    route_step step;
    bool failed_over = false;
};

class lock_links {
public:
    static constexpr std::uint8_t none = slot_map::no_master;

    // A lock over instances (one, Sentinel's master, or Redlock's N): link i is instance i.
    lock_links() noexcept = default;
    // A lock named `name` (a valid lock name) in a Redis Cluster, on no node yet.
    static lock_links in_cluster(std::string_view name) noexcept;

    bool clustered() const noexcept { return clustered_; }
    const lock_route& route() const noexcept { return route_; }
    // Under Cluster: where the lock's next request goes (none: no node known).
    route_target target(const cluster_links& links) const noexcept {
        return target_of(route_, links.map());
    }
    // Under Cluster: the node the lock's queued requests go to next, as begin_writes routes
    // them: a WAIT to its home, where the writes it confirms went; anything else to the
    // target, or none (no request, no node known, or requests still in flight on another
    // node, whose answers come first, as the lock moves only then). A client's links have work
    // for it (wanted).
    std::uint8_t next_node(const lock& core, const cluster_links& links) const noexcept;
    // Under Cluster: the nodes its route writes to, one bit each (home, and an ASK's node),
    // which the links keep (node_port::routed).
    std::uint32_t routes() const noexcept;
    // The lock's instance whose traffic link k carries now, or none.
    std::uint8_t instance_on(std::uint8_t k) const noexcept;
    // The lock heard the start of the node link k's current connection read.
    bool heard_start(std::uint8_t k) const noexcept { return (heard_ & bit(k)) != 0; }
    // The fault point late_node_start kept that start from the lock: hear_late_start tells it.
    bool start_late(std::uint8_t k) const noexcept { return (late_ & bit(k)) != 0; }

    lock_writes route_writes(lock& core, cluster_links& links, std::int64_t now) noexcept;

    // Link k's connection `c`: with the restart guard (`guard`), the lock hears its node's
    // start when k carries the lock's traffic, `c` read its node (connection::knows_node) and
    // the lock has not heard this connection's reading yet.
    errc hear_start(lock& core, std::uint8_t k, const connection& c, bool guard,
                    std::int64_t now) noexcept;
    // Link k's connection read its node now, `start`: heard when k carries the lock's traffic
    // (`faults`: the simulator's, fault_points.hpp; a client passes none). A caller that lets
    // late_node_start fire calls hear_late_start before each write on link k.
    errc node_read(lock& core, std::uint8_t k, const node_start& start, bool guard,
                   std::int64_t now, fault_points* faults = nullptr) noexcept;
    // Before a write on link k: a start late_node_start kept from the lock is heard now
    // (hear_start); any other, never: a start node_read did not tell stays untold.
    errc hear_late_start(lock& core, std::uint8_t k, const connection& c, bool guard,
                         std::int64_t now) noexcept;

    // A reply from link k (`links`: the cluster's, null over instances).
    errc answer(lock& core, std::uint8_t k, const reply_node& reply, cluster_links* links,
                std::int64_t now, failure& last, error_text* text = nullptr) noexcept;

    // Link k's connection ended: the start it read is forgotten, and under Cluster, when k
    // is the lock's home, a move off it from now on is a failover. A client that tells many
    // locks calls it for every lock before any hears the end (their handlers may move them).
    void link_lost(std::uint8_t k) noexcept;
    // Link k's connection `c` ended (link_lost, then): `lock_hears`: lock_hears_close() said
    // the lock must hear it. Returns hear_close's code when the lock heard it, else ok.
    errc link_closed(lock& core, std::uint8_t k, const connection& c, bool lock_hears,
                     std::int64_t now) noexcept;

private:
    using link_bits = std::uint32_t;  // one bit per link: cluster_masters_max, instances_max
    static link_bits bit(std::uint8_t k) noexcept { return link_bits{1} << k; }

    lock_route route_;
    link_bits heard_ = 0;  // links whose current connection's start the lock heard
    link_bits late_ = 0;   // links whose start late_node_start kept from the lock
    bool home_lost_ = false;
    bool clustered_ = false;
};

}  // namespace edgelock::session
