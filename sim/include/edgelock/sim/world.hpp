// SPDX-License-Identifier: Apache-2.0
// edgelock sim: the world of one run, and the scheduler that moves it through true time.
//
// One thread, integer virtual time (microseconds), one event queue ordered by (time, the
// order events were scheduled in), so that nothing depends on the host: the same run_spec
// gives the same sequence of events, the same trace hash and the same verdict on every
// machine. The world owns the clients (each with its real edgelock::lock and one real
// session::connection per lock instance), the Redis nodes, the sentinels, the network, the
// resource and the recorded history, applies the schedule's faults when their triggers
// fire, plays Sentinel's failover (promote the most up-to-date replica when the master
// stays down for down_after_ms, and tell the sentinels), and hands the history to the
// checker at the end.
//
// run() is the whole interface for callers; the rest of this header is for the client
// (workload.cpp), which calls back into the world to send, connect and record.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "edgelock/sim/addresses.hpp"
#include "edgelock/sim/checker.hpp"
#include "edgelock/sim/configuration.hpp"
#include "edgelock/sim/network.hpp"
#include "edgelock/sim/redis_model.hpp"
#include "edgelock/sim/resource.hpp"
#include "edgelock/sim/sentinel_model.hpp"
#include "edgelock/sim/schedule.hpp"
#include "edgelock/sim/workload.hpp"

namespace edgelock::sim {

// A run may not process more events than this: a livelock guard, so a client that spins (a
// wake-up due again at once, forever) ends its run in about a second with an anomaly. Runs
// take thousands of events; the longest of a 100,000-run soak stays far below it.
inline constexpr std::uint64_t run_events_max = 2'000'000;

struct run_spec {
    const configuration* config = nullptr;
    world_params params;
    std::uint64_t seed = 0;
    schedule faults;
    behaviour clients = behaviour::correct;
    bool record = false;  // keep the readable timeline (costs time; off for matrix runs)
};

// What happened to the world, for timelines and pictures.
struct world_mark {
    enum class kind : std::uint8_t { fault, crash, restart, promote, note };
    kind what = kind::note;
    std::int64_t start_us = 0;
    std::int64_t end_us = 0;
    bool on_node = false;
    std::uint8_t target = 0;
    std::string label;
};

struct run_result {
    verdict checks;
    std::uint64_t trace_hash = 0;
    std::uint64_t events = 0;
    std::int64_t simulated_us = 0;
    std::uint32_t anomalies = 0;  // the lock refused a call or a reply it should have taken
    history past;
    std::vector<world_mark> marks;
    std::string timeline;  // with run_spec::record
};

run_result run(const run_spec& spec);

class scheduler {
public:
    enum class kind : std::uint8_t {
        deliver,               // arg: path
        client_timer,          // who: client, arg: generation
        client_resume,         // who: client
        client_probe,          // who: client, arg: generation (the last instant of a validity)
        node_restart,          // who: node
        sentinel_check,        // who: node (the master the sentinels stopped reaching)
        sentinel_promote,      // who: node (the master being failed over), arg: FAIL episode
        sentinel_info,         // the sentinels' periodic look at the replicas' offsets
        sentinel_reconfigure,  // who: node (an old master that is back)
        sentinel_repoint,      // who: node (a replica of a replaced master)
        sentinel_learn,        // who: sentinel, arg: failover epoch * 256 + the promoted node
        node_wake,             // who: node, arg: incarnation (WAIT timeouts)
        node_resume,           // who: node (a pause may have ended)
        node_rejoin,           // who: node (a cut-off may have ended)
        fault_start,           // arg: fault index
        cluster_learn,         // who: node, arg: failover epoch * 256 + the promoted node
        cluster_fail_undo,     // who: node (a failed master back unreplaced), arg: failover epoch
        cluster_minority,      // who: node (cut off a node timeout ago: in the minority?)
        cluster_rejoined,      // who: node (a master back from the minority: its rejoin delay over)
        migrate_step,          // the lock's slot migration: the next MIGRATE, or SETSLOT NODE
        slot_learn,            // who: node (hears the lock's slot has its new owner)
    };
    struct event {
        std::int64_t at_us = 0;
        std::uint64_t seq = 0;
        kind what = kind::deliver;
        std::uint8_t who = 0;
        std::uint32_t arg = 0;
    };

