// SPDX-License-Identifier: Apache-2.0
// edgelock session: Redis Cluster's routing rules, written once for every client: which master
// serves a key's slot (the slot map), and what a redirect says.
//
// A cluster deployment keeps one slot_map, read from CLUSTER SLOTS of any of its nodes. Every
// request of a lock goes to the master of the lock name's slot (edgelock::cluster_slot; the
// companion keys share it, keys.hpp). A master that no longer serves the slot answers
//   -MOVED <slot> <endpoint>:<port>  the slot lives on that node now: the map learns it
//                                    (moved()), the request is sent there, and the whole map
//                                    is read again before long (stale())
//   -ASK <slot> <endpoint>:<port>    the slot is being migrated and the key may already be
//                                    there: ASKING, then the request, once, on that node; the
//                                    map stays as it is
// One request follows at most redirects_max of them.
//
// Endpoints: Redis 7 names a node by its preferred endpoint (cluster-preferred-endpoint-type:
// its IP, or its announced hostname). An empty one (MOVED 3999 :6380, or a nil or empty
// endpoint in CLUSTER SLOTS) means the host the reply came from, with the port given; "?"
// means the node has no endpoint of the preferred type, so its slots stay unknown.
// A redirect's node inherits the credentials, database and TLS of the node that answered: a
// cluster shares one ACL and one TLS setup.
//
// No allocation, no I/O. A slot_map is about 21 KiB (a byte per slot, and the masters'
// addresses): one per cluster deployment, not per lock.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "edgelock/errc.hpp"
#include "edgelock/keys.hpp"
#include "edgelock/resp_reader.hpp"
#include "edgelock/session/address.hpp"
#include "edgelock/session/limits.hpp"

namespace edgelock::session {

struct redirect {
    enum class kind : std::uint8_t { none, moved, ask };
    kind what = kind::none;
    std::uint16_t slot = 0;
    node_address to;  // host and port from the reply; the rest from the node that answered
};

// Reads `reply` from the node `from`: a MOVED or ASK error with a slot below cluster_slots and
// an endpoint:port, or kind::none (any other reply, a malformed redirect among them, is an
// answer like any other).
redirect parse_redirect(const reply_node& reply, const node_address& from) noexcept;

class slot_map {
public:
    static constexpr std::uint8_t no_master = 0xFF;
    static_assert(cluster_masters_max < no_master);

    // The reply to CLUSTER SLOTS (nodes[0, count)) that `from` sent replaces the map, and the
    // map is no longer stale. Each entry is [first slot, last slot, master, replicas...], each
    // node [endpoint, port, id, ...]; replicas are not kept. Returns ok; unexpected_reply for a
    // reply not of that shape (a slot outside 0..16383 or a range backwards, a port outside
    // 1..65535, a node that is not an array); invalid_config when the slots are served by more
    // than cluster_masters_max masters. The map is unchanged unless ok.
    errc read_slots(const reply_node* nodes, std::size_t count, const node_address& from) noexcept;

    // The master serving `slot` (an index for master()), or no_master when the map has none.
    std::uint8_t master_of(std::uint16_t slot) const noexcept;
    const node_address& master(std::uint8_t index) const noexcept { return masters_[index]; }
    std::size_t masters() const noexcept { return master_count_; }
    // Every slot has a master (the cluster serves every key).
    bool covers_all() const noexcept;

    // MOVED: `slot` is served by `to` from now on, and the map is stale. Returns false, leaving
    // the slot unknown, when `to` is not yet among the masters and cluster_masters_max are.
    bool moved(std::uint16_t slot, const node_address& to) noexcept;
    // The map may be out of date: read it again (after a MOVED, a connection lost to a master).
    bool stale() const noexcept { return stale_; }
    void mark_stale() noexcept { stale_ = true; }

private:
    std::uint8_t find_or_add(const node_address& node) noexcept;

    std::array<std::uint8_t, cluster_slots> owner_ = filled();
    std::array<node_address, cluster_masters_max> masters_{};
    std::uint8_t master_count_ = 0;
    bool stale_ = true;  // never read yet

    static constexpr std::array<std::uint8_t, cluster_slots> filled() noexcept {
        std::array<std::uint8_t, cluster_slots> all{};
        for (std::uint8_t& o : all) o = no_master;
        return all;
    }
};

}  // namespace edgelock::session
