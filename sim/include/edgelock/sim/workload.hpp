// SPDX-License-Identifier: Apache-2.0
// edgelock sim: a client process, the real edgelock::lock and the job it protects.
//
// Each client drives one edgelock::lock and, per lock instance, one session::connection
// exactly as the real transports do (FoundationDB's rule: the real code runs, only the
// network is simulated). The connection says where to connect (the node; with Sentinel, a sentinel
// first, then the master it names), writes the handshake (PING, ROLE behind Sentinel, SCRIPT
// LOAD of the four scripts), takes its own replies, and times out connects and replies; the
// client writes the bytes write_request() produces once the connection accepts them (pipelined
// behind the handshake), hands the lock every answer in order, tells the lock of a closed
// connection with on_io_error() (unless the connection only moved on from a sentinel), and arms
// one timer for the earliest of the lock's, the connections' and the job's deadlines. All lock and
// connection time is the client's monotonic clock. Connections fail by reset (noticed one path
// latency later), by silence (a reply later than io_timeout_ms), by a refused connect, or by
// the connection itself (a READONLY reply, ROLE naming a replica); the connection then reconnects
// after the session's reconnect delay (at once after a connection that was up).
//
// The job (the seeds' order grab / stock deduction) runs in a loop:
//   think -> acquire(wait) -> read the resource -> work -> check held(now) -> write value-1
//         -> release -> think ...
// A lost lock or an unanswered resource request ends the job early; the client never
// writes unless held() said yes just before (a pause right after that check is exactly
// Kleppmann's counterexample, and the simulator lets a fault land there).
//
// Redis Cluster (workload_cluster.cpp), as a client of a cluster deployment routes its locks:
// one connection per node index of the session::slot_map it reads with CLUSTER SLOTS (from
// the seeds, n0, n2 and n4, at first), the lock (instance 0) routed by its session::lock_links
// (the clients' rules: where its requests go, ASKING before each request while an ASK is in
// force, redirects followed, the node's start heard on a move), the map read again when it is
// stale and marked stale whenever a connection ends (session::cluster_links).
//
// A client may be deliberately broken for the mutation tests (see behaviour); then the
// checks must catch it.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <string>

#include "edgelock/lock.hpp"
#include "edgelock/sim/checker.hpp"
#include "edgelock/sim/clock.hpp"
#include "edgelock/sim/configuration.hpp"
#include "edgelock/session/cluster_links.hpp"
#include "edgelock/session/fault_points.hpp"
#include "edgelock/session/linking.hpp"
#include "edgelock/session/lock_links.hpp"
#include "edgelock/session/wake_subscription.hpp"
#include "edgelock/sim/sim_connection.hpp"
#include "edgelock/sim/network.hpp"
#include "edgelock/sim/prng.hpp"
#include "edgelock/sim/schedule.hpp"

namespace edgelock::sim {

class world;

enum class behaviour : std::uint8_t {
    correct,
    ignores_validity,         // writes without checking held(), ignores `lost`
    skips_fencing,            // sends its resource requests without the fence token
    deletes_without_compare,  // releases with a plain DEL instead of compare-and-delete
    never_releases,           // keeps the lock (and renews it) forever after its first job
    jumps_the_line,  // fair: client 0 acquires with the plain acquire script, ahead of the line
    ignores_confirmation,  // fair: a confirmed subscription is not passed to on_wake("")
};
const char* to_string(behaviour b) noexcept;
bool parse_behaviour(std::string_view text, behaviour& out) noexcept;

class client;

// A client's fault points (session/fault_points.hpp) on its lock links: each point reached
// before the workload's duration ends fires with its world_params::fault_point_per_million,
// drawn from a PRNG stream of its own (so a run without them draws as before), and the world
// hears of each that fires. After the duration none
// fires, so the liveness window that follows the last one is the run's end. A WAIT is held
// back for up to half a lease: long enough to outlast its round.
class client_faults final : public session::fault_points {
public:
    client_faults(client& owner, const world& w, prng rng, const world_params& p) noexcept
        : owner_(owner),
          world_(w),
          rng_(rng),
          per_million_(p.fault_point_per_million),
          until_us_(p.duration_ms * 1000),
          delay_ms_max_(std::max<std::int64_t>(1, p.ttl_ms / 2)) {}
    bool fire(session::fault_point p) noexcept override;
    std::int64_t delay_ms(session::fault_point p) noexcept override;

private:
    client& owner_;
    const world& world_;
    prng rng_;
    std::array<std::uint32_t, session::fault_point_count> per_million_;
    std::int64_t until_us_;
    std::int64_t delay_ms_max_;
    std::int64_t drawn_delay_ms_ = 0;  // fire() draws it, delay_ms() hands it over
};

class client {
public:
    client(world& w, std::uint8_t id, const lock_config& config, const process_clocks& clocks,
           prng rng, prng faults_rng, behaviour b);
    client(const client&) = delete;
    client& operator=(const client&) = delete;

