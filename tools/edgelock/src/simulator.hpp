// SPDX-License-Identifier: Apache-2.0
// edgelock CLI: finding and running edgelock-sim, the simulator (`edgelock sim`, `edgelock check`).
#pragma once

#include <string>
#include <vector>

namespace edgelock::cli {

inline constexpr const char* simulator_name = "edgelock-sim";

// The simulator named by EDGELOCK_SIM when it is set and not empty (a path, used as given:
// one that cannot run fails where it is started), else edgelock-sim next to this binary (as
// installed, and as the build tree links it), else on PATH; "" when there is none.
std::string find_simulator();

// Runs the simulator at `path` with `args` and collects its standard output. Returns its exit
// status, or -1 when it could not be started or did not exit normally.
int capture_simulator(const std::string& path, const std::vector<std::string>& args,
                      std::string& output);

}  // namespace edgelock::cli