    void push(std::int64_t at_us, kind what, std::uint8_t who, std::uint32_t arg);
    // The earliest event, ties in the order they were pushed. False when none is left.
    bool pop(event& out);
    bool empty() const noexcept { return heap_.empty(); }
    std::int64_t next_at_us() const noexcept { return heap_.front().at_us; }

private:
    std::vector<event> heap_;
    std::uint64_t next_seq_ = 0;
};

class world {
public:
    explicit world(const run_spec& spec);
    ~world();
    world(const world&) = delete;
    world& operator=(const world&) = delete;

    run_result run();

    // ---- for the clients ----
    std::int64_t now_us() const noexcept { return now_us_; }
    const world_params& params() const noexcept { return params_; }
    const configuration& config() const noexcept { return config_; }
    bool recording() const noexcept { return spec_.record; }

    // The server an address reaches (addresses.hpp), or no_server: the simulated name lookup.
    int resolve(const session::node_address& address) const noexcept;
    enum class connect_outcome : std::uint8_t { ok, refused, timeout, unknown_host };
    // Whether a connect from `client` to `to` succeeds now, and the server it reaches. A node
    // that is down refuses; a partition leaves the connect unanswered (timeout).
    connect_outcome try_connect(std::uint8_t client, const session::node_address& to,
                                std::uint8_t& server);
    std::uint32_t open_connection(std::uint8_t client, std::uint8_t server, lane on);
    void close_connection(std::uint8_t client, std::uint8_t server, std::uint32_t epoch, lane on);
    // A connect's round trip between them.
    std::int64_t connect_us(std::uint8_t client, std::uint8_t server) const noexcept;

    // Bytes written on the connection (one request, or several pipelined).
    void send_request(std::uint8_t client, std::uint8_t server, std::uint32_t epoch,
                      std::string&& bytes, lane on);
    void send_resource(std::uint8_t client, message&& m);
    void schedule_client(std::uint8_t client, std::int64_t at_us, std::uint32_t generation);
    void schedule_resume(std::uint8_t client, std::int64_t at_us);
    void schedule_probe(std::uint8_t client, std::int64_t at_us, std::uint32_t generation);
    // The client reached `p` for the nth time: fire the faults waiting for it.
    void reach_point(std::uint8_t client, point p, std::uint16_t nth);

    // The lease oracle. The client's held() is true now with `token_hex`: is the lease
    // backed where it must be? And an `acquired`/`renewed` event must not arrive with its
    // validity over. A semaphore's masters keep no more live leases than it has permits.
    // Failures are recorded in the history.
    void check_lease(std::uint8_t client, std::uint32_t hold, std::string_view token_hex,
                     std::int64_t mono_ms, std::int64_t valid_until_ms);
    void check_event_validity(std::uint8_t client, const char* event_name, std::int64_t mono_ms,
                              std::int64_t valid_until_ms);
    // The kept and available checks: the client's hold #`hold` with `token_hex` was lost
    // (on_lost) at `lost_us`. Was there a reason, other than a fault the configuration rides
    // out? A loss without one is recorded in the history.
    void judge_loss(std::uint8_t client, std::uint32_t hold, std::string_view token_hex,
                    std::int64_t lost_us);