    void start(std::int64_t first_job_ms);
    // A fault point of its lock connections fired (client_faults).
    void fault_point_fired(session::fault_point p, std::int64_t delay_ms);
    // A reply from `server` (a node or a sentinel, addresses.hpp) on connection `epoch`.
    void on_reply(std::uint8_t server, std::uint32_t epoch, std::string&& bytes);
    void on_resource_reply(message&& m);
    void on_timer(std::uint32_t generation);
    void on_resume();
    void on_probe(std::uint32_t generation);
    // Samples the lease oracle: when held() is true now, the world checks the lease is
    // backed. A paused process observes nothing.
    void observe();
    void pause(std::int64_t until_us);
    // The connection to `server` with `epoch` was reset; the client notices at at_us.
    void connection_reset(std::uint8_t server, std::uint32_t epoch, std::int64_t at_us);
    // A clock rate or step changed: timers must be converted again.
    void clocks_changed();
    // The run ends: close the open hold, if any.
    void finish(std::int64_t end_us);

    process_clocks& clocks() noexcept { return clocks_; }
    const process_clocks& clocks() const noexcept { return clocks_; }
    bool paused() const noexcept;
    std::uint32_t anomalies() const noexcept { return anomalies_; }

private:
    enum class job : std::uint8_t {
        thinking,
        acquiring,
        reading,
        working,
        writing,
        releasing,
        keeping
    };
    enum class step : std::uint8_t { none, send_read, start_work, send_write };

    struct delivery {
        std::uint8_t server = 0;  // reply: the sender; resource replies ignore it
        message m;
    };

    std::int64_t now_us() const noexcept;
    std::int64_t now_ms() const noexcept;
    std::int64_t to_true_us(std::int64_t local_ms) const noexcept;

    void run();
    void drain_and_write();
    void drain();
    bool send_requests();
    void react(const event& e);
    void reschedule();
    void anomaly(const char* what, errc code);

    void setup_connections();
    void service_connections();
    void handle_reply(std::uint8_t server, std::uint32_t epoch, const std::string& bytes);
    // What an instance's connection delivers (sim_connection calls these).
    friend class sim_connection;
    void on_answer(std::uint8_t instance, const session::in_flight& entry, const reply_node* nodes,
                   std::size_t count);
    void on_dropped(std::uint8_t instance, const session::in_flight& entry);
    void on_node_read(std::uint8_t k);
    void on_connection_end(std::uint8_t instance);
    // Every end of an instance's or a node's connection, heard by the lock or not.
    void on_link_ended(const session::connection_end& closed);
    // What the subscriber connection of a fair lock delivers.
    void on_subscription_answer(const reply_node* nodes, std::size_t count);
    void on_wake_message(const reply_node* nodes, std::size_t count);
    void on_subscriber_end();
    // Sentinel: the watch of +switch-master (workload_watch.cpp), as both clients keep it.
    void setup_watch(session::connection_setup s);
    void on_switch_master(const session::node_address& from, const session::node_address& to);
    void setup_fair();
    void setup_subscriber(session::connection_setup s);
    void tend_subscriber();
    void drive_subscription();
    void write_subscription_due();
    std::string wake_channel() const;
    bool names_our_turn(const std::string& bytes) const;
    void handle_resource_reply(const message& m);
    // A wake-up for the lock: the payload of a message on its channel (a releaser's token),
    // or "" for a confirmed subscription (lock::on_wake).
    void handle_wake(std::string_view message);

    // Redis Cluster (workload_cluster.cpp); `index` a node index of the slot map.
    void setup_cluster(const session::connection_setup& s);
    void ensure_cluster_connection(std::uint8_t index);
    bool send_cluster_requests();
    bool cluster_quiet() const;
    // Whether the client looks at connection `c` when its reconnect delay ends (wants), and
    // lets its driver open it (opens): an instance's as its linking says (session/linking.hpp),
    // a cluster node's while its link has work (cluster_links.hpp, "work"), as the clients
    // decide it. `c` set up: an instance's, or a linked node's.
    bool wants(const sim_connection& c) const;
    bool opens(const sim_connection& c) const;
    bool link_for_queued(std::uint8_t instance);
    void hear_start_before_writes(std::uint8_t instance);
    void user_call();
    bool wants_link(std::uint8_t k) const;
    bool map_read_wanted() const;
    void read_map_if_due();
    void give_up_cluster_requests();
    bool send_map_read(std::uint8_t index);
    // The node links as session::cluster_links::tend_map drives them (workload_cluster.cpp).
    class cluster_port;
    void on_cluster_answer(std::uint8_t index, const session::in_flight& entry,
                           const reply_node* nodes, std::size_t count);
    void on_cluster_connection_end(std::uint8_t index);
    bool place_cluster_subscriber();
    // Calls f(connection) for each connection the lock's requests may use.
    template <typename F>
    void each_connection(F&& f);

