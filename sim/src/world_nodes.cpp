// SPDX-License-Identifier: Apache-2.0
// The world's Redis processes and the Sentinel failover it plays: crashes and power-offs,
// restarts, process pauses, a node cut off from the sentinels and the other nodes, and what
// the sentinels do about a master they stop reaching.
//
// Sentinel, as modelled: the sentinels look at the nodes every info_period (PING, INFO). A
// master that stops answering them (down, paused, or cut off) is failed over once it stayed
// silent for down_after, noticed at their next look, and failover_ms later: the replica they
// promote is the one whose offset their last INFO showed highest, which is not necessarily
// the one holding most. The old master is not told: while it is paused or cut off it still
// believes it is the master and takes writes from any client still connected to it (split
// brain), and once it is back (resumed, reachable, restarted) it stays a master until the
// sentinels reconfigure it as a replica reconfigure_ms later, when it drops what it had.
//
// As Redis 7.0's Sentinel does, nothing else changes at the instant of the promotion either:
// the other replicas of the old master are re-pointed one at a time (parallel-syncs 1), each
// a drawn repoint delay after the one before, and until then they still follow the old
// master: once it is back they take its writes and acknowledge its WAITs. Each sentinel
// learns of the promotion after a drawn lag of its own and names the old master until then.
// A replica that comes back still following a replaced master is re-pointed only after
// failover-timeout; one still following the current master resynchronises at once (on its
// own).
#include <algorithm>
#include <string>

#include "edgelock/keys.hpp"
#include "edgelock/sim/world.hpp"

