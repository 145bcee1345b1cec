// SPDX-License-Identifier: Apache-2.0
// The world's part of fair waiting: every client of a fair lock keeps a subscriber connection
// to every node (the lock's channel), and the two checks of fair waiting (checker.hpp:
// wakeup, fifo) are judged here, as the run goes on, from what the nodes hold.
//
// A subscriber connection is modelled as the command connections are, on the same paths
// (their latency, jitter and tail; slow_link delays the command connection only, and
// slow_subscribe the SUBSCRIBE only):
// SUBSCRIBE goes to the node, the node registers it and confirms; a PUBLISH reaches the
// clients registered on that node at that instant, and nobody else (not the ones whose
// SUBSCRIBE is still on the way, not a replica's). A crash breaks it with a reset (a power-off
// silently), a partition or a lost message silently; a silent break is noticed after the
// I/O timeout (the subscriber's PING), a reset one path latency later; the client subscribes
// again after the reconnect delay. Each confirmation is passed to the lock as on_wake(now, "")
// (lock.hpp, "Fair waiting"), each message as on_wake(now, token).
#include <algorithm>

#include "edgelock/assert.hpp"
#include "edgelock/sim/world.hpp"

namespace edgelock::sim {
namespace {

constexpr std::uint32_t node_bits = 8;  // subscriber_retry's arg: node + node_bits * epoch
static_assert(nodes_max <= node_bits);

std::uint64_t hash_of_text(std::string_view text) noexcept {
    std::uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a
    for (const char c : text) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
    return h;
}

std::string seconds(std::int64_t us) {
    return std::to_string(us / 1'000'000) + "." +
           std::to_string(1'000'000 + us % 1'000'000).substr(1) + "s";
}

}  // namespace

// ---- subscriber connections ------------------------------------------------------------------

void world::start_subscribers(std::uint8_t client) {
    EDGELOCK_ASSERT(config_.fair);
    for (std::uint8_t n = 0; n < config_.nodes; ++n) {
        if (sub(client, n).epoch == 0) open_subscriber(client, n);
    }
}

void world::open_subscriber(std::uint8_t client, std::uint8_t node) {
    subscriber& s = sub(client, node);
    s.epoch = next_subscriber_epoch_++;
    s.open = true;
    s.registered = false;
    mix(0x5b000000u + client * 16u + node);
    if (!nodes_[node].up() || partitioned(client, node)) {
        // Refused, or unanswered until the connect timeout: try again after the delay.
        const bool refused = !nodes_[node].up() && !powered_off_[node];
        break_subscriber(client, node, refused, "connect failed");
        return;
    }
    bool reset = false;
    if (lose_message(client, node, reset)) {
        break_subscriber(client, node, reset, "SUBSCRIBE lost");
        return;
    }
    message m;
    m.kind = message_kind::subscribe;
    m.epoch = s.epoch;
    send_on_subscriber(client, node, true, std::move(m), subscribe_extra_us(client, node));
}

// A subscriber connection is a connection of its own: the path's latency and the network's
// tail, in order, but not queued behind the command connection's messages.
void world::send_on_subscriber(std::uint8_t client, std::uint8_t node, bool to_node, message&& m,
                               std::int64_t extra_us) {
    subscriber& s = sub(client, node);
    const std::uint8_t from = to_node ? client : net_.node_endpoint(node);
    const std::uint8_t to = to_node ? net_.node_endpoint(node) : client;
    std::int64_t delay_us = net_.latency_us(from, to) + extra_us;
    if (rng_.chance(params_.tail_per_million))
        delay_us += rng_.between(0, params_.tail_ms_max * 1000);
    const std::int64_t at = std::max(now_us_ + delay_us, s.last_arrival_us);
    s.last_arrival_us = at;
    std::uint32_t slot = 0;
    if (free_subscriber_slots_.empty()) {
        slot = static_cast<std::uint32_t>(subscriber_slots_.size());
        subscriber_slots_.emplace_back();
    } else {
        slot = free_subscriber_slots_.back();
        free_subscriber_slots_.pop_back();
    }
    subscriber_slots_[slot] = subscriber_message{client, node, to_node, std::move(m)};
    events_.push(at, scheduler::kind::subscriber_deliver, 0, slot);
}

void world::deliver_subscriber_message(std::uint32_t slot) {
    subscriber_message d = std::move(subscriber_slots_[slot]);
    free_subscriber_slots_.push_back(slot);
    if (!d.to_node) {
        deliver_to_subscriber(d.node, d.client, std::move(d.m));
    } else if (paused(d.node) || !held_[d.node].empty()) {
        if (nodes_[d.node].up())
            held_[d.node].push_back(
                held_message{d.client, net_.node_endpoint(d.node), std::move(d.m)});
    } else {
        deliver_subscribe(d.client, d.node, std::move(d.m));
    }
}

// The client finds out (a reset one latency later, silence after its I/O timeout) and
// subscribes again after the reconnect delay.
void world::break_subscriber(std::uint8_t client, std::uint8_t node, bool reset, const char* why) {
    subscriber& s = sub(client, node);
    if (!s.open) return;
    s.open = false;
    s.registered = false;
    mix(0x5c000000u + client * 16u + node);
    const std::int64_t notice_us =
        reset ? net_.latency_us(net_.node_endpoint(node), client) : params_.io_timeout_ms * 1000;
    const std::int64_t delay_us =
        rng_.between(params_.reconnect_ms_min, params_.reconnect_ms_max) * 1000;
    events_.push(now_us_ + notice_us + delay_us, scheduler::kind::subscriber_retry, client,
                 node + node_bits * s.epoch);
    if (recording()) {
        note_client(client, "subscriber connection to n" + std::to_string(node) +
                                " broken: " + why + (reset ? " (reset)" : " (silent)"));
    }
}

void world::subscriber_retry(std::uint8_t client, std::uint32_t arg) {
    const auto node = static_cast<std::uint8_t>(arg % node_bits);
    if (sub(client, node).epoch != arg / node_bits) return;  // a newer connection since
    open_subscriber(client, node);
}

std::int64_t world::subscribe_extra_us(std::uint8_t client, std::uint8_t node) const noexcept {
    std::int64_t extra = 0;
    for (const active_fault& a : active_) {
        const fault& f = spec_.faults[a.index];
        if (f.kind != fault_kind::slow_subscribe || f.target != client ||
            ((f.nodes >> node) & 1u) == 0 || now_us_ < a.start_us || now_us_ >= a.end_us) {
            continue;
        }
        extra += std::max<std::int64_t>(0, f.amount) * 1000;
    }
    return extra;
}

void world::deliver_subscribe(std::uint8_t client, std::uint8_t node, message&& m) {
    subscriber& s = sub(client, node);
    if (!s.open || s.epoch != m.epoch || !nodes_[node].up()) return;
    if (partitioned(client, node)) {
        break_subscriber(client, node, false, "partition");
        return;
    }
    s.registered = true;
    if (recording()) note_node(node, "c" + std::to_string(client) + " SUBSCRIBE " + queue_key_);
    send_to_subscriber(node, client, message_kind::subscribed, {});
}

void world::send_to_subscriber(std::uint8_t node, std::uint8_t client, message_kind kind,
                               std::string bytes) {
    subscriber& s = sub(client, node);
    if (partitioned(client, node)) {
        break_subscriber(client, node, false, "partition");
        return;
    }
    bool reset = false;
    if (lose_message(client, node, reset)) {
        break_subscriber(client, node, reset, "message lost");
        return;
    }
    mix(hash_of_text(bytes) ^ static_cast<std::uint64_t>(kind));
    message m;
    m.kind = kind;
    m.epoch = s.epoch;
    m.bytes = std::move(bytes);
    send_on_subscriber(client, node, false, std::move(m), 0);
}

void world::deliver_to_subscriber(std::uint8_t node, std::uint8_t client, message&& m) {
    const subscriber& s = sub(client, node);
    if (!s.open || s.epoch != m.epoch) return;
    if (recording() && m.kind == message_kind::subscribed)
        note_client(client, "subscribed on n" + std::to_string(node));
    clients_[client]->on_wake_message(std::move(m.bytes));
}

// PUBLISH: to the clients registered on this node now.
void world::publish(std::uint8_t node) {
    for (const node_output::publication& p : out_.published) {
        if (recording())
            note_node(node, "PUBLISH " + p.channel + " " + p.message.substr(0, 8) + "...");
        for (std::uint8_t c = 0; c < params_.clients; ++c) {
            const subscriber& s = sub(c, node);
            if (s.open && s.registered && p.channel == queue_key_) {
                send_to_subscriber(node, c, message_kind::published, p.message);
            }
        }
    }
}

// ---- the checks ------------------------------------------------------------------------------

// The bounds (checker.hpp, "wakeup"), from the run's own knobs. An attempt takes at most its
// timeout plus two round trips (NOSCRIPT's fallback to EVAL is one more) and, with WAIT, a
// replication round trip; where the network's tail can outlast the attempt timeout, one
// failed attempt and its retry delay (at most the re-check) more. Told: that. Due: the
// re-check (on a clock that may run slow by clock_ppm) and that.
void world::init_fair_checks() {
    subscribers_.assign(static_cast<std::size_t>(params_.clients) * config_.nodes, subscriber{});
    waiting_token_.assign(params_.clients, std::string());
    holding_token_.assign(params_.clients, std::string());
    due_since_us_.assign(params_.clients, -1);
    told_us_.assign(params_.clients, -1);
    const std::int64_t attempt_us = lock_attempt_timeout_ms(params_) * 1000;
    const std::int64_t recheck_us = lock_recheck_ms(params_) * 1000;
    const std::int64_t one_way_us = params_.path_us_max + params_.tail_ms_max * 1000;
    const std::int64_t replication_us = 2 * params_.repl_us_max;
    std::int64_t attempt_slack_us = attempt_us + 4 * one_way_us + replication_us + 10'000;
    if (attempt_us <= 2 * one_way_us + replication_us) {
        attempt_slack_us += attempt_us + std::min(params_.retry_delay_ms_max * 1000, recheck_us);
    }
    history_.fair.judged = true;
    history_.fair.told_bound_us = attempt_slack_us;
    history_.fair.due_bound_us =
        recheck_us + recheck_us * params_.clock_ppm_max / 1'000'000 + 1000 + attempt_slack_us;
}

// From the last fault's healing (slow_subscribe excepted, activate()) the connections come
// back (a silent break noticed after the I/O timeout, a reconnect delay, a connect) and the
// line sheds the entries of waiters that gave up unheard (an entry's expiry); with the
// restart guard, a restarted node counts again after ttl + drift.
std::int64_t world::judged_from_us() const noexcept {
    if (fair_heal_us_ == 0) return 0;
    const std::int64_t entry_ttl_ms = lock_queue_entry_ttl_ms(params_);
    std::int64_t settle_ms = params_.io_timeout_ms + params_.connect_timeout_ms +
                             params_.reconnect_ms_max + entry_ttl_ms;
    if (config_.restart_guard) settle_ms += lock_restart_guard_ms(params_);
    return fair_heal_us_ + settle_ms * 1000;
}

std::int64_t world::slow_round_trip_us(std::uint8_t client) const noexcept {
    std::int64_t extra_us = 0;
    for (const active_fault& a : active_) {
        const fault& f = spec_.faults[a.index];
        if (f.kind != fault_kind::slow_link || f.target != client || f.nodes == 0) continue;
        const std::int64_t amount_us = std::max<std::int64_t>(0, f.amount) * 1000;
        if (now_us_ >= a.start_us && now_us_ < a.end_us + 2 * amount_us) extra_us += 2 * amount_us;
    }
    if (extra_us == 0) return 0;
    // Beyond half a timeout (the attempt's, a reply's, a connect's with its handshake) the
    // connection or the attempt may time out over and over: the waiter is not judged.
    const std::int64_t timeout_ms = std::min(
        {lock_attempt_timeout_ms(params_), params_.io_timeout_ms, params_.connect_timeout_ms});
    return 2 * extra_us >= timeout_ms * 1000 ? -1 : extra_us;
}

void world::begin_wait(std::uint8_t client, std::string_view token_hex) {
    if (!config_.fair) return;
    waiting_token_[client] = std::string(token_hex);
    holding_token_[client].clear();
}

void world::end_wait(std::uint8_t client, bool acquired) {
    if (!config_.fair) return;
    if (acquired) holding_token_[client] = waiting_token_[client];
    waiting_token_[client].clear();
    due_since_us_[client] = -1;
    told_us_[client] = -1;
}

void world::end_hold(std::uint8_t client) {
    if (!config_.fair) return;
    holding_token_[client].clear();
}

void world::told(std::uint8_t client) {
    if (!config_.fair || due_since_us_[client] < 0 || told_us_[client] >= 0) return;
    told_us_[client] = now_us_;
}

int world::holder_of(std::string_view token) const noexcept {
    for (std::uint8_t c = 0; c < params_.clients; ++c) {
        if (!holding_token_[c].empty() && holding_token_[c] == token) return c;
    }
    return -1;
}

int world::waiter_of(std::string_view token) const noexcept {
    for (std::uint8_t c = 0; c < params_.clients; ++c) {
        if (!waiting_token_[c].empty() && waiting_token_[c] == token) return c;
    }
    return -1;
}

// An entry the scripts' purge would keep: one whose expiry is still ahead (an entry without
// an expiry is dropped once it heads the line, so it never keeps anyone out).
bool world::entry_live(const redis_node& n, std::string_view qttl_key, std::string_view member,
                       std::int64_t wall_ms) const {
    const redis_entry* expiries = n.peek(qttl_key, wall_ms);
    if (expiries == nullptr) return false;
    for (const zset_member& m : decode_zset(expiries->value)) {
        if (m.member == member) return m.score > wall_ms;
    }
    return false;
}

// The lock is free on every master that is up (and there is one), and no other live waiter
// (nor a holder, who stands at the head until its release) is ahead of the client in the
// line of the master the sentinels name.
bool world::due(std::uint8_t client) const {
    if (waiting_token_[client].empty() || clients_[client]->paused()) return false;
    bool any_master = false;
    for (std::uint8_t n = 0; n < config_.nodes; ++n) {
        if (!nodes_[n].up() || !nodes_[n].is_master()) continue;
        if (paused(n) || nodes_[n].peek(lock_key_, node_wall_ms(n)) != nullptr) return false;
        any_master = true;
    }
    const auto master = static_cast<std::uint8_t>(current_master_);
    if (!any_master || !nodes_[master].up() || !nodes_[master].is_master()) return false;
    const std::int64_t wall_ms = node_wall_ms(master);
    const redis_entry* line = nodes_[master].peek(queue_key_, wall_ms);
    if (line == nullptr) return true;
    for (const zset_member& m : decode_zset(line->value)) {
        if (!entry_live(nodes_[master], qttl_key_, m.member, wall_ms)) continue;
        if (m.member == waiting_token_[client]) return true;
        if (waiter_of(m.member) >= 0 || holder_of(m.member) >= 0) return false;
    }
    return true;
}

void world::judge_waiters() {
    const bool judged = now_us_ >= judged_from_us();
    fair_record& record = history_.fair;
    for (std::uint8_t c = 0; c < params_.clients; ++c) {
        // A slow path stretches both bounds by two of its round trips (the attempt, and the
        // refused one in flight before it) and one retry delay.
        const std::int64_t slow_us = slow_round_trip_us(c);
        if (!judged || slow_us < 0 || !due(c)) {
            due_since_us_[c] = -1;
            told_us_[c] = -1;
            continue;
        }
        if (due_since_us_[c] < 0) due_since_us_[c] = now_us_;
        const std::int64_t stretch_us =
            slow_us == 0 ? 0 : 2 * slow_us + lock_attempt_timeout_ms(params_) * 1000;
        const bool told_too_long =
            told_us_[c] >= 0 && now_us_ - told_us_[c] > record.told_bound_us + stretch_us;
        const bool due_too_long = now_us_ - due_since_us_[c] > record.due_bound_us + stretch_us;
        if (!told_too_long && !due_too_long) continue;
        if (record.wakeup_violations++ == 0) {
            record.first_wakeup = "c" + std::to_string(c) +
                                  " waited for a free lock at its turn from " +
                                  seconds(due_since_us_[c]) +
                                  (told_us_[c] >= 0 ? ", told at " + seconds(told_us_[c])
                                                    : std::string(", never told")) +
                                  ", still waiting at " + seconds(now_us_) + " (bounds: told " +
                                  std::to_string(record.told_bound_us / 1000) + " ms, due " +
                                  std::to_string(record.due_bound_us / 1000) + " ms)";
        }
        due_since_us_[c] = now_us_;  // counted again only after another bound
        told_us_[c] = -1;
    }
}

// A grant with a live waiter ahead in the line (after the script: the grant's own purge is
// done), or in it at all when the new holder was not queued.
void world::judge_grants(std::uint8_t node) {
    const std::int64_t wall_ms = node_wall_ms(node);
    for (const node_output::grant& g : out_.grants) {
        if (g.key != lock_key_) continue;
        const redis_entry* line = nodes_[node].peek(queue_key_, wall_ms);
        if (line == nullptr) continue;
        const std::vector<zset_member> members = decode_zset(line->value);
        std::int64_t ours = g.queued_score;
        if (!g.fair) {
            for (const zset_member& m : members) {
                if (m.member == g.token) ours = m.score;
            }
        }
        for (const zset_member& m : members) {
            if (m.member == g.token || waiter_of(m.member) < 0) continue;
            if (!entry_live(nodes_[node], qttl_key_, m.member, wall_ms)) continue;
            if (ours >= 0 && m.score > ours) continue;
            fair_record& record = history_.fair;
            if (record.fifo_violations++ == 0) {
                const int holder = waiter_of(g.token);
                record.first_fifo =
                    "n" + std::to_string(node) + " gave the lock to " +
                    (holder >= 0 ? "c" + std::to_string(holder) : g.token.substr(0, 8)) + " at " +
                    seconds(now_us_) + " while c" + std::to_string(waiter_of(m.member)) +
                    " waited ahead of it in the line";
            }
            break;
        }
    }
}

}  // namespace edgelock::sim
