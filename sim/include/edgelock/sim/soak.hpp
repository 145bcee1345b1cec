// SPDX-License-Identifier: Apache-2.0
// edgelock sim: the soak, many swarm runs over every configuration.
//
// Run i takes configuration i mod R (R rows) and scenario family (i / R) mod 11, draws every world
// knob and its fault schedule from its own seed (the matrix's random runs, many more of
// them), and is judged by every check. The matrix runs first with the same seed; the soak
// then reports, per configuration and check, the runs that violated it, and per cell
// (scenario, configuration) what the matrix and the soak saw together. A violation of a
// check the matrix saw hold is flagged: UNEXPECTED when the matrix called the whole cell
// ok (a safety claim the soak broke), MISSED when the cell was already known unsafe (the
// matrix's sample was too small to see every way it fails). The configurations run only when
// named are soaked apart (soak_rows::one_off), each judged against its own matrix, which is
// run after the soak, whole only for the cells where a soak run violated a check (the
// others run its scripted run).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "edgelock/sim/matrix.hpp"

namespace edgelock::sim {

// The configurations a soak draws: the matrix's rows (the README's grid), or the ones run
// only when named (configuration.hpp), whose claims are what `edgelock check` prints for them
// (`matrix --config NAME --runs 50 --seed 1`).
enum class soak_rows : std::uint8_t { matrix, one_off };

struct soak_options {
    std::size_t runs = 1000;
    std::uint64_t seed = 1;
    unsigned jobs = 1;
    std::size_t matrix_runs = 50;  // random runs per matrix cell (of the matrix it is judged by)
    soak_rows rows = soak_rows::matrix;
};

// How many configurations `rows` holds, and the one at `index` (in its table's order).
std::size_t soak_row_count(soak_rows rows) noexcept;
const configuration& soak_row(soak_rows rows, std::size_t index) noexcept;

struct soak_cell {
    std::size_t runs = 0;  // matrix and soak runs of this cell
    std::size_t violating_runs = 0;
    verdict matrix;  // the matrix's verdict alone
    // One-off rows: a cell where no soak run violated a check runs only the matrix's scripted
    // run.
    bool matrix_scripted_only = false;
    std::array<std::size_t, check_count> soak_violations{};
    std::array<std::string, check_count> first_replay{};  // of the soak's first violation
};

struct soak_surprise {
    const scenario_info* scenario = nullptr;
    const configuration* config = nullptr;
    check_kind check = check_kind::overlap;
    bool cell_claimed_safe = false;  // the matrix saw every check hold in this cell
    std::size_t runs = 0;            // soak runs of this cell violating this check
    std::string replay;              // the first of them
};

struct soak_result {
    soak_rows rows = soak_rows::matrix;
    std::size_t runs = 0;
    std::uint64_t events = 0;
    std::uint32_t anomalies = 0;
    // violations[config][check]: soak runs on that configuration (its place among `rows`)
    // that violated that check.
    std::vector<std::array<std::size_t, check_count>> violations;
    std::array<std::vector<soak_cell>, scenario_count> cells{};  // [scenario][config]
    std::vector<soak_surprise> surprises;                        // in matrix order
    bool claims_broken() const noexcept;  // some surprise is in a cell claimed safe
};

run_request soak_run(std::uint64_t seed, std::size_t index, soak_rows rows = soak_rows::matrix);

soak_result run_soak(const soak_options& options);

// "S1 single runs=1837 violating=52 overlap=VIOLATED ... oracle=ok": the cell as the matrix
// and the soak saw it together, in the matrix's line format; " matrix=scripted-run" at the
// end when the matrix ran only its scripted run (a one-off cell where no soak run violated a
// check).
std::string soak_cell_line(const soak_result& result, std::size_t scenario, std::size_t config);

}  // namespace edgelock::sim
