// SPDX-License-Identifier: Apache-2.0
// edgelock sim: runs as the CLI names them, and the safety matrix.
//
// A run_request is what a replay command says: a scenario and configuration with a seed
// (scripted, or --random for the scenario's random family), or a configuration with an
// explicit --schedule (what explore prints after shrinking). make_spec() turns it into the
// world's run_spec; replay_command() turns it back into the one line that reproduces it.
//
// The matrix runs every scenario on every configuration, the scripted run plus N random
// schedules per cell, and reports per cell whether each check held in all of them. It is
// the simulator's output: nothing in it is typed in by hand.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>

#include "edgelock/sim/checker.hpp"
#include "edgelock/sim/configuration.hpp"
#include "edgelock/sim/scenarios.hpp"
#include "edgelock/sim/world.hpp"

namespace edgelock::sim {

enum class run_mode : std::uint8_t { scripted, random, schedule };

struct run_request {
    const scenario_info* scenario = nullptr;  // scripted and random
    const configuration* config = nullptr;
    std::uint64_t seed = 0;
    run_mode mode = run_mode::scripted;
    schedule faults;  // mode schedule
    behaviour clients = behaviour::correct;
};

run_spec make_spec(const run_request& request);
std::string replay_command(const run_request& request);
// "overlap=ok stale=VIOLATED order=ok liveness=ok"
// (and "wakeup=... fifo=..." with `fair`: the checks only fair configurations are judged by)
std::string checks_text(const verdict& v, bool fair = true);

// The seed of random run `index` (from 0) of a matrix cell.
std::uint64_t cell_seed(std::uint64_t seed, scenario_id scenario, std::size_t config_index,
                        std::size_t index) noexcept;

// What runs add up to: a cell's, and the whole matrix's.
struct run_tally {
    std::size_t runs = 0;
    std::uint64_t events = 0;
    std::int64_t simulated_us = 0;
    std::uint32_t anomalies = 0;

    void add(const run_tally& more) noexcept {
        runs += more.runs;
        events += more.events;
        simulated_us += more.simulated_us;
        anomalies += more.anomalies;
    }
};

struct matrix_cell : run_tally {
    const scenario_info* scenario = nullptr;
    const configuration* config = nullptr;
    std::size_t violating_runs = 0;  // runs that violated at least one check
    verdict checks;                  // a check is VIOLATED if any run violated it
    std::uint64_t seed = 0;          // the first violating run's seed, else the scripted one
    std::string replay;              // the command replaying that run
};

// "S1 single runs=51 violating=12 overlap=VIOLATED ... oracle=ok seed=7 replay=\"...\""
std::string cell_line(const matrix_cell& cell);

struct matrix_options {
    std::size_t random_runs = 50;
    std::uint64_t seed = 1;
    unsigned jobs = 1;                        // cells computed in parallel
    const scenario_info* scenario = nullptr;  // only this scenario's row, if set
    const configuration* config = nullptr;    // only this configuration's column, if set
};

// Every scenario on every configuration (or the ones selected), the scripted run and
// random_runs random ones; on_cell is called on the calling thread for each cell, in
// matrix order, whatever `jobs` is.
run_tally run_matrix(const matrix_options& options,
                     const std::function<void(const matrix_cell&)>& on_cell);

// One cell of the matrix (used by run_matrix, and by tests that check single cells).
matrix_cell run_cell(const scenario_info& scenario, std::size_t config_index,
                     std::size_t random_runs, std::uint64_t seed);

}  // namespace edgelock::sim