    // Fair locks (world_pubsub.cpp). For the wakeup and fifo checks: the client's acquire() runs
    // with `token_hex` (or ended), and it passed a wake-up meant for it (its token, or a
    // confirmation) to the lock.
    void begin_wait(std::uint8_t client, std::string_view token_hex);
    // The wait ended; a fair holder's token stays at the head of the line until its release.
    void end_wait(std::uint8_t client, bool acquired);
    void end_hold(std::uint8_t client);
    void told(std::uint8_t client);
    // The client's acquire() was cancelled: it no longer asks for the lock (the available
    // check's acquirers), though its acquire_failed is still to come.
    void cancelled(std::uint8_t client);
    // A fault point of the client's lock connections fired (session/fault_points.hpp).
    void fault_point_fired(std::uint8_t client, const char* what, std::int64_t lasting_us);

    // History.
    std::size_t begin_hold(std::uint8_t client, std::int64_t fence, std::int64_t valid_until_ms,
                           std::string_view token_hex);
    hold_record& hold(std::size_t slot) noexcept { return history_.holds[slot]; }
    void record_action(std::uint8_t client, std::uint32_t hold, std::int64_t check_us,
                       std::int64_t send_us);

    // Timeline (only when recording).
    void note_client(std::uint8_t client, const std::string& text);
    void note_node(std::uint8_t node, const std::string& text);
    void mix(std::uint64_t value) noexcept;

private:
    struct active_fault {
        std::size_t index = 0;
        std::int64_t start_us = 0;
        std::int64_t end_us = 0;
        std::uint16_t remaining = 0;  // drop_reply
    };

    void dispatch(const scheduler::event& e);
    void deliver(std::size_t path);
    // read_late: the bytes reached the node's socket while it was paused, so they are read
    // even if the client has closed that connection (or opened another) since.
    void deliver_request(std::uint8_t client, std::uint8_t server, message&& m,
                         bool read_late = false);
    void deliver_sentinel_request(std::uint8_t client, std::uint8_t server, message&& m);
    void deliver_reply(std::uint8_t server, std::uint8_t client, message&& m);
    void deliver_resource_request(std::uint8_t client, message&& m);
    void deliver_replication(std::uint8_t master, std::uint8_t replica, message&& m);
    void deliver_ack(std::uint8_t replica, std::uint8_t master, message&& m);
    void flush(std::uint8_t node);
    void note_unblocked(std::uint8_t node);
    void send_reply(std::uint8_t server, std::uint8_t client, std::uint32_t epoch,
                    std::string&& bytes, lane on);
    bool reply_lost(std::uint8_t server, std::uint8_t client, lane on);

