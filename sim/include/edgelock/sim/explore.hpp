// SPDX-License-Identifier: Apache-2.0
// edgelock sim: random exploration of one configuration, and shrinking of what it finds.
//
// explore() runs random schedules (any mix of the scenario families, or one family, world
// parameters drawn from each run's seed), counts the runs that violate the target check (or
// any check), and shrinks the first of them (lowest run index, whatever --jobs). Shrinking is
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

struct explore_options {
    const configuration* config = nullptr;
    std::size_t runs = 100;
    std::uint64_t seed = 1;
    unsigned jobs = 1;
    bool any_check = true;  // else only `check` counts as a violation
    check_kind check = check_kind::overlap;
    const scenario_info* family = nullptr;  // draw faults of this scenario only, if set
};

struct explore_result {
    bool found = false;
    std::size_t runs = 0;            // random schedules tried
    std::size_t violating_runs = 0;  // of them, the ones violating the target
    std::size_t first_run = 0;       // index (from 1) of the first violating run
    run_request original;
    verdict original_checks;
    run_request shrunk;
    verdict shrunk_checks;
    check_kind target = check_kind::overlap;  // the check the shrink keeps violated
    std::size_t shrink_steps = 0;             // simplifications kept
    std::size_t shrink_runs = 0;              // runs spent shrinking
};

explore_result explore(const explore_options& options);

// Shrinks `failing` (a schedule run that violates `target`) as explore() does.
explore_result shrink(const run_request& failing, check_kind target);

}  // namespace edgelock::sim
