// SPDX-License-Identifier: Apache-2.0
// The world's judges of what a holder believes, as the run goes on: the lease oracle (a
// client that believes it holds the lock has a lease backing it) and the kept check (a
// holder loses its lock only for a reason). checker.hpp says what each promises; both
// record into the history, and the checker reports what they recorded.
#include <algorithm>
#include <string>

#include "edgelock/session/cluster_links.hpp"
#include "edgelock/sim/world.hpp"
#include "world_text.hpp"

namespace edgelock::sim {

// ---- the lease oracle ---------------------------------------------------------------------

// A lock's key holds the token; a semaphore's set has it as a lease that has not expired by
// the node's own clock (scripts.hpp).
bool world::holds_token(std::uint8_t node, std::string_view token_hex) const {
    const std::int64_t wall_ms = node_wall_ms(node);
    const redis_entry* e = nodes_[node].peek(lock_name_, wall_ms);
    if (e == nullptr) return false;
    if (config_.permits == 1) return e->value == token_hex;
    for (const zset_member& m : decode_zset(e->value)) {
        if (m.member == token_hex) return m.score > wall_ms;
    }
    return false;
}

// The leases node n keeps that have not expired by its own clock: 0 or 1 for a lock.
std::size_t world::live_leases(std::uint8_t node) const {
    const std::int64_t wall_ms = node_wall_ms(node);
    const redis_entry* e = nodes_[node].peek(lock_name_, wall_ms);
    if (e == nullptr) return 0;
    if (config_.permits == 1) return 1;
    std::size_t live = 0;
    for (const zset_member& m : decode_zset(e->value)) live += m.score > wall_ms ? 1 : 0;
    return live;
}

std::uint16_t world::numbered_permit(std::string_view token_hex, std::int64_t fence) const {
    // The master the lease lives on first: an old master may still hold the token's entry.
    const std::uint8_t home = lease_home_now().first;
    for (std::uint8_t i = 0; i < config_.nodes; ++i) {
        const auto n = static_cast<std::uint8_t>((home + i) % config_.nodes);
        const redis_entry* e = nodes_[n].peek(slots_key_, node_wall_ms(n));
        if (e == nullptr) continue;
        for (const zset_member& m : decode_zset(e->value)) {
            if (m.member == token_hex) return static_cast<std::uint16_t>(m.score);
        }
    }
    return permit_of(fence, config_.permits);
}

// A request for the lock (a permit) would find one free on node n.
bool world::has_free_permit(std::uint8_t node) const { return live_leases(node) < config_.permits; }

// A semaphore's second promise, sampled with the first: no master keeps more leases than it
// has permits, nor (fenced) numbers two live leases with one permit.
void world::check_permits_kept() {
    if (config_.permits == 1) return;
    for (std::uint8_t n = 0; n < config_.nodes; ++n) {
        if (!nodes_[n].up() || !nodes_[n].is_master()) continue;
        const std::size_t live = live_leases(n);
        if (live > config_.permits) {
            oracle_failure(format("master n%u keeps %u live leases of %u permits", unsigned{n},
                                  static_cast<unsigned>(live), unsigned{config_.permits}));
        }
        const int shared = shared_permit(n);
        if (shared >= 0) {
            oracle_failure(
                format("master n%u numbers two live leases with permit %d", unsigned{n}, shared));
        }
    }
}

// A permit that node n's slots key gives two live leases, or -1.
int world::shared_permit(std::uint8_t node) const {
    if (slots_key_.empty()) return -1;
    const std::int64_t wall_ms = node_wall_ms(node);
    const redis_entry* numbers = nodes_[node].peek(slots_key_, wall_ms);
    if (numbers == nullptr) return -1;
    std::array<bool, resource_permits_max> seen{};
    for (const zset_member& m : decode_zset(numbers->value)) {
        if (m.score < 0 || m.score >= static_cast<std::int64_t>(seen.size())) continue;
        if (!holds_token(node, m.member)) continue;
        if (seen[static_cast<std::size_t>(m.score)]) return static_cast<int>(m.score);
        seen[static_cast<std::size_t>(m.score)] = true;
    }
    return -1;
}

// A guarded lock counts a node that restarted without durable data (AOF always) only from its start
// plus ttl + drift on the client's clock (lock.hpp, "Restarts"), which the client reads late (the
// safe side) and may run fast: until then no client can take the lock with it, as if down.
bool world::guard_keeps_out(std::uint8_t node) const noexcept {
    if (!config_.restart_guard || restarted_us_[node] < 0) return false;
    if (nodes_[node].persist() == persistence::always) return false;  // durable: counted at once
    const std::int64_t guard_ms = lock_restart_guard_ms(params_);
    const std::int64_t window_us = guard_ms * (1'000'000 - params_.clock_ppm_max) / 1'000;
    return now_us_ < restarted_us_[node] + window_us;
}

world::lease_home world::lease_home_now() const noexcept {
    if (config_.layout == topology::redlock)
        return {0, config_.instances, quorum_of(config_.instances)};
    const int master = slot_moving_.owner >= 0 ? slot_moving_.owner : current_master_;
    return {static_cast<std::uint8_t>(master), 1, 1};
}

// The nodes a lease must be live on (a Redlock quorum of the instances, or the master), and
// how many of them. Nodes that are down count for the holder: nobody can take the lock from
// them until they come back, and then they are judged by what they came back with (or, with
// the restart guard, once the guard lets clients count them again).
void world::check_lease(std::uint8_t client, std::uint32_t hold, std::string_view token_hex,
                        std::int64_t mono_ms, std::int64_t valid_until_ms) {
    check_permits_kept();
    const bool redlock = config_.layout == topology::redlock;
    // Redis Cluster: the lock's slot may have moved to another shard; while it moves, a key
    // MIGRATE copied to the importing node backs the lease there.
    if (slot_moving_.importer >= 0 && holds_token(slot_moving_.importer, token_hex)) return;
    const auto [first, count, needed] = lease_home_now();
    const auto backs = [&](std::uint8_t n) {
        return !nodes_[n].up() || guard_keeps_out(n) || holds_token(n, token_hex);
    };
    std::uint8_t backed = 0;
    for (std::uint8_t n = first; n < first + count; ++n)
        backed = static_cast<std::uint8_t>(backed + (backs(n) ? 1 : 0));
    if (backed >= needed) return;
    std::string where;  // built only for a failure: the check runs at every sample
    for (std::uint8_t n = first; n < first + count; ++n) {
        where += format(" %sn%u:%s", redlock ? "" : "master ", unsigned{n},
                        !nodes_[n].up()      ? "down"
                        : guard_keeps_out(n) ? "guarded"
                        : backs(n)           ? "live"
                                             : "gone");
    }
    oracle_failure(format(
        "c%u (hold #%u) held() true at mono %lld (valid until %lld) but its token "
        "backs %u of the %u node(s) needed:%s",
        unsigned{client}, hold, static_cast<long long>(mono_ms),
        static_cast<long long>(valid_until_ms), unsigned{backed}, unsigned{needed}, where.c_str()));
}

void world::check_event_validity(std::uint8_t client, const char* event_name, std::int64_t mono_ms,
                                 std::int64_t valid_until_ms) {
    if (valid_until_ms > mono_ms) return;
    oracle_failure(format("c%u got `%s` at mono %lld with validity already over (valid until %lld)",
                          unsigned{client}, event_name, static_cast<long long>(mono_ms),
                          static_cast<long long>(valid_until_ms)));
}

void world::oracle_failure(std::string text) {
    record_judged(history_.oracle, 0x0dac1e00u, "ORACLE", std::move(text));
}

void world::claim_failure(std::string text) {
    record_judged(history_.claim, 0xc1a10000u, "CLAIM", std::move(text));
}

// A violation the world judged as the run went: counted, mixed into the run's fingerprint
// (`salt` apart per check), noted on the timeline, and the first one kept with its instant.
void world::record_judged(judged_record& into, std::uint32_t salt, const char* label,
                          std::string text) {
    ++into.violations;
    mix(salt + into.violations);
    if (recording()) note("!", nullptr, std::string(label) + ": " + text);
    if (into.first_us < 0) {
        into.first_us = now_us_;
        into.first = "at " + seconds_text(now_us_) + ": " + std::move(text);
    }
}

// A node changed (crashed, restarted, was promoted): what every holder believes is sampled.
void world::observe_all_clients() {
    for (auto& c : clients_) c->observe();
}

// ---- the kept check ----------------------------------------------------------------------

void world::disturb(disturbance d) {
    d.from_us = now_us_;
    disturbed_.push_back(d);
}

// A fault concerns the client or the nodes it names. A node's concerns everyone when renewals
// wait for the replicas (it may be the master's) or under Redis Cluster (a node with a stale
// view of the slots sends a client to the wrong master); replication lag only when renewals
// wait for the replicas.
void world::disturb_by(const fault& f, std::int64_t to_us) {
    disturbance d;
    d.to_us = to_us;
    // A client's clock rate stays changed for the rest of the run, and its renewal interval
    // with it. A node's clock only moves its keys' expiry, which the judge reads at the loss.
    const bool clock = f.kind == fault_kind::clock_rate || f.kind == fault_kind::wall_step;
    if (f.kind == fault_kind::clock_rate && !f.on_node) d.to_us = never_us;
    d.ridden = f.kind == fault_kind::migrate;
    // Sentinel with WAIT: a master that goes away alone is what the failover is for.
    const bool away = f.kind == fault_kind::crash || f.kind == fault_kind::power_off ||
                      f.kind == fault_kind::pause || f.kind == fault_kind::isolate;
    if (rides_failovers() && f.on_node && away && f.nodes == 0) d.replaced_node = f.target;
    d.everyone = f.kind == fault_kind::migrate ||
                 (f.kind == fault_kind::repl_lag ? config_.replicas_to_wait > 0
                                                 : f.on_node && !clock && node_news_concerns_all());
    if (f.on_node) {
        d.nodes = 1u << f.target;
        if (f.kind == fault_kind::isolate) d.nodes |= f.nodes;
    } else {
        d.client = f.target;
    }
    disturb(d);
}

bool world::rides_failovers() const noexcept {
    return config_.layout == topology::sentinel && config_.replicas_to_wait > 0;
}

// Every sentinel names the current master: a client can hear of the failover whichever
// sentinel it watches or asks (their news is a disturbance until it is old enough).
bool world::failover_told() const noexcept {
    return std::all_of(sentinels_.begin(), sentinels_.end(), [&](const sentinel_node& s) {
        return static_cast<int>(s.believed_master()) == current_master_;
    });
}

bool world::node_news_concerns_all() const noexcept {
    return config_.replicas_to_wait > 0 || config_.layout == topology::cluster;
}

// A message the network's long tail delayed (no fault: the run's latencies) can make one of the
// client's renewals time out; the lock must ride that out, but not more of them than its
// lease leaves tries for (renewal_tries()).
void world::disturb_by_tail(std::uint8_t client, std::int64_t arrives_us) {
    disturbance d;
    d.to_us = arrives_us;
    d.client = client;
    d.tail = true;
    disturb(d);
}

bool world::calm_between(std::uint8_t client, std::uint32_t nodes, std::int64_t from_us,
                         std::int64_t to_us, bool but_ridden) const noexcept {
    return std::none_of(disturbed_.begin(), disturbed_.end(), [&](const disturbance& d) {
        const bool concerns = d.everyone || d.client == client || (d.nodes & nodes) != 0;
        const bool counts = !d.tail && !(but_ridden && rides_out(d, to_us));
        return counts && concerns && d.from_us <= to_us && d.to_us >= from_us;
    });
}

// A slot's move and a failover's news, once the holder had the time to act on them before the
// loss at `lost_us` (reach the node they point to and renew there); a master's going away,
// once a failover replaced it (since the fault began).
bool world::rides_out(const disturbance& d, std::int64_t lost_us) const noexcept {
    if (d.ridden || d.failover_news)
        return d.to_us < lost_us - settle_us() - lock_attempt_timeout_ms(params_) * 1000;
    const auto replaced = static_cast<std::size_t>(d.replaced_node);
    return d.replaced_node >= 0 && replaced_us_[replaced] >= d.from_us;
}

std::size_t world::tails_between(std::uint8_t client, std::int64_t from_us,
                                 std::int64_t to_us) const noexcept {
    return static_cast<std::size_t>(
        std::count_if(disturbed_.begin(), disturbed_.end(), [&](const disturbance& d) {
            return d.tail && d.client == client && d.from_us <= to_us && d.to_us >= from_us;
        }));
}

// How many renewal attempts the lease leaves, each failing at its attempt timeout at worst: the
// first at the renewal's start, then one after each failure and the retry delay, the last no
// later than the last instant an attempt still ends within validity (lock::renewal_retry_ms).
std::int64_t world::renewal_tries() const noexcept {
    const lock_config lock = resolved_lock(params_);
    const std::int64_t last_start =
        lock.ttl_ms - lock.drift_ms - lock.renew_interval_ms - lock.attempt_timeout_ms;
    std::int64_t tries = 1;
    for (std::int64_t start = 0;
         start < last_start && start + lock.attempt_timeout_ms <= last_start; ++tries) {
        start = std::min(start + lock.attempt_timeout_ms + lock.retry_delay_ms_min, last_start);
    }
    return tries;
}

// A node whose answer to a renewal would have kept the lease: up, answering, holding the token
// now, and not restarted since the hold began (the restart guard keeps such a node out of the
// hold for good, whatever it kept).
bool world::would_renew(std::uint8_t node, std::string_view token_hex,
                        std::int64_t since_us) const noexcept {
    return nodes_[node].up() && !paused(node) && !isolated(node) &&
           restarted_us_[node] < since_us && holds_token(node, token_hex);
}

// With WAIT, enough replicas follow `node`, reachable and synchronised, to acknowledge a
// renewal there.
bool world::wait_met(std::uint8_t node) const noexcept {
    std::uint8_t following = 0;
    for (std::uint8_t r = 0; r < config_.nodes; ++r) {
        if (r == node || nodes_[r].is_master() || nodes_[r].master_id() != node) continue;
        if (reachable(r) && master_link_up(r)) ++following;
    }
    return following >= config_.replicas_to_wait;
}

// Whether a renewal of this configuration has room to succeed: the interval leaves the attempt
// timeout before the lease ends (the lock gives a request that long), and the watchdog renews.
bool world::renewals_have_room() const noexcept {
    const lock_config lock = resolved_lock(params_);
    return params_.watchdog &&
           lock.ttl_ms - lock.drift_ms - lock.renew_interval_ms >= lock.attempt_timeout_ms;
}

// How long a fault's effects may outlast it on a connection: a connection broken without a
// word is noticed (the I/O timeout), a connect left unanswered gives up (the connect timeout),
// and the next waits out the reconnect delay; a cluster client then reads the map again, not
// sooner than the refresh gap allows.
std::int64_t world::settle_us() const noexcept {
    std::int64_t ms = params_.io_timeout_ms + params_.connect_timeout_ms + params_.reconnect_ms_max;
    if (config_.layout == topology::cluster) ms += session::cluster_links::read_gap_ms;
    return ms * 1000;
}

// A loss is the kept check's when nothing disturbed the holder or its keepers, the available
// check's when only what the configuration rides out did (a slot moving: the node importing
// it keeps the lease as the slot's owner does, as for the lease oracle; under Sentinel with
// WAIT, the old master away once it was replaced). A keeper must have the replicas a renewal
// waits for.
void world::judge_loss(std::uint8_t client, std::uint32_t hold, std::string_view token_hex,
                       std::int64_t lost_us) {
    if (!renewals_have_room()) return;
    // The renewal interval runs on the client's clock, up to clock_ppm_max slow.
    const std::int64_t interval_ms = resolved_lock(params_).renew_interval_ms;
    const std::int64_t calm_from_us =
        lost_us - interval_ms * (1'000'000 + params_.clock_ppm_max) / 1'000;
    // A hold lost before its first renewal was due had no renewal to miss.
    const hold_record& h = history_.holds[hold];
    if (calm_from_us < h.start_us) return;
    const auto [first, count, needed] = lease_home_now();
    std::uint8_t keeping = 0;
    std::uint32_t keepers = 0;
    std::string where;
    const auto keeps = [&](std::uint8_t n) {
        if (!would_renew(n, token_hex, h.start_us) || !wait_met(n)) return;
        ++keeping;
        keepers |= 1u << n;
        where += format(" n%u", unsigned{n});
    };
    for (std::uint8_t n = first; n < first + count; ++n) keeps(n);
    if (keeping < needed && slot_moving_.importer >= 0)
        keeps(static_cast<std::uint8_t>(slot_moving_.importer));
    const std::int64_t window_from_us = calm_from_us - settle_us();
    if (keeping < needed) return;
    const std::size_t tails = tails_between(client, window_from_us, now_us_);
    if (static_cast<std::int64_t>(tails) >= renewal_tries()) return;
    const bool calm = calm_between(client, keepers, window_from_us, now_us_);
    if (!calm &&
        (!failover_told() || !calm_between(client, keepers, window_from_us, now_us_, true)))
        return;
    record_loss(calm ? history_.kept : history_.available, calm ? "KEPT" : "AVAILABLE",
                format("c%u lost hold #%u at %s while%s kept its token, up and answering, and "
                       "nothing %swas disturbed since %s (the last renewal interval, %lld ms, and "
                       "what a broken connection takes to notice and make again; fewer of its "
                       "messages in the network's long tail than the lease leaves renewal tries)",
                       unsigned{client}, hold, seconds_text(lost_us).c_str(), where.c_str(),
                       calm ? "" : "but what the configuration rides out ",
                       seconds_text(window_from_us).c_str(), static_cast<long long>(interval_ms)));
}

void world::record_loss(judged_record& into, const char* label, std::string text) {
    ++into.violations;
    mix((&into == &history_.kept ? 0x4ee9700u : 0xa7a11000u) + into.violations);
    if (recording()) note("!", nullptr, std::string(label) + ": " + text);
    if (into.first_us < 0) {
        into.first_us = now_us_;
        into.first = std::move(text);
    }
}

}  // namespace edgelock::sim
