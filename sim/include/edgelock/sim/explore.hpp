// edgelock sim: random exploration and shrinking.
#pragma once

#include <cstdint>

#include "edgelock/sim/matrix.hpp"

namespace edgelock::sim {

struct explore_result {
    bool found = false;
    std::size_t runs = 0;
    run_request original;
    verdict original_checks;
    run_request shrunk;
    verdict shrunk_checks;
    std::size_t shrink_steps = 0;
};

explore_result explore(const configuration& config, std::size_t runs, std::uint64_t seed);

}  // namespace edgelock::sim
