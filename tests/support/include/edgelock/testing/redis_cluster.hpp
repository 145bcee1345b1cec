// SPDX-License-Identifier: Apache-2.0
// edgelock test support: a real Redis Cluster on loopback, formed by hand.
//
// N masters (default 3), optionally R replicas each, all redis_server processes (see
// redis_process.hpp: free loopback ports, own temporary directory, SIGKILL by PID in the
// destructor), volatile (no RDB, no AOF), started with
//   --cluster-enabled yes --cluster-config-file nodes.conf (in the server's own directory)
//   --cluster-port <free port>        the bus port is not port + 10000: a port above 55535 has
//                                     none, and the ephemeral range reaches 60999
//   --cluster-node-timeout <ms>       1000 by default, so a killed master is replaced in ~2 s
//   --cluster-replica-validity-factor 0   a replica may always take over
//   --repl-ping-replica-period 1      CLUSTER SLOTS (7.0) leaves out a replica whose
//                                     replication offset is still 0; the master's pings move
//                                     it, every 10 s by default
// The cluster is formed with the commands redis-cli --cluster create sends, without its
// prompt or its fixed sleeps: CLUSTER SET-CONFIG-EPOCH (distinct epochs, no collisions to
// resolve), CLUSTER ADDSLOTSRANGE (master i gets the i-th of N equal ranges, the last one the
// remainder), CLUSTER MEET with the bus port, CLUSTER REPLICATE. The constructor returns when
// every node says cluster_state:ok and knows every node, every replica's link is up, and every
// node's CLUSTER SLOTS lists each master with all its replicas; it throws std::runtime_error
// (with the log of the first node) when that does not happen within ready_timeout.
//
// Nodes are numbered: masters 0..N-1, then the replicas of master 0, of master 1, ...
// (node N + i * R + r is replica r of master i). Roles change with kill_master() and
// failover(); the numbers do not. Every wait below polls (eventually()) and is bounded.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "edgelock/testing/redis_client.hpp"
#include "edgelock/testing/redis_process.hpp"

namespace edgelock::testing {

struct cluster_settings {
    std::size_t masters = 3;
    std::size_t replicas_per_master = 0;
    int node_timeout_ms = 1000;
    std::chrono::milliseconds ready_timeout{20'000};  // formation, promotion, migration
};

// One entry of CLUSTER SLOTS: a range and the ports of its master and replicas.
struct slot_range {
    std::uint16_t first = 0;
    std::uint16_t last = 0;
    std::uint16_t master_port = 0;
    std::vector<std::uint16_t> replica_ports;
};

// Where migrate_slot() stops.
enum class migration {
    half_way,  // IMPORTING on the target, MIGRATING on the source, the first half of the
               // slot's keys (at least one when there is any) moved: the source answers
               // -ASK for a moved key
    complete   // every key moved and SETSLOT NODE given to every master: -MOVED
};

class redis_cluster {
public:
    explicit redis_cluster(const cluster_settings& settings = {});
    redis_cluster(const redis_cluster&) = delete;
    redis_cluster& operator=(const redis_cluster&) = delete;

    std::size_t size() const noexcept { return nodes_.size(); }
    std::size_t masters_at_start() const noexcept { return settings_.masters; }
    redis_server& node(std::size_t i) { return *nodes_.at(i); }
    // The node's 40-character cluster id (CLUSTER MYID, read at start).
    const std::string& node_id(std::size_t i) const { return ids_.at(i); }
    // The node listening on `port`; throws when none does.
    std::size_t node_on(std::uint16_t port) const;
    // Replica r of master i, as formed.
    std::size_t replica_of(std::size_t master, std::size_t r = 0) const;
    // The slots master i was given at start, [first, last].
    slot_range assigned(std::size_t master) const;
    // "redis://127.0.0.1:<port>" of every running node.
    std::vector<std::string> seed_urls();

    // CLUSTER SLOTS of node i, read into ranges. Throws when the reply is not of that shape.
    std::vector<slot_range> slots_seen_by(std::size_t i);
    // The node that owns `slot`, as CLUSTER SLOTS of the first running node says.
    std::size_t owner_of(std::uint16_t slot);

    // SIGKILLs master i and waits until one of its replicas is a master and every running
    // node's CLUSTER SLOTS names it for the killed master's slots (and says cluster_state:ok).
    // Returns the promoted node. Throws when master i has no replica or nothing is promoted
    // within ready_timeout.
    std::size_t kill_master(std::size_t i);
    // SIGSTOPs master i until one of its replicas is promoted (cluster-node-timeout, then the
    // election), SIGCONTs it, and waits until every running node names the promoted one for
    // its slots and the old master replicates from it, its link up. Returns the promoted node.
    std::size_t pause_master(std::size_t i);
    // CLUSTER FAILOVER on `replica` (its master must be up) and the same wait as above.
    void failover(std::size_t replica);
    // Moves `slot` from master `from` to master `to`, as the Redis Cluster specification
    // documents: SETSLOT IMPORTING on `to`, SETSLOT MIGRATING on `from`, GETKEYSINSLOT and
    // MIGRATE ... KEYS, then (complete) SETSLOT NODE on `to`, `from` and every other master,
    // waiting until every running node sees `to` own the slot. Calling it with complete after
    // half_way finishes the same migration. Returns the number of keys moved by this call.
    std::size_t migrate_slot(std::uint16_t slot, std::size_t from, std::size_t to,
                             migration stop = migration::complete);
    // MIGRATEs `key` from master `from` to `to` while its slot is half-way there (the choice
    // of keys migrate_slot() leaves to GETKEYSINSLOT's order, made for one key).
    void migrate_key(const std::string& key, std::size_t from, std::size_t to);

    redis_client admin(std::size_t i);

private:
    void start_nodes();
    void assign_slots_and_meet();
    void attach_replicas();
    void wait_until_ready();
    bool ready();
    bool node_ready(std::size_t i);
    void wait_until_owner(std::uint16_t slot, std::size_t owner, const char* what);
    std::vector<std::size_t> replicas_of(std::size_t master);
    // The first slot `asked` says `master` serves; fails when none.
    std::uint16_t a_slot_of(std::size_t master, std::size_t asked);
    std::size_t wait_promoted(const std::vector<std::size_t>& replicas, const char* what);
    std::size_t move_keys(std::uint16_t slot, std::size_t from, std::size_t to, bool all);
    [[noreturn]] void fail(const std::string& what);

    cluster_settings settings_;
    std::vector<std::unique_ptr<redis_server>> nodes_;
    std::vector<std::uint16_t> bus_ports_;
    std::vector<std::string> ids_;
};

}  // namespace edgelock::testing
