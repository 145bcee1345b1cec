// SPDX-License-Identifier: Apache-2.0
// edgelock session: the per-node side of a Redis Cluster client, written once for the asio
// client, the blocking client and the simulator: the slot map and its reads, the seeds, and
// the address each node's link (its connection, which the client owns) is set up for.
//
//   seeds          the deployment's seed nodes, in the map from the start; with no link ready,
//                  the map is read from a seed's link, made one seed at a time, each in turn.
//                  A seed is kept by its address and its first index: a full map may give
//                  that index to another node while the seed serves no slot; the link there
//                  then reaches that node, which answers CLUSTER SLOTS as well as the seed
//   links          node k's link reaches the node the map has at index k. The map gives an
//                  index to another node only while the client says the index is not in use
//                  (its connection idle); such a link must be set up again (needs_setup)
//                  before it carries anything, and is then another link: its first
//                  connection is no reconnect (lock_metrics.hpp)
//   map reads      CLUSTER SLOTS, tracked under map_owner, one at a time and not sooner than
//                  map_refresh's gap after the last (cluster.hpp). The read goes on a ready
//                  link, the first after the node asked last, so a node with a wrong view is
//                  not asked forever. An answer that cannot be read leaves the map stale and
//                  says what the locks meet meanwhile: too_many_masters (no later read helps)
//                  or no_slot_map
//   link ends      a link whose connection was ready, or failed, may have lost a node that
//                  failed over or left: the map is read again
//   subscriber     fair waiting's subscriber listens on the master the map has for the slot of
//                  the lock it listens for (a client of many locks: the first that waits), and
//                  moves when the map names another (subscriber_move)
//   work           a client works on its links only while one of them has work (wanted) or
//                  something in flight: the node its lock's requests target, linked or not
//                  (a promoted replica, an importing master is linked for them), and, while a
//                  read of the map is due, a ready link to carry it or the seed to make. The
//                  clients' linking (linking.hpp) decides the rest: an eager client (async)
//                  keeps every link it made up, and reads a stale map at once, until a read
//                  prunes the link; an on-demand one (blocking) reads the map only for a lock
//                  with requests to route
//   tending        tend_map is the one drive of the map for every client: through the client's
//                  node_port it sends the read, makes a seed's link, or says why neither can
//                  happen now; after a read it stops links nothing needs any more (prune: the
//                  node serves no slot, no lock routes there, nothing is in flight), so their
//                  indices may serve the nodes a cluster gains
//
// No allocation, no I/O, no clock (the caller passes its milliseconds). About 22 KiB, most of
// it the slot map: one per client. The rules are out of line (cluster_links.cpp), so a change
// to one rebuilds one file.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "edgelock/resp_reader.hpp"
#include "edgelock/session/address.hpp"
#include "edgelock/session/cluster.hpp"
#include "edgelock/session/connection.hpp"
#include "edgelock/session/fault_points.hpp"
#include "edgelock/session/limits.hpp"
#include "edgelock/session/linking.hpp"
#include "edgelock/session/transport_errc.hpp"

namespace edgelock::session {

// A client's side of its nodes' links, as tend_map drives them. The client keeps the links
// (sockets, TLS, threads, timers); each holds a session::connection.
class node_port {
public:
    // Node k's connection, or null while k's link was never set up.
    virtual const connection* link(std::uint8_t k) const = 0;
    // Sets node k's link up when it needs it (cluster_links::needs_setup, set_up) and starts
    // connecting it now: the map is read on it once it is ready.
    virtual void open(std::uint8_t k) = 0;
    // Writes CLUSTER SLOTS on node k's ready link, tracked under cluster_links::map_owner.
    // False when it could not: the next ready link is tried.
    virtual bool send_map_read(std::uint8_t k) = 0;
    // Closes node k's link, idle and carrying nothing, without telling anyone (prune).
    virtual void stop(std::uint8_t k) = 0;
    // The nodes the client's locks route to (lock_links::routes of each): never pruned.
    virtual std::uint32_t routed() const = 0;

protected:
    ~node_port() = default;
};

// What tend_map did, or why it could not.
enum class map_tending : std::uint8_t {
    idle,         // no read is wanted, or none is due yet (next_read_ms)
    sent,         // a read is on its way
    waiting,      // a seed's link is on its way to ready (made now, or before): the read goes
                  // on it then
    unreachable,  // no link is ready, and every seed's is inside its reconnect delay
};

class cluster_links {
public:
    using node_set = slot_map::node_set;
    static constexpr std::uint8_t none = slot_map::no_master;
    // The in_flight owner of a CLUSTER SLOTS on a node's connection; the locks' requests are
    // tracked under owners below in_flight::internal.
    static constexpr std::uint32_t map_owner = in_flight::internal - 2;
    // The least time between two reads of the map (map_refresh).
    static constexpr std::int64_t read_gap_ms = map_refresh::refresh_gap_ms;

