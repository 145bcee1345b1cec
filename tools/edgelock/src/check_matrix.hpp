// SPDX-License-Identifier: Apache-2.0
// edgelock CLI, `edgelock check` (check.hpp): the simulator's row for a deployment and the
// client's settings, and its verdicts, as `edgelock-sim matrix` prints them.
#pragma once

#include <string>
#include <vector>

#include "check_probe.hpp"
#include "options.hpp"
#include "simulated_row.hpp"

namespace edgelock::cli {

// The simulator's sample behind the verdicts: the README's grid's (50 random runs per cell),
// so a row run only when named is judged as the matrix's rows are. With 20, S1 on
// single+WAIT+fair read as survived, and `edgelock-sim soak --one-off` broke that claim.
constexpr const char* matrix_runs = "50";

// One scenario's verdict on the row.
struct verdict {
    std::string scenario;  // S1..S10
    std::string failed;    // "" when every run kept every check, else O, S, F, L, H, K letters
};

// The simulator's configuration of this deployment and these client settings: its name
// ("redlock-3+fencing+guard"), and where the deployment differs from what it simulates.
struct row_choice {
    std::string name;
    std::vector<std::string> differences;
};

// Where the deployment read (`nodes`) is not what the row models (Sentinel's replica count, a
// master's replicas under WAIT without Sentinel, a WAIT count beyond the row's one), so a
// reader weighs the verdict knowing it.
std::vector<std::string> row_differences(const options& o, const std::vector<node_report>& nodes);
// Runs edgelock-sim on `row`: 0 with `out` filled, else the simulator's exit status (2: it
// does not know the row) or -1, with `why` set.
int run_row(const std::string& row, std::vector<verdict>& out, std::string& why);
// Simulates the deployment's own row; an edgelock-sim that does not know it (exit 2, a usage
// error) gets the nearest matrix row, and `row` says how that one differs.
bool simulate(const options& o, row_choice& row, std::vector<verdict>& out, std::string& why);
// Whether `edgelock-sim --help` (`help`) lists the configuration `row`.
bool names_configuration(const std::string& help, const std::string& row);

}  // namespace edgelock::cli
