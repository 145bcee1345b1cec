// SPDX-License-Identifier: Apache-2.0
// The available check's acquirer half (checker.hpp): a free lock that a client asks for is
// taken, by someone, within a bound, through what the configuration rides out as in calm.
// The world samples it after every event; a violation is recorded into the same record as
// the holder half's (a hold lost to a fault ridden out), world_judges.cpp.
#include <algorithm>

#include "edgelock/sim/world.hpp"
#include "world_text.hpp"

namespace edgelock::sim {

// Node n would grant the lock to a request now: up, answering, a master without the lock's
// key (a semaphore's: with a permit free) by its own clock and with the replicas WAIT asks for.
// With the restart guard, a node that restarted counts from its start plus the guard (on the
// slowest client clock) and what a client takes to make its connection again and read that start.
bool world::grants_now(std::uint8_t node) const noexcept {
    const redis_node& n = nodes_[node];
    if (!n.up() || paused(node) || isolated(node) || !n.is_master() || n.cluster_down())
        return false;
    if (!has_free_permit(node) || !wait_met(node)) return false;
    if (!config_.restart_guard || restarted_us_[node] < 0) return true;
    const std::int64_t guard_us =
        lock_restart_guard_ms(params_) * (1'000'000 + params_.clock_ppm_max) / 1'000;
    return now_us_ >= restarted_us_[node] + guard_us + settle_us();
}

// Fair waiting: every live entry of the line (on the node the lock lives on) is that of a
// client whose acquire() runs and who can act, so the head is served. An entry of a client
// that gave up, was cancelled or is paused keeps the line until it expires (lock.hpp).
bool world::line_open() const {
    if (!config_.fair) return true;
    const std::uint8_t home = lease_home_now().first;
    const std::int64_t wall_ms = node_wall_ms(home);
    const redis_entry* line = nodes_[home].peek(queue_key_, wall_ms);
    if (line == nullptr) return true;
    for (const zset_member& m : decode_zset(line->value)) {
        if (!entry_live(nodes_[home], qttl_key_, m.member, wall_ms)) continue;
        // A semaphore's holders stand in its line until they release, and keep nobody out.
        if (config_.permits > 1 && holds_token(home, m.member)) continue;
        const int c = waiter_of(m.member);
        if (c < 0 || !acquiring_[static_cast<std::size_t>(c)] || clients_[c]->paused())
            return false;
    }
    return true;
}

// An acquire would succeed now: enough of the lock's home grants it (the master, or a Redlock
// quorum) and, while its slot moves between Redis Cluster masters, the importing node too (a
// missing key is asked for there, after ASK) for a one-key acquire. Outside Redlock no other master
// that is up holds the key either: a client may still be sent to an old master (a stale sentinel
// names it, or a node's stale view of the slots), and then the lock is not free where it asks.
// `granters`: the nodes that would grant it.
bool world::lock_free_now(std::uint32_t& granters) const {
    const auto [first, count, needed] = lease_home_now();
    if (config_.layout != topology::redlock) {
        for (std::uint8_t n = 0; n < config_.nodes; ++n) {
            const redis_node& node = nodes_[n];
            if (node.up() && node.is_master() && !has_free_permit(n)) return false;
        }
    }
    granters = 0;
    std::uint8_t granting = 0;
    for (std::uint8_t n = first; n < first + count; ++n) {
        if (!grants_now(n)) continue;
        ++granting;
        granters |= 1u << n;
    }
    if (granting < needed) return false;
    if (slot_moving_.importer >= 0) {
        // A script of several keys (fencing's counter, the fair line's) is refused with
        // TRYAGAIN while the slot moves: the source has them split, the importer lacks the lock
        // key. Real Redis answers so too; the lock is free again once the move is done.
        if (config_.fencing || config_.fair) return false;
        const auto importer = static_cast<std::uint8_t>(slot_moving_.importer);
        if (!grants_now(importer)) return false;
        granters |= 1u << importer;
    }
    return line_open();
}

// From the instant the lock is free: what a disturbance's effects may take on a connection
// (settle_us), an attempt already under way that fails, and the next one's turn: after the
// retry delay, or for a fair waiter its wake-up or re-check (the wakeup check's due bound);
// then that attempt, and one more for a message of the network's long tail.
std::int64_t world::acquire_bound_us() const noexcept {
    const std::int64_t retry_us = resolved_lock(params_).retry_delay_ms_max * 1000;
    const std::int64_t turn_us =
        config_.fair ? history_.fair.due_bound_us
                     : retry_us + retry_us * params_.clock_ppm_max / 1'000'000 + 1000;
    return settle_us() + 3 * attempt_slack_us() + turn_us;
}

// How far the asker `client` was left alone since `from_us`: disturbed (by something other
// than what the configuration rides out, or by more than one message in the network's long
// tail), ridden (only by what the configuration rides out) or calm.
world::asker_state world::asker_since(std::uint8_t client, std::uint32_t granters,
                                      std::int64_t from_us) const noexcept {
    if (tails_between(client, from_us, now_us_) > 1) return asker_state::disturbed;
    if (calm_between(client, granters, from_us, now_us_)) return asker_state::calm;
    const bool ridden = failover_told() && calm_between(client, granters, from_us, now_us_, true);
    return ridden ? asker_state::ridden : asker_state::disturbed;
}

// Fair waiting serves the head of the line first, and any asker may stand there: while one of
// them was disturbed within the settling time, the others' wait is its wait.
bool world::line_held(std::uint32_t granters) const noexcept {
    if (!config_.fair) return false;
    const std::int64_t from_us = now_us_ - settle_us();
    for (std::uint8_t c = 0; c < params_.clients; ++c) {
        if (!acquiring_[c] || clients_[c]->paused()) continue;
        if (asker_since(c, granters, from_us) == asker_state::disturbed) return true;
    }
    return false;
}

// Judged while some client that can act asks for the lock and it is free, from the instant it
// became so: past the bound, a violation when an asker was left alone (asker_since) since the
// bound's settling time before that instant. Not judged while two or more ask for a
// Redlock lock: their attempts may split the votes, each time (random retry delays make that
// rare, never impossible).
void world::judge_acquirers() {
    std::uint8_t asking = 0;
    for (std::uint8_t c = 0; c < params_.clients; ++c) {
        if (acquiring_[c] && !clients_[c]->paused()) ++asking;
    }
    std::uint32_t granters = 0;
    const bool split_votes = config_.layout == topology::redlock && asking > 1;
    if (asking == 0 || split_votes || !lock_free_now(granters) || line_held(granters)) {
        free_since_us_ = -1;
        return;
    }
    if (free_since_us_ < 0) free_since_us_ = now_us_;
    const std::int64_t bound_us = acquire_bound_us();
    if (now_us_ - free_since_us_ <= bound_us) return;
    const std::int64_t from_us = free_since_us_ - settle_us();
    int judged = -1;
    std::int64_t judged_from_us = from_us;
    bool calm = true;
    for (std::uint8_t c = 0; c < params_.clients; ++c) {
        if (!acquiring_[c] || clients_[c]->paused()) continue;
        // A semaphore's asker waits from the later of its asking and the permit's freeing: a
        // holder may ask again while a permit stayed free for others all along. (A lock is
        // free only while nobody holds it: its askers all wait from its freeing.)
        const bool semaphore = config_.permits > 1;
        if (semaphore && now_us_ - asking_since_us_[c] <= bound_us) continue;
        const std::int64_t since_us =
            semaphore ? std::max(from_us, asking_since_us_[c] - settle_us()) : from_us;
        const asker_state state = asker_since(c, granters, since_us);
        if (state == asker_state::disturbed) continue;
        if (judged < 0) {
            judged = c;
            judged_from_us = since_us;
        }
        calm = calm && state == asker_state::calm;
    }
    if (judged < 0) return;
    record_loss(history_.available, "AVAILABLE",
                format("c%d asked for the lock, free from %s, and nobody had it by %s (the "
                       "bound: %lld ms) while nothing %sconcerned the askers or the nodes that "
                       "would grant it since %s",
                       judged, seconds_text(free_since_us_).c_str(), seconds_text(now_us_).c_str(),
                       static_cast<long long>(bound_us / 1000),
                       calm ? "" : "but what the configuration rides out ",
                       seconds_text(judged_from_us).c_str()));
    free_since_us_ = now_us_;  // counted again only after another bound
}

}  // namespace edgelock::sim
