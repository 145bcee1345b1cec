// SPDX-License-Identifier: Apache-2.0
#include "edgelock/sim/configuration.hpp"

#include <algorithm>
#include <array>

#include "edgelock/assert.hpp"

namespace edgelock::sim {

const std::array<configuration, configuration_count>& configurations() noexcept {
    static const std::array<configuration, configuration_count> all = {{
        {"single", topology::single, 1, 1, false, 0, false},
        {"single+fencing", topology::single, 1, 1, true, 0, false},
        {"sentinel", topology::sentinel, 1, 3, false, 0, false, 3},
        {"sentinel+WAIT", topology::sentinel, 1, 3, false, 1, false, 3},
        {"redlock-5", topology::redlock, 5, 5, false, 0, false},
        {"redlock-5+fencing", topology::redlock, 5, 5, true, 0, false},
        {"redlock-5+delayed-restart", topology::redlock, 5, 5, false, 0, true},
        {"single+guard", topology::single, 1, 1, false, 0, false, 0, true},
        {"single+fencing+guard", topology::single, 1, 1, true, 0, false, 0, true},
        {"sentinel+WAIT+guard", topology::sentinel, 1, 3, false, 1, false, 3, true},
        {"redlock-5+guard", topology::redlock, 5, 5, false, 0, false, 0, true},
        {"redlock-5+fencing+guard", topology::redlock, 5, 5, true, 0, false, 0, true},
        {"single+fair", topology::single, 1, 1, false, 0, false, 0, false, true},
        {"sentinel+WAIT+guard+fair", topology::sentinel, 1, 3, false, 1, false, 3, true, true},
        {"cluster", topology::cluster, 1, 6, false, 0, false},
        {"cluster+WAIT", topology::cluster, 1, 6, false, 1, false},
        {"cluster+WAIT+guard", topology::cluster, 1, 6, false, 1, false, 0, true},
        {"single+permits-3", topology::single, 1, 1, false, 0, false, 0, false, false, 3},
        {"sentinel+WAIT+permits-3", topology::sentinel, 1, 3, false, 1, false, 3, false, false, 3},
        {"cluster+WAIT+permits-3", topology::cluster, 1, 6, false, 1, false, 0, false, false, 3},
        {"single+fair+permits-3", topology::single, 1, 1, false, 0, false, 0, false, true, 3},
        {"single+fencing+permits-3", topology::single, 1, 1, true, 0, false, 0, false, false, 3},
    }};
    return all;
}

namespace {

// The one-off rows of the lock, then of the semaphore (configuration.hpp: every lock the CLI
// and the core accept), as tables of their own.
constexpr std::array<configuration, second_one_off_configuration_count> lock_one_off_rows = {{
    {"redlock-3", topology::redlock, 3, 3, false, 0, false},
    {"redlock-3+fencing", topology::redlock, 3, 3, true, 0, false},
    {"redlock-3+guard", topology::redlock, 3, 3, false, 0, false, 0, true},
    {"redlock-3+fencing+guard", topology::redlock, 3, 3, true, 0, false, 0, true},
    {"redlock-7", topology::redlock, 7, 7, false, 0, false},
    {"redlock-7+fencing", topology::redlock, 7, 7, true, 0, false},
    {"redlock-7+guard", topology::redlock, 7, 7, false, 0, false, 0, true},
    {"redlock-7+fencing+guard", topology::redlock, 7, 7, true, 0, false, 0, true},
    {"sentinel+fencing", topology::sentinel, 1, 3, true, 0, false, 3},
    {"sentinel+guard", topology::sentinel, 1, 3, false, 0, false, 3, true},
    {"sentinel+fencing+guard", topology::sentinel, 1, 3, true, 0, false, 3, true},
    {"sentinel+WAIT+fencing", topology::sentinel, 1, 3, true, 1, false, 3},
    {"sentinel+WAIT+fencing+guard", topology::sentinel, 1, 3, true, 1, false, 3, true},
    {"cluster+fencing", topology::cluster, 1, 6, true, 0, false},
    {"cluster+guard", topology::cluster, 1, 6, false, 0, false, 0, true},
    {"cluster+fencing+guard", topology::cluster, 1, 6, true, 0, false, 0, true},
    {"cluster+WAIT+fencing", topology::cluster, 1, 6, true, 1, false},
    {"cluster+WAIT+fencing+guard", topology::cluster, 1, 6, true, 1, false, 0, true},
    {"single+fencing+fair", topology::single, 1, 1, true, 0, false, 0, false, true},
    {"single+guard+fair", topology::single, 1, 1, false, 0, false, 0, true, true},
    {"single+fencing+guard+fair", topology::single, 1, 1, true, 0, false, 0, true, true},
    {"sentinel+fair", topology::sentinel, 1, 3, false, 0, false, 3, false, true},
    {"sentinel+fencing+fair", topology::sentinel, 1, 3, true, 0, false, 3, false, true},
    {"sentinel+guard+fair", topology::sentinel, 1, 3, false, 0, false, 3, true, true},
    {"sentinel+fencing+guard+fair", topology::sentinel, 1, 3, true, 0, false, 3, true, true},
    {"sentinel+WAIT+fair", topology::sentinel, 1, 3, false, 1, false, 3, false, true},
    {"sentinel+WAIT+fencing+fair", topology::sentinel, 1, 3, true, 1, false, 3, false, true},
    {"sentinel+WAIT+fencing+guard+fair", topology::sentinel, 1, 3, true, 1, false, 3, true, true},
    {"cluster+fair", topology::cluster, 1, 6, false, 0, false, 0, false, true},
    {"cluster+guard+fair", topology::cluster, 1, 6, false, 0, false, 0, true, true},
    {"cluster+fencing+fair", topology::cluster, 1, 6, true, 0, false, 0, false, true},
    {"cluster+fencing+guard+fair", topology::cluster, 1, 6, true, 0, false, 0, true, true},
    {"cluster+WAIT+fair", topology::cluster, 1, 6, false, 1, false, 0, false, true},
    {"cluster+WAIT+guard+fair", topology::cluster, 1, 6, false, 1, false, 0, true, true},
    {"cluster+WAIT+fencing+fair", topology::cluster, 1, 6, true, 1, false, 0, false, true},
    {"cluster+WAIT+fencing+guard+fair", topology::cluster, 1, 6, true, 1, false, 0, true, true},
    {"single+WAIT", topology::single, 1, 2, false, 1, false, 0, false, false},
    {"single+WAIT+fair", topology::single, 1, 2, false, 1, false, 0, false, true},
    {"single+WAIT+guard", topology::single, 1, 2, false, 1, false, 0, true, false},
    {"single+WAIT+guard+fair", topology::single, 1, 2, false, 1, false, 0, true, true},
    {"single+WAIT+fencing", topology::single, 1, 2, true, 1, false, 0, false, false},
    {"single+WAIT+fencing+fair", topology::single, 1, 2, true, 1, false, 0, false, true},
    {"single+WAIT+fencing+guard", topology::single, 1, 2, true, 1, false, 0, true, false},
    {"single+WAIT+fencing+guard+fair", topology::single, 1, 2, true, 1, false, 0, true, true},
    {"redlock-3+WAIT", topology::redlock, 3, 6, false, 1, false, 0, false},
    {"redlock-3+WAIT+guard", topology::redlock, 3, 6, false, 1, false, 0, true},
    {"redlock-3+WAIT+fencing", topology::redlock, 3, 6, true, 1, false, 0, false},
    {"redlock-3+WAIT+fencing+guard", topology::redlock, 3, 6, true, 1, false, 0, true},
    {"redlock-5+WAIT", topology::redlock, 5, 10, false, 1, false, 0, false},
    {"redlock-5+WAIT+guard", topology::redlock, 5, 10, false, 1, false, 0, true},
    {"redlock-5+WAIT+fencing", topology::redlock, 5, 10, true, 1, false, 0, false},
    {"redlock-5+WAIT+fencing+guard", topology::redlock, 5, 10, true, 1, false, 0, true},
    {"redlock-7+WAIT", topology::redlock, 7, 14, false, 1, false, 0, false},
    {"redlock-7+WAIT+guard", topology::redlock, 7, 14, false, 1, false, 0, true},
    {"redlock-7+WAIT+fencing", topology::redlock, 7, 14, true, 1, false, 0, false},
    {"redlock-7+WAIT+fencing+guard", topology::redlock, 7, 14, true, 1, false, 0, true},
}};

constexpr std::size_t semaphore_one_off_count =
    one_off_configuration_count - second_one_off_configuration_count;
constexpr std::array<configuration, semaphore_one_off_count> semaphore_one_off_rows = {{
    {"single+guard+permits-3", topology::single, 1, 1, false, 0, false, 0, true, false, 3},
    {"single+guard+fair+permits-3", topology::single, 1, 1, false, 0, false, 0, true, true, 3},
    {"single+WAIT+permits-3", topology::single, 1, 2, false, 1, false, 0, false, false, 3},
    {"single+WAIT+fair+permits-3", topology::single, 1, 2, false, 1, false, 0, false, true, 3},
    {"single+WAIT+guard+permits-3", topology::single, 1, 2, false, 1, false, 0, true, false, 3},
    {"single+WAIT+guard+fair+permits-3", topology::single, 1, 2, false, 1, false, 0, true, true, 3},
    {"sentinel+permits-3", topology::sentinel, 1, 3, false, 0, false, 3, false, false, 3},
    {"sentinel+fair+permits-3", topology::sentinel, 1, 3, false, 0, false, 3, false, true, 3},
    {"sentinel+guard+permits-3", topology::sentinel, 1, 3, false, 0, false, 3, true, false, 3},
    {"sentinel+guard+fair+permits-3", topology::sentinel, 1, 3, false, 0, false, 3, true, true, 3},
    {"sentinel+WAIT+fair+permits-3", topology::sentinel, 1, 3, false, 1, false, 3, false, true, 3},
    {"sentinel+WAIT+guard+permits-3", topology::sentinel, 1, 3, false, 1, false, 3, true, false, 3},
    {"sentinel+WAIT+guard+fair+permits-3", topology::sentinel, 1, 3, false, 1, false, 3, true, true,
     3},
    {"cluster+permits-3", topology::cluster, 1, 6, false, 0, false, 0, false, false, 3},
    {"cluster+fair+permits-3", topology::cluster, 1, 6, false, 0, false, 0, false, true, 3},
    {"cluster+guard+permits-3", topology::cluster, 1, 6, false, 0, false, 0, true, false, 3},
    {"cluster+guard+fair+permits-3", topology::cluster, 1, 6, false, 0, false, 0, true, true, 3},
    {"cluster+WAIT+fair+permits-3", topology::cluster, 1, 6, false, 1, false, 0, false, true, 3},
    {"cluster+WAIT+guard+permits-3", topology::cluster, 1, 6, false, 1, false, 0, true, false, 3},
    {"cluster+WAIT+guard+fair+permits-3", topology::cluster, 1, 6, false, 1, false, 0, true, true,
     3},
    {"single+fencing+fair+permits-3", topology::single, 1, 1, true, 0, false, 0, false, true, 3},
    {"single+fencing+guard+permits-3", topology::single, 1, 1, true, 0, false, 0, true, false, 3},
    {"single+fencing+guard+fair+permits-3", topology::single, 1, 1, true, 0, false, 0, true, true,
     3},
    {"single+WAIT+fencing+permits-3", topology::single, 1, 2, true, 1, false, 0, false, false, 3},
    {"single+WAIT+fencing+fair+permits-3", topology::single, 1, 2, true, 1, false, 0, false, true,
     3},
    {"single+WAIT+fencing+guard+permits-3", topology::single, 1, 2, true, 1, false, 0, true, false,
     3},
    {"single+WAIT+fencing+guard+fair+permits-3", topology::single, 1, 2, true, 1, false, 0, true,
     true, 3},
    {"sentinel+fencing+permits-3", topology::sentinel, 1, 3, true, 0, false, 3, false, false, 3},
    {"sentinel+fencing+fair+permits-3", topology::sentinel, 1, 3, true, 0, false, 3, false, true,
     3},
    {"sentinel+fencing+guard+permits-3", topology::sentinel, 1, 3, true, 0, false, 3, true, false,
     3},
    {"sentinel+fencing+guard+fair+permits-3", topology::sentinel, 1, 3, true, 0, false, 3, true,
     true, 3},
    {"sentinel+WAIT+fencing+permits-3", topology::sentinel, 1, 3, true, 1, false, 3, false, false,
     3},
    {"sentinel+WAIT+fencing+fair+permits-3", topology::sentinel, 1, 3, true, 1, false, 3, false,
     true, 3},
    {"sentinel+WAIT+fencing+guard+permits-3", topology::sentinel, 1, 3, true, 1, false, 3, true,
     false, 3},
    {"sentinel+WAIT+fencing+guard+fair+permits-3", topology::sentinel, 1, 3, true, 1, false, 3,
     true, true, 3},
    {"cluster+fencing+permits-3", topology::cluster, 1, 6, true, 0, false, 0, false, false, 3},
    {"cluster+fencing+fair+permits-3", topology::cluster, 1, 6, true, 0, false, 0, false, true, 3},
    {"cluster+fencing+guard+permits-3", topology::cluster, 1, 6, true, 0, false, 0, true, false, 3},
    {"cluster+fencing+guard+fair+permits-3", topology::cluster, 1, 6, true, 0, false, 0, true, true,
     3},
    {"cluster+WAIT+fencing+permits-3", topology::cluster, 1, 6, true, 1, false, 0, false, false, 3},
    {"cluster+WAIT+fencing+fair+permits-3", topology::cluster, 1, 6, true, 1, false, 0, false, true,
     3},
    {"cluster+WAIT+fencing+guard+permits-3", topology::cluster, 1, 6, true, 1, false, 0, true,
     false, 3},
    {"cluster+WAIT+fencing+guard+fair+permits-3", topology::cluster, 1, 6, true, 1, false, 0, true,
     true, 3},
}};

template <std::size_t first, std::size_t second>
constexpr std::array<configuration, first + second> joined(
    const std::array<configuration, first>& a, const std::array<configuration, second>& b) {
    std::array<configuration, first + second> out{};
    for (std::size_t i = 0; i < first; ++i) out[i] = a[i];
    for (std::size_t i = 0; i < second; ++i) out[first + i] = b[i];
    return out;
}

}  // namespace

const std::array<configuration, one_off_configuration_count>& one_off_configurations() noexcept {
    static constexpr std::array<configuration, one_off_configuration_count> all =
        joined(lock_one_off_rows, semaphore_one_off_rows);
    return all;
}

const configuration* find_configuration(std::string_view name) noexcept {
    for (const configuration& c : configurations()) {
        if (c.name == name) return &c;
    }
    for (const configuration& c : one_off_configurations()) {
        if (c.name == name) return &c;
    }
    return nullptr;
}

bool has_own_replicas(const configuration& config) noexcept {
    return config.nodes > config.instances &&
           (config.layout == topology::single || config.layout == topology::redlock);
}

bool in_matrix(const configuration& config) noexcept {
    const configuration* const matrix = configurations().data();
    return &config >= matrix && &config < matrix + configuration_count;
}

namespace {

// The rows in the order they were added, so a row keeps its index (and its cells' seeds) when
// rows come: each block is a run of matrix (or one-off) rows, from place `first` to `end`.
struct row_block {
    bool matrix;
    std::size_t first;
    std::size_t end;
};
constexpr std::array<row_block, 6> row_blocks{{
    {true, 0, first_configuration_count},
    {false, 0, first_one_off_configuration_count},
    {true, first_configuration_count, second_configuration_count},
    {false, first_one_off_configuration_count, second_one_off_configuration_count},
    {true, second_configuration_count, configuration_count},
    {false, second_one_off_configuration_count, one_off_configuration_count},
}};

const configuration* rows_of(bool matrix) noexcept {
    return matrix ? configurations().data() : one_off_configurations().data();
}

}  // namespace

std::size_t configuration_index(const configuration& config) noexcept {
    const bool matrix = in_matrix(config);
    const auto place = static_cast<std::size_t>(&config - rows_of(matrix));
    std::size_t before = 0;
    for (const row_block& b : row_blocks) {
        if (b.matrix == matrix && place >= b.first && place < b.end)
            return before + (place - b.first);
        before += b.end - b.first;
    }
    EDGELOCK_ASSERT(false);
    return 0;
}

const configuration& configuration_at(std::size_t index) noexcept {
    for (const row_block& b : row_blocks) {
        if (index < b.end - b.first) return rows_of(b.matrix)[b.first + index];
        index -= b.end - b.first;
    }
    EDGELOCK_ASSERT(false);
    return configurations()[0];
}

world_params scripted_params() noexcept { return world_params{}; }

void draw_user_knobs(world_params& p, prng& rng) noexcept {
    p.cancel_per_million =
        rng.chance(300'000) ? static_cast<std::uint32_t>(rng.between(50'000, 400'000)) : 0;
    const bool leaves = rng.chance(333'333);
    p.leave_per_million = leaves && p.cancel_per_million > 0
                              ? static_cast<std::uint32_t>(rng.between(200'000, 600'000))
                              : 0;
    const bool races = rng.chance(300'000);
    p.release_at_renewal_per_million =
        races ? static_cast<std::uint32_t>(rng.between(200'000, 1'000'000)) : 0;
}

void draw_client_knobs(world_params& p, prng& rng, bool cluster) noexcept {
    const bool mixed = rng.chance(500'000) || cluster;
    p.on_demand_clients = mixed ? static_cast<std::uint32_t>(rng.next()) : 0;
}

namespace {

// Each point's chance when it is on, per million: a point on a path every answer takes fires
// rarely (a run would be all reconnects), one on a path a run takes a few times often.
struct fault_point_range {
    std::int64_t low;
    std::int64_t high;
};
constexpr std::array<fault_point_range, session::fault_point_count> fault_point_ranges{{
    {2'000, 40'000},       // close_after_reply: every answer
    {20'000, 200'000},     // delay_wait: every claim's and renewal's WAIT
    {250'000, 1'000'000},  // late_node_start: every connection's node read
    {100'000, 500'000},    // fail_map_read: every slot map read
}};

}  // namespace

// A quarter of the runs have fault points, each on in half of those, so a run shows one
// point's path alone as often as with the others.
void draw_fault_points(world_params& p, prng& rng) noexcept {
    if (!rng.chance(250'000)) return;
    for (std::size_t i = 0; i < fault_point_ranges.size(); ++i) {
        if (!rng.chance(500'000)) continue;
        const fault_point_range r = fault_point_ranges[i];
        p.fault_point_per_million[i] = static_cast<std::uint32_t>(rng.between(r.low, r.high));
    }
}

void draw_stale_sentinels(world_params& p, prng& rng) noexcept {
    if (!rng.chance(250'000)) return;
    const std::int64_t drawn_before = p.sentinel_lag_ms_max;
    p.sentinel_lag_ms_max = rng.between(p.reconfigure_ms, 2 * p.reconfigure_ms);
    p.liveness_window_ms += p.sentinel_lag_ms_max - drawn_before;
}

namespace {

// The lock's knobs. Half the runs take each default (the mutants of a default must be
// reachable); the rest draw within what lock::configure() accepts and never below the
// drift the clock noise needs, so a violation is the lock's, not the deployment's.
void draw_lock_knobs(world_params& p, prng& rng) {
    p.ttl_ms = rng.between(300, 2000);
    // The default allowance is what tolerated_clock_ppm is measured against: the floor.
    p.drift_ms = -1;
    const std::int64_t drift_default = lock_drift_ms(p);
    p.drift_ms = rng.chance(500'000) ? -1 : rng.between(drift_default, p.ttl_ms / 10);
    const std::int64_t drift = lock_drift_ms(p);
    p.watchdog = rng.chance(850'000);
    p.renew_interval_ms =
        rng.chance(500'000) ? 0 : rng.between(p.ttl_ms / 10, p.ttl_ms - drift - 1);
    // Some attempts may take the whole lease: then only the validity check bounds them.
    const std::int64_t attempt_shape = rng.between(0, 3);
    p.attempt_timeout_ms = attempt_shape <= 1   ? 0
                           : attempt_shape == 2 ? rng.between(30, p.ttl_ms)
                                                : p.ttl_ms;
    p.acquire_wait_ms = rng.between(p.ttl_ms / 2, 3 * p.ttl_ms);
    p.retry_delay_ms_min = rng.between(5, 50);
    p.retry_delay_ms_max = p.retry_delay_ms_min + rng.between(0, 450);
}

// Jobs from far below a lease to several leases, so renewals and watchdog losses are common.
void draw_workload(world_params& p, prng& rng) {
    p.clients = static_cast<std::uint8_t>(rng.chance(100'000) ? 1 : rng.between(2, 4));
    p.think_ms_min = rng.between(5, 40);
    p.think_ms_max = p.think_ms_min + rng.between(10, 200);
    const std::int64_t shape = rng.between(0, 2);
    p.work_ms_min = shape == 0   ? rng.between(5, p.ttl_ms / 4)
                    : shape == 1 ? rng.between(p.ttl_ms / 2, p.ttl_ms)
                                 : rng.between(p.ttl_ms, 3 * p.ttl_ms);
    p.work_ms_max = p.work_ms_min + rng.between(0, p.ttl_ms / 2);
    p.job_timeout_ms = rng.between(200, 1000);
}

void draw_network(world_params& p, prng& rng) {
    p.io_timeout_ms = rng.between(50, 400);
    p.path_us_min = rng.between(100, 500);
    p.path_us_max = p.path_us_min + rng.between(0, 2000);
    p.tail_per_million = static_cast<std::uint32_t>(rng.between(0, 50'000));
    p.tail_ms_max = rng.between(1, 40);
    p.repl_us_min = rng.between(200, 2000);
    p.repl_us_max = p.repl_us_min + rng.between(0, 5000);
}

// Clocks within the tolerated noise; Sentinel's detection and failover from a quick local
// failover to one slower than the lease.
void draw_servers(world_params& p, prng& rng) {
    p.clock_ppm_max = static_cast<std::int32_t>(rng.between(0, tolerated_clock_ppm));
    p.down_after_ms = rng.between(p.ttl_ms / 20, 2 * p.ttl_ms);
    p.failover_ms = rng.between(0, p.ttl_ms);
    p.delayed_restart_ms = p.ttl_ms + p.ttl_ms / 2;
}

}  // namespace

lock_config params_lock(const world_params& p) noexcept {
    lock_config config;
    config.ttl_ms = p.ttl_ms;
    config.drift_ms = p.drift_ms;
    config.renew_interval_ms = p.renew_interval_ms;
    config.attempt_timeout_ms = p.attempt_timeout_ms;
    config.watchdog = p.watchdog;
    config.retry_delay_ms_min = p.retry_delay_ms_min;
    config.retry_delay_ms_max = p.retry_delay_ms_max;
    config.recheck_ms = p.recheck_ms;
    return config;
}

lock_config resolved_lock(const world_params& p) noexcept { return resolve(params_lock(p)); }

std::int64_t lock_drift_ms(const world_params& p) noexcept { return resolved_lock(p).drift_ms; }

std::int64_t lock_attempt_timeout_ms(const world_params& p) noexcept {
    return resolved_lock(p).attempt_timeout_ms;
}

std::int64_t lock_recheck_ms(const world_params& p) noexcept { return resolved_lock(p).recheck_ms; }

std::int64_t lock_queue_entry_ttl_ms(const world_params& p) noexcept {
    return resolved_lock(p).queue_entry_ttl_ms;
}

std::int64_t lock_restart_guard_ms(const world_params& p) noexcept {
    return resolved_lock(p).restart_guard_ms;
}

void draw_fair_knobs(world_params& p, prng& rng) noexcept {
    p.recheck_ms = rng.chance(500'000) ? 0 : rng.between(p.ttl_ms / 10 + 10, p.ttl_ms);
}

void draw_failover_knobs(world_params& p, prng& rng) noexcept {
    p.repoint_ms_min = rng.between(10, 100);
    p.repoint_ms_max = p.repoint_ms_min + rng.between(0, 300);
    // Sentinels publish their hello messages every 2 s (drawn here shorter too, as the other
    // Sentinel periods scale with down_after): the last one may hear of a failover that late.
    const std::int64_t hello_ms = rng.between(50, 2000);
    p.sentinel_lag_ms_max = rng.between(0, hello_ms);
    // Redis 7.0 reconfigures a returned old master once it has reported the master role for
    // four hello periods. The sentinels read it as a replica entry, by INFO every 10 s (five
    // hello periods): the first INFO, up to a period after it is back, sees the role, and
    // the first one past four hello periods later, one period on, sends the REPLICAOF. A
    // replica still following a replaced master waits for failover-timeout (180 s, 90 hello
    // periods, by default; often set lower).
    const std::int64_t drawn_before = p.reconfigure_ms;
    const std::int64_t replica_info_ms = 5 * hello_ms;
    p.reconfigure_ms = replica_info_ms + rng.between(0, replica_info_ms);
    p.failover_timeout_ms = rng.between(p.reconfigure_ms, 90 * hello_ms);
    p.liveness_window_ms += p.reconfigure_ms - drawn_before;
    // A replica re-pointed for WAIT to count; the leader names the new master at once, so a
    // client that asks the sentinels in turn needs no more.
    p.liveness_window_ms += 2 * p.repoint_ms_max;
    p.replica_serve_stale_data = !rng.chance(500'000);
    p.replica_read_only = !rng.chance(200'000);
}

void draw_cluster_election(world_params& p, prng& rng) noexcept {
    const std::int64_t drawn_before = p.failover_ms;
    p.failover_ms = rng.between(500, 1000);
    p.liveness_window_ms += std::max<std::int64_t>(0, p.failover_ms - drawn_before);
}

void draw_server_knobs(world_params& p, prng& rng) noexcept {
    p.loading_ms_max = rng.between(0, 500);
    p.liveness_window_ms += p.loading_ms_max;
    p.split_reply_per_million = static_cast<std::uint32_t>(rng.between(0, 300'000));
}

world_params random_params(prng& rng) noexcept {
    world_params p;
    draw_lock_knobs(p, rng);
    draw_workload(p, rng);
    draw_network(p, rng);
    draw_servers(p, rng);
    p.duration_ms = rng.between(2 * p.ttl_ms, 4 * p.ttl_ms) + p.work_ms_max;
    // Long enough for a forgotten key to expire, a job to end, a failover to finish and
    // the waiters' backoff to come round.
    p.liveness_window_ms = 2 * p.ttl_ms + p.work_ms_max + 2 * p.job_timeout_ms + p.down_after_ms +
                           p.failover_ms + p.retry_delay_ms_max + 500;
    // Drawn last, so the draws above keep their values. A third of the runs keep the lock's
    // NOSCRIPT fallback busy: with SCRIPT LOAD in every handshake it is otherwise never needed.
    p.script_load_allowed = !rng.chance(333'333);
    p.write_window = rng.chance(333'333) ? 1 : 0;
    p.info_period_ms = rng.between(std::max<std::int64_t>(1, p.down_after_ms / 10),
                                   std::max<std::int64_t>(1, p.down_after_ms));
    p.reconfigure_ms = rng.between(0, p.ttl_ms);
    p.liveness_window_ms += p.info_period_ms + p.reconfigure_ms;
    // A quarter of the runs meet servers before 7.0: every node or half of them.
    if (rng.chance(250'000)) {
        const bool every_node = rng.chance(500'000);
        p.old_server_per_million = every_node ? 1'000'000 : 500'000;
    }
    return p;
}

namespace {

// " delay_wait=84012/1e6" for each fault point on.
std::string fault_points_text(const world_params& p) {
    std::string out;
    for (std::uint8_t i = 0; i < session::fault_point_count; ++i) {
        const std::uint32_t chance = p.fault_point_per_million[i];
        if (chance == 0) continue;
        out += std::string(" ") + session::to_string(session::fault_point{i}) + '=' +
               std::to_string(chance) + "/1e6";
    }
    return out;
}

}  // namespace

std::string to_text(const world_params& p) {
    std::string out;
    const auto add = [&out](const char* name, std::int64_t value, const char* unit) {
        if (!out.empty()) out += ' ';
        out += name;
        out += '=';
        out += std::to_string(value);
        out += unit;
    };
    const auto add_range = [&](const char* name, std::int64_t low, std::int64_t high,
                               const char* unit) {
        add(name, low, "");
        out += ".." + std::to_string(high) + unit;
    };
    const auto add_default = [&](const char* name, std::int64_t value, bool is_default) {
        if (is_default) {
            out += std::string(" ") + name + "=default";
        } else {
            add(name, value, "ms");
        }
    };
    add("ttl", p.ttl_ms, "ms");
    add_default("drift", p.drift_ms, p.drift_ms < 0);
    add_default("renew", p.renew_interval_ms, p.renew_interval_ms <= 0);
    add_default("attempt", p.attempt_timeout_ms, p.attempt_timeout_ms <= 0);
    out += p.watchdog ? " watchdog=on" : " watchdog=off";
    add("clients", p.clients, "");
    add("wait", p.acquire_wait_ms, "ms");
    add_range("retry", p.retry_delay_ms_min, p.retry_delay_ms_max, "ms");
    add_range("think", p.think_ms_min, p.think_ms_max, "ms");
    add_range("work", p.work_ms_min, p.work_ms_max, "ms");
    add("job_timeout", p.job_timeout_ms, "ms");
    add("io_timeout", p.io_timeout_ms, "ms");
    add_range("path", p.path_us_min, p.path_us_max, "us");
    add("tail", p.tail_per_million, "/1e6");
    out += ".." + std::to_string(p.tail_ms_max) + "ms";  // a rate, then how far the tail reaches
    add_range("repl", p.repl_us_min, p.repl_us_max, "us");
    add("down_after", p.down_after_ms, "ms");
    add("failover", p.failover_ms, "ms");
    add("info_period", p.info_period_ms, "ms");
    add("reconfigure", p.reconfigure_ms, "ms");
    add("failover_timeout", p.failover_timeout_ms, "ms");
    add_range("repoint", p.repoint_ms_min, p.repoint_ms_max, "ms");
    add("sentinel_lag", p.sentinel_lag_ms_max, "ms");
    if (p.cluster_gossip_ms_max != world_params{}.cluster_gossip_ms_max)
        add("cluster_gossip", p.cluster_gossip_ms_max, "ms");
    out += p.replica_serve_stale_data ? " stale_data=served" : " stale_data=refused";
    if (!p.replica_read_only) out += " replica_read_only=no";
    add("loading", p.loading_ms_max, "ms");
    add("split_replies", p.split_reply_per_million, "/1e6");
    add("delayed_restart", p.delayed_restart_ms, "ms");
    add("duration", p.duration_ms, "ms");
    add("liveness_window", p.liveness_window_ms, "ms");
    add("clock_ppm", p.clock_ppm_max, "");
    add("wall_skew", p.wall_skew_us_max, "us");
    out += p.script_load_allowed ? " script_load=allowed" : " script_load=refused";
    out += p.write_window == 0 ? " writes=pipelined" : " writes=one_at_a_time";
    out += p.config_get_allowed ? " config_get=allowed" : " config_get=refused";
    add("node_uptime", p.node_uptime_ms, "ms");
    add("old_servers", p.old_server_per_million, "/1e6");
    if (p.recheck_ms > 0) add("recheck", p.recheck_ms, "ms");
    if (p.cancel_per_million > 0) add("cancels", p.cancel_per_million, "/1e6");
    if (p.leave_per_million > 0) add("closes_after_cancel", p.leave_per_million, "/1e6");
    if (p.release_at_renewal_per_million > 0)
        add("release_at_renewal", p.release_at_renewal_per_million, "/1e6");
    out += fault_points_text(p);
    if (p.on_demand_clients != 0) add("on_demand_mask", p.on_demand_clients & 0xffu, "");
    return out;
}

}  // namespace edgelock::sim
