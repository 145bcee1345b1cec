// edgelock sim: the soak, many swarm runs over every configuration.
//
// Run i takes configuration i mod 7 and scenario family (i / 7) mod 8, draws every world
// knob and its fault schedule from its own seed (the matrix's random runs, many more of
// them), and is judged by every check. The soak counts, per configuration and check, the
// runs that violated it, and flags each violation in a cell (scenario, configuration) whose
// check the matrix, run first with the same seed, reported as held: those are what the
// matrix's sample missed. Every flagged cell carries the replay line of its first run.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "edgelock/sim/matrix.hpp"

namespace edgelock::sim {

struct soak_options {
    std::size_t runs = 1000;
    std::uint64_t seed = 1;
    unsigned jobs = 1;
    std::size_t matrix_runs = 50;  // random runs per matrix cell that decide "claimed ok"
};

struct soak_surprise {
    const scenario_info* scenario = nullptr;
    const configuration* config = nullptr;
    check_kind check = check_kind::overlap;
    std::size_t runs = 0;  // violating runs in this cell for this check
    std::string replay;    // the first one
};

struct soak_result {
    std::size_t runs = 0;
    std::uint64_t events = 0;
    std::uint32_t anomalies = 0;
    // violations[config][check]: runs on that configuration that violated that check.
    std::array<std::array<std::size_t, check_count>, 7> violations{};
    std::vector<soak_surprise> surprises;  // in matrix order
};

// The request of soak run `index` (from 0).
run_request soak_run(std::uint64_t seed, std::size_t index);

soak_result run_soak(const soak_options& options);

}  // namespace edgelock::sim