namespace edgelock::sim {

void world::activate_node_fault(const fault& f) {
    const std::int64_t end_us = now_us_ + f.duration_ms * 1000;
    switch (f.kind) {
        case fault_kind::crash:
        case fault_kind::power_off:
        case fault_kind::replace:
            if (nodes_[f.target].up()) crash(f.target, f);
            return;
        case fault_kind::pause:
            if (!nodes_[f.target].up()) return;
            pause_node(f.target, end_us);
            break;
        case fault_kind::isolate:
            isolate_side(static_cast<node_mask>(f.nodes | (1u << f.target)), end_us);
            break;
        case fault_kind::evict: evict(f.target); break;
        case fault_kind::migrate:
            if (config_.layout != topology::cluster) return;
            start_migration(f);
            return;
        default: return;
    }
    mark(world_mark::kind::fault, true, f.target, end_us, to_text(f));
    heal_at(end_us + params_.reconfigure_ms * 1000);
    disturb_by(f, end_us + params_.reconfigure_ms * 1000);
}

// Memory pressure: the node evicts what its policy allows, and its replicas follow.
void world::evict(std::uint8_t node) {
    if (paused(node)) return;  // a stopped process allocates nothing
    redis_node& n = nodes_[node];
    n.evict(now_us_, out_.effects);
    if (recording()) note_node(node, "EVICT: " + std::to_string(out_.effects.size()) + " key(s)");
    flush(node);
}

// A crash closes every connection with a reset (the kernel survives the process); a host
// that loses power says nothing, and its clients learn it from their timeouts.
// A replace fault is a crash (the old server's connections are reset) followed by another
// server at the address, up for f.amount ms already (restart()).
void world::crash(std::uint8_t node, const fault& f) {
    const bool power_off = f.kind == fault_kind::power_off;
    const bool replaced = f.kind == fault_kind::replace;
    replacing_ms_[node] = replaced ? std::max<std::int64_t>(f.amount, 0) : -1;
    nodes_[node].crash(now_us_);
    held_[node].clear();
    paused_until_us_[node] = 0;
    powered_off_[node] = power_off;
    const char* why = power_off  ? "host powered off"
                      : replaced ? "server replaced"
                                 : "node crashed";
    for (std::uint8_t c = 0; c < params_.clients; ++c) break_connections(c, node, !power_off, why);
    std::int64_t down_us = f.duration_ms * 1000;
    if (config_.delayed_restart) down_us = std::max(down_us, params_.delayed_restart_ms * 1000);
    events_.push(now_us_ + down_us, scheduler::kind::node_restart, node, 0);
    const std::string what = power_off ? "power off" : replaced ? "replaced" : "crash";
    mark(world_mark::kind::crash, true, node, now_us_ + down_us,
         what + " (persistence " + to_string(f.persist) + ", down " +
             std::to_string(down_us / 1000) + " ms)");
    const char* label = power_off ? "POWER OFF: " : replaced ? "REPLACED: " : "CRASH: ";
    if (recording()) note_node(node, label + to_text(f));
    heal_at(now_us_ + down_us + params_.reconfigure_ms * 1000);
    // While down it misleads nobody (it answers nothing), but it may be the replica a renewal
    // waits for; its return may mislead (node_restart).
    disturb_by(f, config_.replicas_to_wait > 0 ? now_us_ + down_us : now_us_);
    master_unreachable();
    observe_all_clients();
}

// Redis comes back with what persistence kept, as a master: an old master its replicas
// followed, a replica re-synchronised from the current master, an old master the sentinels
// replaced still believing it is one (node_back()).
void world::restart(std::uint8_t node) {
    redis_node& n = nodes_[node];
    if (n.up()) return;
    n.restart(now_us_, node_wall_ms(node));
    // Another server at the address: it started long ago, as far as its INFO says.
    if (replacing_ms_[node] >= 0) n.set_started(node_wall_ms(node) - replacing_ms_[node]);
    n.load_until(now_us_ + rng_.between(0, params_.loading_ms_max) * 1000);
    powered_off_[node] = false;
    restarted_us_[node] = now_us_;
    const std::string text =
        (replacing_ms_[node] >= 0
             ? "another server, up " + std::to_string(replacing_ms_[node]) + " ms, with "
             : std::string("restart with ")) +
        std::to_string(n.data().size()) + " key(s)";
    replacing_ms_[node] = -1;
    mark(world_mark::kind::restart, true, node, now_us_, text);
    if (recording()) note_node(node, text);
    node_back(node);
    // A restarted node is a new instance to the sentinels: they read its INFO as they connect.
    seen_offset_[node] = n.offset();
    observe_all_clients();
}

// The process stops: whatever reaches it waits in its sockets (held_), its WAIT timers
// with it; the kernel still accepts connections. Keys go on expiring by the wall clock.
void world::pause_node(std::uint8_t node, std::int64_t until_us) {
    if (until_us <= paused_until_us_[node]) return;
    paused_until_us_[node] = until_us;
    events_.push(until_us, scheduler::kind::node_resume, node, 0);
    if (recording()) note_node(node, "PAUSED until " + std::to_string(until_us / 1000) + " ms");
    master_unreachable();
}

// Reads what arrived while it was stopped, in order, as Redis reads its sockets: requests
// on connections their clients have since given up are still executed (the bytes were in
// the socket), their replies go nowhere.
void world::resume_node(std::uint8_t node) {
    // Only the event of the pause that ends now: one a crash cut short, or a longer pause
    // replaced, does nothing.
    if (paused_until_us_[node] != now_us_ || !nodes_[node].up()) return;
    if (recording()) note_node(node, "resumed");
    std::vector<held_message> waiting = std::move(held_[node]);
    held_[node].clear();
    for (held_message& h : waiting) deliver_held(node, std::move(h));
    node_back(node);
}

void world::deliver_held(std::uint8_t node, held_message&& h) {
    const auto peer = static_cast<std::uint8_t>(h.from - params_.clients);
    switch (h.m.kind) {
        case message_kind::request: deliver_request(h.from, node, std::move(h.m), true); break;
        case message_kind::replication: deliver_replication(peer, node, std::move(h.m)); break;
        case message_kind::replication_ack: deliver_ack(peer, node, std::move(h.m)); break;
        default: break;
    }
}

// The nodes of `side` (a bit mask) are cut off from the sentinels and from the nodes outside
// it: replication and its acks across the cut are lost both ways, within the side they pass.
// Clients still reach every node.
void world::isolate_side(node_mask side, std::int64_t until_us) {
    for (std::uint8_t n = 0; n < config_.nodes; ++n) {
        if (((side >> n) & 1u) == 0 || until_us <= isolated_until_us_[n]) continue;
        if (!isolated(n)) cut_since_us_[n] = now_us_;
        isolated_until_us_[n] = until_us;
        side_of_[n] = side;
        if (config_.layout == topology::cluster) {
            // Its pings go unanswered for the node timeout from when it sent them: up to half
            // a node timeout (and a cron period) after the cut.
            const std::int64_t seen_ms =
                params_.down_after_ms + rng_.between(0, params_.down_after_ms / 2 + 100);
            events_.push(now_us_ + seen_ms * 1000, scheduler::kind::cluster_minority, n, 0);
        }
        events_.push(until_us, scheduler::kind::node_rejoin, n, 0);
        if (recording())
            note_node(n, "CUT OFF from the sentinels until " + std::to_string(until_us / 1000) +
                             " ms");
    }
    master_unreachable();
}

void world::rejoin_node(std::uint8_t node) {
    if (isolated(node)) return;
    if (recording()) note_node(node, "reachable again");
    if (config_.layout == topology::cluster) cluster_rejoin(node);
    if (nodes_[node].up()) node_back(node);
}

// A replica's link to its master, as the replica sees it: gone when the master's process
// died (the reset reaches it), and until it synchronised with the master it follows now. A
// master paused, powered off or cut off leaves the link up (until a replication timeout far
// longer than any run).
bool world::master_link_up(std::uint8_t node) const noexcept {
    const redis_node& n = nodes_[node];
    if (n.is_master()) return true;
    const redis_node& master = nodes_[static_cast<std::size_t>(n.master_id())];
    if (!master.up()) return powered_off_[master.id()];
    return n.master_incarnation() == master.incarnation();
}

bool world::reachable(std::uint8_t node) const noexcept {
    return nodes_[node].up() && !paused(node) && !isolated(node);
}

// A master, or its own replica, answers again: the replica synchronises from the master
// once both are reachable (a full copy: the master's data as it came back, even empty); a
// replica that restarted while its master is away waits for it, refusing writes.
void world::resync_own_replica(std::uint8_t node) {
    const auto instances = config_.instances;
    const bool replica = node >= instances;
    const auto master = static_cast<std::uint8_t>(replica ? node - instances : node);
    const auto r = static_cast<std::uint8_t>(master + instances);
    if (!reachable(r)) return;
    if (!reachable(master)) {
        if (replica && nodes_[r].is_master()) nodes_[r].await_master(master);
        return;
    }
    nodes_[r].follow(nodes_[master], now_us_);
    if (recording()) note_node(r, "resynchronised from n" + std::to_string(master));
}

// ---- Sentinel -------------------------------------------------------------------------------

void world::master_unreachable() {
    const bool fails_over =
        config_.layout == topology::sentinel || config_.layout == topology::cluster;
    if (!fails_over || unreachable_since_us_ >= 0) return;
    const auto master = static_cast<std::uint8_t>(current_master_);
    if (reachable(master)) return;
    unreachable_since_us_ = now_us_;
    const std::int64_t noticed_ms = params_.down_after_ms + rng_.between(0, params_.info_period_ms);
    events_.push(now_us_ + noticed_ms * 1000, scheduler::kind::sentinel_check, master, 0);
}

// A node answers again. A master the sentinels replaced meanwhile is reconfigured later;
// the current master is watched afresh, and its replicas (whose replication it lost while
// away) re-synchronise; a replica re-synchronises from the current master.
void world::node_back(std::uint8_t node) {
    if (config_.layout == topology::cluster && node >= 2) {
        other_shard_back(node);
        return;
    }
    if (has_own_replicas(config_)) {
        resync_own_replica(node);
        return;
    }
    const bool fails_over =
        config_.layout == topology::sentinel || config_.layout == topology::cluster;
    if (!fails_over || !reachable(node)) return;
    if (demoted_[node]) {
        // Redis Cluster: the first gossip it exchanges carries the newer configuration (a
        // command already waiting in its sockets is served first).
        const std::int64_t hears_ms = config_.layout == topology::cluster
                                          ? rng_.between(1, params_.cluster_gossip_ms_max)
                                          : params_.reconfigure_ms;
        events_.push(now_us_ + hears_ms * 1000, scheduler::kind::sentinel_reconfigure, node, 0);
        return;
    }
    redis_node& n = nodes_[node];
    if (node == current_master_) {
        unreachable_since_us_ = -1;
        if (config_.layout == topology::cluster && cluster_failed_us_ >= 0) {
            const std::int64_t undo_us =
                std::max(now_us_, cluster_failed_us_ + 2 * params_.down_after_ms * 1000);
            events_.push(undo_us, scheduler::kind::cluster_fail_undo, node, failover_epoch_);
            disturbance d;  // the others stay down until the election or the undo
            d.to_us = undo_us;
            d.everyone = true;
            disturb(d);
        }
        for (std::uint8_t r = 0; r < config_.nodes; ++r) {
            if (r != node && reachable(r) && nodes_[r].master_id() == node)
                nodes_[r].follow(n, now_us_);
        }
        return;
    }
    const auto master = static_cast<std::uint8_t>(current_master_);
    if (!n.is_master() && n.master_id() != master) {
        // Configured for a replaced master: only a sentinel's REPLICAOF moves it, and a
        // sentinel sends it only after failover-timeout.
        events_.push(now_us_ + params_.failover_timeout_ms * 1000,
                     scheduler::kind::sentinel_repoint, node, 0);
        return;
    }
    if (reachable(master)) {
        n.follow(nodes_[master], now_us_);
        if (recording()) note_node(node, "resynchronised from n" + std::to_string(master));
    } else if (n.is_master()) {
        n.await_master(master);  // a replica restarted while its master is away
    }
}

// The master stayed silent for down_after: a failover starts, promoting failover_ms later.
void world::sentinel_check(std::uint8_t node) {
    if (current_master_ != node || reachable(node) || unreachable_since_us_ < 0) return;
    if (now_us_ - unreachable_since_us_ < params_.down_after_ms * 1000) return;  // it came and went
    if (config_.layout == topology::cluster) cluster_fail(node);
    events_.push(now_us_ + params_.failover_ms * 1000, scheduler::kind::sentinel_promote, node,
                 cluster_fail_episode_);
}

// The reachable replica of `master` whose last INFO showed the highest offset (the lowest
// id among equals), or -1.
int world::best_replica_seen(std::uint8_t master) const noexcept {
    int best = -1;
    for (std::uint8_t r = 0; r < config_.nodes; ++r) {
        if (r == master || !reachable(r) || nodes_[r].master_id() != master) continue;
        if (best < 0 || seen_offset_[r] > seen_offset_[static_cast<std::size_t>(best)]) best = r;
    }
    return best;
}

// Promotes the best replica as the sentinels saw it; without one, tries again a down_after
// later. A master that answers again meanwhile stays master.
void world::sentinel_promote(std::uint8_t node, std::uint32_t fail_episode) {
    const bool cluster = config_.layout == topology::cluster;
    if (current_master_ != node || reachable(node) || unreachable_since_us_ < 0) return;
    if (now_us_ - unreachable_since_us_ < params_.down_after_ms * 1000) return;  // an earlier one's
    // A master back before the promotion keeps its slots. (Redis Cluster's election goes on
    // while the FAIL flag stands: docs/SIMULATION.md says what that would add.)
    if (cluster && fail_episode != cluster_fail_episode_) return;
    const int best = best_replica_seen(node);
    if (best < 0) {
        events_.push(now_us_ + params_.down_after_ms * 1000, scheduler::kind::sentinel_check, node,
                     0);
        return;
    }
    redis_node& promoted = nodes_[static_cast<std::size_t>(best)];
    promoted.promote();
    nodes_[node].detach_replica(promoted.id());  // REPLICAOF NO ONE left the old master
    if (!cluster) sentinel_kills_clients(promoted.id());
    current_master_ = best;
    unreachable_since_us_ = -1;
    demoted_[node] = true;
    replaced_us_[node] = now_us_;
    cluster_failed_us_ = -1;
    ++failover_epoch_;
    if (cluster) cluster_promoted(node, promoted.id());
    tell_sentinels(promoted.id());
    schedule_repoints(node, promoted.id());
    const char* const by = cluster ? "its failover" : "Sentinel";
    const std::string text = std::string("promoted by ") + by + " (offset " +
                             std::to_string(promoted.offset()) + ", seen " +
                             std::to_string(seen_offset_[static_cast<std::size_t>(best)]) + ", " +
                             std::to_string(promoted.data().size()) + " key(s))";
    mark(world_mark::kind::promote, true, promoted.id(), now_us_, text);
    if (recording()) note_node(promoted.id(), text);
    observe_all_clients();
}

// The leader (the sentinel that ran the failover) knows at once; the others hear of it from
// its hello messages, each after a lag of its own.
void world::tell_sentinels(std::uint8_t promoted) {
    if (config_.sentinels == 0) return;
    const std::uint32_t news = failover_epoch_ * 256 + promoted;
    const std::int64_t leader = rng_.between(0, config_.sentinels - 1);
    for (std::uint8_t j = 0; j < config_.sentinels; ++j) {
        const std::int64_t lag_ms = j == leader ? 0 : rng_.between(0, params_.sentinel_lag_ms_max);
        events_.push(now_us_ + lag_ms * 1000, scheduler::kind::sentinel_learn, j, news);
    }
}

void world::sentinel_learn(std::uint8_t sentinel, std::uint32_t news) {
    const auto promoted = static_cast<std::uint8_t>(news % 256);
    const std::uint8_t before = sentinels_[sentinel].believed_master();
    sentinels_[sentinel].learn(promoted, news / 256);
    const std::uint8_t after = sentinels_[sentinel].believed_master();
    if (recording()) {
        note(server_name(static_cast<std::uint8_t>(config_.nodes + sentinel)), nullptr,
             "names n" + std::to_string(after));
    }
    if (after != before) publish_switch(sentinel, before, after);
}

// The sentinel's +switch-master, to every client whose watch is subscribed to it now.
void world::publish_switch(std::uint8_t sentinel, std::uint8_t from, std::uint8_t to) {
    const auto server = static_cast<std::uint8_t>(config_.nodes + sentinel);
    for (std::uint8_t c = 0; c < params_.clients; ++c) {
        const std::uint32_t epoch = watchers_[sentinel][c];
        const network::tcp_state& conn = net_.conn(c, server, lane::watch);
        if (epoch == 0 || !conn.open || conn.epoch != epoch) continue;
        send_reply(server, c, epoch, sentinels_[sentinel].switch_message(from, to), lane::watch);
    }
}

// parallel-syncs 1: the old master's other replicas in turn, each a drawn delay after the one
// before (a replica away then is re-pointed once it is back: node_back()).
void world::schedule_repoints(std::uint8_t old_master, std::uint8_t promoted) {
    std::int64_t at_us = now_us_;
    for (std::uint8_t r = 0; r < config_.nodes; ++r) {
        if (r == promoted || r == old_master || nodes_[r].master_id() != old_master) continue;
        at_us += repoint_delay_us();
        events_.push(at_us, scheduler::kind::sentinel_repoint, r, 0);
    }
}

std::int64_t world::repoint_delay_us() {
    return rng_.between(params_.repoint_ms_min, params_.repoint_ms_max) * 1000;
}

// A sentinel's REPLICAOF to a replica still following a replaced master: a full
// resynchronisation from the current master, dropping what the old one gave it.
void world::sentinel_repoint(std::uint8_t node) {
    redis_node& n = nodes_[node];
    const auto master = static_cast<std::uint8_t>(current_master_);
    if (!reachable(node) || demoted_[node] || node == master || n.is_master() ||
        n.master_id() == master) {
        return;  // away (node_back() comes later), an old master, or already re-pointed
    }
    if (!reachable(master)) {
        events_.push(now_us_ + params_.info_period_ms * 1000, scheduler::kind::sentinel_repoint,
                     node, 0);
        return;
    }
    const int was_following = n.master_id();
    nodes_[static_cast<std::size_t>(was_following)].detach_replica(node);
    n.follow(nodes_[master], now_us_);
    const std::string text = "re-pointed by Sentinel from n" + std::to_string(was_following) +
                             " to n" + std::to_string(master) + " (" +
                             std::to_string(n.data().size()) + " key(s))";
    mark(world_mark::kind::note, true, node, now_us_, text);
    if (recording()) note_node(node, text);
    sentinel_kills_clients(node);
    observe_all_clients();
}

// Sentinel sends each REPLICAOF it orders (the promotion's REPLICAOF NO ONE too) in a MULTI
// with CLIENT KILL TYPE normal and CLIENT KILL TYPE pubsub: the node closes every client
// connection, command and subscriber alike, and its clients go back to the sentinels.
// A client cut off from the node never hears the FIN: its connection just goes silent.
void world::sentinel_kills_clients(std::uint8_t node) {
    const char* why = "CLIENT KILL by Sentinel";
    for (std::uint8_t c = 0; c < params_.clients; ++c) {
        for (const lane on : {lane::command, lane::subscriber}) {
            if (partitioned(c, node)) {
                break_connection(c, node, false, why, on);
            } else {
                close_from_server(c, node, why, on);
            }
        }
    }
}

// The sentinels' periodic INFO: the offsets a promotion will rank replicas by.
void world::sentinel_info() {
    for (std::uint8_t n = 0; n < config_.nodes; ++n) {
        if (reachable(n)) seen_offset_[n] = nodes_[n].offset();
    }
    events_.push(now_us_ + params_.info_period_ms * 1000, scheduler::kind::sentinel_info, 0, 0);
}

// An old master that is back is made a replica of the current master: it drops its data
// (and with it any lock it granted while it was cut off); its clients' writes meet READONLY.
void world::sentinel_reconfigure(std::uint8_t node) {
    if (!demoted_[node] || !reachable(node)) return;  // away again: node_back() comes later
    const auto master = static_cast<std::uint8_t>(current_master_);
    if (!reachable(master)) {
        events_.push(now_us_ + params_.info_period_ms * 1000, scheduler::kind::sentinel_reconfigure,
                     node, 0);
        return;
    }
    demoted_[node] = false;
    nodes_[node].follow(nodes_[master], now_us_);
    const int now_following = nodes_[node].master_id();
    if (config_.layout == topology::cluster) {
        // It hears the newer configuration from the others and turns into a replica: its
        // clients meet MOVED from then on (nobody kills their connections).
        cluster_view(node, master, node, false);
        const std::string text = "learns it was replaced: a replica of n" +
                                 std::to_string(now_following) + " with " +
                                 std::to_string(nodes_[node].data().size()) + " key(s)";
        mark(world_mark::kind::note, true, node, now_us_, text);
        if (recording()) note_node(node, text);
        observe_all_clients();
        return;
    }
    const std::string text = "reconfigured by Sentinel: a replica of n" +
                             std::to_string(now_following) + " with " +
                             std::to_string(nodes_[node].data().size()) + " key(s)";
    mark(world_mark::kind::note, true, node, now_us_, text);
    if (recording()) note_node(node, text);
    sentinel_kills_clients(node);
    observe_all_clients();
}

// ---- Redis Cluster ----------------------------------------------------------------------------
//
// Redis Cluster, as modelled for the lock's shard (nodes 0 and 1; the scenarios fault no
// other master): its master unreachable for down_after (the node timeout) is marked FAIL,
// and every other node answers keyed commands with CLUSTERDOWN (cluster_fail()); its replica
// is promoted failover_ms later, as the Sentinel model promotes one (the writes not yet
// replicated are lost). The promoted replica serves the slots at once; each other node
// believes the old master until its gossip delay (up to cluster_gossip_ms_max) has passed,
// and stays down meanwhile; the old master, back, serves what already waited in its sockets
// and hears of it within a gossip delay too, then turns into a replica (tests/conformance's
// cluster failover, on a real cluster).

void world::cluster_promoted(std::uint8_t old_master, std::uint8_t promoted) {
    cluster_view(promoted, promoted, old_master, true);
    const std::uint32_t news = failover_epoch_ * 256 + promoted;
    for (std::uint8_t n = 0; n < config_.nodes; ++n) {
        if (n == promoted || n == old_master) continue;
        const std::int64_t lag_ms = rng_.between(1, params_.cluster_gossip_ms_max);
        events_.push(now_us_ + lag_ms * 1000, scheduler::kind::cluster_learn, n, news);
    }
}

// A node that is away hears of it once it answers again (tried every info_period).
void world::cluster_learn(std::uint8_t node, std::uint32_t news) {
    const auto promoted = static_cast<std::uint8_t>(news % 256);
    if (news / 256 != failover_epoch_ || demoted_[node]) return;  // stale, or the old master
    if (!reachable(node)) {
        events_.push(now_us_ + params_.info_period_ms * 1000, scheduler::kind::cluster_learn, node,
                     news);
        return;
    }
    const std::uint8_t replaced = promoted == 0 ? 1 : 0;  // the lock's shard: nodes 0 and 1
    cluster_view(node, promoted, replaced, demoted_[replaced]);
    if (recording()) note_node(node, "hears n" + std::to_string(promoted) + " serves its slots");
}

// What `node` believes from now on: the lock's shard's slots served by `master`, `replica`
// its replica (failed or not).
void world::cluster_view(std::uint8_t node, std::uint8_t master, std::uint8_t replica,
                         bool failed) {
    redis_node& n = nodes_[node];
    // The slots it believed the replaced node served (a slot migrated away stays where it is).
    for (std::uint32_t s = cluster_ranges_[0].first; s <= cluster_ranges_[0].second; ++s) {
        const auto slot = static_cast<std::uint16_t>(s);
        if (n.slot_owner(slot) == replica) n.set_slot_owner(slot, slot, master);
    }
    n.set_member_role(master, -1, false);
    n.set_member_role(replica, master, failed);
    fail_down_[node] = false;      // the slots have a master again,
    minority_down_[node] = false;  // which it heard from the majority
    refresh_cluster_down(node);
}

// The lock's master unreachable for the node timeout is marked FAIL: every other node's
// cluster_state turns fail (cluster-require-full-coverage yes, the default) until it hears of
// the promotion, or, when the master answers again first, until its FAIL is undone (Redis
// clears a master's FAIL once it is reachable and the FAIL is older than twice the node
// timeout). Until then every client is disturbed.
void world::cluster_fail(std::uint8_t master) {
    cluster_failed_us_ = now_us_;
    ++cluster_fail_episode_;
    for (std::uint8_t n = 0; n < config_.nodes; ++n) {
        fail_down_[n] = n != master;
        refresh_cluster_down(n);
    }
    disturbance d;  // until the promotion's news (the promotion and the news disturb too)
    d.to_us = now_us_ + (params_.failover_ms + params_.cluster_gossip_ms_max) * 1000;
    d.everyone = true;
    disturb(d);
    if (recording()) note_node(master, "marked FAIL: cluster_state fail on every other node");
}

void world::cluster_fail_undo(std::uint8_t master, std::uint32_t epoch) {
    if (epoch != failover_epoch_ || !reachable(master) || current_master_ != master) return;
    cluster_failed_us_ = -1;
    for (std::uint8_t n = 0; n < config_.nodes; ++n) {
        fail_down_[n] = false;
        refresh_cluster_down(n);
    }
    if (recording()) note_node(master, "FAIL undone: cluster_state ok");
}

// A node cut off for the node timeout counts the masters it still reaches (itself among
// them, when it is one); fewer than a majority of the masters serving slots, and its
// cluster_state turns fail: it answers keyed commands with CLUSTERDOWN, master or replica.
// This is what narrows a cluster's split brain: the old master stops taking writes.
void world::cluster_minority(std::uint8_t node) {
    if (!isolated(node) || now_us_ - cut_since_us_[node] < params_.down_after_ms * 1000) return;
    std::uint8_t masters = 0;
    std::uint8_t reached = 0;
    for (std::uint8_t m = 0; m < config_.nodes; ++m) {
        if (!nodes_[m].is_master() || demoted_[m]) continue;
        ++masters;
        const bool same_side = m == node || (isolated(m) && side_of_[m] == side_of_[node]);
        reached = static_cast<std::uint8_t>(reached + (same_side ? 1 : 0));
    }
    if (reached > masters / 2) return;
    minority_down_[node] = true;
    refresh_cluster_down(node);
    if (recording()) note_node(node, "in the minority: cluster_state fail");
}

// Back from a cut: a replica sees the majority and is up again at once; a master waits its
// rejoin delay (the node timeout, 500 ms to 5 s) for news of a failover, answering
// CLUSTERDOWN meanwhile; a demoted one stays down until it hears (cluster_view).
void world::cluster_rejoin(std::uint8_t node) {
    cut_since_us_[node] = -1;
    if (!minority_down_[node]) return;
    if (!nodes_[node].is_master()) {
        minority_down_[node] = false;
        refresh_cluster_down(node);
        return;
    }
    const std::int64_t delay_ms = std::clamp<std::int64_t>(params_.down_after_ms, 500, 5000);
    events_.push(now_us_ + delay_ms * 1000, scheduler::kind::cluster_rejoined, node, 0);
    disturbance d;
    d.to_us = now_us_ + delay_ms * 1000;
    d.everyone = true;
    disturb(d);
}

void world::cluster_rejoined(std::uint8_t node) {
    if (isolated(node) || demoted_[node] || !minority_down_[node]) return;
    minority_down_[node] = false;
    refresh_cluster_down(node);
    if (recording()) note_node(node, "rejoin delay over: cluster_state ok");
}

void world::refresh_cluster_down(std::uint8_t node) {
    nodes_[node].set_cluster_down(fail_down_[node] || minority_down_[node]);
}

// A master or replica of another shard answers again: the replica resynchronises from its
// master (nothing of theirs fails over).
void world::other_shard_back(std::uint8_t node) {
    const auto master = static_cast<std::uint8_t>(node & ~1u);
    const auto replica = static_cast<std::uint8_t>(master + 1);
    if (reachable(master) && reachable(replica)) nodes_[replica].follow(nodes_[master], now_us_);
}

// ---- Redis Cluster: the lock's slot migrates ------------------------------------------------
//
// As redis-cli --cluster reshard moves a slot: SETSLOT IMPORTING on the target, MIGRATING on
// the source, then GETKEYSINSLOT and one MIGRATE per key (gap_us apart), then SETSLOT NODE on
// the target and the source. MIGRATE blocks the source while the target RESTOREs the key (with
// the TTL left by the source's clock, from the target's), then deletes it: the source's
// clients never see the key on both, the target's may. The other nodes hear of the new owner
// learn_ms later. A source or target that does not answer holds the migration up (redis-cli
// waits), as does a source paused.

void world::start_migration(const fault& f) {
    const std::uint16_t slot = lock_slot_;
    int target = -1;
    for (std::uint8_t n = 0; n < config_.nodes && target < 0; ++n) {
        if ((f.nodes >> n) & 1u) target = n;
    }
    if (target < 0 || target == f.target || slot_moving_.source >= 0) return;
    disturb_by(f, now_us_);  // until its last step: each is a disturbance of its own
    if (nodes_[f.target].slot_owner(slot) != f.target) return;  // not its slot to move
    // SETSLOT is for masters only ("ERR Please use SETSLOT only with masters."): a move between
    // nodes a failover left as replicas never starts.
    if (!nodes_[f.target].is_master() || !nodes_[static_cast<std::size_t>(target)].is_master())
        return;
    slot_moving_.source = f.target;
    slot_moving_.importer = target;
    slot_moving_.gap_us = std::max<std::int64_t>(1, f.amount) * 1000;
    slot_moving_.learn_ms = f.duration_ms;
    nodes_[static_cast<std::size_t>(target)].set_importing(slot, f.target);
    nodes_[f.target].set_migrating(slot, static_cast<std::uint8_t>(target));
    mark(world_mark::kind::fault, true, f.target, now_us_ + slot_moving_.gap_us, to_text(f));
    if (recording()) note_node(f.target, "MIGRATING slot " + std::to_string(slot));
    events_.push(now_us_ + slot_moving_.gap_us, scheduler::kind::migrate_step, f.target, 0);
}

void world::migrate_step() {
    const std::uint16_t slot = lock_slot_;
    const auto source = static_cast<std::uint8_t>(slot_moving_.source);
    const auto target = static_cast<std::uint8_t>(slot_moving_.importer);
    if (!reachable(source) || !reachable(target)) {
        events_.push(now_us_ + slot_moving_.gap_us, scheduler::kind::migrate_step, source, 0);
        return;
    }
    const std::vector<std::string> keys = nodes_[source].keys_in_slot(slot, node_wall_ms(source));
    if (!keys.empty()) {
        redis_entry copy = *nodes_[source].peek(keys.front(), node_wall_ms(source));
        if (copy.expire_at_ms >= 0)
            copy.expire_at_ms += node_wall_ms(target) - node_wall_ms(source);
        nodes_[target].restore_key(copy, out_.effects);
        flush(target);
        nodes_[source].delete_key(copy.key, out_.effects);
        flush(source);
        if (recording())
            note_node(source, "MIGRATE " + copy.key + " to n" + std::to_string(target));
        events_.push(now_us_ + slot_moving_.gap_us, scheduler::kind::migrate_step, source, 0);
        return;
    }
    nodes_[target].set_slot_owner(slot, slot, target);
    nodes_[source].set_slot_owner(slot, slot, target);
    slot_moving_ = slot_migration{-1, -1, target, 0, slot_moving_.learn_ms};
    if (recording())
        note_node(target, "SETSLOT " + std::to_string(slot) + " NODE n" + std::to_string(target));
    for (std::uint8_t n = 0; n < config_.nodes; ++n) {
        if (n != source && n != target)
            events_.push(now_us_ + slot_moving_.learn_ms * 1000, scheduler::kind::slot_learn, n, 0);
    }
    heal_at(now_us_ + slot_moving_.learn_ms * 1000);
    observe_all_clients();
}

void world::slot_learn(std::uint8_t node) {
    const std::uint16_t slot = lock_slot_;
    nodes_[node].set_slot_owner(slot, slot, static_cast<std::uint8_t>(slot_moving_.owner));
}

}  // namespace edgelock::sim
