// SPDX-License-Identifier: Apache-2.0
#include "edgelock/sim/world.hpp"

#include <algorithm>
#include <array>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <limits>

#include "edgelock/assert.hpp"
#include "edgelock/keys.hpp"
#include "edgelock/resp_reader.hpp"
#include "edgelock/sim/key_slot.hpp"
#include "world_text.hpp"

namespace edgelock::sim {
namespace {

// Wall clocks start near 2023-11-14 (Unix time 1'700'000'000 s), in microseconds.
constexpr std::int64_t wall_epoch_us = 1'700'000'000'000'000;

// The maxmemory-policy node `n` runs: an evicting one when the schedule evicts on it.
eviction_policy eviction_of(const schedule& faults, std::uint8_t n) {
    for (const fault& f : faults) {
        if (f.kind == fault_kind::evict && f.on_node && f.target == n) {
            return f.amount == 1 ? eviction_policy::all_keys : eviction_policy::volatile_keys;
        }
    }
    return eviction_policy::noeviction;
}

// Orders the heap so its front is the earliest event, ties broken by scheduling order.
struct later {
    bool operator()(const scheduler::event& a, const scheduler::event& b) const noexcept {
        if (a.at_us != b.at_us) return a.at_us > b.at_us;
        return a.seq > b.seq;
    }
};

// Bytes folded in as little-endian 64-bit words, so the hash is the same on every host.
std::uint64_t load_little_endian(const char* bytes) {
    std::uint64_t word = 0;
    std::memcpy(&word, bytes, sizeof word);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    word = __builtin_bswap64(word);
#endif
    return word;
}

std::uint64_t hash_bytes(std::string_view bytes) {
    std::uint64_t h = 0xcbf29ce484222325ULL ^ bytes.size();
    std::size_t i = 0;
    for (; i + 8 <= bytes.size(); i += 8) {
        h = (h ^ load_little_endian(bytes.data() + i)) * 0x100000001b3ULL;
        h ^= h >> 32;
    }
    for (; i < bytes.size(); ++i) h = (h ^ static_cast<unsigned char>(bytes[i])) * 0x100000001b3ULL;
    return h;
}

// One process's clocks. Each draw is its own statement: the order in which a function's
// arguments are evaluated differs between compilers, and with it the numbers drawn.
// wall_ppm bounds the wall clock's rate error: Redis servers keep their wall clocks in step
// with NTP (within wall_skew of true time, so a replica judges an expiry as its master
// would), while the clients' clocks are free-running; a wall clock that wanders is a fault
// (clock_rate with wall=1, wall_step), not noise.
process_clocks draw_clocks(prng& rng, std::int64_t wall_skew_us, std::int32_t ppm,
                           std::int32_t wall_ppm_max) {
    const std::int64_t boot_us = rng.between(1'000'000'000, 9'000'000'000);
    const auto mono_ppm = static_cast<std::int32_t>(rng.between(-ppm, ppm));
    const std::int64_t skew_us = rng.between(-wall_skew_us, wall_skew_us);
    const auto wall_ppm = static_cast<std::int32_t>(rng.between(-wall_ppm_max, wall_ppm_max));
    process_clocks clocks;
    clocks.mono = sim_clock(boot_us, mono_ppm, true);
    clocks.wall = sim_clock(wall_epoch_us + skew_us, wall_ppm, false);
    return clocks;
}

// A request or a reply on one of a client's connections (its lane and epoch).
message lane_message(message_kind kind, std::uint32_t epoch, lane on, std::string&& bytes) {
    message m;
    m.kind = kind;
    m.epoch = epoch;
    m.on = on;
    m.bytes = std::move(bytes);
    return m;
}

std::string describe_request(std::string_view bytes) {
    request_view r;
    if (!parse_request(bytes.data(), bytes.size(), r)) return "(unparsable request)";
    const script_id id = request_script(r);
    if (id != script_id::none) {
        return std::string(to_string(id)) + " (" + std::string(r.args[0]) + ")";
    }
    if (r.count == 3 && equals_ignoring_case(r.args[0], "SCRIPT")) {
        return "SCRIPT LOAD " +
               std::string(to_string(script_by_text(r.args[2])));  // not the script's text
    }
    std::string out;
    for (std::size_t i = 0; i < r.count; ++i) {
        if (i > 0) out += ' ';
        out += r.args[i];
    }
    return out;
}

// One reply node and its elements, on one line: +PONG, :1, nil, "text", [..., ...].
std::string render_reply(const reply_node* nodes, std::size_t count, std::size_t& at) {
    const reply_node& n = nodes[at++];
    switch (n.type) {
        case reply_type::simple_string: return "+" + std::string(n.text);
        case reply_type::error: return "-" + std::string(n.text);
        case reply_type::integer: return ":" + std::to_string(n.integer);
        case reply_type::nil: return "nil";
        case reply_type::bulk_string: return "\"" + std::string(n.text) + "\"";
        case reply_type::array: break;
    }
    std::string out = "[";
    for (std::uint32_t i = 0; i < n.elements && at < count; ++i)
        out += (i > 0 ? ", " : "") + render_reply(nodes, count, at);
    return out + "]";
}

std::string describe_reply(std::string_view bytes) {
    std::array<reply_node, 128> nodes{};  // CLUSTER SLOTS: sim_connection::reply_nodes_max
    const parse_result parsed = parse_reply(bytes.data(), bytes.size(), nodes.data(), nodes.size());
    if (parsed.code != errc::ok) return "(unparsable reply)";
    std::size_t at = 0;
    std::string out = render_reply(nodes.data(), parsed.nodes, at);
    if (out.size() > 80) out = out.substr(0, 77) + "...";
    return out;
}

}  // namespace

std::string format(const char* pattern, ...) {
    char text[512];
    va_list args;
    va_start(args, pattern);
    std::vsnprintf(text, sizeof text, pattern, args);
    va_end(args);
    return text;
}

std::string seconds_text(std::int64_t us) {
    const char* sign = us < 0 ? "-" : "";
    const std::int64_t magnitude = us < 0 ? -us : us;
    return format("%s%lld.%06llds", sign, static_cast<long long>(magnitude / 1'000'000),
                  static_cast<long long>(magnitude % 1'000'000));
}

// ---- scheduler ----------------------------------------------------------------------------

void scheduler::push(std::int64_t at_us, kind what, std::uint8_t who, std::uint32_t arg) {
    heap_.push_back(event{at_us, next_seq_++, what, who, arg});
    std::push_heap(heap_.begin(), heap_.end(), later{});
}

bool scheduler::pop(event& out) {
    if (heap_.empty()) return false;
    std::pop_heap(heap_.begin(), heap_.end(), later{});
    out = heap_.back();
    heap_.pop_back();
    return true;
}

// ---- set-up -------------------------------------------------------------------------------

world::world(const run_spec& spec)
    : spec_(spec),
      config_(*spec.config),
      lock_name_(config_.layout == topology::cluster ? lock_name_tagged : lock_name_untagged),
      params_(spec.params),
      rng_(prng::stream(spec.seed, 1)) {
    EDGELOCK_ASSERT(params_.clients >= 1 && params_.clients <= clients_max);
    EDGELOCK_ASSERT(config_.nodes >= 1 && config_.nodes <= nodes_max);
    EDGELOCK_ASSERT(config_.sentinels <= sentinel_processes_max);
    // A restarted node counts again only after the guard (ttl + drift): the lock may be
    // unavailable that much longer after a fault, and still be live.
    if (config_.restart_guard) params_.liveness_window_ms += lock_restart_guard_ms(params_);
    net_.init(params_.clients, config_.nodes, config_.sentinels, params_, spec.seed);
    resource_ = fenced_resource(params_.stock, config_.permits);
    history_.fencing = config_.fencing;
    history_.permits = config_.permits;
    fired_.assign(spec.faults.size(), false);

    prng setup = prng::stream(spec.seed, 2);
    const std::int32_t ppm = params_.clock_ppm_max;
    make_nodes(setup);
    for (std::uint8_t j = 0; j < config_.sentinels; ++j)
        sentinels_.emplace_back(j, monitored_master_name, 0);
    paused_until_us_.assign(config_.nodes, 0);
    isolated_until_us_.assign(config_.nodes, 0);
    fail_down_.assign(config_.nodes, false);
    minority_down_.assign(config_.nodes, false);
    cut_since_us_.assign(config_.nodes, -1);
    side_of_.assign(config_.nodes, 0);
    held_.resize(config_.nodes);
    seen_offset_.assign(config_.nodes, 0);
    demoted_.assign(config_.nodes, false);
    replacing_ms_.assign(config_.nodes, -1);
    replaced_us_.assign(config_.nodes, -1);
    powered_off_.assign(config_.nodes, false);
    restarted_us_.assign(config_.nodes, -1);
    if (config_.layout == topology::sentinel) events_.push(0, scheduler::kind::sentinel_info, 0, 0);

    const lock_config lc = clients_lock_config();
    subscribers_.assign(static_cast<std::size_t>(params_.clients) * config_.nodes,
                        node_subscriber{});
    if (config_.fencing && config_.permits > 1) {
        std::array<char, 256> key{};
        slots_key_.assign(
            key.data(), write_companion_key(lock_name_, companion::slots, key.data(), key.size()));
    }
    if (config_.fair) {
        std::array<char, 256> key{};
        queue_key_.assign(
            key.data(), write_companion_key(lock_name_, companion::queue, key.data(), key.size()));
        qttl_key_.assign(key.data(), write_companion_key(lock_name_, companion::queue_ttl,
                                                         key.data(), key.size()));
        lock_key_ = lock_name_;
        init_fair_checks();
    }
    acquiring_.assign(params_.clients, false);
    asking_since_us_.assign(params_.clients, 0);
    asked_in_vain_.assign(params_.clients, false);
    for (std::uint8_t c = 0; c < params_.clients; ++c) {
        // Client wall clocks are not kept in sync (seconds apart); the lock never reads them.
        const process_clocks clocks = draw_clocks(setup, 2'000'000, ppm, ppm);
        clients_.push_back(
            std::make_unique<client>(*this, c, lc, clocks, prng::stream(spec.seed, 100 + c),
                                     prng::stream(spec.seed, 200 + c), spec.clients));
    }

    end_us_ = std::max(params_.duration_ms, params_.liveness_window_ms) * 1000;
    for (std::size_t i = 0; i < spec.faults.size(); ++i) {
        const fault& f = spec.faults[i];
        if (f.when.at_point) continue;
        events_.push(f.when.at_ms * 1000, scheduler::kind::fault_start, 0,
                     static_cast<std::uint32_t>(i));
        end_us_ = std::max(end_us_, (f.when.at_ms + params_.liveness_window_ms) * 1000);
    }
}

// The nodes, each drawn from `setup` in turn (its persistence is the one its crash fault
// names); under Sentinel every other node replicates node 0; with WAIT over one Redis or
// Redlock, instance i's replica is node instances + i (has_own_replicas).
void world::make_nodes(prng& setup) {
    for (std::uint8_t n = 0; n < config_.nodes; ++n) {
        persistence persist = persistence::none;
        for (const fault& f : spec_.faults) {
            const bool restarts = f.kind == fault_kind::crash || f.kind == fault_kind::power_off ||
                                  f.kind == fault_kind::replace;
            if (restarts && f.on_node && f.target == n) {
                persist = f.persist;
                break;
            }
        }
        nodes_.emplace_back(n, persist, setup.between(0, 999'999));
        nodes_.back().set_eviction(eviction_of(spec_.faults, n));
        if (!params_.script_load_allowed) nodes_.back().refuse_script_load();
        if (!params_.config_get_allowed) nodes_.back().refuse_config_get();
        if (!params_.replica_serve_stale_data) nodes_.back().refuse_stale_data();
        if (!params_.replica_read_only) nodes_.back().take_writes_as_replica();
        if (params_.old_server_per_million > 0 && setup.chance(params_.old_server_per_million)) {
            nodes_.back().behave_as_redis_6();
        }
        node_clocks_.push_back(
            draw_clocks(setup, params_.wall_skew_us_max, params_.clock_ppm_max, 0));
        nodes_.back().set_started(node_clocks_.back().wall.read_ms(0) - params_.node_uptime_ms);
    }
    if (config_.layout == topology::sentinel) {
        for (std::uint8_t n = 1; n < config_.nodes; ++n) nodes_[n].follow(nodes_[0], 0);
    }
    for (std::uint8_t r = config_.instances; r < config_.nodes && has_own_replicas(config_); ++r)
        nodes_[r].follow(nodes_[r - config_.instances], 0);
    if (config_.layout == topology::cluster) make_cluster();
}

// Three shards, a master (even node) and its replica (the next one) each. The slots are split
// into three ranges as redis-cli --cluster create splits them; node 0 gets the one holding the
// lock's slot (so the faults the scenarios aim at node 0 hit the lock's master, and node 1 is
// the replica a failover promotes), nodes 2 and 4 the others. Every node knows the whole
// layout (as after the cluster formed).
void world::make_cluster() {
    std::vector<cluster_member> members;
    for (std::uint8_t n = 0; n < config_.nodes; ++n) {
        const std::string hex = "0123456789abcdef";
        members.push_back({node_host(n), redis_port, std::string(40, hex[n % hex.size()])});
    }
    const std::uint16_t lock_slot = server_key_slot(lock_name_);
    lock_slot_ = lock_slot;
    constexpr std::uint16_t shards = 3;
    std::array<std::uint16_t, shards + 1> bounds{};
    for (std::uint16_t k = 0; k <= shards; ++k)
        bounds[k] = static_cast<std::uint16_t>(cluster_slot_count * k / shards);
    std::uint16_t lock_range = 0;
    while (lock_slot >= bounds[lock_range + 1]) ++lock_range;
    for (std::uint16_t k = 0; k < shards; ++k) {
        const auto range = static_cast<std::uint16_t>((lock_range + k) % shards);
        cluster_ranges_[k] = {bounds[range], static_cast<std::uint16_t>(bounds[range + 1] - 1)};
    }
    for (redis_node& n : nodes_) {
        n.enable_cluster(members);
        for (std::uint8_t k = 0; k < shards; ++k) {
            const auto master = static_cast<std::uint8_t>(2 * k);
            n.set_slot_owner(cluster_ranges_[k].first, cluster_ranges_[k].second, master);
            n.set_member_role(static_cast<std::uint8_t>(master + 1), master, false);
        }
    }
    for (std::uint8_t k = 0; k < shards; ++k) nodes_[2 * k + 1].follow(nodes_[2 * k], 0);
}

// The lock every client of the run configures: the params' knobs and the configuration's.
lock_config world::clients_lock_config() const {
    lock_config lc = params_lock(params_);
    lc.name = lock_name_;
    lc.instances = config_.instances;
    lc.fencing = config_.fencing;
    lc.replicas_to_wait = config_.replicas_to_wait;
    lc.restart_guard_ms = config_.restart_guard ? -1 : 0;
    lc.fair = config_.fair;
    lc.permits = config_.permits;
    return lc;
}

world::~world() = default;

run_result world::run() {
    if (recording()) {
        timeline_ += format("config %s, %u clients, %u Redis node(s), lock \"%s\"\n",
                            std::string(config_.name).c_str(), unsigned{params_.clients},
                            unsigned{config_.nodes}, lock_name_);
    }
    prng starts = prng::stream(spec_.seed, 3);
    for (std::uint8_t c = 0; c < params_.clients; ++c) {
        clients_[c]->start(5 + 7 * c + starts.between(0, params_.start_ms_max / 10));
    }
    run_result result;
    scheduler::event e;
    while (events_.pop(e)) {
        if (e.at_us > end_us_) break;
        now_us_ = e.at_us;
        ++event_count_;
        mix(static_cast<std::uint64_t>(e.at_us));
        mix((static_cast<std::uint64_t>(e.what) << 40) | (std::uint64_t{e.who} << 32) | e.arg);
        if (event_count_ > run_events_max) {
            ++result.anomalies;
            note("world", nullptr, "event limit reached: the run is cut short");
            break;
        }
        dispatch(e);
        if (config_.fair) judge_waiters();
        judge_acquirers();
    }
    now_us_ = end_us_;
    judge_acquirers();
    for (auto& c : clients_) {
        c->finish(end_us_);
        result.anomalies += c->anomalies();
    }
    history_.heal_us = heal_us_;
    history_.end_us = end_us_;
    result.checks = check_history(history_);
    result.trace_hash = hash_;
    result.events = event_count_;
    result.simulated_us = end_us_;
    result.past = std::move(history_);
    result.marks = std::move(marks_);
    result.timeline = std::move(timeline_);
    return result;
}

run_result run(const run_spec& spec) {
    EDGELOCK_ASSERT(spec.config != nullptr);
    world w(spec);
    return w.run();
}

// ---- events -------------------------------------------------------------------------------

// What the nodes or the sentinels change, for the kept check: a promotion, the news of one, or
// the lock's slot moving concern every holder (where the lock's master is may have changed);
// a node restarting, resuming, rejoining (until it could have been reconfigured) or re-pointed
// concerns that node (and everyone where node_news_concerns_all()).
void world::disturb_by_event(const scheduler::event& e) {
    disturbance d;
    d.to_us = now_us_;
    switch (e.what) {
        case scheduler::kind::migrate_step:
        case scheduler::kind::slot_learn:
            d.ridden = true;  // the available check's: a slot moving is ridden out
            [[fallthrough]];
        case scheduler::kind::cluster_learn:
        case scheduler::kind::cluster_fail_undo: d.everyone = true; break;
        case scheduler::kind::sentinel_promote:
        case scheduler::kind::sentinel_learn:
            d.everyone = true;
            d.failover_news = rides_failovers();
            break;
        case scheduler::kind::node_restart:
        case scheduler::kind::node_resume:
        case scheduler::kind::node_rejoin:
            // Back, it may believe it is a master until it is reconfigured (or learns).
            d.to_us = now_us_ + (params_.reconfigure_ms + params_.loading_ms_max) * 1000;
            [[fallthrough]];
        case scheduler::kind::sentinel_reconfigure:
        case scheduler::kind::sentinel_repoint:
            d.nodes = 1u << e.who;
            d.everyone = node_news_concerns_all();
            d.failover_news = e.what == scheduler::kind::sentinel_repoint && rides_failovers();
            break;
        default: return;
    }
    disturb(d);
}

void world::dispatch(const scheduler::event& e) {
    disturb_by_event(e);
    switch (e.what) {
        case scheduler::kind::deliver: deliver(e.arg); break;
        case scheduler::kind::client_timer: clients_[e.who]->on_timer(e.arg); break;
        case scheduler::kind::client_resume: clients_[e.who]->on_resume(); break;
        case scheduler::kind::client_probe: clients_[e.who]->on_probe(e.arg); break;
        case scheduler::kind::node_restart: restart(e.who); break;
        case scheduler::kind::sentinel_check: sentinel_check(e.who); break;
        case scheduler::kind::sentinel_promote: sentinel_promote(e.who, e.arg); break;
        case scheduler::kind::sentinel_info: sentinel_info(); break;
        case scheduler::kind::sentinel_reconfigure: sentinel_reconfigure(e.who); break;
        case scheduler::kind::sentinel_repoint: sentinel_repoint(e.who); break;
        case scheduler::kind::sentinel_learn: sentinel_learn(e.who, e.arg); break;
        case scheduler::kind::cluster_learn: cluster_learn(e.who, e.arg); break;
        case scheduler::kind::cluster_fail_undo: cluster_fail_undo(e.who, e.arg); break;
        case scheduler::kind::cluster_minority: cluster_minority(e.who); break;
        case scheduler::kind::cluster_rejoined: cluster_rejoined(e.who); break;
        case scheduler::kind::migrate_step: migrate_step(); break;
        case scheduler::kind::slot_learn: slot_learn(e.who); break;
        case scheduler::kind::node_resume: resume_node(e.who); break;
        case scheduler::kind::node_rejoin: rejoin_node(e.who); break;
        case scheduler::kind::node_wake:
            if (paused(e.who) || !held_[e.who].empty()) {
                // After the resume has read what waited: acks held in the pause count first.
                events_.push(std::max(paused_until_us_[e.who], now_us_), scheduler::kind::node_wake,
                             e.who, e.arg);
            } else if (nodes_[e.who].up() && nodes_[e.who].incarnation() == e.arg) {
                nodes_[e.who].on_wait_deadline(node_wall_ms(e.who), now_us_, out_);
                note_unblocked(e.who);
                flush(e.who);
            }
            break;
        case scheduler::kind::fault_start: activate(e.arg); break;
    }
}

void world::deliver(std::size_t path) {
    const std::uint8_t from = net_.path_from(path);
    const std::uint8_t to = net_.path_to(path);
    message m = net_.take(path);
    const std::uint8_t clients = params_.clients;
    const bool to_node = m.kind == message_kind::request || m.kind == message_kind::replication ||
                         m.kind == message_kind::replication_ack;
    if (to_node && net_.is_node_server(static_cast<std::uint8_t>(to - clients))) {
        const auto node = static_cast<std::uint8_t>(to - clients);
        const bool between_nodes =
            m.kind == message_kind::replication || m.kind == message_kind::replication_ack;
        if (between_nodes && cut(static_cast<std::uint8_t>(from - clients), node))
            return;  // lost on the way
        // Held while paused, and behind what is still held: the socket keeps its order.
        if ((paused(node) || !held_[node].empty()) && nodes_[node].up()) {
            held_[node].push_back(held_message{from, to, std::move(m)});
            return;
        }
    }
    switch (m.kind) {
        case message_kind::request:
            deliver_request(from, static_cast<std::uint8_t>(to - clients), std::move(m));
            break;
        case message_kind::reply:
            deliver_reply(static_cast<std::uint8_t>(from - clients), to, std::move(m));
            break;
        case message_kind::resource_request: deliver_resource_request(from, std::move(m)); break;
        case message_kind::resource_reply: clients_[to]->on_resource_reply(std::move(m)); break;
        case message_kind::replication:
            deliver_replication(static_cast<std::uint8_t>(from - clients),
                                static_cast<std::uint8_t>(to - clients), std::move(m));
            break;
        case message_kind::replication_ack:
            deliver_ack(static_cast<std::uint8_t>(from - clients),
                        static_cast<std::uint8_t>(to - clients), std::move(m));
            break;
    }
}

// A write may hold several requests (the handshake is pipelined in one); Redis executes each
// complete command of its query buffer in turn, and so does the node, queueing those behind
// a WAIT that blocks.
std::vector<std::string_view>& world::split(std::string_view bytes) {
    pipeline_.clear();
    if (!split_pipeline(bytes, pipeline_)) {
        pipeline_.clear();
        pipeline_.push_back(bytes);  // executed as one: the node answers a protocol error
    }
    return pipeline_;
}

void world::deliver_request(std::uint8_t client, std::uint8_t server, message&& m, bool read_late) {
    const network::tcp_state& conn = net_.conn(client, server, m.on);
    if (!read_late && (!conn.open || conn.epoch != m.epoch)) return;
    if (!net_.is_node_server(server)) {
        if (!read_late && partitioned(client, server)) {
            break_connection(client, server, false, "partition", m.on);
            return;
        }
        deliver_sentinel_request(client, server, std::move(m));
        return;
    }
    const std::uint8_t node = server;
    if (!nodes_[node].up()) return;
    if (!read_late && partitioned(client, node)) {
        break_connection(client, node, false, "partition", m.on);
        return;
    }
    nodes_[node].set_master_link(master_link_up(node));
    for (const std::string_view request : split(m.bytes)) {
        const std::size_t replies_before = out_.replies.size();
        if (m.on != lane::subscriber || !pubsub_command(client, node, m.epoch, request)) {
            nodes_[node].receive(model_client(client, m.on), m.epoch, request, node_wall_ms(node),
                                 now_us_, out_);
        }
        if (recording()) {
            const bool answered = out_.replies.size() > replies_before;
            note_request(node, client, request,
                         answered ? &out_.replies[replies_before].bytes : nullptr);
        }
    }
    flush(node);
}

void world::deliver_sentinel_request(std::uint8_t client, std::uint8_t server, message&& m) {
    const sentinel_node& sentinel = sentinels_[server - config_.nodes];
    for (const std::string_view request : split(m.bytes)) {
        if (m.on == lane::watch && sentinel_node::subscribes_to_switches(request))
            watchers_[sentinel.id()][client] = m.epoch;
        std::string reply = sentinel.answer(request);
        if (recording()) note_request(server, client, request, &reply);
        send_reply(server, client, m.epoch, std::move(reply), m.on);
    }
}

void world::deliver_reply(std::uint8_t server, std::uint8_t client, message&& m) {
    const network::tcp_state& conn = net_.conn(client, server, m.on);
    const bool draining = !conn.open && now_us_ <= conn.drained_at_us;
    if ((!conn.open && !draining) || conn.epoch != m.epoch) return;
    if (partitioned(client, server)) {
        break_connection(client, server, false, "partition", m.on);
        return;
    }
    clients_[client]->on_reply(server, m.epoch, std::move(m.bytes));
}

void world::deliver_resource_request(std::uint8_t client, message&& m) {
    const fenced_resource::result r =
        m.write ? resource_.write(m.fenced, m.token, m.value) : resource_.read(m.fenced, m.token);
    history_.resource_ops.push_back(resource_record{now_us_, client, m.hold, m.write, m.fenced,
                                                    r.accepted, m.token,
                                                    m.write ? m.value : r.value});
    mix((std::uint64_t{r.accepted} << 1) | m.write);
    if (recording()) {
        timeline_ += format("%8lld.%03lld R   %s from c%u hold #%u token %lld%s: %s (value %lld)\n",
                            static_cast<long long>(now_us_ / 1000),
                            static_cast<long long>(now_us_ % 1000), m.write ? "write" : "read",
                            unsigned{client}, m.hold, static_cast<long long>(m.token),
                            m.fenced ? "" : " (unfenced)", r.accepted ? "accepted" : "REJECTED",
                            static_cast<long long>(history_.resource_ops.back().value));
    }
    message reply;
    reply.kind = message_kind::resource_reply;
    reply.request_id = m.request_id;
    reply.accepted = r.accepted;
    reply.value = r.value;
    const std::int64_t at = net_.send(net_.resource_endpoint(), net_.client_endpoint(client),
                                      std::move(reply), now_us_, 0);
    events_.push(at, scheduler::kind::deliver, 0,
                 static_cast<std::uint32_t>(net_.path_id(net_.resource_endpoint(), client)));
}

void world::deliver_replication(std::uint8_t master, std::uint8_t replica, message&& m) {
    redis_node& r = nodes_[replica];
    if (!nodes_[master].up() || !r.up() || r.master_id() != master ||
        r.master_incarnation() != m.epoch || cut(master, replica)) {
        return;
    }
    r.apply(m.op, m.offset, now_us_);
    message ack;
    ack.kind = message_kind::replication_ack;
    ack.epoch = m.epoch;
    ack.offset = r.offset();
    const std::uint8_t from = net_.node_endpoint(replica);
    const std::uint8_t to = net_.node_endpoint(master);
    const std::int64_t at = net_.send(from, to, std::move(ack), now_us_, 0);
    events_.push(at, scheduler::kind::deliver, 0,
                 static_cast<std::uint32_t>(net_.path_id(from, to)));
}

void world::deliver_ack(std::uint8_t replica, std::uint8_t master, message&& m) {
    redis_node& n = nodes_[master];
    if (!n.up() || !n.is_master() || n.incarnation() != m.epoch || cut(master, replica)) return;
    n.on_ack(replica, m.offset, node_wall_ms(master), now_us_, out_);
    note_unblocked(master);
    flush(master);
}

// Replies a WAIT's end released (the WAIT, and requests queued behind it), in the node's lane.
void world::note_unblocked(std::uint8_t node) {
    if (!recording()) return;
    for (const node_output::reply& r : out_.replies) {
        note_node(node,
                  "c" + std::to_string(r.client) + " (unblocked) -> " + describe_reply(r.bytes));
    }
}

void world::flush(std::uint8_t node) {
    if (!out_.effects.empty()) replicate(node);
    if (!out_.grants.empty()) judge_grants(node);
    for (std::string& fault : out_.claim_faults) claim_failure(std::move(fault));
    if (!out_.published.empty()) publish(node);
    for (node_output::reply& r : out_.replies) {
        const lane on = r.client < clients_max ? lane::command : lane::subscriber;
        const auto client = static_cast<std::uint8_t>(r.client % clients_max);
        send_reply(node, client, r.epoch, std::move(r.bytes), on);
    }
    if (out_.wait_deadline_us >= 0) {
        events_.push(out_.wait_deadline_us, scheduler::kind::node_wake, node,
                     nodes_[node].incarnation());
    }
    out_.clear();
}

void world::replicate(std::uint8_t master) {
    const redis_node& m = nodes_[master];
    if (!m.is_master()) return;  // a writable replica's own writes reach nobody
    const std::int64_t first = m.offset() - static_cast<std::int64_t>(out_.effects.size()) + 1;
    for (std::uint8_t r = 0; r < config_.nodes; ++r) {
        if (r == master || !nodes_[r].up() || nodes_[r].master_id() != master) continue;
        const std::uint8_t from = net_.node_endpoint(master);
        const std::uint8_t to = net_.node_endpoint(r);
        for (std::size_t i = 0; i < out_.effects.size(); ++i) {
            message msg;
            msg.kind = message_kind::replication;
            msg.epoch = m.incarnation();
            msg.op = out_.effects[i];
            msg.offset = first + static_cast<std::int64_t>(i);
            const std::int64_t at =
                net_.send(from, to, std::move(msg), now_us_, replication_extra_us(r));
            events_.push(at, scheduler::kind::deliver, 0,
                         static_cast<std::uint32_t>(net_.path_id(from, to)));
        }
    }
}

void world::send_reply(std::uint8_t server, std::uint8_t client, std::uint32_t epoch,
                       std::string&& bytes, lane on) {
    const network::tcp_state& conn = net_.conn(client, server, on);
    if (!conn.open || conn.epoch != epoch) return;
    if (partitioned(client, server)) {
        break_connection(client, server, false, "partition", on);
        return;
    }
    if (reply_lost(server, client, on)) return;
    mix(hash_bytes(bytes));
    message m = lane_message(message_kind::reply, epoch, on, std::move(bytes));
    const std::uint8_t from = net_.server_endpoint(server);
    // slow_link slows the command connection only (its faults are about lock traffic).
    const std::int64_t extra_us = on == lane::command ? path_extra_us(client, server, false) : 0;
    // TCP cuts a stream where it likes: a reply may reach the client in two reads.
    if (on == lane::command && m.bytes.size() > 1 && rng_.chance(params_.split_reply_per_million)) {
        const auto cut = static_cast<std::size_t>(
            rng_.between(1, static_cast<std::int64_t>(m.bytes.size()) - 1));
        message head = m;
        head.bytes.resize(cut);
        m.bytes.erase(0, cut);
        queue_reply(from, client, std::move(head), extra_us);
    }
    queue_reply(from, client, std::move(m), extra_us);
}

void world::queue_reply(std::uint8_t from, std::uint8_t client, message&& m,
                        std::int64_t extra_us) {
    const lane on = m.on;
    const std::int64_t at = net_.send(from, client, std::move(m), now_us_, extra_us);
    if (net_.last_send_tailed()) disturb_by_tail(client, at);
    events_.push(at, scheduler::kind::deliver, 0,
                 static_cast<std::uint32_t>(net_.path_id(from, client, on)));
}

// drop_reply (lock replies, on the command connection) and loss faults on the way back: the
// reply is lost and its connection broken.
bool world::reply_lost(std::uint8_t server, std::uint8_t client, lane on) {
    if (!net_.is_node_server(server)) return false;
    for (active_fault& a : active_) {
        if (on != lane::command) break;
        const fault& f = spec_.faults[a.index];
        if (f.kind != fault_kind::drop_reply || f.target != client || a.remaining == 0 ||
            ((f.nodes >> server) & 1u) == 0) {
            continue;
        }
        --a.remaining;
        disturb_by(f, now_us_ + lock_attempt_timeout_ms(params_) * 1000);
        break_connection(client, server, f.reset, "reply lost");
        return true;
    }
    bool reset = false;
    if (lose_message(client, server, reset)) {
        break_connection(client, server, reset, "reply lost", on);
        return true;
    }
    return false;
}

// ---- for the clients ------------------------------------------------------------------------

int world::resolve(const session::node_address& address) const noexcept {
    return sim::resolve(address, config_.nodes, config_.sentinels);
}

world::connect_outcome world::try_connect(std::uint8_t client, const session::node_address& to,
                                          std::uint8_t& server) {
    const int found = resolve(to);
    if (found == no_server) return connect_outcome::unknown_host;
    server = static_cast<std::uint8_t>(found);
    if (!net_.is_node_server(server))  // a sentinel: up, unless the client is cut off from it
        return partitioned(client, server) ? connect_outcome::timeout : connect_outcome::ok;
    // A crashed process's host answers with a refusal; a host without power, not at all.
    if (!nodes_[server].up())
        return powered_off_[server] ? connect_outcome::timeout : connect_outcome::refused;
    if (partitioned(client, server)) return connect_outcome::timeout;
    return connect_outcome::ok;
}

std::uint32_t world::open_connection(std::uint8_t client, std::uint8_t server, lane on) {
    return net_.open(client, server, on);
}

void world::close_connection(std::uint8_t client, std::uint8_t server, std::uint32_t epoch,
                             lane on) {
    network::tcp_state& conn = net_.conn(client, server, on);
    if (!conn.open || conn.epoch != epoch) return;
    conn.open = false;
    forget_connection(client, server, on);
}

// The node forgets a connection that closed: its blocked state, its subscriptions.
void world::forget_connection(std::uint8_t client, std::uint8_t server, lane on) {
    if (!net_.is_node_server(server)) return;
    nodes_[server].drop_connection(model_client(client, on));
    if (on == lane::subscriber) subscriber_at(server, client) = node_subscriber{};
}

std::int64_t world::connect_us(std::uint8_t client, std::uint8_t server) const noexcept {
    return net_.latency_us(client, net_.server_endpoint(server)) +
           net_.latency_us(net_.server_endpoint(server), client);
}

void world::send_request(std::uint8_t client, std::uint8_t server, std::uint32_t epoch,
                         std::string&& bytes, lane on) {
    const network::tcp_state& conn = net_.conn(client, server, on);
    if (!conn.open || conn.epoch != epoch) return;  // written to a dead connection
    if (partitioned(client, server)) {
        break_connection(client, server, false, "partition", on);
        return;
    }
    bool reset = false;
    if (lose_message(client, server, reset)) {
        break_connection(client, server, reset, "request lost", on);
        return;
    }
    mix(hash_bytes(bytes));
    // slow_link delays the command connection only, slow_subscribe a SUBSCRIBE only.
    std::int64_t extra_us = 0;
    if (on == lane::command) {
        extra_us = path_extra_us(client, server, false);
    } else if (net_.is_node_server(server) && bytes.find("$9\r\nSUBSCRIBE") != std::string::npos) {
        extra_us = subscribe_extra_us(client, server);
    }
    message m = lane_message(message_kind::request, epoch, on, std::move(bytes));
    const std::uint8_t to = net_.server_endpoint(server);
    const std::int64_t at = net_.send(client, to, std::move(m), now_us_, extra_us);
    if (net_.last_send_tailed()) disturb_by_tail(client, at);
    events_.push(at, scheduler::kind::deliver, 0,
                 static_cast<std::uint32_t>(net_.path_id(client, to, on)));
}

void world::send_resource(std::uint8_t client, message&& m) {
    const std::uint8_t to = net_.resource_endpoint();
    mix((std::uint64_t{m.write} << 63) ^ static_cast<std::uint64_t>(m.value));
    const std::int64_t at =
        net_.send(client, to, std::move(m), now_us_, path_extra_us(client, 0, true));
    events_.push(at, scheduler::kind::deliver, 0,
                 static_cast<std::uint32_t>(net_.path_id(client, to)));
}

void world::schedule_client(std::uint8_t client, std::int64_t at_us, std::uint32_t generation) {
    events_.push(at_us, scheduler::kind::client_timer, client, generation);
}

void world::schedule_resume(std::uint8_t client, std::int64_t at_us) {
    events_.push(at_us, scheduler::kind::client_resume, client, 0);
}

void world::schedule_probe(std::uint8_t client, std::int64_t at_us, std::uint32_t generation) {
    events_.push(at_us, scheduler::kind::client_probe, client, generation);
}

void world::reach_point(std::uint8_t client, point p, std::uint16_t nth) {
    for (std::size_t i = 0; i < spec_.faults.size(); ++i) {
        const trigger& t = spec_.faults[i].when;
        if (fired_[i] || !t.at_point || t.client != client || t.where != p || t.nth != nth)
            continue;
        if (t.offset_ms == 0) {
            activate(i);
        } else {
            events_.push(now_us_ + t.offset_ms * 1000, scheduler::kind::fault_start, 0,
                         static_cast<std::uint32_t>(i));
        }
    }
}

std::size_t world::begin_hold(std::uint8_t client, std::int64_t fence, std::int64_t valid_until_ms,
                              std::string_view token_hex) {
    // Taken: the available check's acquirer half waits afresh (a semaphore may still have a
    // permit free for the next asker).
    free_since_us_ = -1;
    hold_record r;
    r.client = client;
    r.index = static_cast<std::uint32_t>(history_.holds.size());
    r.start_us = now_us_;
    r.end_us = now_us_;
    r.fence = fence;
    if (!slots_key_.empty()) r.permit = numbered_permit(token_hex, fence);
    r.valid_until_ms = valid_until_ms;
    history_.holds.push_back(r);
    return history_.holds.size() - 1;
}

void world::record_action(std::uint8_t client, std::uint32_t hold, std::int64_t check_us,
                          std::int64_t send_us) {
    history_.actions.push_back(action_record{client, hold, check_us, send_us});
}

// ---- recording ----------------------------------------------------------------------------

void world::mix(std::uint64_t value) noexcept {
    hash_ ^= value + 0x9e3779b97f4a7c15ULL + (hash_ << 6) + (hash_ >> 2);
    hash_ *= 0xff51afd7ed558ccdULL;
    hash_ ^= hash_ >> 33;
}

void world::note(const std::string& lane, const process_clocks* clocks, const std::string& text) {
    if (!recording()) return;
    std::string line = format("%8lld.%03lld %-3s ", static_cast<long long>(now_us_ / 1000),
                              static_cast<long long>(now_us_ % 1000), lane.c_str());
    if (clocks != nullptr) {
        line +=
            format("[mono %lld wall %lld] ", static_cast<long long>(clocks->mono.read_ms(now_us_)),
                   static_cast<long long>(clocks->wall.read_ms(now_us_)));
    }
    timeline_ += line + text + "\n";
}

void world::note_client(std::uint8_t client, const std::string& text) {
    note("c" + std::to_string(client), &clients_[client]->clocks(), text);
}

std::string world::server_name(std::uint8_t server) const {
    return net_.is_node_server(server)
               ? node_host(server)
               : sentinel_host(static_cast<std::uint8_t>(server - config_.nodes));
}

// "c0 PING -> +PONG" in the server's lane (a node's with its wall clock); "(blocked)" for a
// request that waits behind a WAIT.
void world::note_request(std::uint8_t server, std::uint8_t client, std::string_view request,
                         const std::string* reply) {
    std::string text = "c" + std::to_string(client) + " " + describe_request(request);
    text += reply != nullptr ? " -> " + describe_reply(*reply) : std::string(" (blocked)");
    if (net_.is_node_server(server)) {
        note_node(server, text);
    } else {
        note(server_name(server), nullptr, text);
    }
}

void world::note_node(std::uint8_t node, const std::string& text) {
    std::string line = format("[wall %lld] ", static_cast<long long>(node_wall_ms(node)));
    note("n" + std::to_string(node), nullptr, line + text);
}

void world::mark(world_mark::kind what, bool on_node, std::uint8_t target, std::int64_t end_us,
                 std::string label) {
    marks_.push_back(world_mark{what, now_us_, end_us, on_node, target, std::move(label)});
    if (what == world_mark::kind::fault && recording()) {
        note("!", nullptr, "FAULT " + marks_.back().label);
    }
}

}  // namespace edgelock::sim
