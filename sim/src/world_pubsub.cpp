// SPDX-License-Identifier: Apache-2.0
// The world's part of fair waiting: the node's pub/sub, and the two checks of fair waiting
// (checker.hpp: wakeup, fifo), judged here as the run goes on from what the nodes hold.
//
// A fair lock's client keeps a subscriber connection as the real clients do (workload.cpp:
// the same session driver and subscription policy, over the simulated network on a lane of
// its own, network.hpp). Its bytes reach the node like any other: the handshake (PING, ROLE
// behind Sentinel) is the model's to answer, SUBSCRIBE and UNSUBSCRIBE the node's pub/sub
// here. A PUBLISH (the release scripts') reaches the connections subscribed to the channel on
// that node at that instant, as RESP message frames, and nobody else (not one whose SUBSCRIBE
// is still on the way, not a replica's subscribers). A crash resets the connection (a
// power-off, a partition or a lost message breaks it silently), and it is the client's
// driver that notices and subscribes again.
#include <algorithm>

#include "edgelock/assert.hpp"
#include "edgelock/sim/resp_text.hpp"
#include "edgelock/sim/world.hpp"

namespace edgelock::sim {
namespace {

std::string seconds(std::int64_t us) {
    return std::to_string(us / 1'000'000) + "." +
           std::to_string(1'000'000 + us % 1'000'000).substr(1) + "s";
}

// ["subscribe" | "unsubscribe", channel, subscriptions left], as Redis confirms (RESP2).
std::string confirmation(std::string_view kind, std::string_view channel, int subscriptions) {
    std::string reply = "*3\r\n";
    append_bulk(reply, kind);
    append_bulk(reply, channel);
    append_integer(reply, subscriptions);
    return reply;
}

bool same_command(std::string_view arg, std::string_view name) noexcept {
    return std::equal(arg.begin(), arg.end(), name.begin(), name.end(), [](char a, char b) {
        return (a >= 'a' && a <= 'z' ? static_cast<char>(a - 'a' + 'A') : a) == b;
    });
}

}  // namespace

// ---- the node's pub/sub ----------------------------------------------------------------------

bool world::pubsub_command(std::uint8_t client, std::uint8_t node, std::uint32_t epoch,
                           std::string_view request) {
    request_view r;
    if (!parse_request(request.data(), request.size(), r) || r.count != 2) return false;
    const bool subscribe = same_command(r.args[0], "SUBSCRIBE");
    if (!subscribe && !same_command(r.args[0], "UNSUBSCRIBE")) return false;
    // (A SUBSCRIBE read late, from a paused node's socket, on a connection the client has
    // since given up, subscribes nothing: Redis frees a closed connection's subscriptions.)
    node_subscriber& subscriber = subscriber_at(node, client);
    const network::tcp_state& conn = net_.conn(client, node, lane::subscriber);
    if (conn.open && conn.epoch == epoch) {
        if (subscriber.epoch != epoch) subscriber = node_subscriber{epoch, {}};
        std::vector<std::string>& channels = subscriber.channels;
        const auto found = std::find(channels.begin(), channels.end(), r.args[1]);
        if (subscribe && found == channels.end()) channels.emplace_back(r.args[1]);
        if (!subscribe && found != channels.end()) channels.erase(found);
    }
    const int subscriptions =
        subscriber.epoch == epoch ? static_cast<int>(subscriber.channels.size()) : 0;
    out_.replies.push_back(node_output::reply{
        model_client(client, lane::subscriber), epoch,
        confirmation(subscribe ? "subscribe" : "unsubscribe", r.args[1], subscriptions)});
    return true;
}

bool world::subscribed(std::uint8_t node, std::uint8_t client, std::string_view channel) const {
    const node_subscriber& subscriber = subscriber_at(node, client);
    return subscriber.epoch != 0 &&
           std::find(subscriber.channels.begin(), subscriber.channels.end(), channel) !=
               subscriber.channels.end();
}

// PUBLISH: to the connections subscribed to the channel on this node now.
void world::publish(std::uint8_t node) {
    for (const node_output::publication& p : out_.published) {
        if (recording()) {
            // A waiter's channel ends in its token: shown cut as the token is.
            const std::size_t shown = std::min(p.channel.size(), queue_key_.size() + 9);
            note_node(node, "PUBLISH " + p.channel.substr(0, shown) +
                                (shown < p.channel.size() ? "... " : " ") + p.message.substr(0, 8) +
                                "...");
        }
        std::string frame = "*3\r\n";
        append_bulk(frame, "message");
        append_bulk(frame, p.channel);
        append_bulk(frame, p.message);
        for (std::uint8_t c = 0; c < params_.clients; ++c) {
            if (subscribed(node, c, p.channel))
                out_.replies.push_back(node_output::reply{model_client(c, lane::subscriber),
                                                          subscriber_at(node, c).epoch, frame});
        }
    }
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

// ---- the checks ------------------------------------------------------------------------------

// The bounds (checker.hpp, "wakeup"), from the run's own knobs. An attempt takes at most its
// timeout plus two round trips (NOSCRIPT's fallback to EVAL is one more) and, with WAIT, a
// replication round trip; where the network's tail can outlast the attempt timeout, one
// failed attempt and its retry delay (at most the re-check) more. Told: that. Due: the
// re-check (on a clock that may run slow by clock_ppm) and that.
void world::init_fair_checks() {
    waiting_token_.assign(params_.clients, std::string());
    holding_token_.assign(params_.clients, std::string());
    due_since_us_.assign(params_.clients, -1);
    told_us_.assign(params_.clients, -1);
    const std::int64_t recheck_us = lock_recheck_ms(params_) * 1000;
    history_.fair.judged = true;
    history_.fair.told_bound_us = attempt_slack_us();
    history_.fair.due_bound_us =
        recheck_us + recheck_us * params_.clock_ppm_max / 1'000'000 + 1000 + attempt_slack_us();
}

std::int64_t world::attempt_slack_us() const noexcept {
    const std::int64_t attempt_us = lock_attempt_timeout_ms(params_) * 1000;
    const std::int64_t one_way_us = params_.path_us_max + params_.tail_ms_max * 1000;
    const std::int64_t replication_us = 2 * params_.repl_us_max;
    std::int64_t slack_us = attempt_us + 4 * one_way_us + replication_us + 10'000;
    if (attempt_us <= 2 * one_way_us + replication_us) {
        const std::int64_t retry_max_us = resolved_lock(params_).retry_delay_ms_max * 1000;
        const std::int64_t retry_us =
            config_.fair ? std::min(retry_max_us, lock_recheck_ms(params_) * 1000) : retry_max_us;
        slack_us += attempt_us + retry_us;
    }
    return slack_us;
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
    return times_out(extra_us) ? -1 : extra_us;
}

// Beyond half a timeout (the attempt's, a reply's, a connect's with its handshake) a round
// trip slowed by `extra_us` may time the connection or the attempt out, over and over.
bool world::times_out(std::int64_t extra_us) const noexcept {
    const std::int64_t timeout_ms = std::min(
        {lock_attempt_timeout_ms(params_), params_.io_timeout_ms, params_.connect_timeout_ms});
    return 2 * extra_us >= timeout_ms * 1000;
}

void world::begin_wait(std::uint8_t client, std::string_view token_hex) {
    acquiring_[client] = true;
    // An acquire() right after one that failed asks on: the wait counts from the first.
    if (!asked_in_vain_[client]) asking_since_us_[client] = now_us_;
    asked_in_vain_[client] = false;
    if (!config_.fair) return;
    waiting_token_[client] = std::string(token_hex);
    holding_token_[client].clear();
}

void world::end_wait(std::uint8_t client, bool acquired) {
    acquiring_[client] = false;
    asked_in_vain_[client] = !acquired;
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

void world::cancelled(std::uint8_t client) {
    acquiring_[client] = false;
    asked_in_vain_[client] = false;  // the user gave up: a later acquire() asks afresh
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

// The lock is free (a semaphore: has a permit free), or a lock handed to the client by a
// release (a grant: the key holds its waiting token), on every master that is up (and there
// is one), and fewer live waiters (or holders without a lease: one stands at the head until
// its release) are ahead of the client in the line of the master the lock lives on
// (lease_home_now) than permits are free there: for a lock, none.
bool world::due(std::uint8_t client) const {
    if (waiting_token_[client].empty() || clients_[client]->paused()) return false;
    const auto free_for_it = [&](std::uint8_t n) {
        return has_free_permit(n) ||
               (config_.permits == 1 && holds_token(n, waiting_token_[client]));
    };
    bool any_master = false;
    for (std::uint8_t n = 0; n < config_.nodes; ++n) {
        if (!nodes_[n].up() || !nodes_[n].is_master()) continue;
        if (paused(n) || !free_for_it(n)) return false;
        any_master = true;
    }
    // The node the lock lives on: the master the sentinels name, or under Redis Cluster the
    // slot's (after a migration, the node it moved to).
    const std::uint8_t master = lease_home_now().first;
    if (!any_master || !nodes_[master].up() || !nodes_[master].is_master()) return false;
    const std::int64_t wall_ms = node_wall_ms(master);
    const redis_entry* line = nodes_[master].peek(queue_key_, wall_ms);
    if (line == nullptr) return true;
    const std::size_t granted =
        config_.permits == 1 && holds_token(master, waiting_token_[client]) ? 1 : 0;
    const std::size_t free = config_.permits - live_leases(master) + granted;
    std::size_t ahead = 0;
    for (const zset_member& m : decode_zset(line->value)) {
        if (!entry_live(nodes_[master], qttl_key_, m.member, wall_ms)) continue;
        if (m.member == waiting_token_[client]) break;
        if (waiter_of(m.member) < 0 && holder_of(m.member) < 0) continue;
        if (config_.permits > 1 && holds_token(master, m.member)) continue;
        ++ahead;
    }
    return ahead < free;
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
// done), or in it at all when the new holder was not queued; for a semaphore, with as many
// waiters ahead (that hold no lease) as permits were free before the grant.
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
        const std::size_t free_before = config_.permits + 1 - live_leases(node);
        std::size_t ahead = 0;
        for (const zset_member& m : members) {
            if (m.member == g.token || waiter_of(m.member) < 0) continue;
            if (!entry_live(nodes_[node], qttl_key_, m.member, wall_ms)) continue;
            if (ours >= 0 && m.score > ours) continue;
            if (config_.permits > 1 && holds_token(node, m.member)) continue;
            if (++ahead < free_before) continue;
            fair_record& record = history_.fair;
            if (record.fifo_violations++ == 0) {
                const int holder = waiter_of(g.token);
                record.first_fifo =
                    "n" + std::to_string(node) + " gave the " +
                    (config_.permits > 1 ? std::string("permit") : std::string("lock")) + " to " +
                    (holder >= 0 ? "c" + std::to_string(holder) : g.token.substr(0, 8)) + " at " +
                    seconds(now_us_) + " while c" + std::to_string(waiter_of(m.member)) +
                    " waited ahead of it in the line";
            }
            break;
        }
    }
}

}  // namespace edgelock::sim