    // The node's pub/sub and the fair checks (world_pubsub.cpp). The model keeps one client
    // state per connection: a client's subscriber connection is its own client there.
    static std::uint8_t model_client(std::uint8_t client, lane on) noexcept {
        return static_cast<std::uint8_t>(client + (on == lane::subscriber ? clients_max : 0));
    }
    // SUBSCRIBE or UNSUBSCRIBE on a subscriber connection: the node's pub/sub answers it
    // (into out_.replies, in order with the model's). False for any other request.
    bool pubsub_command(std::uint8_t client, std::uint8_t node, std::uint32_t epoch,
                        std::string_view request);
    // A client's subscriber connection as a node counts it among channels' subscribers: the
    // connection's epoch (0 for none) and the channels it subscribed.
    struct node_subscriber {
        std::uint32_t epoch = 0;
        std::vector<std::string> channels;
    };
    node_subscriber& subscriber_at(std::uint8_t node, std::uint8_t client) noexcept {
        return subscribers_[static_cast<std::size_t>(node) * params_.clients + client];
    }
    const node_subscriber& subscriber_at(std::uint8_t node, std::uint8_t client) const noexcept {
        return subscribers_[static_cast<std::size_t>(node) * params_.clients + client];
    }
    // The client's subscriber connection is subscribed to `channel` on the node.
    bool subscribed(std::uint8_t node, std::uint8_t client, std::string_view channel) const;
    std::int64_t subscribe_extra_us(std::uint8_t client, std::uint8_t node) const noexcept;
    void publish(std::uint8_t node);
    void judge_grants(std::uint8_t node);
    void judge_waiters();
    bool due(std::uint8_t client) const;
    bool entry_live(const redis_node& n, std::string_view qttl_key, std::string_view member,
                    std::int64_t wall_ms) const;
    int waiter_of(std::string_view token) const noexcept;
    int holder_of(std::string_view token) const noexcept;
    std::int64_t judged_from_us() const noexcept;
    // What the client's slow paths (to nodes) add to a round trip now; -1 when they make an
    // attempt outlast its timeout (the waiter is not judged then).
    std::int64_t slow_round_trip_us(std::uint8_t client) const noexcept;
    bool times_out(std::int64_t extra_us) const noexcept;
    void init_fair_checks();
    void replicate(std::uint8_t master);
    void break_connection(std::uint8_t client, std::uint8_t server, bool reset, const char* why,
                          lane on = lane::command);
    void close_from_server(std::uint8_t client, std::uint8_t server, const char* why, lane on);
    void queue_reply(std::uint8_t from, std::uint8_t client, message&& m, std::int64_t extra_us);
    bool take_connection(std::uint8_t client, std::uint8_t server, lane on, std::uint32_t how,
                         std::uint32_t& epoch);
    void note_broken(std::uint8_t client, std::uint8_t server, const char* why, const char* how,
                     lane on);
    void forget_connection(std::uint8_t client, std::uint8_t server, lane on);
    void reset_subscribers(const fault& f);
    // Both of the client's connections to `server`.
    void break_connections(std::uint8_t client, std::uint8_t server, bool reset, const char* why);
    // The node closes every client connection, as Sentinel's CLIENT KILL makes it.
    void sentinel_kills_clients(std::uint8_t node);
    std::vector<std::string_view>& split(std::string_view bytes);

    void activate(std::size_t index);
    void heal_at(std::int64_t end_us);
    void change_clock(const fault& f);
    void fault_begins(const fault& f, std::int64_t end_us);
    void make_nodes(prng& setup);
    void make_cluster();
    lock_config clients_lock_config() const;
    // Network faults name Redis nodes: a server that is a sentinel meets none of them.
    bool partitioned(std::uint8_t client, std::uint8_t server) const noexcept;
    bool lose_message(std::uint8_t client, std::uint8_t server, bool& reset);
    std::int64_t path_extra_us(std::uint8_t client, std::uint8_t server,
                               bool resource) const noexcept;
    std::int64_t replication_extra_us(std::uint8_t replica) const noexcept;