    void run_job_timer();
    void run_step(step s);
    void start_job();
    void cancel_acquire();
    void begin_leaving();
    void leave_when_clean();
    void after_sending(bool acquire, bool renewal);
    void release_at_renewal();
    void check_cancel_outcome(const event& e);
    void on_acquired(const event& e);
    void on_lost(const event& e);
    message resource_request(bool write);
    void send_read();
    void start_work();
    void check_and_write();
    void send_write();
    void finish_job();
    void think();
    void close_hold(std::int64_t end_us, hold_end why);
    std::int64_t validity_end_us() const noexcept;
    void reach(point p);
    void schedule_probe();
    bool held_now();

    world& world_;
    std::uint8_t id_;
    lock lock_;
    std::string lock_name_;
    std::uint8_t instances_;
    process_clocks clocks_;
    prng rng_;
    behaviour behaviour_;

    // The addresses the connections were set up with (they must outlive them).
    std::array<session::node_address, instances_max> nodes_{};
    std::array<session::node_address, sentinel_processes_max> sentinels_{};
    session::node_address master_;  // the master's credentials and db: none in the sim
    std::array<sim_connection, instances_max> connections_{};
    // How the instances' links connect: eager as the async client's, or on demand as the
    // blocking client's (world_params::on_demand_clients).
    session::linking linking_ = session::linking::eager;
    // What the links tell the lock (session/lock_links.hpp), as the clients keep it.
    session::lock_links place_;
    // Redis Cluster: the slot map, its reads and the nodes' links as the clients keep them
    // (session/cluster_links.hpp), and a connection per node index (set up when the lock or a
    // read first needs the node: links_.linked(i)).
    bool cluster_ = false;
    session::cluster_links links_;
    session::connection_setup cluster_setup_;
    std::array<sim_connection, session::cluster_masters_max> cluster_connections_{};
    // Fair locks, as the blocking client waits: a subscriber connection made the first time
    // the lock wants wake-ups and kept, its channel subscribed exactly while it wants them.
    bool fair_ = false;
    sim_connection subscriber_;
    session::wake_subscription sub_;  // the running acquire()'s channel
    bool subscriber_made_ = false;
    bool wake_wanted_ = false;
    bool turn_passed_ = false;  // handle_wake was given our token (see handle_reply)
    bool cancelled_ = false;    // the running acquire was cancelled: its end must say so
    // release() of a held lock went out: the lock's next event must be `released` (lock.hpp).
    bool release_pending_ = false;
    bool quit_work_ = false;  // the job ends without its write: released as a renewal went out
    // Closing for good (world_params::leave_per_million): cleanups until leave_by_ms_, then
    // every connection is dropped and the client does nothing more (gone_).
    bool leaving_ = false;
    bool gone_ = false;
    std::int64_t leave_by_ms_ = no_deadline_ms;
    // Redis Cluster: the node the subscriber was set up for (the slot's master then).
    session::node_address subscriber_node_;
    bool subscriber_placed_ = false;
    // Sentinel: a connection to one sentinel at a time, subscribed to +switch-master from the
    // start, made again whenever it ends (the reconnect delay allowing).
    bool watching_ = false;
    sim_connection watcher_;
    std::int64_t paused_until_us_ = 0;
    std::deque<delivery> inbox_;
    step pending_ = step::none;

    job job_ = job::thinking;
    std::int64_t job_due_ms_ = no_deadline_ms;
    bool holding_ = false;
    std::size_t hold_slot_ = 0;  // index of the open hold in the history
    std::uint32_t hold_index_ = 0;
    std::int64_t fence_ = 0;
    std::int64_t read_value_ = 0;
    std::int64_t check_us_ = 0;
    std::uint32_t request_id_ = 0;

    std::array<std::uint16_t, point_count> points_{};
    client_faults faults_;
    std::uint32_t timer_generation_ = 0;
    std::uint32_t probe_generation_ = 0;
    std::int64_t timer_at_us_ = -1;
    std::uint32_t anomalies_ = 0;
};

}  // namespace edgelock::sim
