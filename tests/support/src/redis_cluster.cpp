// SPDX-License-Identifier: Apache-2.0
#include "edgelock/testing/redis_cluster.hpp"

#include <stdexcept>
#include <utility>

namespace edgelock::testing {

namespace {

constexpr std::size_t cluster_slot_count = 16384;
constexpr int start_attempts_max = 3;  // a bus port taken between free_port() and the bind
constexpr std::chrono::milliseconds admin_timeout{2'000};
constexpr int migrate_timeout_ms = 5'000;
constexpr std::size_t keys_per_round = 100;
constexpr std::size_t migrate_rounds_max = 10'000;

bool is_ok(const redis_reply& r) { return r.type == redis_reply::kind::status && r.text == "OK"; }

std::uint16_t as_port(const redis_reply& r) {
    if (r.type != redis_reply::kind::integer || r.integer < 1 || r.integer > 65535)
        throw std::runtime_error("redis_cluster: CLUSTER SLOTS: not a port");
    return static_cast<std::uint16_t>(r.integer);
}

std::uint16_t as_slot(const redis_reply& r) {
    if (r.type != redis_reply::kind::integer || r.integer < 0 ||
        r.integer >= static_cast<long long>(cluster_slot_count))
        throw std::runtime_error("redis_cluster: CLUSTER SLOTS: not a slot");
    return static_cast<std::uint16_t>(r.integer);
}

// [first, last, [endpoint, port, id, ...], replicas...]
slot_range read_range(const redis_reply& entry) {
    if (entry.type != redis_reply::kind::array || entry.elements.size() < 3)
        throw std::runtime_error("redis_cluster: CLUSTER SLOTS: not a range");
    slot_range range;
    range.first = as_slot(entry.elements[0]);
    range.last = as_slot(entry.elements[1]);
    for (std::size_t n = 2; n < entry.elements.size(); ++n) {
        const redis_reply& node = entry.elements[n];
        if (node.type != redis_reply::kind::array || node.elements.size() < 2)
            throw std::runtime_error("redis_cluster: CLUSTER SLOTS: not a node");
        const std::uint16_t port = as_port(node.elements[1]);
        if (n == 2) {
            range.master_port = port;
        } else {
            range.replica_ports.push_back(port);
        }
    }
    return range;
}

bool owns(const std::vector<slot_range>& ranges, std::uint16_t slot, std::uint16_t port) {
    for (const slot_range& r : ranges) {
        if (slot >= r.first && slot <= r.last) return r.master_port == port;
    }
    return false;
}

}  // namespace

redis_cluster::redis_cluster(const cluster_settings& settings) : settings_(settings) {
    if (settings_.masters == 0 || settings_.masters > cluster_slot_count)
        throw std::invalid_argument("redis_cluster: masters");
    start_nodes();
    assign_slots_and_meet();
    attach_replicas();
    wait_until_ready();
}

void redis_cluster::start_nodes() {
    const std::size_t count = settings_.masters * (1 + settings_.replicas_per_master);
    for (std::size_t i = 0; i < count; ++i) {
        for (int attempt = 1;; ++attempt) {
            const std::uint16_t bus_port = free_port();
            try {
                nodes_.push_back(std::make_unique<redis_server>(
                    std::vector<std::string>{"--cluster-enabled", "yes", "--cluster-config-file",
                                             "nodes.conf", "--cluster-port",
                                             std::to_string(bus_port), "--cluster-node-timeout",
                                             std::to_string(settings_.node_timeout_ms),
                                             "--cluster-replica-validity-factor", "0",
                                             "--repl-ping-replica-period", "1"},
                    persistence::volatile_));
                bus_ports_.push_back(bus_port);
                break;
            } catch (const std::runtime_error&) {
                if (attempt == start_attempts_max) throw;
            }
        }
        ids_.push_back(admin(i).command({"CLUSTER", "MYID"}).text);
    }
}

// Distinct config epochs first (only a node that knows no other accepts one), as redis-cli
// does: no epoch collision to resolve after the MEETs.
void redis_cluster::assign_slots_and_meet() {
    for (std::size_t i = 0; i < size(); ++i) {
        if (!is_ok(admin(i).command({"CLUSTER", "SET-CONFIG-EPOCH", std::to_string(i + 1)})))
            fail("CLUSTER SET-CONFIG-EPOCH refused");
    }
    for (std::size_t m = 0; m < settings_.masters; ++m) {
        const slot_range r = assigned(m);
        if (!is_ok(admin(m).command(
                {"CLUSTER", "ADDSLOTSRANGE", std::to_string(r.first), std::to_string(r.last)})))
            fail("CLUSTER ADDSLOTSRANGE refused");
    }
    redis_client first = admin(0);
    for (std::size_t i = 1; i < size(); ++i) {
        if (!is_ok(
                first.command({"CLUSTER", "MEET", loopback_host, std::to_string(nodes_[i]->port()),
                               std::to_string(bus_ports_[i])})))
            fail("CLUSTER MEET refused");
    }
}

// A replica accepts CLUSTER REPLICATE once gossip has told it the master's id: retried.
void redis_cluster::attach_replicas() {
    for (std::size_t m = 0; m < settings_.masters; ++m) {
        for (std::size_t r = 0; r < settings_.replicas_per_master; ++r) {
            const std::size_t replica = replica_of(m, r);
            const bool attached = eventually(
                [&] {
                    return is_ok(admin(replica).command({"CLUSTER", "REPLICATE", ids_[m]}));
                },
                settings_.ready_timeout);
            if (!attached) fail("CLUSTER REPLICATE refused");
        }
    }
}

void redis_cluster::wait_until_ready() {
    if (!eventually([&] { return ready(); }, settings_.ready_timeout))
        fail("the cluster did not form");
}

bool redis_cluster::ready() {
    for (std::size_t i = 0; i < size(); ++i) {
        try {
            if (!node_ready(i)) return false;
        } catch (const std::exception&) {
            return false;
        }
    }
    return true;
}

// State ok, every node known, the replica's link up, and the whole layout in CLUSTER SLOTS.
bool redis_cluster::node_ready(std::size_t i) {
    redis_client c = admin(i);
    const std::string info = c.command({"CLUSTER", "INFO"}).text;
    if (info.find("cluster_state:ok\r\n") == std::string::npos) return false;
    const std::string known = "cluster_known_nodes:" + std::to_string(size()) + "\r\n";
    if (info.find(known) == std::string::npos) return false;
    if (i >= settings_.masters && c.info_field("replication", "master_link_status") != "up")
        return false;
    const std::vector<slot_range> ranges = slots_seen_by(i);
    if (ranges.size() != settings_.masters) return false;
    for (std::size_t m = 0; m < settings_.masters; ++m) {
        if (!owns(ranges, assigned(m).first, nodes_[m]->port())) return false;
    }
    for (const slot_range& r : ranges) {
        if (r.replica_ports.size() != settings_.replicas_per_master) return false;
    }
    return true;
}

std::size_t redis_cluster::node_on(std::uint16_t port) const {
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
        if (nodes_[i]->port() == port) return i;
    }
    throw std::runtime_error("redis_cluster: no node on port " + std::to_string(port));
}

std::size_t redis_cluster::replica_of(std::size_t master, std::size_t r) const {
    if (master >= settings_.masters || r >= settings_.replicas_per_master)
        throw std::out_of_range("redis_cluster: no such replica");
    return settings_.masters + master * settings_.replicas_per_master + r;
}

slot_range redis_cluster::assigned(std::size_t master) const {
    const std::size_t share = cluster_slot_count / settings_.masters;
    slot_range r;
    r.first = static_cast<std::uint16_t>(master * share);
    r.last = static_cast<std::uint16_t>(master + 1 == settings_.masters ? cluster_slot_count - 1
                                                                        : (master + 1) * share - 1);
    r.master_port = nodes_.at(master)->port();
    return r;
}

std::vector<std::string> redis_cluster::seed_urls() {
    std::vector<std::string> urls;
    for (auto& n : nodes_) {
        if (n->running()) urls.push_back(n->url());
    }
    return urls;
}

std::vector<slot_range> redis_cluster::slots_seen_by(std::size_t i) {
    const redis_reply reply = admin(i).command({"CLUSTER", "SLOTS"});
    if (reply.type != redis_reply::kind::array)
        throw std::runtime_error("redis_cluster: CLUSTER SLOTS: " + reply.text);
    std::vector<slot_range> ranges;
    for (const redis_reply& entry : reply.elements) ranges.push_back(read_range(entry));
    return ranges;
}

std::size_t redis_cluster::owner_of(std::uint16_t slot) {
    for (std::size_t i = 0; i < size(); ++i) {
        if (!nodes_[i]->running()) continue;
        for (const slot_range& r : slots_seen_by(i)) {
            if (slot >= r.first && slot <= r.last) return node_on(r.master_port);
        }
        throw std::runtime_error("redis_cluster: slot " + std::to_string(slot) + " unowned");
    }
    throw std::runtime_error("redis_cluster: no node running");
}

std::vector<std::size_t> redis_cluster::replicas_of(std::size_t i) {
    std::vector<std::size_t> replicas;
    for (std::size_t n = 0; n < size(); ++n) {
        if (n == i || !nodes_[n]->running()) continue;
        if (admin(n).info_field("replication", "master_port") == std::to_string(node(i).port()))
            replicas.push_back(n);
    }
    return replicas;
}

std::uint16_t redis_cluster::a_slot_of(std::size_t master, std::size_t asked) {
    for (const slot_range& r : slots_seen_by(asked)) {
        if (r.master_port == node(master).port()) return r.first;
    }
    fail("the master serves no slot");
}

std::size_t redis_cluster::wait_promoted(const std::vector<std::size_t>& replicas,
                                         const char* what) {
    std::size_t promoted = 0;
    const bool done = eventually(
        [&] {
            for (const std::size_t n : replicas) {
                try {
                    if (admin(n).role() != "master") continue;
                } catch (const std::exception&) {
                    continue;
                }
                promoted = n;
                return true;
            }
            return false;
        },
        settings_.ready_timeout);
    if (!done) fail(std::string(what) + ": no replica promoted");
    return promoted;
}

std::size_t redis_cluster::kill_master(std::size_t i) {
    const std::vector<std::size_t> replicas = replicas_of(i);
    if (replicas.empty()) fail("kill_master: the master has no replica");
    const std::uint16_t slot = a_slot_of(i, replicas.front());
    node(i).stop();
    const std::size_t promoted = wait_promoted(replicas, "kill_master");
    wait_until_owner(slot, promoted, "kill_master");
    return promoted;
}

std::size_t redis_cluster::pause_master(std::size_t i) {
    const std::vector<std::size_t> replicas = replicas_of(i);
    if (replicas.empty()) fail("pause_master: the master has no replica");
    const std::uint16_t slot = a_slot_of(i, replicas.front());
    node(i).freeze();
    std::size_t promoted = 0;
    try {
        promoted = wait_promoted(replicas, "pause_master");
    } catch (...) {
        node(i).thaw();  // a failed wait leaves no server stopped behind it
        throw;
    }
    node(i).thaw();
    wait_until_owner(slot, promoted, "pause_master");
    const bool linked = eventually(
        [&] {
            try {
                redis_client old = admin(i);
                return old.info_field("replication", "master_port") ==
                           std::to_string(node(promoted).port()) &&
                       old.info_field("replication", "master_link_status") == "up";
            } catch (const std::exception&) {
                return false;
            }
        },
        settings_.ready_timeout);
    if (!linked) fail("pause_master: the old master did not become the new one's replica");
    return promoted;
}

void redis_cluster::failover(std::size_t replica) {
    std::uint16_t slot = 0;
    bool has_slot = false;
    for (const slot_range& r : slots_seen_by(replica)) {
        for (const std::uint16_t port : r.replica_ports) {
            if (port != node(replica).port()) continue;
            slot = r.first;
            has_slot = true;
        }
    }
    if (!has_slot) fail("failover: not a replica of a master serving slots");
    if (!is_ok(admin(replica).command({"CLUSTER", "FAILOVER"})))
        fail("failover: CLUSTER FAILOVER refused");
    const bool promoted = eventually(
        [&] {
            try {
                return admin(replica).role() == "master";
            } catch (const std::exception&) {
                return false;
            }
        },
        settings_.ready_timeout);
    if (!promoted) fail("failover: the replica did not become a master");
    wait_until_owner(slot, replica, "failover");
}

std::size_t redis_cluster::migrate_slot(std::uint16_t slot, std::size_t from, std::size_t to,
                                        migration stop) {
    const std::string slot_text = std::to_string(slot);
    if (!is_ok(admin(to).command({"CLUSTER", "SETSLOT", slot_text, "IMPORTING", ids_.at(from)})))
        fail("migrate_slot: SETSLOT IMPORTING refused");
    if (!is_ok(admin(from).command({"CLUSTER", "SETSLOT", slot_text, "MIGRATING", ids_.at(to)})))
        fail("migrate_slot: SETSLOT MIGRATING refused");
    const std::size_t moved = move_keys(slot, from, to, stop == migration::complete);
    if (stop == migration::half_way) return moved;
    // The target first: once the source lets go, the slot must already be served.
    std::vector<std::size_t> order = {to, from};
    for (std::size_t n = 0; n < size(); ++n) {
        if (n == to || n == from || !nodes_[n]->running()) continue;
        if (admin(n).role() == "master") order.push_back(n);
    }
    for (const std::size_t n : order) {
        if (!is_ok(admin(n).command({"CLUSTER", "SETSLOT", slot_text, "NODE", ids_[to]})))
            fail("migrate_slot: SETSLOT NODE refused");
    }
    wait_until_owner(slot, to, "migrate_slot");
    return moved;
}

// Every key of the slot (all), or the first half of them, at least one.
std::size_t redis_cluster::move_keys(std::uint16_t slot, std::size_t from, std::size_t to,
                                     bool all) {
    redis_client source = admin(from);
    const std::string slot_text = std::to_string(slot);
    std::size_t moved = 0;
    for (std::size_t round = 0; round < migrate_rounds_max; ++round) {
        std::size_t wanted = keys_per_round;
        if (!all) {
            const long long count =
                source.command({"CLUSTER", "COUNTKEYSINSLOT", slot_text}).integer;
            wanted = static_cast<std::size_t>(count + 1) / 2;
        }
        const redis_reply keys =
            source.command({"CLUSTER", "GETKEYSINSLOT", slot_text, std::to_string(wanted)});
        if (keys.elements.empty()) return moved;
        std::vector<std::string> command = {
            "MIGRATE", loopback_host, std::to_string(node(to).port()),
            "",        "0",           std::to_string(migrate_timeout_ms),
            "KEYS"};
        for (const redis_reply& key : keys.elements) command.push_back(key.text);
        const redis_reply reply = source.command(command);
        // NOKEY: every key listed went (released or expired) since GETKEYSINSLOT; list again.
        if (reply.type == redis_reply::kind::status && reply.text == "NOKEY") continue;
        if (!is_ok(reply)) fail("migrate_slot: MIGRATE failed: " + reply.text);
        moved += keys.elements.size();
        if (!all) return moved;
    }
    fail("migrate_slot: keys kept coming");
}

void redis_cluster::migrate_key(const std::string& key, std::size_t from, std::size_t to) {
    const redis_reply reply =
        admin(from).command({"MIGRATE", loopback_host, std::to_string(node(to).port()), "", "0",
                             std::to_string(migrate_timeout_ms), "KEYS", key});
    const bool gone = reply.type == redis_reply::kind::status && reply.text == "NOKEY";
    if (!gone && !is_ok(reply)) fail("migrate_key: MIGRATE failed: " + reply.text);
}

// Every running node says cluster_state:ok and names `owner` for `slot`.
void redis_cluster::wait_until_owner(std::uint16_t slot, std::size_t owner, const char* what) {
    const bool seen = eventually(
        [&] {
            for (std::size_t n = 0; n < size(); ++n) {
                if (!nodes_[n]->running()) continue;
                try {
                    const std::string info = admin(n).command({"CLUSTER", "INFO"}).text;
                    if (info.find("cluster_state:ok\r\n") == std::string::npos) return false;
                    if (!owns(slots_seen_by(n), slot, node(owner).port())) return false;
                } catch (const std::exception&) {
                    return false;
                }
            }
            return true;
        },
        settings_.ready_timeout);
    if (!seen) fail(std::string(what) + ": the nodes do not agree on the slot's owner");
}

redis_client redis_cluster::admin(std::size_t i) {
    return redis_client(loopback_host, node(i).port(), "", "", admin_timeout);
}

void redis_cluster::fail(const std::string& what) {
    throw std::runtime_error("redis_cluster: " + what + ":\n" + nodes_.at(0)->log_tail());
}

}  // namespace edgelock::testing
