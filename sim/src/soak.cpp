// SPDX-License-Identifier: Apache-2.0
#include "edgelock/sim/soak.hpp"

#include <algorithm>

#include "edgelock/assert.hpp"
#include "edgelock/sim/parallel.hpp"

namespace edgelock::sim {
namespace {

constexpr std::uint64_t soak_salt = 0x50a4;

struct soak_run_result {
    std::size_t config_index = 0;
    std::size_t scenario_index = 0;
    verdict checks;
    std::uint64_t events = 0;
    std::uint32_t anomalies = 0;
};

constexpr std::uint64_t one_off_salt = 0x0ff5;

void note_matrix_cell(const soak_options& options, const matrix_cell& c, soak_result& result) {
    const std::size_t rows = soak_row_count(options.rows);
    std::size_t row = 0;
    while (row < rows && &soak_row(options.rows, row) != c.config) ++row;
    EDGELOCK_ASSERT(row < rows);
    const auto scenario = static_cast<std::size_t>(c.scenario - scenarios().data());
    soak_cell& cell = result.cells[scenario][row];
    cell.matrix = c.checks;
    cell.matrix_scripted_only = c.runs == 1;
    cell.runs += c.runs;
    cell.violating_runs += c.violating_runs;
}

// The matrix's rows: the whole matrix first, the README's grid.
void run_matrix_first(const soak_options& options, soak_result& result) {
    matrix_options m;
    m.random_runs = options.matrix_runs;
    m.seed = options.seed;
    m.jobs = options.jobs;
    run_matrix(m, [&](const matrix_cell& c) { note_matrix_cell(options, c, result); });
}

// The rows run only when named: the whole matrix of each cell where a soak run violated a
// check, the only cells where a surprise can be, and of every other cell its scripted run
// (the matrix's first), so that every cell runs at least once. The 50-run matrix of all 616
// cells is 31,416 runs, against the 2,000 of the test command's soak.
void run_one_off_matrices(const soak_options& options, soak_result& result) {
    const std::size_t rows = soak_row_count(options.rows);
    run_in_order<matrix_cell>(
        scenario_count * rows, options.jobs,
        [&](std::size_t i) {
            const std::size_t s = i / rows;
            const auto& counts = result.cells[s][i % rows].soak_violations;
            const bool violated =
                std::any_of(counts.begin(), counts.end(), [](std::size_t n) { return n != 0; });
            return run_cell(scenarios()[s], configuration_index(soak_row(options.rows, i % rows)),
                            violated ? options.matrix_runs : 0, options.seed);
        },
        [&](std::size_t, matrix_cell&& c) {
            note_matrix_cell(options, c, result);
            return true;
        });
}

void count_run(const soak_options& options, std::size_t index, const soak_run_result& r,
               soak_result& result) {
    ++result.runs;
    result.events += r.events;
    result.anomalies += r.anomalies;
    soak_cell& cell = result.cells[r.scenario_index][r.config_index];
    ++cell.runs;
    if (!r.checks.all_ok()) ++cell.violating_runs;
    for (std::size_t k = 0; k < check_count; ++k) {
        if (r.checks.checks[k].ok) continue;
        ++result.violations[r.config_index][k];
        if (cell.soak_violations[k]++ == 0)
            cell.first_replay[k] = replay_command(soak_run(options.seed, index, options.rows));
    }
}

void find_surprises(soak_result& result) {
    for (std::size_t s = 0; s < scenario_count; ++s) {
        for (std::size_t c = 0; c < soak_row_count(result.rows); ++c) {
            const soak_cell& cell = result.cells[s][c];
            for (std::size_t k = 0; k < check_count; ++k) {
                if (cell.soak_violations[k] == 0 || !cell.matrix.checks[k].ok) continue;
                soak_surprise surprise;
                surprise.scenario = &scenarios()[s];
                surprise.config = &soak_row(result.rows, c);
                surprise.check = static_cast<check_kind>(k);
                surprise.cell_claimed_safe = cell.matrix.all_ok();
                surprise.runs = cell.soak_violations[k];
                surprise.replay = cell.first_replay[k];
                result.surprises.push_back(surprise);
            }
        }
    }
}

}  // namespace

bool soak_result::claims_broken() const noexcept {
    for (const soak_surprise& s : surprises) {
        if (s.cell_claimed_safe) return true;
    }
    return false;
}

std::size_t soak_row_count(soak_rows rows) noexcept {
    return rows == soak_rows::matrix ? configuration_count : one_off_configuration_count;
}

const configuration& soak_row(soak_rows rows, std::size_t index) noexcept {
    return rows == soak_rows::matrix ? configurations()[index] : one_off_configurations()[index];
}

run_request soak_run(std::uint64_t seed, std::size_t index, soak_rows rows) {
    const std::size_t count = soak_row_count(rows);
    run_request request;
    request.config = &soak_row(rows, index % count);
    request.scenario = &scenarios()[(index / count) % scenario_count];
    request.mode = run_mode::random;
    const std::uint64_t salt = rows == soak_rows::matrix ? soak_salt : soak_salt ^ one_off_salt;
    request.seed = mix_seed(seed ^ salt, index + 1);
    return request;
}

soak_result run_soak(const soak_options& options) {
    const std::size_t count = soak_row_count(options.rows);
    soak_result result;
    result.rows = options.rows;
    result.violations.assign(count, {});
    for (std::vector<soak_cell>& row : result.cells) row.resize(count);
    if (options.rows == soak_rows::matrix) run_matrix_first(options, result);
    run_in_order<soak_run_result>(
        options.runs, options.jobs,
        [&](std::size_t i) {
            const run_result r = run(make_spec(soak_run(options.seed, i, options.rows)));
            return soak_run_result{i % count, (i / count) % scenario_count, r.checks, r.events,
                                   r.anomalies};
        },
        [&](std::size_t i, soak_run_result&& r) {
            count_run(options, i, r, result);
            return true;
        });
    if (options.rows == soak_rows::one_off) run_one_off_matrices(options, result);
    find_surprises(result);
    return result;
}

std::string soak_cell_line(const soak_result& result, std::size_t scenario, std::size_t config) {
    const soak_cell& cell = result.cells[scenario][config];
    std::string line = std::string(scenarios()[scenario].code) + " " +
                       std::string(soak_row(result.rows, config).name) +
                       " runs=" + std::to_string(cell.runs) +
                       " violating=" + std::to_string(cell.violating_runs);
    for (std::size_t k = 0; k < check_count; ++k) {
        const bool ok = cell.matrix.checks[k].ok && cell.soak_violations[k] == 0;
        line +=
            std::string(" ") + to_string(static_cast<check_kind>(k)) + (ok ? "=ok" : "=VIOLATED");
    }
    if (cell.matrix_scripted_only) line += " matrix=scripted-run";
    return line;
}

}  // namespace edgelock::sim
