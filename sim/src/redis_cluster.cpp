// SPDX-License-Identifier: Apache-2.0
// The simulated Redis in cluster mode: which node serves a request (Redis 7.0's
// getNodeByQuery, in its order), ASKING, CLUSTER SLOTS, and MIGRATE's two halves.
#include <algorithm>

#include "edgelock/assert.hpp"
#include "edgelock/sim/key_slot.hpp"
#include "edgelock/sim/redis_model.hpp"
#include "edgelock/sim/resp_text.hpp"

namespace edgelock::sim {
namespace {

// The keyed commands of the model, by where their keys are: args[1], or every argument
// from args[1] (DEL, EXISTS); EVAL and EVALSHA name theirs with numkeys.
bool one_key_command(std::string_view command) {
    for (const std::string_view name :
         {"GET", "SET", "PEXPIRE", "PERSIST", "PTTL", "INCR", "ZADD", "ZREM", "ZSCORE", "ZCARD",
          "ZRANGE", "ZRANGEBYSCORE", "ZREMRANGEBYSCORE"}) {
        if (equals_ignoring_case(command, name)) return true;
    }
    return false;
}

struct request_keys {
    const std::string_view* first = nullptr;
    std::size_t count = 0;
};

request_keys keys_of(const request_view& r) {
    const std::string_view command = r.args[0];
    if (one_key_command(command))
        return r.count >= 2 ? request_keys{&r.args[1], 1} : request_keys{};
    if (equals_ignoring_case(command, "DEL") || equals_ignoring_case(command, "EXISTS"))
        return r.count >= 2 ? request_keys{&r.args[1], r.count - 1} : request_keys{};
    if (!equals_ignoring_case(command, "EVAL") && !equals_ignoring_case(command, "EVALSHA"))
        return {};
    std::int64_t numkeys = 0;
    if (r.count < 3 || !parse_integer(r.args[2], numkeys) || numkeys <= 0 ||
        static_cast<std::size_t>(numkeys) > r.count - 3) {
        return {};  // the command's own checks answer it
    }
    return {&r.args[3], static_cast<std::size_t>(numkeys)};
}

std::uint8_t peer_of(const std::vector<std::pair<std::uint16_t, std::uint8_t>>& table,
                     std::uint16_t slot) {
    for (const auto& [s, peer] : table) {
        if (s == slot) return peer;
    }
    return no_cluster_node;
}

void drop_slot(std::vector<std::pair<std::uint16_t, std::uint8_t>>& table, std::uint16_t slot) {
    table.erase(std::remove_if(table.begin(), table.end(),
                               [slot](const auto& entry) { return entry.first == slot; }),
                table.end());
}

}  // namespace

void redis_node::enable_cluster(std::vector<cluster_member> members) {
    EDGELOCK_ASSERT(id_ < members.size());
    members_ = std::move(members);
    slot_owner_.assign(cluster_slot_count, no_cluster_node);
    member_roles_.assign(members_.size(), {-1, false});
}

void redis_node::set_slot_owner(std::uint16_t first, std::uint16_t last, std::uint8_t owner) {
    EDGELOCK_ASSERT(cluster_enabled() && first <= last && last < cluster_slot_count);
    EDGELOCK_ASSERT(owner == no_cluster_node || owner < members_.size());
    for (std::size_t s = first; s <= last; ++s) {
        slot_owner_[s] = owner;
        clear_migration(static_cast<std::uint16_t>(s));
    }
}

std::uint8_t redis_node::slot_owner(std::uint16_t slot) const noexcept {
    return cluster_enabled() ? slot_owner_[slot] : no_cluster_node;
}

void redis_node::set_migrating(std::uint16_t slot, std::uint8_t to) {
    drop_slot(migrating_, slot);
    migrating_.emplace_back(slot, to);
}

void redis_node::set_importing(std::uint16_t slot, std::uint8_t from) {
    drop_slot(importing_, slot);
    importing_.emplace_back(slot, from);
}

void redis_node::clear_migration(std::uint16_t slot) noexcept {
    drop_slot(migrating_, slot);
    drop_slot(importing_, slot);
}

void redis_node::set_member_role(std::uint8_t member, int master, bool failed) {
    EDGELOCK_ASSERT(member < member_roles_.size());
    member_roles_[member] = {master, failed};
}

std::vector<std::string> redis_node::keys_in_slot(std::uint16_t slot, std::int64_t wall_ms) const {
    std::vector<std::string> keys;
    for (const redis_entry& e : data_) {
        if (server_key_slot(e.key) == slot && peek(e.key, wall_ms) != nullptr)
            keys.push_back(e.key);
    }
    return keys;
}

void redis_node::restore_key(const redis_entry& entry, std::vector<repl_op>& effects) {
    set(entry.key, entry.value, entry.expire_at_ms, effects);
}

void redis_node::delete_key(std::string_view key, std::vector<repl_op>& effects) {
    erase(key, effects);
}

std::string redis_node::endpoint_of(std::uint8_t member) const {
    const cluster_member& m = members_[member];
    return m.endpoint + ":" + std::to_string(m.port);
}

// getNodeByQuery's verdict for the keys of `r`: Redis 7.0 counts a key missing by a lookup
// that expires it (an expired key is absent), and a repeated key once.
bool redis_node::cluster_refuses(bool asking, const request_view& r, std::int64_t wall_ms,
                                 std::string& reply) const {
    const request_keys keys = keys_of(r);
    if (keys.count == 0) return false;
    const std::uint16_t slot = server_key_slot(keys.first[0]);
    bool multiple_keys = false;
    for (std::size_t i = 1; i < keys.count; ++i) {
        if (server_key_slot(keys.first[i]) != slot) {
            append_error(reply, "CROSSSLOT Keys in request don't hash to the same slot");
            return true;
        }
        multiple_keys = multiple_keys || keys.first[i] != keys.first[0];
    }
    const std::uint8_t owner = slot_owner_[slot];
    if (owner == no_cluster_node) {
        append_error(reply, "CLUSTERDOWN Hash slot not served");
        return true;
    }
    if (cluster_down_) {
        append_error(reply, "CLUSTERDOWN The cluster is down");
        return true;
    }
    const std::uint8_t migrating_to = owner == id_ ? peer_of(migrating_, slot) : no_cluster_node;
    const bool importing = peer_of(importing_, slot) != no_cluster_node;
    std::size_t missing = 0;
    if (migrating_to != no_cluster_node || importing) {
        for (std::size_t i = 0; i < keys.count; ++i)
            missing += peek(keys.first[i], wall_ms) == nullptr ? 1 : 0;
    }
    const std::string where = " " + std::to_string(slot) + " ";
    if (migrating_to != no_cluster_node && missing > 0) {
        if (missing < keys.count) {
            append_error(reply, "TRYAGAIN Multiple keys request during rehashing of slot");
        } else {
            append_error(reply, "ASK" + where + endpoint_of(migrating_to));
        }
        return true;
    }
    if (importing && asking) {
        if (!multiple_keys || missing == 0) return false;
        append_error(reply, "TRYAGAIN Multiple keys request during rehashing of slot");
        return true;
    }
    if (owner == id_) return false;
    append_error(reply, "MOVED" + where + endpoint_of(owner));
    return true;
}

// ASKING and CLUSTER SLOTS; false for any other command (or cluster mode off).
bool redis_node::cluster_command(client_state& c, const request_view& r, std::string& reply) const {
    if (!cluster_enabled()) return false;
    if (equals_ignoring_case(r.args[0], "ASKING") && r.count == 1) {
        reply += "+OK\r\n";
        c.asking = true;
        return true;
    }
    if (equals_ignoring_case(r.args[0], "CLUSTER") && r.count == 2 &&
        equals_ignoring_case(r.args[1], "SLOTS")) {
        append_cluster_slots(reply);
        return true;
    }
    return false;
}

// Ranges of consecutive slots with one owner, in slot order (Redis 7.0's
// generateClusterSlotsResponse), each with the owner and its replicas not believed failed.
void redis_node::append_cluster_slots(std::string& reply) const {
    std::string body;
    std::size_t ranges = 0;
    std::size_t first = 0;
    for (std::size_t s = 1; s <= cluster_slot_count; ++s) {
        const std::uint8_t owner = slot_owner_[first];
        if (s < cluster_slot_count && slot_owner_[s] == owner) continue;
        if (owner != no_cluster_node) {
            std::string nodes;
            std::size_t count = 1;
            append_cluster_node(owner, nodes);
            for (std::uint8_t m = 0; m < members_.size(); ++m) {
                if (member_roles_[m].first != owner || member_roles_[m].second) continue;
                append_cluster_node(m, nodes);
                ++count;
            }
            body += "*" + std::to_string(count + 2) + "\r\n";
            append_integer(body, static_cast<std::int64_t>(first));
            append_integer(body, static_cast<std::int64_t>(s - 1));
            body += nodes;
            ++ranges;
        }
        first = s;
    }
    reply += "*" + std::to_string(ranges) + "\r\n" + body;
}

// [endpoint, port, id, {}]: the metadata map is empty with the IP as the preferred endpoint
// and no hostname (RESP2 sends a map as an array).
void redis_node::append_cluster_node(std::uint8_t member, std::string& reply) const {
    const cluster_member& m = members_[member];
    reply += "*4\r\n";
    append_bulk(reply, m.endpoint);
    append_integer(reply, m.port);
    append_bulk(reply, m.id);
    reply += "*0\r\n";
}

}  // namespace edgelock::sim
