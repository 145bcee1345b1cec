// SPDX-License-Identifier: Apache-2.0
#include "edgelock/sim/parallel.hpp"

namespace edgelock::sim {

unsigned default_jobs() noexcept {
    const unsigned cpus = std::thread::hardware_concurrency();
    return cpus > 0 ? cpus : 1;
}

}  // namespace edgelock::sim
