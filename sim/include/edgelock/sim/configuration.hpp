// SPDX-License-Identifier: Apache-2.0
// edgelock sim: the deployments under test and the parameters of one run.
//
// A configuration is what a user chooses: one Redis, one Redis behind Sentinel (with or
// without WAIT), or Redlock over five independent masters; with or without fencing tokens;
// for Redlock, whether crashed nodes are kept down longer than any lease before they
// rejoin (antirez's "delayed restart"); and whether the lock runs its restart guard (the
// client reads each node's uptime and persistence and keeps a node that restarted without
// durable data out of the quorum for a TTL plus drift: lock.hpp, "Restarts"). world_params are the
// knobs of the simulated world: lease length, how many clients and how they behave, network
// latencies, timeouts. Scripted scenarios use fixed parameters; random schedules draw them from the
// seed.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "edgelock/lock.hpp"
#include "edgelock/session/fault_points.hpp"
#include "edgelock/sim/prng.hpp"

namespace edgelock::sim {

// Capacities of the simulated world (the containers are sized from them).
inline constexpr std::size_t clients_max = 4;
inline constexpr std::size_t nodes_max = 14;  // redlock-7+WAIT: seven masters, a replica each
inline constexpr std::size_t sentinel_processes_max = 3;
// Everything a client may connect to: the Redis nodes, then the sentinels (addresses.hpp).
inline constexpr std::size_t servers_max = nodes_max + sentinel_processes_max;

enum class topology : std::uint8_t {
    single,    // one master, no replica
    sentinel,  // one master and two asynchronous replicas, Sentinel fails over on a crash; the
               // lock asks the sentinels where the master is
    redlock,   // independent masters, a lock needs a majority of them
    cluster,   // Redis Cluster: three shards of a master and an asynchronous replica each
               // (n0 and n1 serve the slot of the lock's name, n2/n3 and n4/n5 the rest);
               // the lock reads the slot map from the nodes and follows MOVED and ASK
               // (session/cluster_route.hpp). A master unreachable for down_after is
               // replaced by its replica, the other nodes hearing of it after a gossip delay
               // (world_nodes.cpp, "Redis Cluster")
};

struct configuration {
    std::string_view name;
    topology layout = topology::single;
    std::uint8_t instances = 1;         // lock_config::instances
    std::uint8_t nodes = 1;             // Redis processes in the world
    bool fencing = false;               // fence tokens, and the resource checks them
    std::uint8_t replicas_to_wait = 0;  // lock_config::replicas_to_wait (WAIT)
    bool delayed_restart = false;       // crashed nodes stay down longer than any lease
    std::uint8_t sentinels = 0;         // Sentinel processes the lock asks for the master
    bool restart_guard = false;         // lock_config::restart_guard_ms default (else 0: off)
    // lock_config::fair: waiters line up in Redis and are woken by PUBLISH; a client keeps a
    // subscriber connection to its master (under Cluster, its slot's: world_pubsub.cpp).
    // One instance only.
    bool fair = false;
    // lock_config::permits: a semaphore of this many holders (1: the lock). One instance
    // only; the world's clients number one more (make_spec), so that one of them waits.
    std::uint16_t permits = 1;
};

inline constexpr std::size_t configuration_count = 22;
// The rows before Redis Cluster's: their configuration_index is their place, as it always was.
inline constexpr std::size_t first_configuration_count = 14;
// The rows before the semaphore's (the first ones and Redis Cluster's).
inline constexpr std::size_t second_configuration_count = 17;

// The configurations of the safety matrix, in matrix order.
const std::array<configuration, configuration_count>& configurations() noexcept;

// Deployments the matrix leaves out, each run only when asked for by name (`run`, `explore`,
// `matrix --config`) and soaked by `soak --one-off`: with the matrix's rows, every lock the
// CLI and the core accept (tests/cli/cli_rows_test.cpp): Redlock over 3 or 7 masters, every
// fencing / guard / WAIT / fair combination of each deployment, WAIT over one Redis or
// Redlock (each master with a replica of its own), and every fencing / guard / WAIT / fair
// combination of a semaphore on one Redis, Sentinel and a cluster. `edgelock check` simulates the
// row of the deployment it read, and the matrix (and the README's grid, and soak) stays the rows it
// was.
inline constexpr std::size_t one_off_configuration_count = 99;
// The one-off rows before Redis Cluster's: their configuration_index is as it always was; the
// later ones (cluster+fencing and the like) come after every matrix row.
inline constexpr std::size_t first_one_off_configuration_count = 13;
// The one-off rows before the semaphore's.
inline constexpr std::size_t second_one_off_configuration_count = 56;
const std::array<configuration, one_off_configuration_count>& one_off_configurations() noexcept;

// The configuration named `name` (in the matrix or one-off), or null.
const configuration* find_configuration(std::string_view name) noexcept;
// Its index: 0..first_configuration_count-1 for the matrix's first rows, then the one-off
// ones in their order, then the matrix's later rows (Redis Cluster's), then the later one-off
// rows, then the semaphore's matrix rows, then its one-off rows, so that every configuration
// that was there keeps its index; the random runs of a cell draw their seeds from it (matrix.hpp,
// cell_seed).
std::size_t configuration_index(const configuration& config) noexcept;
// The configuration at configuration_index `index`.
const configuration& configuration_at(std::size_t index) noexcept;
// Whether the matrix has a row of it (else it is one-off, run only when asked for by name).
bool in_matrix(const configuration& config) noexcept;
// One Redis or Redlock with WAIT: each master i has a replica of its own, node instances + i,
// which no Sentinel manages and no client talks to.
bool has_own_replicas(const configuration& config) noexcept;

struct world_params {
    // The lock's own knobs (lock_config); zero or -1 mean the lock's default, as there.
    std::int64_t ttl_ms = 1000;             // lease length
    std::int64_t drift_ms = -1;             // drift allowance; -1: the default (resolved_lock)
    std::int64_t renew_interval_ms = 0;     // 0: the lock's default
    std::int64_t attempt_timeout_ms = 0;    // 0: the lock's default
    bool watchdog = true;                   // renew while held
    std::uint8_t clients = 3;               // workload clients contending for one lock
    std::int64_t acquire_wait_ms = 2000;    // each acquire() may retry this long
    std::int64_t retry_delay_ms_min = 20;   // lock backoff base
    std::int64_t retry_delay_ms_max = 200;  // lock backoff cap
    std::int64_t start_ms_max = 30;         // client c starts within [c * 7, ...] ms
    std::int64_t think_ms_min = 20;         // pause between jobs
    std::int64_t think_ms_max = 100;
    std::int64_t work_ms_min = 400;  // time between the read and the write of a job
    std::int64_t work_ms_max = 400;
    std::int64_t job_timeout_ms = 500;  // a resource request unanswered this long is given up
    std::int64_t io_timeout_ms =
        150;  // the session's command timeout: a reply this late drops the connection
    // The session's reconnect delay (session/reconnect.hpp): full jitter below a cap that
    // starts at reconnect_ms_min and doubles with each failed attempt up to reconnect_ms_max.
    // A connection that was up is made again at once, as in the real clients.
    std::int64_t reconnect_ms_min = 10;
    std::int64_t reconnect_ms_max = 40;
    std::int64_t connect_timeout_ms =
        100;  // connect and handshake of one attempt (or one sentinel's answer)
    std::int64_t path_us_min = 200;  // one-way latency of a path, drawn once per path
    std::int64_t path_us_max = 1000;
    std::uint32_t tail_per_million = 20'000;  // chance a message meets a long-tail delay
    std::int64_t tail_ms_max = 20;            // the long tail reaches this far
    std::int64_t repl_us_min = 500;           // replication latency master -> replica
    std::int64_t repl_us_max = 3000;
    std::int64_t down_after_ms = 100;  // Sentinel: master down this long -> failover
    std::int64_t failover_ms = 0;      // Sentinel: from detection to the promotion
    // Sentinel: how often the sentinels look at the nodes (PING, INFO). Detection takes
    // down_after plus up to one period; a promotion ranks replicas by the offsets their last
    // INFO showed. At most down_after (real Sentinel: 1 s while a master is down, against a
    // down-after of seconds), so the offsets a promotion sees were read after the master
    // stopped answering.
    std::int64_t info_period_ms = 50;
    // Sentinel: an old master that is back (restarted, resumed, reachable again) stays a
    // master, accepting writes, until the sentinels reconfigure it as a replica this long later.
    // (Redis 7.0 waits until it has reported the master role for four hello periods, 8 s,
    // seen at INFOs it sends every 10 s: 10 to 20 s.)
    std::int64_t reconfigure_ms = 100;
    // Sentinel: a replica that comes back still following a replaced master is re-pointed
    // only this long later (Redis 7.0: failover-timeout since its last reconfiguration, 180 s
    // by default); until then it follows, and acknowledges the WAITs of, the old master.
    std::int64_t failover_timeout_ms = 180'000;
    // Sentinel, after a promotion (Redis 7.0 with parallel-syncs 1): the other replicas of the
    // old master are re-pointed to the new one one at a time, each this long after the one
    // before (drawn per replica from the world's PRNG in [min, max]); until then a replica
    // still follows the old master and acknowledges its WAITs once it is back.
    std::int64_t repoint_ms_min = 20;
    std::int64_t repoint_ms_max = 200;
    // Sentinel: the leader of a failover knows the new master at once; each other sentinel
    // learns of it up to this long after (drawn per sentinel: Redis 7.0's sentinels hear it
    // from the leader's hello messages, sent every 2 s), and names the old master until then.
    std::int64_t sentinel_lag_ms_max = 100;
    // Redis Cluster: each node other than the promoted replica hears of a failover up to this
    // long after it (drawn per node: the winner broadcasts a PONG to every node it reaches
    // at once, so a node it reaches hears within a round trip and a few cluster cron runs;
    // one it does not, once it is reachable again). down_after is the node timeout,
    // failover_ms the replica's election delay.
    std::int64_t cluster_gossip_ms_max = 100;
    // Sentinel: replica-serve-stale-data (Redis's default yes); no: a replica whose link to
    // its master is down answers MASTERDOWN.
    bool replica_serve_stale_data = true;
    // Sentinel: replica-read-only (Redis's default yes); no: a replica takes writes for
    // itself, and a client that reaches one without checking ROLE takes a lock there.
    bool replica_read_only = true;
    // A node that starts loads its data set for up to this long (drawn per start), answering
    // LOADING meanwhile.
    std::int64_t loading_ms_max = 0;
    // The chance a reply on a command connection reaches the client in two reads, cut at a
    // drawn byte (the session's parser then holds a partial reply).
    std::uint32_t split_reply_per_million = 0;
    std::int64_t delayed_restart_ms = 1500;  // delayed restart: down at least this long (> ttl)
    std::int64_t duration_ms = 2500;         // the workload runs at least this long
    std::int64_t liveness_window_ms = 2000;  // after the last fault heals, the lock must be taken
    std::int32_t clock_ppm_max = 200;        // every clock's rate error is within +-this
    std::int64_t wall_skew_us_max = 1000;    // Redis wall clocks agree within this
    // false: the nodes' ACL refuses SCRIPT LOAD (NOPERM), as some managed Redis services do.
    // The handshake goes on without it (session/handshake.hpp), so every fresh connection
    // meets NOSCRIPT and the lock falls back to EVAL itself.
    bool script_load_allowed = true;
    // Lock requests a client keeps unanswered on one connection. 0: no limit, every request
    // written as soon as it is queued (both real clients pipeline). 1: one at a time, as a
    // transport whose socket buffer is full holds the next request back (the async client's
    // waiters): a connection can then be lost with requests still queued unwritten behind
    // one in flight, which pipelining never shows.
    std::uint8_t write_window = 0;
    // false: the nodes' ACL refuses CONFIG GET (NOPERM), as managed Redis services often do:
    // the guard cannot learn the fsync policy and treats every node as not durable.
    bool config_get_allowed = true;
    // The chance, per million, that a node is a Redis before 7.0, which refuses SET with both
    // NX and GET (a syntax error): the lock falls back to the acquire script on that node's
    // connection (lock.hpp, "The acquire on the wire"). Drawn for each node, so a Sentinel
    // failover may move the lock between an old and a new server, as a rolling upgrade does.
    std::uint32_t old_server_per_million = 0;
    // How long each node has run when the world starts: guarded clients find them counting.
    std::int64_t node_uptime_ms = 24 * 3600 * 1000;
    std::int64_t stock = 1'000'000;  // initial value of the protected resource
    // Fair locks: lock_config::recheck_ms (0: the lock's default). The line entry's expiry
    // is the lock's default, 2 * (recheck + attempt timeout).
    std::int64_t recheck_ms = 0;
    // The chance, per million, that a client cancels an acquire (the CLI's SIGINT, the C
    // API's edgelock_cancel: lock::release while acquiring), at an instant drawn within its
    // wait: mid-backoff, mid-request, while first in line.
    std::uint32_t cancel_per_million = 0;
    // The chance, per million, that a client other than client 0 that cancels then closes for
    // good, as the CLI does on SIGINT and a C API user with edgelock_close: its cleanups get a
    // command timeout, then its connections close and it never comes back.
    std::uint32_t leave_per_million = 0;
    // The chance, per million, that a client working under the lock releases it at the instant
    // a renewal goes out, so the release races the renewal's answer.
    std::uint32_t release_at_renewal_per_million = 0;
    // Clients (bit i: client i) whose instances' links connect on demand, as the blocking
    // client's and so the C API's do; the others connect eagerly, as the async client's
    // (session/linking.hpp). Over Redis Cluster both kinds work their node links alike.
    std::uint32_t on_demand_clients = 0;
    // The chance, per million, that each fault point (session/fault_points.hpp, indexed by
    // session::fault_point) fires when a client's lock links reach it; 0: off.
    // close_after_reply fails the connection right after an answer, delay_wait holds a WAIT
    // back for up to half a lease, late_node_start tells the lock a node's start at its next
    // write there, fail_map_read leaves a read slot map stale.
    std::array<std::uint32_t, session::fault_point_count> fault_point_per_million{};
};

// Clock rate errors the default drift allowance (ttl/100 + 2 ms) absorbs: a client clock
// this slow against a Redis clock this fast loses 0.8% of a lease, within the 1%.
inline constexpr std::int32_t tolerated_clock_ppm = 4'000;

// The lock's knobs under `params` with the core's defaults filled in where the params leave
// them to it (edgelock::resolve, the one place the defaults are computed), and the values
// the judge reads of it: the drift allowance, attempt timeout, re-check interval, line
// entry expiry and restart guard (the world's clients run with restart_guard_ms -1, the
// default, whenever the configuration has a guard). A mutant of a core default moves these
// with it, as it moves every client's lock: scripts/mutation-score.sh measures whether the
// simulator still tells it apart.
lock_config resolved_lock(const world_params& params) noexcept;
// The same knobs as the params give them, defaults left to the core: what the world's
// clients configure (with the configuration's own fields added).
lock_config params_lock(const world_params& params) noexcept;
std::int64_t lock_drift_ms(const world_params& params) noexcept;
std::int64_t lock_attempt_timeout_ms(const world_params& params) noexcept;
std::int64_t lock_recheck_ms(const world_params& params) noexcept;
std::int64_t lock_queue_entry_ttl_ms(const world_params& params) noexcept;
std::int64_t lock_restart_guard_ms(const world_params& params) noexcept;
// A fair configuration's own knob, drawn apart from random_params (which every
// configuration shares, so the others' draws stay as they were): recheck_ms, the lock's
// default in half the runs, else ttl/10 + 10 .. ttl.
void draw_fair_knobs(world_params& params, prng& rng) noexcept;
// Sentinel's own knobs, drawn apart from random_params for the same reason: how long
// re-pointing each replica takes (tens of ms to a few hundred, as Redis 7.0's sentinels take
// on a LAN) and how late the other sentinels hear of a promotion (up to a hello period, 2 s).
void draw_failover_knobs(world_params& params, prng& rng) noexcept;
// How long a starting node loads its data set (up to half a second: a shared Redis with a
// larger data set than the lock's takes that long), drawn apart for every configuration.
void draw_server_knobs(world_params& params, prng& rng) noexcept;

// What the users do beyond taking and releasing, drawn apart from random_params for the same
// reason: in three runs of ten, clients cancel 5 to 40% of their acquires.
void draw_user_knobs(world_params& params, prng& rng) noexcept;
// Which client each process runs, drawn apart for the same reason: in half the runs each
// client is the blocking one (links on demand) by a coin, else every client is the async one.
// Under Redis Cluster (`cluster`), where the two differ most (a node's link kept up or made
// for each request, the map read at once or only for a lock with requests), every run draws
// the coin, so most runs mix both clients.
void draw_client_knobs(world_params& params, prng& rng, bool cluster) noexcept;
// Redis Cluster's election, drawn apart for the same reason: its replica is promoted 500 to
// 1,000 ms after the master is marked FAIL (the shard's one replica has rank 0: Redis waits
// 500 ms plus up to 500 at random plus a second per rank), where Sentinel's failover time is
// drawn up to a lease.
void draw_cluster_election(world_params& params, prng& rng) noexcept;
// The session's fault points: on in a quarter of the random runs.
void draw_fault_points(world_params& params, prng& rng) noexcept;
// Sentinels cut off from the others' hello messages, in a quarter of the runs of the families
// that lose a master (S6, S9) over Sentinel: the sentinels other than the failover's leader
// hear of it up to twice the reconfiguration delay late (draw_failover_knobs: within a hello
// period), so one may still name the old master after the others reconfigured it as a
// replica, and send clients there.
void draw_stale_sentinels(world_params& params, prng& rng) noexcept;

// The fixed parameters of the scripted scenarios.
world_params scripted_params() noexcept;
// Parameters of a random run, every knob drawn from `rng` (swarm testing): the lock's
// TTL, renewal, attempt timeout, drift allowance and watchdog, jobs from far below to
// several TTLs, clock rates within tolerated_clock_ppm, network latencies and tails,
// Sentinel's detection and failover times. Each draw stays inside what the configuration
// claims to survive; faults beyond it come from the schedules.
world_params random_params(prng& rng) noexcept;
// One line, "ttl=1000ms drift=default ...", every knob, for the run header.
std::string to_text(const world_params& params);

}  // namespace edgelock::sim