    // Redis processes and Sentinel (world_nodes.cpp).
    struct held_message {       // reached a paused node: read when it resumes
        std::uint8_t from = 0;  // endpoints, as the path had them
        std::uint8_t to = 0;
        message m;
    };
    void activate_node_fault(const fault& f);
    void crash(std::uint8_t node, const fault& f);
    void evict(std::uint8_t node);
    void restart(std::uint8_t node);
    void pause_node(std::uint8_t node, std::int64_t until_us);
    void resume_node(std::uint8_t node);
    void isolate_side(node_mask side, std::int64_t until_us);
    // A master's own replica (has_own_replicas) follows it again whenever either comes back
    // (Redis's replicaof).
    void resync_own_replica(std::uint8_t node);
    void rejoin_node(std::uint8_t node);
    void deliver_held(std::uint8_t node, held_message&& h);
    bool paused(std::uint8_t node) const noexcept { return now_us_ < paused_until_us_[node]; }
    bool isolated(std::uint8_t node) const noexcept { return now_us_ < isolated_until_us_[node]; }
    // Replication between the two cannot pass: they are not on the same side of a cut-off.
    bool cut(std::uint8_t a, std::uint8_t b) const noexcept {
        return isolated(a) != isolated(b) || (isolated(a) && side_of_[a] != side_of_[b]);
    }
    // Whether the sentinels (and the other nodes) get answers from the node now.
    bool reachable(std::uint8_t node) const noexcept;
    bool master_link_up(std::uint8_t node) const noexcept;
    // The master stopped answering the sentinels (or may have): start their down-after.
    void master_unreachable();
    // A node that was unreachable answers again: a master the sentinels replaced is reconfigured.
    void node_back(std::uint8_t node);
    void sentinel_check(std::uint8_t node);
    void sentinel_promote(std::uint8_t node, std::uint32_t fail_episode);
    void sentinel_info();
    void sentinel_reconfigure(std::uint8_t node);
    void sentinel_repoint(std::uint8_t node);
    void sentinel_learn(std::uint8_t sentinel, std::uint32_t arg);
    void publish_switch(std::uint8_t sentinel, std::uint8_t from, std::uint8_t to);
    void tell_sentinels(std::uint8_t promoted);
    // Redis Cluster (world_nodes.cpp): the promoted replica serves the old master's slots at
    // once; every other node hears of it after its gossip delay (an old master, when it is
    // reconfigured); a node of another shard that is back resynchronises its own replica.
    void cluster_promoted(std::uint8_t old_master, std::uint8_t promoted);
    void cluster_learn(std::uint8_t node, std::uint32_t news);
    void cluster_fail(std::uint8_t master);
    void cluster_fail_undo(std::uint8_t master, std::uint32_t epoch);
    void cluster_minority(std::uint8_t node);
    void cluster_rejoin(std::uint8_t node);
    void cluster_rejoined(std::uint8_t node);
    void refresh_cluster_down(std::uint8_t node);
    void cluster_view(std::uint8_t node, std::uint8_t master, std::uint8_t replica, bool failed);
    void other_shard_back(std::uint8_t node);
    // A migrate fault: the lock's slot moves from f.target to the first node of f.nodes.
    void start_migration(const fault& f);
    void migrate_step();
    void slot_learn(std::uint8_t node);
    void schedule_repoints(std::uint8_t old_master, std::uint8_t promoted);
    std::int64_t repoint_delay_us();
    int best_replica_seen(std::uint8_t master) const noexcept;
    std::int64_t node_wall_ms(std::uint8_t node) const noexcept;
    bool holds_token(std::uint8_t node, std::string_view token_hex) const;
    std::size_t live_leases(std::uint8_t node) const;
    // The permit a server numbered `token_hex`'s lease with (its slots key), the first node
    // that has it; else the fence token's remainder.
    std::uint16_t numbered_permit(std::string_view token_hex, std::int64_t fence) const;
    bool has_free_permit(std::uint8_t node) const;
    void check_permits_kept();
    int shared_permit(std::uint8_t node) const;
    // Where a lease must live: `needed` of the nodes [first, first + count) (a Redlock quorum,
    // or the master: the slot's owner once a migration moved it, else the sentinels' choice).
    struct lease_home {
        std::uint8_t first = 0;
        std::uint8_t count = 1;
        std::uint8_t needed = 1;
    };
    lease_home lease_home_now() const noexcept;
    bool guard_keeps_out(std::uint8_t node) const noexcept;
    void observe_all_clients();
    void oracle_failure(std::string text);
    // The claim check: a node saw a client count on what it cannot vouch for (redis_model.hpp).
    void claim_failure(std::string text);
    void record_judged(judged_record& into, std::uint32_t salt, const char* label,
                       std::string text);
    // The kept check's record of what disturbed the run, from now until `to_us`: everyone,
    // one client, or the nodes of a mask; `f` from its start until `to_us`.
    struct disturbance {
        std::int64_t from_us = 0;
        std::int64_t to_us = 0;
        bool everyone = false;
        int client = -1;
        std::uint32_t nodes = 0;
        bool tail = false;  // a message of the client's in the network's long tail
        // What the configuration is built to ride out (the available check): the lock's slot
        // moving between Redis Cluster masters, and under Sentinel with WAIT the master going
        // away (replaced_node), once the sentinels replaced it.
        bool ridden = false;
        int replaced_node = -1;
        // Under Sentinel with WAIT, a promotion, the sentinels' news of it, a replica re-pointed
        // to the new master: ridden out once the client had the time to reach the new master
        // and renew there (settle_us and an attempt timeout before the loss).
        bool failover_news = false;
    };
    void disturb(disturbance d);
    void disturb_by(const fault& f, std::int64_t to_us);
    void disturb_by_event(const scheduler::event& e);
    void disturb_by_tail(std::uint8_t client, std::int64_t arrives_us);
    std::size_t tails_between(std::uint8_t client, std::int64_t from_us,
                              std::int64_t to_us) const noexcept;
    std::int64_t renewal_tries() const noexcept;
    bool node_news_concerns_all() const noexcept;
    // Sentinel with WAIT: a failover is what the configuration rides out (the available check).
    bool rides_failovers() const noexcept;
    bool failover_told() const noexcept;
    // Nothing that concerns `client` or the nodes of `nodes` was in force in [from_us, to_us]
    // (`but_ridden`: nothing but what the configuration rides out).
    bool calm_between(std::uint8_t client, std::uint32_t nodes, std::int64_t from_us,
                      std::int64_t to_us, bool but_ridden = false) const noexcept;
    void record_loss(judged_record& into, const char* label, std::string text);
    bool would_renew(std::uint8_t node, std::string_view token_hex,
                     std::int64_t since_us) const noexcept;
    bool wait_met(std::uint8_t node) const noexcept;
    bool rides_out(const disturbance& d, std::int64_t lost_us) const noexcept;
    bool renewals_have_room() const noexcept;
    std::int64_t settle_us() const noexcept;
    // The available check's acquirer half (world_judges.cpp): a free lock asked for is taken
    // within acquire_bound_us().
    bool grants_now(std::uint8_t node) const noexcept;
    bool line_open() const;
    bool lock_free_now(std::uint32_t& granters) const;
    std::int64_t acquire_bound_us() const noexcept;
    enum class asker_state : std::uint8_t { disturbed, ridden, calm };
    asker_state asker_since(std::uint8_t client, std::uint32_t granters,
                            std::int64_t from_us) const noexcept;
    bool line_held(std::uint32_t granters) const noexcept;
    void judge_acquirers();
    // What one attempt may take at worst: its timeout, two round trips (NOSCRIPT's fallback
    // is one more) and WAIT's replication, and where the network's tail can outlast the
    // attempt timeout, a failed attempt and its retry delay more.
    std::int64_t attempt_slack_us() const noexcept;
    void note(const std::string& lane, const process_clocks* clocks, const std::string& text);
    void note_request(std::uint8_t server, std::uint8_t client, std::string_view request,
                      const std::string* reply);
    std::string server_name(std::uint8_t server) const;
    void mark(world_mark::kind what, bool on_node, std::uint8_t target, std::int64_t end_us,
              std::string label);