    // The seeds, each added to the map (one named twice, once). Returns false when they do not
    // fit the map (validate() refuses more than cluster_seeds_max first).
    bool set_seeds(const node_address* seeds, std::size_t count) noexcept;
    std::size_t seed_count() const noexcept { return seed_count_; }
    // With no link ready: the map index of the seed whose link is made (or waited for) now:
    // the seed's own, or, once a full map gave that to another node, the index it had.
    // next_seed() moves on to the following one, after a seed that could not be reached.
    std::uint8_t seed() const noexcept;
    void next_seed() noexcept;

    // The simulator's fault points (fault_points.hpp); a client sets none.
    void set_faults(fault_points* faults) noexcept { faults_ = faults; }

    slot_map& map() noexcept { return map_; }
    const slot_map& map() const noexcept { return map_; }

    // Node k's link must be set up before it carries anything: it has none, or it was set up
    // for the node the map had at index k before.
    bool needs_setup(std::uint8_t k) const noexcept;
    // Node k's link is set up now, for the node the map has at k: the address returned is
    // where its connection must point (it stays put for as long as the link serves that node).
    const node_address& set_up(std::uint8_t k) noexcept;
    bool linked(std::uint8_t k) const noexcept { return ((linked_ >> k) & 1u) != 0; }
    const node_address& address(std::uint8_t k) const noexcept { return addresses_[k]; }

    // The stale map is read at once by an eager client; by one that links on demand only for a
    // lock that has requests to route: a stale map of an idle lock waits for its next
    // acquire() or renewal.
    bool read_wanted(linking how, bool lock_has_requests) const noexcept;
    // A read of the map should go out now, and when one may next (cluster.hpp's map_refresh).
    bool read_due(std::int64_t now) const noexcept { return refresh_.due(map_, now); }
    std::int64_t next_read_ms() const noexcept { return refresh_.next_ms(map_); }
    bool read_in_flight() const noexcept { return refresh_.in_flight(); }
    // The ready link the next read goes on: the first in `ready` after the node asked last;
    // none when `ready` is empty.
    std::uint8_t reader(node_set ready) const noexcept;
    // A CLUSTER SLOTS was written on node k's link, tracked under map_owner.
    void read_sent(std::uint8_t k) noexcept;
    // Its answer, nodes[0, count), from node k: read into the map, keeping the indices of the
    // links in `in_use`. Returns ok, or what the locks meet while the map stays unread:
    // transport_errc::too_many_masters or no_slot_map (also when the fault point fail_map_read
    // fires: fault_points.hpp).
    failure read_answered(std::uint8_t k, const reply_node* nodes, std::size_t count,
                          node_set in_use, std::int64_t now) noexcept;
    // The read was dropped with its connection.
    void read_lost(std::int64_t now) noexcept { refresh_.ended(now); }
    // The links a map read keeps the indices of: set up, and not idle.
    node_set in_use(const node_port& port) const;

