// SPDX-License-Identifier: Apache-2.0
#include "edgelock/sim/workload.hpp"

#include <algorithm>
#include <array>
#include <limits>

#include "edgelock/assert.hpp"
#include "edgelock/keys.hpp"
#include "edgelock/resp_writer.hpp"
#include "edgelock/scripts.hpp"
#include "edgelock/session/lock_traffic.hpp"
#include "edgelock/session/pubsub.hpp"
#include "edgelock/sim/addresses.hpp"
#include "edgelock/sim/world.hpp"
#include "request_sink.hpp"

namespace edgelock::sim {
namespace {

constexpr std::int64_t never_us = std::numeric_limits<std::int64_t>::max();
// Rounds of "drain events, write requests" one call may take; each round either makes
// progress or ends the loop, and the lock's queues are bounded, so a few suffice.
constexpr int drain_and_write_rounds_max = 16;

const char* event_name(event_type t) {
    switch (t) {
        case event_type::acquired: return "acquired";
        case event_type::acquire_failed: return "acquire_failed";
        case event_type::renewed: return "renewed";
        case event_type::lost: return "lost";
        default: return "released";
    }
}

std::string number(std::int64_t value) { return std::to_string(value); }

// The connection timing the world's parameters give; the session's bounds must accept it.
session::timing connection_timing(const world_params& p) {
    session::timing t;
    t.connect_timeout_ms = p.connect_timeout_ms;
    t.command_timeout_ms = p.io_timeout_ms;
    t.reconnect_delay_min_ms = p.reconnect_ms_min;
    t.reconnect_delay_max_ms = p.reconnect_ms_max;
    EDGELOCK_ASSERT(session::check_timing(t) == errc::ok);
    return t;
}

}  // namespace

const char* to_string(behaviour b) noexcept {
    switch (b) {
        case behaviour::correct: return "correct";
        case behaviour::ignores_validity: return "ignores-validity";
        case behaviour::skips_fencing: return "skips-fencing";
        case behaviour::deletes_without_compare: return "deletes-without-compare";
        case behaviour::jumps_the_line: return "jumps-the-line";
        case behaviour::ignores_confirmation: return "ignores-confirmation";
        default: return "never-releases";
    }
}

bool parse_behaviour(std::string_view text, behaviour& out) noexcept {
    for (behaviour b : {behaviour::correct, behaviour::ignores_validity, behaviour::skips_fencing,
                        behaviour::deletes_without_compare, behaviour::never_releases,
                        behaviour::jumps_the_line, behaviour::ignores_confirmation}) {
        if (text == to_string(b)) {
            out = b;
            return true;
        }
    }
    return false;
}

client::client(world& w, std::uint8_t id, const lock_config& config, const process_clocks& clocks,
               prng rng, prng faults_rng, behaviour b)
    : world_(w),
      id_(id),
      lock_name_(config.name),
      instances_(config.instances),
      clocks_(clocks),
      rng_(rng),
      behaviour_(b),
      faults_(*this, w, faults_rng, w.params()) {
    if (((w.params().on_demand_clients >> id) & 1u) != 0) linking_ = session::linking::on_demand;
    const errc code = lock_.configure(config);
    EDGELOCK_ASSERT(code == errc::ok);
    setup_connections();
}

// As the transports set up their connections: each instance's node, or (Sentinel) the sentinels
// and the name of the master they monitor. Each connection's reconnect jitter is seeded from the
// client's generator, so a run replays from its seed.
void client::setup_connections() {
    const configuration& config = world_.config();
    session::connection_setup s;
    s.times = connection_timing(world_.params());
    s.faults = &faults_;
    if (config.sentinels > 0) {
        for (std::uint8_t j = 0; j < config.sentinels; ++j) sentinels_[j] = address_of_sentinel(j);
        s.sentinels = sentinels_.data();
        s.sentinel_count = config.sentinels;
        s.master_name = monitored_master_name;
        s.master = &master_;
    }
    if (config.layout == topology::cluster) {
        setup_cluster(s);
        if (config.fair) setup_fair();  // the subscriber is placed once the map is read
        return;
    }
    for (std::uint8_t i = 0; i < instances_; ++i) {
        if (config.sentinels == 0) {
            nodes_[i] = address_of_node(i);  // without Sentinel, instance i is node i
            s.node = &nodes_[i];
            s.refuse_replica = true;  // as validated_deployment::instance_setup
        }
        s.seed = rng_.next();
        s.read_node = config.restart_guard;
        connections_[i].setup(world_, *this, id_, i, s, world_.params().write_window);
    }
    s.faults = nullptr;  // the fault points are the lock connections'
    if (config.fair) setup_subscriber(s);
    if (config.sentinels > 0) setup_watch(s);
}

// A fair lock: its waits' channels begin with its line's key, in the lock's slot.
void client::setup_fair() {
    std::array<char, key_bytes_max> line{};
    const std::size_t line_size =
        write_companion_key(lock_name_, companion::queue, line.data(), line.size());
    EDGELOCK_ASSERT(line_size > 0);
    fair_ = true;
}

// The subscriber reaches the node (or Sentinel's master) as instance 0's connection does, as
// the blocking client's: the same address and timing; it reads no node facts.
void client::setup_subscriber(session::connection_setup s) {
    setup_fair();
    s.kind = session::connection_kind::subscriber;
    s.seed = rng_.next();
    s.read_node = false;
    s.refuse_evicting = false;
    subscriber_.setup(world_, *this, id_, 0, s, 0, lane::subscriber);
}

bool client_faults::fire(session::fault_point p) noexcept {
    const std::uint32_t per_million = per_million_[static_cast<std::size_t>(p)];
    if (per_million == 0 || world_.now_us() >= until_us_ || !rng_.chance(per_million)) return false;
    drawn_delay_ms_ = p == session::fault_point::delay_wait ? rng_.between(1, delay_ms_max_) : 0;
    owner_.fault_point_fired(p, drawn_delay_ms_);
    return true;
}

std::int64_t client_faults::delay_ms(session::fault_point) noexcept { return drawn_delay_ms_; }

namespace {

const char* fault_point_text(session::fault_point p) {
    switch (p) {
        case session::fault_point::close_after_reply:
            return "fault point: the connection fails right after an answer";
        case session::fault_point::delay_wait: return "fault point: a WAIT is held back";
        case session::fault_point::late_node_start:
            return "fault point: the node's start is told at the next write";
        case session::fault_point::fail_map_read: return "fault point: a slot map read fails";
    }
    return "fault point";
}

}  // namespace

// The world hears of it as of a fault's start: the lock must ride it out, the checks that
// judge what disturbs a client leave it out for the settling time (and what the point
// delays, or a failed map read's gap before the next), and the liveness window runs from it.
void client::fault_point_fired(session::fault_point p, std::int64_t delay_ms) {
    std::int64_t lasting_ms = delay_ms;
    if (p == session::fault_point::fail_map_read) lasting_ms = session::cluster_links::read_gap_ms;
    world_.fault_point_fired(id_, fault_point_text(p), lasting_ms * 1000);
}

std::int64_t client::now_us() const noexcept { return world_.now_us(); }
std::int64_t client::now_ms() const noexcept { return clocks_.mono.read_ms(world_.now_us()); }
std::int64_t client::to_true_us(std::int64_t local_ms) const noexcept {
    return clocks_.mono.true_us_at_ms(local_ms, world_.now_us());
}
bool client::paused() const noexcept { return world_.now_us() < paused_until_us_; }

void client::anomaly(const char* what, errc code) {
    ++anomalies_;
    const std::string why = code == errc::ok ? std::string() : std::string(": ") + to_string(code);
    world_.note_client(id_, std::string("ANOMALY: ") + what + why);
}

// ---- entry points -------------------------------------------------------------------------

// Every connection the client has: an instance's, or in a cluster a node index's.
template <typename F>
void client::each_connection(F&& f) {
    if (!cluster_) {
        for (std::uint8_t i = 0; i < instances_; ++i) f(connections_[i]);
        return;
    }
    for (std::size_t i = 0; i < cluster_connections_.size(); ++i) {
        if (links_.linked(static_cast<std::uint8_t>(i))) f(cluster_connections_[i]);
    }
}

void client::start(std::int64_t first_job_ms) {
    if (world_.recording() && linking_ == session::linking::on_demand)
        world_.note_client(id_, "links on demand (the blocking client)");
    each_connection([this](sim_connection& c) { c.settle(now_ms(), opens(c)); });
    if (watching_) watcher_.settle(now_ms());
    job_ = job::thinking;
    job_due_ms_ = now_ms() + first_job_ms;
    reschedule();
}

void client::on_reply(std::uint8_t server, std::uint32_t epoch, std::string&& bytes) {
    if (gone_) return;
    if (paused()) {
        delivery d;
        d.server = server;
        d.m.kind = message_kind::reply;
        d.m.epoch = epoch;
        d.m.bytes = std::move(bytes);
        inbox_.push_back(std::move(d));
        return;
    }
    handle_reply(server, epoch, bytes);
    drain_and_write();
    reschedule();
    observe();
}

void client::on_resource_reply(message&& m) {
    if (gone_) return;
    if (paused()) {
        delivery d;
        d.m = std::move(m);
        inbox_.push_back(std::move(d));
        return;
    }
    handle_resource_reply(m);
    drain_and_write();
    reschedule();
    observe();
}

void client::on_timer(std::uint32_t generation) {
    if (generation != timer_generation_) return;
    timer_at_us_ = -1;
    run();
}

void client::on_probe(std::uint32_t generation) {
    if (generation == probe_generation_) observe();
}

void client::observe() {
    if (!paused()) held_now();
}

// held() as the job asks it; every yes is handed to the lease oracle.
bool client::held_now() {
    if (!lock_.held(now_ms())) return false;
    const std::array<char, token_hex_bytes> token = lock_.token_hex();
    world_.check_lease(id_, hold_index_, std::string_view(token.data(), token.size()), now_ms(),
                       lock_.valid_until_ms());
    return true;
}

// The last true instant at which held() is still true: where a lease whose renewals stopped
// is most likely to have outlived its key.
void client::schedule_probe() {
    if (lock_.state() != lock_state::held) return;
    const std::int64_t at = to_true_us(lock_.valid_until_ms()) - 1;
    if (at <= now_us()) return;
    world_.schedule_probe(id_, at, ++probe_generation_);
}

void client::pause(std::int64_t until_us) {
    paused_until_us_ = std::max(paused_until_us_, until_us);
    world_.note_client(id_, "PAUSED until " + number(until_us / 1000) + " ms");
}

// The process continues where it stopped: first what it was doing, then what arrived
// while it was stopped, then whatever timers ran out meanwhile.
void client::on_resume() {
    if (paused()) return;
    world_.note_client(id_, "resumed");
    const step s = pending_;
    pending_ = step::none;
    run_step(s);
    while (!paused() && !inbox_.empty()) {
        delivery d = std::move(inbox_.front());
        inbox_.pop_front();
        if (d.m.kind == message_kind::reply) {
            handle_reply(d.server, d.m.epoch, d.m.bytes);
        } else {
            handle_resource_reply(d.m);
        }
    }
    timer_at_us_ = -1;
    run();
}

void client::connection_reset(std::uint8_t server, std::uint32_t epoch, std::int64_t at_us) {
    each_connection([&](sim_connection& c) { c.reset_arrives(server, epoch, at_us); });
    if (fair_) subscriber_.reset_arrives(server, epoch, at_us);
    if (watching_) watcher_.reset_arrives(server, epoch, at_us);
    if (!paused()) reschedule();
}

void client::clocks_changed() {
    timer_at_us_ = -1;
    if (!paused()) reschedule();
    schedule_probe();
}

void client::finish(std::int64_t end_us) {
    if (!holding_) return;
    if (behaviour_ == behaviour::ignores_validity) {
        close_hold(end_us, hold_end::run_end);
        return;
    }
    const std::int64_t valid_end = validity_end_us();
    close_hold(std::min(end_us, valid_end),
               valid_end < end_us ? hold_end::expired : hold_end::run_end);
}

// ---- the loop -----------------------------------------------------------------------------

// The job runs before the lock's timer work: an application asks held() on its own
// schedule, not after the lock has been told the time, and held() must be right then too.
void client::run() {
    if (paused() || gone_) return;
    service_connections();
    if (paused()) return;
    run_job_timer();
    if (paused()) return;
    const errc code = lock_.on_timer(now_ms());
    if (code != errc::ok) anomaly("on_timer", code);
    drain();
    drain_and_write();
    reschedule();
    observe();
}

void client::drain_and_write() {
    for (int round = 0; round < drain_and_write_rounds_max; ++round) {
        if (paused()) return;
        drain();
        if (paused()) return;
        if (!send_requests()) break;
    }
    if (leaving_) leave_when_clean();
}

void client::drain() {
    event e;
    while (!paused() && lock_.poll_event(e)) react(e);
    tend_subscriber();
}

// ---- fair waiting: the subscriber connection (sim_connection, the session's driver) ------------

void client::tend_subscriber() {
    if (!fair_ || paused()) return;
    wake_wanted_ = lock_.wants_wake_ups();
    if (!subscriber_made_ && !wake_wanted_) return;
    if (cluster_ && !place_cluster_subscriber()) return;
    subscriber_made_ = true;
    drive_subscription();
    subscriber_.settle(now_ms());
}

// Writes the SUBSCRIBE or UNSUBSCRIBE the subscription policy asks for now, on a ready
// connection (one in flight at most; its confirmation decides again). A wait subscribes its
// acquire()'s own channel, after the last wait's is dropped.
void client::drive_subscription() {
    if (!subscriber_.connection().ready()) return;
    write_subscription_due();
    // On a ready connection the policy never leaves a wait without a subscription on its
    // way: a new wait's channel waits only for the last one's command in flight.
    if (wake_wanted_ && sub_.current() == session::subscription::state::off)
        anomaly("a waiting lock left unsubscribed", errc::ok);
}

void client::write_subscription_due() {
    const std::string wanted = wake_wanted_ ? wake_channel() : std::string();
    const session::subscription::command due = sub_.due(wanted);
    if (due == session::subscription::command::none) return;
    std::array<char, session::subscription_request_bytes_max> command{};
    const bool subscribe = due == session::subscription::command::subscribe;
    const std::size_t size =
        session::write_subscription(subscribe, sub_.channel(), command.data(), command.size());
    EDGELOCK_ASSERT(size > 0);
    const bool tracked = subscriber_.connection().track(0, 0, now_ms());
    EDGELOCK_ASSERT(tracked);
    subscriber_.send(std::string(command.data(), size));
    sub_.sent(due);
}

// A confirmed SUBSCRIBE is itself a wake-up: what was published before it is lost.
void client::on_subscription_answer(const reply_node* nodes, std::size_t count) {
    const session::subscription::answer answered = sub_.on_answer(nodes, count);
    if (answered.violation) {
        anomaly("subscription", errc::unexpected_reply);
        subscriber_.connection().close(failure::of(errc::unexpected_reply), now_ms());
        return;
    }
    if (world_.recording() && answered.subscribed) world_.note_client(id_, "subscribed");
    if (answered.subscribed && wake_wanted_) handle_wake({});
    drain();
}

void client::on_wake_message(const reply_node* nodes, std::size_t count) {
    std::string_view payload;
    if (sub_.message_for(nodes, count, payload) && wake_wanted_) handle_wake(payload);
    drain();
}

// Every subscription ended with its connection (Redis forgets them too). In a cluster the
// node may be gone (a failover): the slot map is read again before the lock's next attempt,
// as the blocking client does.
void client::on_subscriber_end() {
    sub_.on_connection_lost();
    if (cluster_) links_.map().mark_stale();
}

// The channel of the running acquire()'s wake-ups (lock::wake_channel).
std::string client::wake_channel() const {
    std::array<char, wake_channel_bytes_max> channel{};
    return std::string(channel.data(), lock_.wake_channel(channel.data(), channel.size()));
}

// Exactly the frame Redis sends for a PUBLISH on our acquire()'s channel of a message naming
// us: our token, or a grant of our turn (the token, a space and the fence).
bool client::names_our_turn(const std::string& bytes) const {
    const std::array<char, token_hex_bytes> token = lock_.token_hex();
    const std::string channel = wake_channel();
    const std::string head =
        "*3\r\n$7\r\nmessage\r\n$" + std::to_string(channel.size()) + "\r\n" + channel + "\r\n$";
    if (bytes.compare(0, head.size(), head) != 0 || bytes.size() < head.size() + 2) return false;
    const std::size_t length_end = bytes.find("\r\n", head.size());
    if (length_end == std::string::npos) return false;
    const std::string length = bytes.substr(head.size(), length_end - head.size());
    const std::string payload = bytes.substr(length_end + 2);
    if (payload.size() < 2 || payload.compare(payload.size() - 2, 2, "\r\n") != 0) return false;
    const std::string message = payload.substr(0, payload.size() - 2);
    return length == std::to_string(message.size()) &&
           wake_names(message, std::string_view(token.data(), token.size()));
}

void client::handle_wake(std::string_view message) {
    const std::array<char, token_hex_bytes> token = lock_.token_hex();
    const bool for_us =
        message.empty() || wake_names(message, std::string_view(token.data(), token.size()));
    turn_passed_ = turn_passed_ || (!message.empty() && for_us);
    if (for_us && lock_.wants_wake_ups()) world_.told(id_);
    if (world_.recording()) {
        world_.note_client(id_, message.empty()
                                    ? std::string("on_wake(\"\")")
                                    : "on_wake(" + std::string(message.substr(0, 8)) + "...)");
    }
    if (message.empty() && behaviour_ == behaviour::ignores_confirmation) return;
    const errc code = lock_.on_wake(now_ms(), message);
    if (code != errc::ok) anomaly("on_wake", code);
}

// Writes the lock's queued requests on every connection that accepts them: ready, or handshaking
// with the node itself (pipelined behind the handshake, as the blocking client does).
bool client::send_requests() {
    if (cluster_) return send_cluster_requests();
    request_sink sink;
    sink.deletes_without_compare = behaviour_ == behaviour::deletes_without_compare;
    sink.jumps_the_line = behaviour_ == behaviour::jumps_the_line && id_ == 0;
    sink.lock_name = lock_name_;
    bool gave_up = false;
    for (std::uint8_t i = 0; i < instances_; ++i) {
        if (lock_.has_request(i) && !link_for_queued(i)) {
            gave_up = true;
            drain();  // the failure's events: the lock refuses input while they wait
            if (paused()) break;
            continue;
        }
        sink.to = &connections_[i];
        hear_start_before_writes(i);
        const session::write_report written =
            session::write_requests(lock_, i, connections_[i].connection(), 0, 0, now_ms(), sink);
        // commit() never fails: a simulated connection takes every request its window lets through.
        EDGELOCK_ASSERT(written.stop != session::write_stop::failed);
    }
    after_sending(sink.sent_acquire, sink.sent_renew);
    return sink.sent > 0 || gave_up;
}

// The fault point late_node_start keeps a node's start from the lock until its next write
// on that link (session::lock_links::node_read): it hears it here, before anything is written.
void client::hear_start_before_writes(std::uint8_t i) {
    if (!place_.start_late(i) || !lock_.has_request(i)) return;
    drain();
    const errc told = place_.hear_late_start(lock_, i, connections_[i].connection(),
                                             world_.config().restart_guard, now_ms());
    if (told != errc::ok) anomaly("on_node_started", told);
    drain();
}

// The user calls into the client (acquire, release, close): links made on demand may connect
// at once, as the blocking client lets them (session::on_user_call).
void client::user_call() {
    each_connection([this](sim_connection& c) { session::on_user_call(linking_, c.connection()); });
}

// The requests queued for instance i meet its link as session/linking.hpp says: an on-demand
// link that is idle is connected first, or inside its reconnect delay the requests are given up
// (session::give_up_unsent), as the blocking client does. Returns false when they were.
bool client::link_for_queued(std::uint8_t i) {
    sim_connection& l = connections_[i];
    session::queued_step step = session::step_for_queued(linking_, l.connection(), now_ms());
    if (step == session::queued_step::connect) {
        l.settle(now_ms(), true);
        step = session::step_for_queued(linking_, l.connection(), now_ms());
    }
    if (step != session::queued_step::give_up || !lock_.has_request(i)) return true;
    const errc code = session::give_up_unsent(lock_, i, now_ms());
    if (code != errc::ok) anomaly("give_up_unsent", code);
    return false;
}

void client::reschedule() {
    if (paused() || gone_) return;
    const std::int64_t now = now_us();
    const std::int64_t local_now = now_ms();
    // Every deadline but a reset's is on the monotonic clock: take the earliest, convert once.
    std::int64_t local_ms = std::min({lock_.next_deadline_ms(), job_due_ms_, leave_by_ms_});
    std::int64_t wake = never_us;
    each_connection([&](const sim_connection& c) {
        local_ms = std::min(local_ms, c.wake_ms(local_now, wants(c)));
        if (c.reset_at_us() >= 0) wake = std::min(wake, c.reset_at_us());
    });
    // A map read due now that found no ready connection waits for one (its handshake's
    // replies come back through on_reply, which writes it); only a gap's end is a deadline.
    if (map_read_wanted() && links_.next_read_ms() > local_now)
        local_ms = std::min(local_ms, links_.next_read_ms());
    for (const sim_connection* c :
         {subscriber_made_ ? &subscriber_ : nullptr, watching_ ? &watcher_ : nullptr}) {
        if (c == nullptr) continue;
        local_ms = std::min(local_ms, c->wake_ms(local_now));
        if (c->reset_at_us() >= 0) wake = std::min(wake, c->reset_at_us());
    }
    if (local_ms != no_deadline_ms) wake = std::min(wake, to_true_us(local_ms));
    if (wake == never_us) return;
    wake = std::max(wake, now + 1);
    if (wake == timer_at_us_) return;
    timer_at_us_ = wake;
    world_.schedule_client(id_, wake, ++timer_generation_);
}

// ---- connections --------------------------------------------------------------------------------

// Each connection's due work: a reset that arrived, a connect that completed, its timeouts.
void client::service_connections() {
    bool stopped = false;
    each_connection([&](sim_connection& c) {
        if (stopped) return;
        c.on_timer(now_ms(), now_us());
        c.settle(now_ms(), opens(c));
        stopped = paused();
    });
    if (stopped) return;
    if (subscriber_made_) {
        subscriber_.on_timer(now_ms(), now_us());
        tend_subscriber();
    }
    if (watching_ && !paused()) {
        watcher_.on_timer(now_ms(), now_us());
        watcher_.settle(now_ms());
    }
}

void client::handle_reply(std::uint8_t server, std::uint32_t epoch, const std::string& bytes) {
    if (watching_ && watcher_.carries(server, epoch)) {
        if (!watcher_.on_reply(bytes, now_ms())) anomaly("parse_reply", errc::protocol_error);
        return;
    }
    if (subscriber_made_ && subscriber_.carries(server, epoch)) {
        // The release handing this waiter its turn must reach the lock at once (lock.hpp,
        // "Fair waiting": a release wakes the head at once). Recognised here from the bytes
        // alone, apart from the session's parser and routing that deliver it.
        const bool our_turn = lock_.wants_wake_ups() && sub_.live() && names_our_turn(bytes);
        turn_passed_ = false;
        if (!subscriber_.on_reply(bytes, now_ms())) anomaly("parse_reply", errc::protocol_error);
        if (our_turn && !turn_passed_) anomaly("wake-up naming our token not passed on", errc::ok);
        tend_subscriber();  // the handshake may be done: subscribe
        return;
    }
    sim_connection* carrier = nullptr;
    each_connection([&](sim_connection& c) {
        if (c.carries(server, epoch)) carrier = &c;
    });
    if (carrier == nullptr) return;  // a reply on a connection given up already
    sim_connection& l = *carrier;
    if (!l.on_reply(bytes, now_ms())) anomaly("parse_reply", errc::protocol_error);
    // A pause the answer led to leaves a closing connection for the resume (run() settles it).
    if (!paused()) l.settle(now_ms(), opens(l));
}

// ---- what an instance's connection delivers (sim_connection, the session's driver) ---------

void client::on_answer(std::uint8_t instance, const session::in_flight& entry,
                       const reply_node* nodes, std::size_t count) {
    if (cluster_) {
        on_cluster_answer(instance, entry, nodes, count);
        return;
    }
    failure refused;  // the timeline shows the reply itself
    const errc code = place_.answer(lock_, instance, nodes[0], nullptr, now_ms(), refused);
    if (code != errc::ok && code != errc::error_reply) anomaly("on_reply", code);
    drain();
}

// Link k's connection read its node (in a cluster the lock hears of its own node's only:
// send_cluster_requests tells it of one it moves to later).
void client::on_node_read(std::uint8_t k) {
    const sim_connection& on = cluster_ ? cluster_connections_[k] : connections_[k];
    if (world_.recording()) {
        const node_start& s = on.connection().started();
        world_.note_client(id_, "node read: started at mono " + std::to_string(s.started_ms) +
                                    (s.restarted ? ", a restart" : "") +
                                    (s.durable ? ", durable" : ""));
    }
    drain();  // the lock refuses input while events wait
    const errc code = place_.node_read(lock_, k, on.connection().started(),
                                       world_.config().restart_guard, now_ms(), &faults_);
    if (code != errc::ok) anomaly("on_node_started", code);
    drain();
}

// The lock hears that the connection ended (session::lock_hears_close said it must).
void client::on_connection_end(std::uint8_t instance) {
    if (cluster_) {
        on_cluster_connection_end(instance);
        return;
    }
    drain();  // events a pause left behind first: on_io_error refuses while they wait
    const errc code =
        place_.link_closed(lock_, instance, connections_[instance].connection(), true, now_ms());
    if (code != errc::ok) anomaly("on_io_error", code);
    drain();
}

// ---- the job ------------------------------------------------------------------------------

void client::react(const event& e) {
    if (world_.recording()) {
        std::string text = std::string("lock: ") + event_name(e.type);
        if (e.type == event_type::acquired) {
            text += " fence=" + number(e.fence) + " valid_until=" + number(e.valid_until_ms) +
                    " (mono)";
        } else if (e.type == event_type::renewed) {
            text += " valid_until=" + number(e.valid_until_ms) + " (mono)";
        } else if (e.type == event_type::acquire_failed || e.type == event_type::lost) {
            text += std::string(" ") + to_string(e.code);
        } else if (e.type == event_type::released) {
            text += " instances=" + number(e.instances_released) +
                    (e.expired_before ? " (expired before)" : "");
        }
        world_.note_client(id_, text);
    }
    // A release of a held lock ends with `released`, and nothing comes before it: not the
    // answer of a renewal that was on the wire, not a loss (lock.hpp, release).
    if (release_pending_) {
        release_pending_ = false;
        if (e.type != event_type::released) anomaly("an event before released", errc::ok);
    }
    if (e.type == event_type::acquired || e.type == event_type::acquire_failed) {
        world_.end_wait(id_, e.type == event_type::acquired);
        check_cancel_outcome(e);
    }
    if (e.type == event_type::released) world_.end_hold(id_);
    if (e.type == event_type::acquired || e.type == event_type::renewed) {
        world_.check_event_validity(id_, event_name(e.type), now_ms(), e.valid_until_ms);
        schedule_probe();
    }
    switch (e.type) {
        case event_type::acquired: on_acquired(e); break;
        case event_type::acquire_failed: think(); break;
        case event_type::renewed:
            if (holding_) world_.hold(hold_slot_).valid_until_ms = e.valid_until_ms;
            break;
        case event_type::lost: on_lost(e); break;
        case event_type::released:
            if (job_ == job::releasing) think();
            break;
    }
}

void client::run_job_timer() {
    if (paused() || job_due_ms_ == no_deadline_ms || now_ms() < job_due_ms_) return;
    job_due_ms_ = no_deadline_ms;
    switch (job_) {
        case job::thinking: start_job(); break;
        case job::acquiring:
            leaving_ = id_ != 0 && world_.params().leave_per_million > 0 &&
                       rng_.chance(world_.params().leave_per_million);
            cancel_acquire();
            break;
        case job::working:
            if (!quit_work_) {
                check_and_write();
                break;
            }
            world_.note_client(id_, "ends its work as a renewal goes out: releases");
            finish_job();
            break;
        case job::reading:
        case job::writing:
            world_.note_client(id_, "resource request timed out: the job is given up");
            finish_job();
            break;
        default: break;
    }
}

void client::run_step(step s) {
    switch (s) {
        case step::send_read: send_read(); break;
        case step::start_work: start_work(); break;
        case step::send_write: send_write(); break;
        case step::none: break;
    }
}

void client::start_job() {
    owner_token token{};
    for (std::size_t i = 0; i < token.size(); i += 8) {
        const std::uint64_t bits = rng_.next();
        for (std::size_t b = 0; b < 8; ++b)
            token[i + b] = static_cast<std::uint8_t>(bits >> (8 * b));
    }
    user_call();
    const errc code = lock_.acquire(now_ms(), world_.params().acquire_wait_ms, token);
    if (code != errc::ok) {
        anomaly("acquire", code);
        think();
        return;
    }
    job_ = job::acquiring;
    const std::array<char, token_hex_bytes> hex = lock_.token_hex();
    world_.begin_wait(id_, std::string_view(hex.data(), hex.size()));
    const std::uint32_t cancels = world_.params().cancel_per_million;
    if (cancels > 0 && rng_.chance(cancels))
        job_due_ms_ = now_ms() + rng_.between(0, world_.params().acquire_wait_ms);
    drain();
}

// The user gives up waiting: release() while acquiring ends the attempt with acquire_failed
// (cancelled), cleans up behind a request in flight and takes a fair waiter out of the line
// (lock.hpp). An acquire that succeeded meanwhile is a hold, and the job goes on with it.
void client::cancel_acquire() {
    const lock_state s = lock_.state();
    if (s != lock_state::acquiring && s != lock_state::backing_off && s != lock_state::confirming)
        return;
    if (world_.recording()) world_.note_client(id_, "cancels its acquire");
    // not_held: the wait ran out at this same instant (release() reads the time first), and
    // acquire_failed(wait_timeout) is queued instead.
    const errc code = lock_.release(now_ms());
    if (code != errc::ok && code != errc::not_held) anomaly("release", code);
    cancelled_ = code == errc::ok;
    if (cancelled_) world_.cancelled(id_);
    drain();
}

// The user closes the client for good after a cancel (the CLI on SIGINT, edgelock_close): no
// job starts again; the cleanups the cancel queued (a claim's release, leaving the fair line)
// get a command timeout, as the blocking client's close() gives them, then every connection is
// dropped. Client 0 never leaves, so someone is always there to take the lock.
void client::begin_leaving() {
    job_ = job::thinking;
    job_due_ms_ = no_deadline_ms;
    if (leave_by_ms_ != no_deadline_ms) return;
    leave_by_ms_ = now_ms() + world_.params().io_timeout_ms;
    user_call();
    world_.note_client(id_, "closes: its cleanups first");
}

void client::leave_when_clean() {
    if (gone_ || leave_by_ms_ == no_deadline_ms) return;
    bool cleaning = false;
    for (std::uint8_t i = 0; i < instances_; ++i)
        cleaning = cleaning || lock_.has_request(i) || lock_.requests_in_flight(i) > 0;
    if (cleaning && now_ms() < leave_by_ms_) return;
    gone_ = true;
    world_.note_client(id_, cleaning ? "closed, its cleanups unsent" : "closed");
    each_connection([](sim_connection& c) { c.stop(); });
    if (subscriber_made_) subscriber_.stop();
    if (watching_) watcher_.stop();
}

// What went out: the fault points on the way, and a user who releases as its renewal goes out.
void client::after_sending(bool acquire, bool renewal) {
    if (acquire) reach(point::acquire_sent);
    if (renewal && !paused()) reach(point::renew_sent);
    if (renewal && !paused()) release_at_renewal();
}

// The user ends its work as a renewal goes out (world_params::release_at_renewal_per_million):
// its release() runs while the renewal's answer is on its way back.
void client::release_at_renewal() {
    const std::uint32_t chance = world_.params().release_at_renewal_per_million;
    if (chance == 0 || job_ != job::working || quit_work_ || !rng_.chance(chance)) return;
    quit_work_ = true;
    job_due_ms_ = now_ms();
}

// A cancelled acquire ends with acquire_failed(cancelled), and nothing else (lock.hpp,
// release): not a grant, not another failure.
void client::check_cancel_outcome(const event& e) {
    if (!cancelled_) return;
    cancelled_ = false;
    if (e.type == event_type::acquire_failed && e.code == errc::cancelled) return;
    anomaly(e.type == event_type::acquired ? "acquired after its cancel" : "cancel ended with",
            e.type == event_type::acquired ? errc::ok : e.code);
}

void client::on_acquired(const event& e) {
    const std::array<char, token_hex_bytes> token = lock_.token_hex();
    hold_slot_ = world_.begin_hold(id_, e.fence, e.valid_until_ms,
                                   std::string_view(token.data(), token.size()));
    hold_index_ = world_.hold(hold_slot_).index;
    holding_ = true;
    fence_ = e.fence;
    reach(point::acquired);
    if (paused()) {
        pending_ = step::send_read;
        return;
    }
    send_read();
}

void client::on_lost(const event&) {
    if (behaviour_ == behaviour::ignores_validity) return;
    if (holding_) {
        const std::int64_t lost_us = std::min(now_us(), validity_end_us());
        close_hold(lost_us, hold_end::lost);
        const std::array<char, token_hex_bytes> token = lock_.token_hex();
        world_.judge_loss(id_, hold_index_, std::string_view(token.data(), token.size()), lost_us);
    }
    if (job_ == job::reading || job_ == job::working || job_ == job::writing ||
        job_ == job::keeping) {
        finish_job();
    }
}

// A read or a write of the resource for the current hold, fenced when the client fences.
message client::resource_request(bool write) {
    message m;
    m.kind = message_kind::resource_request;
    m.request_id = ++request_id_;
    m.hold = hold_index_;
    m.write = write;
    m.fenced = world_.config().fencing && behaviour_ != behaviour::skips_fencing;
    m.token = m.fenced ? fence_ : 0;
    return m;
}

void client::send_read() {
    job_ = job::reading;
    world_.send_resource(id_, resource_request(false));
    job_due_ms_ = now_ms() + world_.params().job_timeout_ms;
}

void client::handle_resource_reply(const message& m) {
    if (m.request_id != request_id_) return;  // the job gave up on it already
    if (job_ == job::reading) {
        if (!m.accepted) {
            world_.note_client(id_, "read refused by the resource: the job is given up");
            finish_job();
            return;
        }
        read_value_ = m.value;
        reach(point::read_done);
        if (paused()) {
            pending_ = step::start_work;
            return;
        }
        start_work();
    } else if (job_ == job::writing) {
        finish_job();
    }
}

void client::start_work() {
    job_ = job::working;
    quit_work_ = false;
    job_due_ms_ = now_ms() + rng_.between(world_.params().work_ms_min, world_.params().work_ms_max);
}

void client::check_and_write() {
    const bool believes = held_now() || behaviour_ == behaviour::ignores_validity;
    if (!believes) {
        world_.note_client(id_, "held() is false: the write is not sent");
        finish_job();
        return;
    }
    check_us_ = now_us();
    reach(point::checked);
    if (paused()) {
        pending_ = step::send_write;
        return;
    }
    send_write();
}

void client::send_write() {
    job_ = job::writing;
    message m = resource_request(true);
    m.value = read_value_ - 1;
    world_.send_resource(id_, std::move(m));
    if (now_us() > check_us_) world_.record_action(id_, hold_index_, check_us_, now_us());
    job_due_ms_ = now_ms() + world_.params().job_timeout_ms;
    reach(point::write_sent);
}

void client::finish_job() {
    job_due_ms_ = no_deadline_ms;
    if (behaviour_ == behaviour::never_releases && holding_) {
        job_ = job::keeping;
        return;
    }
    if (holding_) {
        const std::int64_t end = behaviour_ == behaviour::ignores_validity
                                     ? now_us()
                                     : std::min(now_us(), validity_end_us());
        close_hold(end, hold_end::released);
    }
    job_ = job::releasing;
    // Events the lock queued before the call (a renewal answered while the client was paused)
    // are heard first: the check below is of what the release itself is followed by. It is
    // made when the lock was held and the call did not find it lost (a renewal round that ran
    // out with it queues lost, then released{expired_before}): it released, or did nothing.
    drain();
    const bool held_before = lock_.held(now_ms()) && !paused();
    user_call();
    const errc code = lock_.release(now_ms());
    release_pending_ = code == errc::ok && held_before && lock_.state() != lock_state::idle;
    if (code == errc::not_held) {
        think();
    } else if (code != errc::ok) {
        anomaly("release", code);
        think();
    }
    reach(point::release_called);
    drain();
}

void client::think() {
    if (leaving_) {
        begin_leaving();
        return;
    }
    job_ = job::thinking;
    job_due_ms_ =
        now_ms() + rng_.between(world_.params().think_ms_min, world_.params().think_ms_max);
}

void client::close_hold(std::int64_t end_us, hold_end why) {
    hold_record& h = world_.hold(hold_slot_);
    h.end_us = std::max(h.start_us, end_us);
    h.end = why;
    holding_ = false;
}

// The true instant the client's monotonic clock reaches the hold's validity end.
std::int64_t client::validity_end_us() const noexcept {
    const hold_record& h = world_.hold(hold_slot_);
    return clocks_.mono.true_us_at_ms(h.valid_until_ms, h.start_us);
}

void client::reach(point p) {
    const std::size_t index = static_cast<std::size_t>(p);
    points_[index] = static_cast<std::uint16_t>(points_[index] + 1);
    world_.reach_point(id_, p, points_[index]);
}

}  // namespace edgelock::sim