    const run_spec& spec_;
    configuration config_;
    const char* lock_name_;  // world_text.hpp
    world_params params_;
    scheduler events_;
    network net_;
    std::vector<redis_node> nodes_;
    std::vector<process_clocks> node_clocks_;
    std::vector<sentinel_node> sentinels_;
    // Per sentinel, per client: the epoch of the client's watch connection subscribed to its
    // +switch-master (0: none). A closed or replaced connection's entry is stale, and skipped.
    std::array<std::array<std::uint32_t, clients_max>, sentinel_processes_max> watchers_{};
    std::vector<std::string_view>
        pipeline_;  // split(): the requests of the message being delivered
    std::vector<std::unique_ptr<client>> clients_;
    fenced_resource resource_;
    history history_;
    std::vector<world_mark> marks_;
    std::vector<bool> fired_;
    std::vector<active_fault> active_;
    node_output out_;
    prng rng_;
    int current_master_ = 0;                       // the master the sentinels name
    std::vector<std::int64_t> paused_until_us_;    // per node (true time)
    std::vector<std::int64_t> isolated_until_us_;  // per node (true time)
    std::vector<node_mask> side_of_;  // per node: the side (mask) of its latest cut-off
    std::vector<std::vector<held_message>> held_;  // per node: what reached it while paused
    std::vector<std::int64_t> seen_offset_;        // per node: its offset at the last INFO
    std::vector<bool> demoted_;                    // per node: replaced while away, still a master
    std::vector<std::int64_t> replaced_us_;  // per node: its last replacement by a failover, or -1
    // per node: a replace fault's server comes up at its address, up for this long, or -1
    std::vector<std::int64_t> replacing_ms_;
    std::vector<bool> powered_off_;           // per node: down without a word (connects time out)
    std::vector<std::int64_t> restarted_us_;  // per node: its last restart (true time), or -1
    std::int64_t unreachable_since_us_ = -1;  // the current master's, -1 while it answers
    std::uint32_t failover_epoch_ = 0;        // promotions so far (Sentinel's config epoch)
    std::int64_t cluster_failed_us_ = -1;     // Redis Cluster: the lock's master marked FAIL
    std::uint32_t cluster_fail_episode_ = 0;  // Redis Cluster: FAILs marked so far
    // Redis Cluster, per node: down for a master marked FAIL (until it hears of the promotion
    // or the FAIL is undone), down in a minority (until its rejoin delay after the cut ends),
    // and since when it is cut off.
    std::vector<bool> fail_down_;
    std::vector<bool> minority_down_;
    std::vector<std::int64_t> cut_since_us_;
    // Redis Cluster: each shard's slots (shard k: nodes 2k and 2k + 1; shard 0 the lock's).
    std::array<std::pair<std::uint16_t, std::uint16_t>, 3> cluster_ranges_{};
    struct slot_migration {
        int source = -1;    // the node migrating the lock's slot, -1 when none moves
        int importer = -1;  // the node importing it, -1 when none moves
        int owner = -1;     // the master serving it after a migration (-1: the lock's shard's)
        std::int64_t gap_us = 0;
        std::int64_t learn_ms = 0;
    };
    slot_migration slot_moving_;
    std::uint16_t lock_slot_ = 0;  // the slot of the lock's name (and its companion keys')
    std::vector<node_subscriber> subscribers_;   // nodes x clients
    std::vector<std::string> waiting_token_;     // per client: its acquire()'s token, "" when none
    std::vector<std::string> holding_token_;     // per client: its fair hold's token until released
    std::vector<std::int64_t> due_since_us_;     // per client: due since (true time), -1 when not
    std::vector<std::int64_t> told_us_;          // per client: told while due, -1 when not
    std::vector<bool> acquiring_;                // per client: its acquire() runs, not cancelled
    std::vector<std::int64_t> asking_since_us_;  // per client: its acquire() began (or the
                                                 // first of failed ones in a row)
    std::vector<bool> asked_in_vain_;            // per client: its last acquire() failed
    std::int64_t free_since_us_ = -1;  // the lock free and asked for since (true time), or -1
    std::string lock_key_;
    std::string slots_key_;  // a fenced semaphore's permit numbers
    std::string queue_key_;  // the lock's line and its expiries
    std::string qttl_key_;
    std::int64_t now_us_ = 0;
    std::int64_t end_us_ = 0;
    std::int64_t heal_us_ = 0;
    std::int64_t fair_heal_us_ = 0;  // heal_us_ without the slow paths (the fair checks' start)
    // Every fault from its start until it healed, every change the nodes or the sentinels
    // made, every reply a fault dropped (until it timed out), each with whom it concerns.
    std::vector<disturbance> disturbed_;
    std::uint64_t hash_ = 0;
    std::uint64_t event_count_ = 0;
    std::string timeline_;
};

}  // namespace edgelock::sim
