// SPDX-License-Identifier: Apache-2.0
// edgelock CLI: finding and running edgelock-sim, the simulator (`edgelock sim`, `edgelock check`).
#pragma once

#include <string>
#include <vector>

namespace edgelock::cli {

inline constexpr const char* simulator_name = "edgelock-sim";

// The simulator named by EDGELOCK_SIM when it is set and not empty (a path), else
// edgelock-sim next to this binary (as installed, and as the build tree links it), else on
// PATH. "" when there is none, with `why` set to the one-line reason (EDGELOCK_SIM names a
// file that cannot be run, or none was found).
std::string find_simulator(std::string& why);

// Runs the simulator at `path` with `args` and collects its standard output. Returns its exit
// status, or -1 when it could not be started or did not exit normally.
int capture_simulator(const std::string& path, const std::vector<std::string>& args,
                      std::string& output);

}  // namespace edgelock::cli