    // The map's drive, the same in every client. First the links a read made needless are
    // stopped. Then, when the client wants the map (read_wanted: for a client that links on
    // demand, only while its lock has requests) and a read is due: it goes on reader()'s link;
    // with none ready, the seed's link is made, or waited for while it connects (a seed that
    // cannot be reached now is passed over). After a node answered with no usable map, an
    // eager client makes another seed's link too, so one node with a wrong view is not asked
    // forever.
    map_tending tend_map(node_port& port, linking how, bool lock_has_requests, std::int64_t now);
    // After a read (read_answered's `unread`) that leaves a lock of a client linking on
    // demand no node (`routed`: whether target_of names one): a map read with no master for
    // the lock's slot is read again after the gap (the slot may be served again; nothing else
    // would read it for a lock whose requests wait on no link). Returns whether the client
    // fails the lock's queued requests now rather than at the round's deadline, as no read
    // soon will route them: the map names no master for the slot, or the cluster has more
    // masters than a map holds. An eager client's requests wait (its locks' writes mark the
    // map stale); a lock still routed goes on.
    bool route_lost_after_read(linking how, const failure& unread, bool routed) noexcept;

    // Node k's link has work now: the lock's requests target it (`target`: target_of(), or
    // none while the lock has no request), or a read of the map is due (`read_due`: the lock
    // needs the map and map_refresh allows a read) and k's link is ready to carry it
    // (`ready`) or is the seed's; or the client links eagerly and made k's link, which no
    // read pruned since.
    bool wanted(linking how, std::uint8_t k, std::uint8_t target, bool read_due,
                bool ready) const noexcept;
    // An eager client keeps node k's link up, reconnecting by itself after each end: it made
    // the link and no read pruned it since. A client linking on demand opens a link only for
    // a lock's requests (linking.hpp's step_for_queued) or a read (tend_map).
    bool kept_up(linking how, std::uint8_t k) const noexcept {
        return how == linking::eager && linked(k) && ((pruned_ >> k) & 1u) == 0;
    }
    // Node k's link is needed again (a lock's requests go there, lock_links::route_writes, or
    // a seed's link is made for a read): a link a read pruned is kept up again.
    void keep_up(std::uint8_t k) noexcept { pruned_ &= ~(node_set{1} << k); }

    // Where fair waiting's subscriber listens: on the master the map has for `slot`, the slot
    // of the lock it listens for (a client of many locks: the first that wants wake-ups). That
    // node runs the release's PUBLISH and is the one whose loss the lock's route follows, so a
    // wake-up never waits for the cluster bus (Redis 7 also sends a PUBLISH to every node; the
    // simulator's cluster delivers it on its own node only, the stricter model). `at`: where
    // the subscriber listens now (null: nowhere yet). Returns the map index of the master it
    // must move to, or none while it stays (there already, or no master named for `slot`).
    std::uint8_t subscriber_move(std::uint16_t slot, const node_address* at) const noexcept;

    // A node's connection ended: one that had been ready or failed (not one closed on purpose)
    // may have lost a node that failed over or left, so the map is read again. Every client
    // tells every end of a node's link, whether or not its locks hear it.
    void link_ended(const connection_end& ended) noexcept;

private:
    node_set ready_links(const node_port& port) const;
    // Makes the next seed's link that is not ready and may connect now; true when one is on
    // its way (made now, or already).
    bool open_seed(node_port& port, std::int64_t now);
    void prune(node_port& port);

    slot_map map_;
    map_refresh refresh_;
    std::array<node_address, cluster_masters_max> addresses_{};
    node_set linked_ = 0;
    std::array<node_address, cluster_seeds_max> seeds_{};
    std::array<std::uint8_t, cluster_seeds_max> seed_indices_{};  // each seed's first index
    std::size_t seed_count_ = 0;
    std::size_t seed_next_ = 0;
    std::uint8_t last_reader_ = none;
    bool read_failed_ = false;  // the last answer left the map unread
    bool prune_due_ = false;    // the last answer read the map: stop what it made needless
    node_set pruned_ = 0;       // links stopped by prune, not needed since
    fault_points* faults_ = nullptr;
};

}  // namespace edgelock::session
