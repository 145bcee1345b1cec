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
// No allocation, no I/O. A slot_map is about 21 KiB (a byte per slot, and the nodes'
// addresses): one per cluster deployment, not per lock. What a lock does with it is
// cluster_route.hpp's.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "edgelock/errc.hpp"
#include "edgelock/keys.hpp"
#include "edgelock/lock.hpp"
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

// One node of a CLUSTER SLOTS entry as the reply gives it: its host (empty when the reply
// leaves it to the node that answered; "?", `unknown`, when the node has no endpoint of the
// preferred type), port, and cluster id (empty when the reply has none). Views into the reply.
struct slots_member {
    std::string_view host;
    std::uint16_t port = 0;
    std::string_view id;
    bool unknown = false;
};

// What read_slot_ranges() finds, entry by entry: a range of slots with its master, then the
// range's replicas.
class slots_reader {
public:
    virtual void range(std::uint16_t first, std::uint16_t last, const slots_member& master) = 0;
    virtual void replica(const slots_member& replica) = 0;

protected:
    ~slots_reader() = default;
};

// Reads a CLUSTER SLOTS reply, nodes[0, count), with slot_map::read_slots()'s rules for an
// entry and a node (entries [first, last, master, replicas...], each node [host, port, id?,
// metadata?]; read_slots() skips the replicas, this checks them as it checks a master) and
// hands every entry to `to`, for a caller that needs the replicas and ids too (the CLI's
// admin commands). The whole reply is checked first. Returns ok, or unexpected_reply (then
// nothing was handed over).
errc read_slot_ranges(const reply_node* nodes, std::size_t count, slots_reader& to) noexcept;

// The cluster as a client sees it: which node serves each slot, and the nodes it has met (the
// masters of the slots, the nodes a redirect named, the seeds a caller adds). A node keeps its
// index for as long as the map keeps it, so a client may key its connections by index; one
// that serves no slot is replaced only when the table is full, and never while the caller
// says it is in use.
class slot_map {
public:
    static constexpr std::uint8_t no_master = 0xFF;
    static_assert(cluster_masters_max < no_master && cluster_masters_max <= 32);
    // A set of node indices: bit i for node i.
    using node_set = std::uint32_t;

    // The reply to CLUSTER SLOTS (nodes[0, count)) that `from` sent replaces the slots' owners,
    // and the map is no longer stale. Each entry is [first slot, last slot, master,
    // replicas...], each node [endpoint, port, id, ...]; replicas are not kept. A master the map
    // already has keeps its index; a new one takes a free index, or the index of a node that
    // serves no slot now and is not in `in_use`. Returns ok; unexpected_reply for a reply not
    // of that shape (a slot outside 0..16383 or a range backwards, a port outside 1..65535, a
    // node that is not an array); invalid_instances when it names more masters than
    // cluster_masters_max (the cluster is too large for one client: the clients fail with
    // transport_errc::too_many_masters); invalid_config when its masters fit but not beside
    // the nodes still in use (read again later). The map is unchanged unless ok.
    errc read_slots(const reply_node* nodes, std::size_t count, const node_address& from,
                    node_set in_use = ~node_set{0}) noexcept;

    // The node serving `slot` (an index for node()), or no_master when the map has none.
    std::uint8_t master_of(std::uint16_t slot) const noexcept;
    const node_address& node(std::uint8_t index) const noexcept { return nodes_[index]; }
    std::size_t nodes() const noexcept { return node_count_; }
    // Every slot has a master (the cluster serves every key).
    bool covers_all() const noexcept;
    // Successful read_slots() so far: a route decided before the last one may be out of date.
    std::uint32_t reads() const noexcept { return reads_; }

    // The index of `node` (same host and port), added when new; no_master when the table is
    // full. For the seeds, and for the node an ASK names.
    std::uint8_t add_node(const node_address& node) noexcept;
    // The index of `node` (same host and port), or no_master when the map has none.
    std::uint8_t index_of(const node_address& node) const noexcept { return find(node); }
    // add_node(node) would give an index (the node is known, or the table has room).
    bool has_room_for(const node_address& node) const noexcept {
        return find(node) != no_master || node_count_ < nodes_.size();
    }
    // MOVED: `slot` is served by `to` from now on, and the map is stale. Returns false, leaving
    // the slot unknown, when `to` is new and the table is full.
    bool moved(std::uint16_t slot, const node_address& to) noexcept;
    // The map may be out of date: read it again (after a MOVED, a connection lost to a node).
    bool stale() const noexcept { return stale_; }
    void mark_stale() noexcept { stale_ = true; }

private:
    std::uint8_t find(const node_address& node) const noexcept;
    std::uint8_t free_index(node_set taken) const noexcept;

    std::array<std::uint8_t, cluster_slots> owner_ = filled();
    std::array<node_address, cluster_masters_max> nodes_{};
    std::uint8_t node_count_ = 0;
    std::uint32_t reads_ = 0;
    bool stale_ = true;  // never read yet

    static constexpr std::array<std::uint8_t, cluster_slots> filled() noexcept {
        std::array<std::uint8_t, cluster_slots> all{};
        for (std::uint8_t& o : all) o = no_master;
        return all;
    }
};

// When to read the slot map again: at once when it is stale and no read is on its way, but
// not sooner than refresh_gap_ms after the last one ended, so a cluster answering MOVED to
// every request (a slot moving back and forth) costs a read per gap, not one per reply.
class map_refresh {
public:
    static constexpr std::int64_t refresh_gap_ms = 100;

    // A read should be sent now.
    bool due(const slot_map& map, std::int64_t now) const noexcept {
        return map.stale() && !in_flight_ && now >= not_before_ms_;
    }
    // When due() may turn true: the gap's end while the map is stale and nothing is on its
    // way, else no_deadline_ms.
    std::int64_t next_ms(const slot_map& map) const noexcept;
    void sent() noexcept { in_flight_ = true; }
    // The read was answered (read or refused) or lost with its connection.
    void ended(std::int64_t now) noexcept {
        in_flight_ = false;
        not_before_ms_ = now + refresh_gap_ms;
    }
    bool in_flight() const noexcept { return in_flight_; }

private:
    bool in_flight_ = false;
    std::int64_t not_before_ms_ = -now_ms_limit;  // never read: due at any reading
};

// CLUSTER SLOTS as a request, into out[0, capacity). Returns its size, or 0 when it does not
// fit.
std::size_t write_cluster_slots(char* out, std::size_t capacity) noexcept;

}  // namespace edgelock::session
