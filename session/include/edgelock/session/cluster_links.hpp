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
//                  read of the map is due, a ready link to carry it or the seed to make
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
#include "edgelock/session/transport_errc.hpp"

namespace edgelock::session {

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

    // The map is read only for a lock that has requests to route: a stale map of an idle lock
    // waits for its next acquire() or renewal.
    bool read_wanted(bool lock_has_requests) const noexcept;
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

    // Node k's link has work now: the lock's requests target it (`target`: target_of(), or
    // none while the lock has no request), or a read of the map is due (`read_due`: the lock
    // needs the map and map_refresh allows a read) and k's link is ready to carry it
    // (`ready`) or is the seed's.
    bool wanted(std::uint8_t k, std::uint8_t target, bool read_due, bool ready) const noexcept;

    // Where fair waiting's subscriber listens: on the master the map has for `slot`, the slot
    // of the lock it listens for (a client of many locks: the first that wants wake-ups). That
    // node runs the release's PUBLISH and is the one whose loss the lock's route follows, so a
    // wake-up never waits for the cluster bus (Redis 7 also sends a PUBLISH to every node; the
    // simulator's cluster delivers it on its own node only, the stricter model). `at`: where
    // the subscriber listens now (null: nowhere yet). Returns the map index of the master it
    // must move to, or none while it stays (there already, or no master named for `slot`).
    std::uint8_t subscriber_move(std::uint16_t slot, const node_address* at) const noexcept;

    // Node k's connection ended; `suspect` when it had been ready or failed (not a connection
    // closed on purpose): the map is read again.
    void link_ended(bool suspect) noexcept;

private:
    slot_map map_;
    map_refresh refresh_;
    std::array<node_address, cluster_masters_max> addresses_{};
    node_set linked_ = 0;
    std::array<node_address, cluster_seeds_max> seeds_{};
    std::array<std::uint8_t, cluster_seeds_max> seed_indices_{};  // each seed's first index
    std::size_t seed_count_ = 0;
    std::size_t seed_next_ = 0;
    std::uint8_t last_reader_ = none;
    fault_points* faults_ = nullptr;
};

}  // namespace edgelock::session
