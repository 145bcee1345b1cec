// edgelock sim: random exploration of one configuration, and shrinking of what it finds.
//
// explore() runs random schedules (any mix of the scenario families, world parameters drawn
// from each run's seed) until a check is violated. The failing schedule is then shrunk,
// deterministically and greedily: drop faults one at a time, then simplify each remaining
// fault (durations and amounts toward zero, triggers toward the first occurrence with no
// offset, fewer peers, fewer lost replies, no reset), keeping a change only while the same
// check is still violated with the same seed. The result is a small schedule whose replay
// command (`edgelock-sim run --config C --seed S --schedule '...'`) shows the violation.
#pragma once

#include <cstdint>

#include "edgelock/sim/matrix.hpp"

namespace edgelock::sim {

// Runs a shrink may spend before it settles for what it has.
inline constexpr std::size_t shrink_runs_max = 2000;

struct explore_result {
    bool found = false;
    std::size_t runs = 0;           // random schedules tried (the last one failed, if found)
    run_request original;
    verdict original_checks;
    run_request shrunk;
    verdict shrunk_checks;
    check_kind target = check_kind::overlap;  // the check the shrink keeps violated
    std::size_t shrink_steps = 0;   // simplifications kept
    std::size_t shrink_runs = 0;    // runs spent shrinking
};

explore_result explore(const configuration& config, std::size_t runs, std::uint64_t seed);

// Shrinks `failing` (a schedule run that violates `target`) as explore() does.
explore_result shrink(const run_request& failing, check_kind target);

}  // namespace edgelock::sim
