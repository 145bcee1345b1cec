// SPDX-License-Identifier: Apache-2.0
#include "edgelock/sim/matrix.hpp"

#include <vector>

#include "edgelock/assert.hpp"
#include "edgelock/sim/parallel.hpp"

namespace edgelock::sim {
namespace {

constexpr std::uint64_t params_stream = 7;
constexpr std::uint64_t schedule_stream = 8;
constexpr std::uint64_t fair_stream = 9;
constexpr std::uint64_t failover_stream = 10;
constexpr std::uint64_t server_stream = 11;
constexpr std::uint64_t user_stream = 12;
constexpr std::uint64_t client_stream = 13;
constexpr std::uint64_t fault_point_stream = 14;
constexpr std::uint64_t stale_sentinel_stream = 15;
constexpr std::uint64_t cluster_election_stream = 16;

// Knobs added after the others, each from a stream of its own so the earlier draws keep their
// values: the servers' loading, the users' cancels, which client each process runs and
// Sentinel's (only for Sentinel and Cluster configurations).
void draw_layout_knobs(const configuration& config, std::uint64_t seed, world_params& p) {
    prng server_rng = prng::stream(seed, server_stream);
    draw_server_knobs(p, server_rng);
    prng user_rng = prng::stream(seed, user_stream);
    draw_user_knobs(p, user_rng);
    prng client_rng = prng::stream(seed, client_stream);
    draw_client_knobs(p, client_rng, config.layout == topology::cluster);
    if (config.layout != topology::sentinel && config.layout != topology::cluster) return;
    prng failover_rng = prng::stream(seed, failover_stream);
    draw_failover_knobs(p, failover_rng);
    if (config.layout != topology::cluster) return;
    prng election_rng = prng::stream(seed, cluster_election_stream);
    draw_cluster_election(p, election_rng);
}

// A semaphore's row runs one client more than it has permits, so that one of them waits and
// a holder too many shows (set before the schedule, which picks among the clients).
void fit_clients(const configuration& config, world_params& p) {
    if (config.permits <= 1) return;
    EDGELOCK_ASSERT(config.permits + 1u <= clients_max);
    p.clients = static_cast<std::uint8_t>(config.permits + 1u);
}

}  // namespace

run_spec make_spec(const run_request& request) {
    EDGELOCK_ASSERT(request.config != nullptr);
    run_spec spec;
    spec.config = request.config;
    spec.seed = request.seed;
    spec.clients = request.clients;
    switch (request.mode) {
        case run_mode::scripted:
            EDGELOCK_ASSERT(request.scenario != nullptr);
            spec.params = scripted_params(request.scenario->id);
            fit_clients(*request.config, spec.params);
            spec.faults = scripted_schedule(request.scenario->id, *request.config, spec.params);
            break;
        case run_mode::random: {
            EDGELOCK_ASSERT(request.scenario != nullptr);
            prng params_rng = prng::stream(request.seed, params_stream);
            prng schedule_rng = prng::stream(request.seed, schedule_stream);
            prng fair_rng = prng::stream(request.seed, fair_stream);
            spec.params = random_params(request.scenario->id, params_rng);
            if (request.config->fair) draw_fair_knobs(spec.params, fair_rng);
            draw_layout_knobs(*request.config, request.seed, spec.params);
            fit_clients(*request.config, spec.params);
            prng fault_point_rng = prng::stream(request.seed, fault_point_stream);
            draw_fault_points(spec.params, fault_point_rng);
            const scenario_id family = request.scenario->id;
            if (request.config->layout == topology::sentinel &&
                (family == scenario_id::s6 || family == scenario_id::s9)) {
                prng stale_rng = prng::stream(request.seed, stale_sentinel_stream);
                draw_stale_sentinels(spec.params, stale_rng);
            }
            spec.faults =
                random_schedule(request.scenario->id, *request.config, spec.params, schedule_rng);
            break;
        }
        case run_mode::schedule: {
            prng params_rng = prng::stream(request.seed, params_stream);
            spec.params = random_params(params_rng);
            if (request.config->fair) {
                prng fair_rng = prng::stream(request.seed, fair_stream);
                draw_fair_knobs(spec.params, fair_rng);
            }
            draw_layout_knobs(*request.config, request.seed, spec.params);
            fit_clients(*request.config, spec.params);
            spec.faults = request.faults;
            break;
        }
    }
    return spec;
}

std::string replay_command(const run_request& request) {
    std::string out = "edgelock-sim run";
    if (request.mode != run_mode::schedule && request.scenario != nullptr) {
        out += " --scenario ";
        out += request.scenario->code;
    }
    out += " --config ";
    out += request.config->name;
    out += " --seed " + std::to_string(request.seed);
    if (request.mode == run_mode::random) out += " --random";
    if (request.mode == run_mode::schedule) out += " --schedule '" + to_text(request.faults) + "'";
    if (request.clients != behaviour::correct) {
        out += " --behaviour ";
        out += to_string(request.clients);
    }
    return out;
}

std::string checks_text(const verdict& v, bool fair) {
    std::string out;
    for (std::size_t i = 0; i < (fair ? check_count : common_check_count); ++i) {
        if (i > 0) out += ' ';
        out += to_string(static_cast<check_kind>(i));
        out += v.checks[i].ok ? "=ok" : "=VIOLATED";
    }
    return out;
}

// A configuration index of 144 would share its cells' seeds with the next scenario's 80.
static_assert(configuration_count + one_off_configuration_count <= 16 + 64 + 64,
              "cell_seed numbers the cells of at most 144 configurations");
static_assert(scenario_count <= 16, "cell_seed numbers the cells of at most 16 scenarios");

std::uint64_t cell_seed(std::uint64_t seed, scenario_id scenario, std::size_t config_index,
                        std::size_t index) noexcept {
    // The matrix's cells keep the seeds they always had; a later configuration's cells get
    // numbers past every earlier cell's (the first 80 configurations' past the first 16's,
    // the next 64's past those), so no two cells share a seed.
    constexpr std::uint64_t matrix_cells_max = 16 * 16;
    constexpr std::uint64_t second_cells_max = matrix_cells_max + 16 * 64;
    const auto s = static_cast<std::uint64_t>(scenario);
    std::uint64_t cell = s * 16 + config_index;
    if (config_index >= 80) cell = second_cells_max + s * 64 + (config_index - 80);
    else if (config_index >= 16) cell = matrix_cells_max + s * 64 + config_index;
    return mix_seed(seed, cell * 1'000'003 + index + 1);
}

std::string cell_line(const matrix_cell& cell) {
    return std::string(cell.scenario->code) + " " + std::string(cell.config->name) +
           " runs=" + std::to_string(cell.runs) +
           " violating=" + std::to_string(cell.violating_runs) + " " +
           checks_text(cell.checks, cell.config->fair) + " seed=" + std::to_string(cell.seed) +
           " replay=\"" + cell.replay + "\"";
}

matrix_cell run_cell(const scenario_info& scenario, std::size_t config_index,
                     std::size_t random_runs, std::uint64_t seed) {
    matrix_cell cell;
    cell.scenario = &scenario;
    cell.config = &configuration_at(config_index);
    bool violated = false;
    for (std::size_t i = 0; i <= random_runs; ++i) {
        run_request request;
        request.scenario = &scenario;
        request.config = cell.config;
        request.mode = i == 0 ? run_mode::scripted : run_mode::random;
        request.seed = i == 0 ? seed : cell_seed(seed, scenario.id, config_index, i - 1);
        const run_result r = run(make_spec(request));
        cell.add(run_tally{1, r.events, r.simulated_us, r.anomalies});
        for (std::size_t k = 0; k < check_count; ++k) {
            if (!r.checks.checks[k].ok && cell.checks.checks[k].ok)
                cell.checks.checks[k] = r.checks.checks[k];
        }
        if (!r.checks.all_ok()) ++cell.violating_runs;
        if (i == 0 || (!violated && !r.checks.all_ok())) {
            cell.seed = request.seed;
            cell.replay = replay_command(request);
        }
        violated = violated || !r.checks.all_ok();
    }
    return cell;
}

run_tally run_matrix(const matrix_options& options,
                     const std::function<void(const matrix_cell&)>& on_cell) {
    struct cell_ref {
        const scenario_info* scenario;
        std::size_t config_index;
    };
    std::vector<cell_ref> cells;
    for (const scenario_info& scenario : scenarios()) {
        if (options.scenario != nullptr && options.scenario != &scenario) continue;
        // A one-off configuration is in no matrix row: only asked for by name.
        if (options.config != nullptr && !in_matrix(*options.config)) {
            cells.push_back(cell_ref{&scenario, configuration_index(*options.config)});
            continue;
        }
        for (std::size_t c = 0; c < configurations().size(); ++c) {
            if (options.config != nullptr && options.config != &configurations()[c]) continue;
            cells.push_back(cell_ref{&scenario, configuration_index(configurations()[c])});
        }
    }
    run_tally totals;
    run_in_order<matrix_cell>(
        cells.size(), options.jobs,
        [&](std::size_t i) {
            return run_cell(*cells[i].scenario, cells[i].config_index, options.random_runs,
                            options.seed);
        },
        [&](std::size_t, matrix_cell&& cell) {
            totals.add(cell);
            on_cell(cell);
            return true;
        });
    return totals;
}

}  // namespace edgelock::sim
