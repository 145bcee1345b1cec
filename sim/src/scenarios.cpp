// SPDX-License-Identifier: Apache-2.0
#include "edgelock/sim/scenarios.hpp"

#include "edgelock/limits.hpp"
#include "edgelock/session/limits.hpp"

#include <algorithm>
#include <utility>

namespace edgelock::sim {
namespace {

node_mask all_nodes(const configuration& config) {
    return static_cast<node_mask>((1u << config.nodes) - 1);
}

node_mask bit(int node) { return static_cast<node_mask>(1u << node); }

trigger at_time(std::int64_t ms) { return trigger{false, ms, 0, point::acquired, 1, 0}; }

trigger at_point(std::uint8_t client, point where, std::uint16_t nth, std::int64_t offset_ms) {
    return trigger{true, 0, client, where, nth, offset_ms};
}

fault client_fault(fault_kind kind, std::uint8_t client, trigger when, node_mask nodes,
                   std::int64_t duration_ms, std::int64_t amount) {
    return fault{kind,  when,  false, client, nodes, false, duration_ms, amount, persistence::none,
                 false, false, 1};
}

fault pause(std::uint8_t client, trigger when, std::int64_t duration_ms) {
    return client_fault(fault_kind::pause, client, when, 0, duration_ms, 0);
}

fault node_fault(fault_kind kind, std::uint8_t node, trigger when, std::int64_t duration_ms,
                 std::int64_t amount) {
    fault f = client_fault(kind, node, when, 0, duration_ms, amount);
    f.on_node = true;
    return f;
}

fault crash(std::uint8_t node, trigger when, std::int64_t down_ms, persistence p) {
    fault f = node_fault(fault_kind::crash, node, when, down_ms, 0);
    f.persist = p;
    return f;
}

// Redis Cluster: the lock's slot moves from n0 to n2, one key every gap_ms, the nodes other
// than those two hearing of it learn_ms after.
fault migrate_slot(trigger when, std::int64_t gap_ms, std::int64_t learn_ms) {
    fault f = node_fault(fault_kind::migrate, 0, when, learn_ms, gap_ms);
    f.nodes = bit(2);
    return f;
}

// Redis Cluster: the lock's slot moves from n0 to n2 and back, session::redirects_max + 2
// times in all (more than one request follows redirects in a row), each move starting a
// drawn spell after the one before could have ended, its keys up to a twentieth of a lease
// apart.
void flap_slot(schedule& s, trigger first, std::int64_t learn_ms, const world_params& p,
               prng& rng) {
    std::int64_t at_ms = first.offset_ms;
    for (std::size_t move = 0; move < session::redirects_max + 2; ++move) {
        const std::int64_t gap_ms = rng.between(1, p.ttl_ms / 20);
        trigger when = first;
        when.offset_ms = at_ms;
        s.push_back(migrate_slot(when, gap_ms, learn_ms));
        if (move % 2 == 1) {  // back from n2 to n0
            s.back().target = 2;
            s.back().nodes = bit(0);
        }
        at_ms += 4 * gap_ms + rng.between(p.ttl_ms / 4, p.ttl_ms);
    }
}

// Redlock's split: client a holds on a majority containing `shared`; client b can reach
// only the other nodes and `shared`, so once `shared` forgets a's key, b gets a majority
// of its own. Every other client is cut off for the window.
void split_majorities(schedule& s, const configuration& config, std::uint8_t clients,
                      std::uint8_t a, std::uint8_t b, node_mask a_majority, int shared,
                      std::int64_t window_ms) {
    const node_mask all = all_nodes(config);
    const auto b_majority = static_cast<node_mask>((all & ~a_majority) | bit(shared));
    s.push_back(client_fault(fault_kind::partition, a, at_time(0),
                             static_cast<node_mask>(all & ~a_majority), window_ms, 0));
    s.push_back(client_fault(fault_kind::partition, b, at_time(0),
                             static_cast<node_mask>(all & ~b_majority), window_ms, 0));
    for (std::uint8_t c = 0; c < clients; ++c) {
        if (c != a && c != b)
            s.push_back(client_fault(fault_kind::partition, c, at_time(0), all, window_ms, 0));
    }
}

std::uint32_t every_client(const world_params& p) { return (std::uint32_t{1} << p.clients) - 1; }

std::uint8_t pick_client(const world_params& p, prng& rng) {
    return static_cast<std::uint8_t>(rng.below(p.clients));
}

// Message loss on a random client's paths to `nodes`, from a random instant for a window drawn
// from `window_ms`, losing a rate drawn from `per_million`; connections reset or left silent.
fault random_loss(const world_params& p, prng& rng, node_mask nodes,
                  std::pair<std::int64_t, std::int64_t> window_ms,
                  std::pair<std::int64_t, std::int64_t> per_million) {
    const std::uint8_t who = pick_client(p, rng);
    const std::int64_t at = rng.between(0, p.duration_ms);
    const std::int64_t window = rng.between(window_ms.first, window_ms.second);
    const std::int64_t rate = rng.between(per_million.first, per_million.second);
    fault f = client_fault(fault_kind::loss, who, at_time(at), nodes, window, rate);
    f.reset = rng.chance(500'000);
    return f;
}

std::uint16_t pick_nth(prng& rng) { return static_cast<std::uint16_t>(rng.between(1, 3)); }

// A random majority of the Redlock masters that contains `shared`.
node_mask random_majority(const configuration& config, int shared, prng& rng) {
    node_mask mask = bit(shared);
    int members = 1;
    while (members < quorum_of(config.instances)) {
        const int n = static_cast<int>(rng.below(config.instances));
        if ((mask & bit(n)) != 0) continue;
        mask = static_cast<node_mask>(mask | bit(n));
        ++members;
    }
    return mask;
}

// A quarter of the faults aimed at master `node` hit its own replica instead
// (has_own_replicas), which costs that master its WAITs. Otherwise `node`, nothing drawn.
int maybe_own_replica(const configuration& config, int node, prng& rng) {
    const bool own = has_own_replicas(config) && node < config.instances;
    return own && rng.chance(250'000) ? node + config.instances : node;
}

// The nodes clients talk to: every node may be a master under Sentinel or Cluster; an own
// replica answers no client.
std::uint64_t client_facing_nodes(const configuration& config) {
    return has_own_replicas(config) ? config.instances : config.nodes;
}

// Redlock, in most runs with two clients or more: client c and another one, drawn, each
// reach a different majority sharing `node` for 2 to 4 TTLs. Says whether it split them.
bool maybe_split_majorities(schedule& s, const configuration& config, const world_params& p,
                            std::uint8_t c, int node, prng& rng) {
    if (p.clients < 2 || !rng.chance(700'000)) return false;
    const auto other = static_cast<std::uint8_t>((c + 1 + rng.below(p.clients - 1)) % p.clients);
    const node_mask majority = random_majority(config, node, rng);
    const std::int64_t window = rng.between(2 * p.ttl_ms, 4 * p.ttl_ms);
    split_majorities(s, config, p.clients, c, other, majority, node, window);
    return true;
}

// S3 for a renewal: the holder pauses while a renewal's reply is in flight (shorter than the
// round's timeout, so the reply still counts), then is cut off from every node for longer
// than the lease, so that renewal is its last and its validity runs out. Its clock runs
// slow within the tolerated noise: the lease ends later in true time, which the drift
// allowance must still cover.
void paused_renewal(schedule& s, const configuration& config, const world_params& p, std::uint8_t c,
                    prng& rng) {
    const std::int64_t ttl = p.ttl_ms;
    const std::int64_t attempt = lock_attempt_timeout_ms(p);
    const std::uint16_t nth = pick_nth(rng);
    const std::int64_t pause_ms = rng.between(1, std::max<std::int64_t>(1, attempt - 5));
    const std::int64_t slow_ppm = rng.between(tolerated_clock_ppm / 2, tolerated_clock_ppm);
    const std::int64_t cut_ms = rng.between(2 * ttl, 3 * ttl);
    s.push_back(client_fault(fault_kind::clock_rate, c, at_time(0), 0, 0, -slow_ppm));
    s.push_back(pause(c, at_point(c, point::renew_sent, nth, 0), pause_ms));
    s.push_back(client_fault(fault_kind::partition, c,
                             at_point(c, point::renew_sent, nth, pause_ms + 1), all_nodes(config),
                             cut_ms, 0));
}

// S9: the network splits in two for `window_ms` from `when`. With Sentinel, the master and
// one replica (n1) are on one side, cut off from the sentinels and the other replica (the
// clients on that side are cut off from the sentinels too); with
// Redlock, nodes n0 and n1 (a minority); with Redis Cluster, the lock's master alone (its
// replica, on the other side, is promoted); a single master's side is just itself. Client
// `holder` is on the minority side, every client in `with_holder` (a bit mask) with it,
// the others on the other side: each client reaches only the nodes on its side.
void split_network(schedule& s, const configuration& config, const world_params& p,
                   std::uint8_t holder, trigger when, std::int64_t window_ms,
                   std::uint8_t with_holder) {
    const node_mask all = all_nodes(config);
    const bool alone = config.layout == topology::single || config.layout == topology::cluster;
    const node_mask side = alone ? bit(0) : static_cast<node_mask>(bit(0) | bit(1));
    if (config.layout == topology::sentinel) {
        s.push_back(node_fault(fault_kind::isolate, 0, when, window_ms, 0));
        s.back().nodes = bit(1);
    }
    if (config.layout == topology::cluster)
        s.push_back(node_fault(fault_kind::isolate, 0, when, window_ms, 0));
    for (std::uint8_t c = 0; c < p.clients; ++c) {
        const bool minority = c == holder || ((with_holder >> c) & 1u) != 0;
        const auto unreachable = static_cast<node_mask>(minority ? all & ~side : side);
        if (unreachable == 0) continue;
        s.push_back(client_fault(fault_kind::partition, c, when, unreachable, window_ms, 0));
        s.back().sentinels = minority && config.layout == topology::sentinel;
    }
}

// S6 with Sentinel: Redis 7.0's failover, as reproduced on real processes. The master
// pauses past down_after, the sentinels promote n1, and the master resumes before n2 is
// re-pointed and before it is reconfigured itself. Client 1, which reaches only the old
// master and the replica still following it, takes the lock there once client 0's key is
// gone, and n2 acknowledges its WAIT; client 2 takes it on n1 once n2 is re-pointed there.
// Client 0, the holder, is on the old master's side of the network, cut off from the
// sentinels: no +switch-master reaches it.
void redis_7_failover(schedule& s, const configuration& config, const world_params& p) {
    const std::int64_t ttl = p.ttl_ms;
    s.push_back(node_fault(fault_kind::repl_lag, 0, at_time(0), p.duration_ms, 40));
    s.back().nodes = static_cast<node_mask>(all_nodes(config) & ~bit(0));
    const trigger when = at_point(0, point::acquired, 1, 10);
    s.push_back(node_fault(fault_kind::pause, 0, when, 3 * ttl / 10, 0));
    s.push_back(client_fault(fault_kind::partition, 1, when, bit(1), 3 * ttl, 0));
    // The holder is cut off from the sentinels meanwhile: their +switch-master never reaches
    // it, so it stays with the old master once that one resumes.
    s.push_back(client_fault(fault_kind::partition, 0, when, 0, 3 * ttl, 0));
    s.back().sentinels = true;
}

// S6's master (node 0) goes away: it crashes, its host powers off (no reset: clients wait
// for their timeouts), its process pauses (and then reads what waited, and with Sentinel
// may come back a master nobody names), or, with Sentinel, it is cut off from the sentinels
// and replicas while some clients still reach it and the others do not (split brain until
// it is reconfigured).
void master_goes_away(schedule& s, const configuration& config, const world_params& p, trigger when,
                      prng& rng) {
    const std::int64_t ttl = p.ttl_ms;
    // Redis Cluster fails the lock's shard over as Sentinel does (n1 promoted).
    const bool sentinel = config.layout == topology::sentinel || config.layout == topology::cluster;
    const std::int64_t shape = rng.between(0, sentinel ? 9 : 7);
    const std::int64_t away =
        shape <= 5 ? rng.between(ttl, 3 * ttl) : rng.between(ttl / 2, 3 * ttl);
    if (shape <= 5) {
        s.push_back(crash(0, when, away, persistence::none));
        if (shape >= 4) s.back().kind = fault_kind::power_off;
        return;
    }
    if (shape <= 7) {
        s.push_back(node_fault(fault_kind::pause, 0, when, away, 0));
        if (!sentinel) return;
        // Clients in the old master's part of the network may not reach the replica most
        // likely promoted (n1): they can only come back to the old master.
        for (std::uint8_t c = 0; c < p.clients; ++c) {
            if (rng.chance(250'000))
                s.push_back(client_fault(fault_kind::partition, c, when, bit(1), away + ttl, 0));
        }
        return;
    }
    s.push_back(node_fault(fault_kind::isolate, 0, when, away, 0));
    for (std::uint8_t c = 0; c < p.clients; ++c) {
        if (rng.chance(500'000))
            s.push_back(client_fault(fault_kind::partition, c, when, bit(0), away, 0));
    }
}

}  // namespace

const std::array<scenario_info, scenario_count>& scenarios() noexcept {
    static const std::array<scenario_info, scenario_count> all = {{
        {scenario_id::s1, "S1", "pause after acquire, longer than the TTL (GC pause)"},
        {scenario_id::s2, "S2", "the holder's write delayed in the network beyond the TTL"},
        {scenario_id::s3, "S3", "pause while acquire (or renew) replies are in flight"},
        {scenario_id::s4, "S4", "wall-clock step on a Redis node"},
        {scenario_id::s5, "S5",
         "Redis crash and restart without persistence, or another server at its address"},
        {scenario_id::s6, "S6",
         "the master goes away (crash, power-off, pause, cut off); Sentinel fails over"},
        {scenario_id::s7, "S7", "client clock drift beyond the drift factor, client wall steps"},
        {scenario_id::s8, "S8", "lost reply to release/renew, retried after the lock moved on"},
        {scenario_id::s9, "S9",
         "network partition, clients on both sides (Sentinel: a replica with the old master)"},
        {scenario_id::s10, "S10",
         "memory pressure evicts lock keys (maxmemory with an evicting policy)"},
        {scenario_id::s11, "S11",
         "missed wake-up: the waiter subscribes after the release published (fair)"},
    }};
    return all;
}

const scenario_info* find_scenario(std::string_view code) noexcept {
    for (const scenario_info& s : scenarios()) {
        if (s.code == code) return &s;
    }
    return nullptr;
}

world_params scripted_params(scenario_id id) noexcept {
    world_params p = scripted_params();
    if (id == scenario_id::s6) {
        // Sentinel's slow steps at a second each (a replica's full resynchronisation of a
        // larger data set, a hello period): S6's Sentinel run plays out inside them.
        p.repoint_ms_min = p.ttl_ms;
        p.repoint_ms_max = p.ttl_ms;
        p.reconfigure_ms = 3 * p.ttl_ms / 2;
        p.sentinel_lag_ms_max = p.ttl_ms;
        p.liveness_window_ms += p.repoint_ms_max + p.reconfigure_ms;
    }
    if (id == scenario_id::s7) {
        // The holder must still be working when Redis expires its key: a job longer than
        // the lease, kept alive by renewals until the partition stops them.
        p.work_ms_min = 3 * p.ttl_ms / 2;
        p.work_ms_max = 3 * p.ttl_ms / 2;
        p.liveness_window_ms += p.work_ms_max;  // a job may legitimately hold that long
    }
    if (id == scenario_id::s11) {
        // Two clients; a backoff far above the re-check, so a waiter that misses its wake-up
        // waits for its re-check (1 s), not for a lucky retry.
        p.clients = 2;
        p.retry_delay_ms_min = 10'000;
        p.retry_delay_ms_max = 10'000;
        p.acquire_wait_ms = 4000;
    }
    return p;
}

world_params random_params(scenario_id id, prng& rng) noexcept {
    world_params p = random_params(rng);
    if (id == scenario_id::s6 || id == scenario_id::s9) {
        // Holds that renew, and failovers that finish around the end of the lease the
        // replicas last heard of: where a renewal the replicas never saw matters.
        p.work_ms_min = rng.between(p.ttl_ms / 2, 2 * p.ttl_ms);
        p.work_ms_max = p.work_ms_min + rng.between(0, p.ttl_ms);
        p.down_after_ms = rng.between(p.ttl_ms / 20, p.ttl_ms);
        p.failover_ms = rng.between(0, p.ttl_ms / 2);
        if (id == scenario_id::s6 && rng.chance(250'000)) {  // a quick failover (random_s6)
            p.down_after_ms = rng.between(p.ttl_ms / 40, p.ttl_ms / 10);
            p.failover_ms = rng.between(0, p.ttl_ms / 20);
        }
        p.info_period_ms = std::min(p.info_period_ms, p.down_after_ms);
        p.liveness_window_ms += p.work_ms_max;
    }
    if (id == scenario_id::s7) {
        p.work_ms_min = p.ttl_ms;
        p.work_ms_max = 2 * p.ttl_ms;
        p.liveness_window_ms += p.work_ms_max;
    }
    if (id == scenario_id::s11) {
        // A backoff above a lease: fair waiters then move at their re-check or when woken.
        p.retry_delay_ms_min = rng.between(p.ttl_ms, 3 * p.ttl_ms);
        p.retry_delay_ms_max = p.retry_delay_ms_min;
        p.liveness_window_ms += p.retry_delay_ms_max;
        // Half the runs think long between jobs: a releaser that comes back soon re-publishes
        // the head's wake-up with its own refused attempt, and would make up for a lost one.
        if (rng.chance(500'000)) {
            p.think_ms_min = rng.between(p.ttl_ms, 2 * p.ttl_ms);
            p.think_ms_max = p.think_ms_min + rng.between(0, p.ttl_ms);
        }
        // And half the runs have two clients, so nobody else's refused attempt re-publishes it.
        if (rng.chance(500'000)) p.clients = 2;
    }
    // Drawn last, so every draw above keeps its value: a third of the runs refuse CONFIG GET,
    // and the restart guard must take every node for one without durable data.
    p.config_get_allowed = !rng.chance(333'333);
    return p;
}

namespace {

// S7: client 0's clock runs slow and steps back, client 1's steps forward, then client 0 is
// cut off from every node while it holds.
void push_clock_faults(schedule& s, node_mask all, std::int64_t ttl) {
    s.push_back(client_fault(fault_kind::clock_rate, 0, at_time(0), 0, 0, -80'000));
    s.push_back(client_fault(fault_kind::wall_step, 0, at_time(100), 0, 0, -10'000));
    s.push_back(client_fault(fault_kind::wall_step, 1, at_time(150), 0, 0, 5'000));
    s.push_back(client_fault(fault_kind::partition, 0, at_point(0, point::acquired, 1, 10), all,
                             3 * ttl, 0));
}

// S11: as client 0 releases, client 1's subscriber connection is reset and its SUBSCRIBE
// again takes two thirds of the command timeout (confirmed, but late), so client 0's release
// publishes before client 1 is subscribed and that message is lost: the confirmation must
// start client 1's attempt. Then client 1, holding, pauses past its lease: its key expires
// unannounced, and client 0, refused just before, must find the lock free by its re-check.
void push_missed_wake_up(schedule& s, node_mask all, const world_params& p) {
    fault late =
        client_fault(fault_kind::slow_subscribe, 1, at_point(0, point::release_called, 1, 0), all,
                     p.duration_ms, p.io_timeout_ms * 2 / 3);
    late.reset = true;
    s.push_back(late);
    s.push_back(pause(1, at_point(1, point::acquired, 1, 50), 3 * p.ttl_ms));
}

// S8: the lost release reply is silent: noticed by the reply timeout, so the release is
// queued again and retried on the next connection after another client took the lock (after
// a reset the session reconnects at once, and the retry would beat the next holder). The lost
// renewal reply comes with a reset: renewed again at once.
void push_lost_replies(schedule& s) {
    s.push_back(client_fault(fault_kind::drop_reply, 0, at_point(0, point::release_called, 1, 0),
                             bit(0), 0, 0));
    s.push_back(client_fault(fault_kind::drop_reply, 1, at_point(1, point::renew_sent, 1, 0),
                             bit(0), 0, 0));
    s.back().reset = true;
}

// S6: the master goes away. Behind Sentinel, as Redis 7.0 fails over; otherwise it crashes,
// and in a cluster its replica, promoted a node timeout later, lags 40 ms behind, so the key
// the master granted 10 ms before the crash is not on it.
void push_master_loss(schedule& s, const configuration& config, const world_params& p) {
    if (config.layout == topology::sentinel) {
        redis_7_failover(s, config, p);
        return;
    }
    if (config.layout == topology::cluster) {
        s.push_back(node_fault(fault_kind::repl_lag, 0, at_time(0), p.duration_ms, 40));
        s.back().nodes = bit(1);
    }
    s.push_back(crash(0, at_point(0, point::acquired, 1, 10), 2 * p.ttl_ms, persistence::none));
}

}  // namespace

schedule scripted_schedule(scenario_id id, const configuration& config, const world_params& p) {
    schedule s;
    const std::int64_t ttl = p.ttl_ms;
    const bool redlock = config.layout == topology::redlock;
    const node_mask all = all_nodes(config);
    switch (id) {
        case scenario_id::s1:
            s.push_back(pause(0, at_point(0, point::checked, 1, 0), 5 * ttl / 2));
            break;
        case scenario_id::s2: {
            fault f = client_fault(fault_kind::slow_link, 0, at_point(0, point::checked, 1, 0), 0,
                                   1, 5 * ttl / 2);
            f.resource = true;
            s.push_back(f);
            break;
        }
        case scenario_id::s3:
            s.push_back(pause(0, at_point(0, point::acquire_sent, 1, 0), 2 * ttl));
            break;
        case scenario_id::s4:
            if (redlock) {
                split_majorities(s, config, p.clients, 0, 1, 0b00111, 2, 3 * ttl);
                s.push_back(node_fault(fault_kind::wall_step, 2,
                                       at_point(0, point::acquired, 1, 50), 0, 2 * ttl));
            } else {
                s.push_back(node_fault(fault_kind::wall_step, 0,
                                       at_point(0, point::acquired, 1, 50), 0, 2 * ttl));
            }
            break;
        case scenario_id::s5:
            if (redlock) {
                split_majorities(s, config, p.clients, 0, 1, 0b00111, 2, 3 * ttl);
                s.push_back(crash(2, at_point(0, point::acquired, 1, 20), 50, persistence::none));
            } else {
                // During the second hold (client 0 starts first): the fence counter has
                // counted two holders by then, and the restart takes it back to zero.
                s.push_back(crash(0, at_point(1, point::acquired, 1, 20), 50, persistence::none));
            }
            break;
        case scenario_id::s6: push_master_loss(s, config, p); break;
        case scenario_id::s7: push_clock_faults(s, all, ttl); break;
        case scenario_id::s9:
            split_network(s, config, p, 0, at_point(0, point::acquired, 1, 0), 5 * ttl / 2, 0b001);
            break;
        case scenario_id::s10:
            // Redlock: the node both majorities share evicts (volatile-*), as in S5. Otherwise the
            // master evicts during the second hold with allkeys-*, the fence counter with the key.
            if (redlock) {
                split_majorities(s, config, p.clients, 0, 1, 0b00111, 2, 3 * ttl);
                s.push_back(
                    node_fault(fault_kind::evict, 2, at_point(0, point::acquired, 1, 20), 0, 0));
            } else {
                s.push_back(
                    node_fault(fault_kind::evict, 0, at_point(1, point::acquired, 1, 20), 0, 1));
            }
            break;
        case scenario_id::s11: push_missed_wake_up(s, all, p); break;
        case scenario_id::s8:
            push_lost_replies(s);
            // Redis Cluster: the lock's slot moves to n2 during client 0's first hold, its
            // keys 100 ms apart, the other nodes hearing of it 200 ms after: the retries meet
            // ASK and MOVED (docs/SIMULATION.md, "Redis Cluster").
            if (config.layout == topology::cluster)
                s.push_back(migrate_slot(at_point(0, point::acquired, 1, 50), 100, 200));
            break;
    }
    return s;
}

namespace {

// One scenario family's random faults, most of them around client c. Every draw is a
// statement of its own: the order in which a call's arguments are evaluated differs between
// compilers, and a seed must mean the same schedule everywhere.
void random_s1(schedule& s, const configuration& /*config*/, const world_params& p,
               std::uint8_t /*c*/, prng& rng) {
    const std::int64_t ttl = p.ttl_ms;
    const std::int64_t count = rng.between(1, 2);
    for (std::int64_t i = 0; i < count; ++i) {
        static constexpr point where[] = {point::checked, point::checked, point::acquired,
                                          point::read_done};
        const std::uint8_t who = pick_client(p, rng);
        const point at = where[rng.below(4)];
        const std::uint16_t nth = pick_nth(rng);
        const std::int64_t duration = rng.between(ttl / 4, 3 * ttl);
        s.push_back(pause(who, at_point(who, at, nth, 0), duration));
    }
}

void random_s2(schedule& s, const configuration& /*config*/, const world_params& p, std::uint8_t c,
               prng& rng) {
    const std::int64_t ttl = p.ttl_ms;
    const std::uint16_t nth = pick_nth(rng);
    const std::int64_t delay = rng.between(ttl / 4, 3 * ttl);
    fault f =
        client_fault(fault_kind::slow_link, c, at_point(c, point::checked, nth, 0), 0, 1, delay);
    f.resource = true;
    s.push_back(f);
    if (rng.chance(500'000)) {
        const std::uint8_t who = pick_client(p, rng);
        const std::int64_t at = rng.between(0, p.duration_ms);
        const std::int64_t window = rng.between(10, 500);
        const std::int64_t extra = rng.between(10, 2 * ttl);
        fault g = client_fault(fault_kind::slow_link, who, at_time(at), 0, window, extra);
        g.resource = true;
        s.push_back(g);
    }
}

void random_s3(schedule& s, const configuration& config, const world_params& p, std::uint8_t c,
               prng& rng) {
    const std::int64_t ttl = p.ttl_ms;
    const node_mask all = all_nodes(config);
    if (rng.chance(333'333)) {
        paused_renewal(s, config, p, c, rng);
        return;
    }
    const auto nth = static_cast<std::uint16_t>(rng.between(1, 4));
    // A third of the pauses end right around the end of validity: the boundary the
    // lease arithmetic must get exactly right.
    const std::int64_t edge = ttl - lock_drift_ms(p);
    const std::int64_t duration =
        rng.chance(333'333) ? rng.between(edge - ttl / 10, ttl) : rng.between(ttl / 2, 3 * ttl);
    s.push_back(pause(c, at_point(c, point::acquire_sent, nth, 0), duration));
    if (rng.chance(500'000)) {
        const std::uint8_t who = pick_client(p, rng);
        const std::uint16_t which = pick_nth(rng);
        const std::int64_t window = rng.between(1, 5);
        const std::int64_t extra = rng.between(ttl / 2, 2 * ttl);
        s.push_back(client_fault(fault_kind::slow_link, who,
                                 at_point(who, point::acquire_sent, which, 0), all, window, extra));
    }
}

void random_s4_s5(scenario_id id, schedule& s, const configuration& config, const world_params& p,
                  std::uint8_t c, prng& rng) {
    const std::int64_t ttl = p.ttl_ms;
    const bool redlock = config.layout == topology::redlock;
    int node = redlock ? static_cast<int>(rng.below(config.instances)) : 0;
    if (!redlock && rng.chance(250'000)) node = static_cast<int>(rng.below(config.nodes));
    const bool split = redlock && maybe_split_majorities(s, config, p, c, node, rng);
    const std::uint16_t nth = pick_nth(rng);
    const auto target = static_cast<std::uint8_t>(maybe_own_replica(config, node, rng));
    if (id == scenario_id::s4) {
        const std::int64_t offset = rng.between(0, 300);
        const std::int64_t step =
            rng.chance(800'000) ? rng.between(ttl / 2, 3 * ttl) : -rng.between(ttl / 2, 3 * ttl);
        s.push_back(node_fault(fault_kind::wall_step, target,
                               at_point(c, point::acquired, nth, offset), 0, step));
    } else {
        // Mostly quick restarts early in a hold (the dangerous case), sometimes not.
        const std::int64_t offset = rng.between(0, 100);
        const std::int64_t down =
            rng.chance(700'000) ? rng.between(0, ttl / 5) : rng.between(0, 2 * ttl);
        const persistence persist = rng.chance(700'000) ? persistence::none : persistence::everysec;
        s.push_back(crash(target, at_point(c, point::acquired, nth, offset), down, persist));
        // A quarter of the runs where every client reads every node from the start put another
        // server behind the address instead (a VIP or DNS name re-pointed, a container
        // replaced): up for less than half a lease, or for hours, when only its run_id tells
        // it from the one the clients knew. A client whose first reading is the new server
        // (cut off at first, linking on demand, or linking a cluster node on first need) cannot
        // tell: the guard's promise leaves it out, and a scripted run shows it
        // (world_nodes_test). So the replacement waits for c's second hold at least, when
        // every client linked long ago.
        const bool all_read_first = !split && config.layout != topology::cluster &&
                                    (p.on_demand_clients & every_client(p)) == 0;
        if (all_read_first && rng.chance(250'000)) {
            s.back().kind = fault_kind::replace;
            s.back().when.nth = std::max<std::uint16_t>(s.back().when.nth, 2);
            s.back().amount =
                rng.chance(500'000) ? rng.between(0, ttl / 2) : rng.between(3'600'000, 86'400'000);
        }
    }
}

void random_s6(schedule& s, const configuration& config, const world_params& p, std::uint8_t c,
               prng& rng) {
    const std::int64_t ttl = p.ttl_ms;
    const node_mask all = all_nodes(config);
    // Sentinel, with a failover drawn quick (within a tenth of a lease, random_params): the
    // master is cut off from the sentinels and its replicas just after a renewal, for longer
    // than a lease, while every client still reaches it; no replication lag. The sentinels fail
    // it over and announce it: a holder that follows the announcement renews on the promoted
    // replica, one that waits for its old master to fail it loses a lock the new master keeps.
    if (config.layout == topology::sentinel && p.down_after_ms * 10 <= ttl) {
        const std::uint16_t nth = pick_nth(rng);  // one draw per statement: a fixed order
        const trigger when = at_point(c, point::renew_sent, nth, rng.between(0, 30));
        s.push_back(node_fault(fault_kind::isolate, 0, when, rng.between(2 * ttl, 4 * ttl), 0));
        return;
    }
    if (config.layout == topology::sentinel || config.layout == topology::cluster) {
        const std::int64_t lag = rng.between(0, 200);
        s.push_back(node_fault(fault_kind::repl_lag, 0, at_time(0), p.duration_ms + 2 * ttl, lag));
        s.back().nodes = static_cast<node_mask>(all & ~bit(0));
    }
    // Anywhere in a hold: early, just after a renewal went out (its replication
    // still lagging), or late in a long job.
    const std::uint16_t nth = pick_nth(rng);
    // 0: early in a hold, 1: late in a long job, 2 and 3: just after a renewal.
    const std::int64_t shape = rng.between(0, 3);
    const point where = shape >= 2 ? point::renew_sent : point::acquired;
    const std::int64_t offset = shape == 0   ? rng.between(0, 100)
                                : shape == 1 ? rng.between(0, p.work_ms_max)
                                             : rng.between(0, 30);
    master_goes_away(s, config, p, at_point(c, where, nth, offset), rng);
}

void random_s7(schedule& s, const configuration& config, const world_params& p, std::uint8_t c,
               prng& rng) {
    const std::int64_t ttl = p.ttl_ms;
    const node_mask all = all_nodes(config);
    const std::int64_t rate =
        rng.chance(800'000) ? -rng.between(20'000, 150'000) : rng.between(20'000, 150'000);
    s.push_back(client_fault(fault_kind::clock_rate, c, at_time(0), 0, 0, rate));
    const std::int64_t steps = rng.between(0, 2);
    for (std::int64_t i = 0; i < steps; ++i) {
        const std::uint8_t who = pick_client(p, rng);
        const std::int64_t at = rng.between(0, p.duration_ms);
        const std::int64_t jump = rng.between(-60'000, 60'000);
        s.push_back(client_fault(fault_kind::wall_step, who, at_time(at), 0, 0, jump));
    }
    const std::uint16_t nth = pick_nth(rng);
    const std::int64_t offset = rng.between(0, 100);
    const std::int64_t window = rng.between(ttl, 3 * ttl);
    s.push_back(client_fault(fault_kind::partition, c, at_point(c, point::acquired, nth, offset),
                             all, window, 0));
}

void random_s8(schedule& s, const configuration& config, const world_params& p, std::uint8_t c,
               prng& rng) {
    const node_mask all = all_nodes(config);
    const std::int64_t count = rng.between(1, 3);
    for (std::int64_t i = 0; i < count; ++i) {
        const std::uint8_t who = pick_client(p, rng);
        const point at = rng.chance(500'000) ? point::release_called : point::renew_sent;
        const std::uint16_t nth = pick_nth(rng);
        const int node = static_cast<int>(rng.below(client_facing_nodes(config)));
        const bool everywhere = rng.chance(300'000);
        fault f = client_fault(fault_kind::drop_reply, who, at_point(who, at, nth, 0),
                               everywhere ? all : bit(node), 0, 0);
        f.count = static_cast<std::uint16_t>(rng.between(1, 2));
        f.reset = rng.chance(500'000);
        s.push_back(f);
    }
    if (rng.chance(500'000)) s.push_back(random_loss(p, rng, all, {50, 1000}, {10'000, 200'000}));
    // Redis Cluster: the lock's slot moves to n2 anywhere in a hold, its keys a few ms to a
    // lease apart, the others hearing late or not; in half the runs it moves back later, and
    // then in half of those on to n2 again at once, slowly (a client idle through the move
    // back still holds the ASK of the first move when the third begins). In a quarter of the
    // others it moves back and forth more often than one request follows redirects.
    if (config.layout != topology::cluster) return;
    const std::int64_t gap_ms = rng.between(1, p.ttl_ms);
    const std::int64_t learn_ms = rng.between(0, 2 * p.ttl_ms);
    const point where = rng.chance(500'000) ? point::acquired : point::renew_sent;
    const std::int64_t offset_ms = rng.between(0, p.ttl_ms / 2);
    const std::uint16_t nth = pick_nth(rng);
    if (rng.chance(250'000)) {
        flap_slot(s, at_point(c, where, nth, offset_ms), learn_ms, p, rng);
        return;
    }
    s.push_back(migrate_slot(at_point(c, where, nth, offset_ms), gap_ms, learn_ms));
    if (!rng.chance(500'000)) return;
    const std::int64_t back_ms = offset_ms + rng.between(p.ttl_ms, 3 * p.ttl_ms);
    const std::int64_t back_gap_ms = rng.chance(500'000) ? 1 : rng.between(1, p.ttl_ms);
    s.push_back(migrate_slot(at_point(c, where, nth, back_ms), back_gap_ms, learn_ms));
    s.back().target = 2;
    s.back().nodes = bit(0);
    if (!rng.chance(500'000)) return;
    const std::int64_t again_ms = back_ms + back_gap_ms * 2 + rng.between(1, p.ttl_ms / 4);
    s.push_back(migrate_slot(at_point(c, where, nth, again_ms), rng.between(p.ttl_ms, 3 * p.ttl_ms),
                             learn_ms));
}

// S9 anywhere in a hold: early, late, or just after a renewal; each other client on either side.
void random_s9(schedule& s, const configuration& config, const world_params& p, std::uint8_t c,
               prng& rng) {
    const std::int64_t ttl = p.ttl_ms;
    const std::uint16_t nth = pick_nth(rng);
    const point where = rng.chance(500'000) ? point::renew_sent : point::acquired;
    const std::int64_t offset = rng.between(0, 100);
    const std::int64_t window = rng.between(ttl / 2, 3 * ttl);
    const auto with_holder = static_cast<std::uint8_t>(rng.below(1u << p.clients));
    split_network(s, config, p, c, at_point(c, where, nth, offset), window, with_holder);
}

// S10: one node evicts under memory pressure, once or twice, early in a hold or just after a
// renewal; with Redlock, as in S5, often while two clients' majorities share that node.
void random_s10(schedule& s, const configuration& config, const world_params& p, std::uint8_t c,
                prng& rng) {
    const bool redlock = config.layout == topology::redlock;
    const int node = redlock ? static_cast<int>(rng.below(config.instances)) : 0;
    if (redlock) maybe_split_majorities(s, config, p, c, node, rng);
    const auto target = static_cast<std::uint8_t>(maybe_own_replica(config, node, rng));
    const std::int64_t all_keys = rng.chance(500'000) ? 1 : 0;
    const std::int64_t count = rng.between(1, 2);
    for (std::int64_t i = 0; i < count; ++i) {
        const point where = rng.chance(700'000) ? point::acquired : point::renew_sent;
        const std::uint16_t nth = pick_nth(rng);
        const std::int64_t offset = rng.between(0, 100);
        s.push_back(
            node_fault(fault_kind::evict, target, at_point(c, where, nth, offset), 0, all_keys));
    }
}

// Subscriptions confirmed late (every client's, by up to the command timeout: later, the
// client gives the SUBSCRIBE up and connects again, and its re-checks alone find the lock),
// the subscriber connection sometimes reset first, and now and then a burst of lost messages
// that breaks subscriber connections, whose SUBSCRIBE is then late again: wake-ups published
// in between are lost. Sometimes a holder pauses past its lease (its
// key expires unannounced: the waiters' re-check finds it). Half the clients' command connections
// are slow (their wake-ups, on the subscriber connection, are not), so a wake-up often arrives
// while an attempt refused just before is still on its way back.
void random_s11(schedule& s, const configuration& config, const world_params& p, prng& rng) {
    const node_mask all = all_nodes(config);
    const std::int64_t timeout_ms =
        std::min({lock_attempt_timeout_ms(p), p.io_timeout_ms, p.connect_timeout_ms});
    const std::int64_t slow_ms_max = std::max<std::int64_t>(2, timeout_ms / 6);
    for (std::uint8_t c = 0; c < p.clients; ++c) {
        if (rng.chance(750'000)) {
            const std::int64_t late_ms = rng.between(0, p.io_timeout_ms);
            const std::int64_t at_ms = rng.between(0, p.duration_ms / 2);
            fault late = client_fault(fault_kind::slow_subscribe, c, at_time(at_ms), all,
                                      p.duration_ms, late_ms);
            late.reset = rng.chance(500'000);
            s.push_back(late);
        }
        if (rng.chance(500'000)) {
            s.push_back(client_fault(fault_kind::slow_link, c, at_time(0), all, p.duration_ms,
                                     rng.between(1, slow_ms_max)));
        }
    }
    // A holder paused well past its lease: its key expires, nothing is published, and it is
    // not back soon to publish with its release.
    // Draws in sequenced statements only: the order in which a call's arguments are evaluated
    // differs between compilers and targets, and a run must replay alike on each.
    if (rng.chance(400'000)) {
        const std::uint8_t who = pick_client(p, rng);
        const int nth = pick_nth(rng);
        const std::int64_t after_ms = rng.between(0, p.ttl_ms / 2);
        const std::int64_t paused_ms = rng.between(2 * p.ttl_ms, 4 * p.ttl_ms);
        s.push_back(pause(who, at_point(who, point::acquired, nth, after_ms), paused_ms));
    }
    if (rng.chance(300'000)) s.push_back(random_loss(p, rng, all, {10, 200}, {100'000, 500'000}));
}

}  // namespace

schedule random_schedule(scenario_id id, const configuration& config, const world_params& p,
                         prng& rng) {
    schedule s;
    const std::uint8_t c = pick_client(p, rng);
    switch (id) {
        case scenario_id::s1: random_s1(s, config, p, c, rng); break;
        case scenario_id::s2: random_s2(s, config, p, c, rng); break;
        case scenario_id::s3: random_s3(s, config, p, c, rng); break;
        case scenario_id::s4: random_s4_s5(id, s, config, p, c, rng); break;
        case scenario_id::s5: random_s4_s5(id, s, config, p, c, rng); break;
        case scenario_id::s6: random_s6(s, config, p, c, rng); break;
        case scenario_id::s7: random_s7(s, config, p, c, rng); break;
        case scenario_id::s8: random_s8(s, config, p, c, rng); break;
        case scenario_id::s9: random_s9(s, config, p, c, rng); break;
        case scenario_id::s10: random_s10(s, config, p, c, rng); break;
        case scenario_id::s11: random_s11(s, config, p, rng); break;
    }
    return s;
}

schedule random_faults(const configuration& config, const world_params& params, prng& rng) {
    schedule s;
    const std::int64_t families = rng.between(1, 3);
    for (std::int64_t i = 0; i < families; ++i) {
        const auto id = static_cast<scenario_id>(
            rng.below(config.fair ? scenario_count : debate_scenario_count));
        const schedule part = random_schedule(id, config, params, rng);
        s.insert(s.end(), part.begin(), part.end());
    }
    return s;
}

}  // namespace edgelock::sim
