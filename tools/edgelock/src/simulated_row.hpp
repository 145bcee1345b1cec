// SPDX-License-Identifier: Apache-2.0
// edgelock CLI: the simulator's configuration of a deployment and the client's settings, by
// name ("redlock-3+WAIT+fencing+guard"), as edgelock-sim names its configurations
// (sim/include/edgelock/sim/configuration.hpp). Every lock the parser accepts has one
// (tests/cli/cli_rows_test.cpp enumerates them against the simulator's table).
#pragma once

#include <string>

#include "options.hpp"

namespace edgelock::cli {

// The topology (single, redlock-N, sentinel, cluster), then +WAIT, +fencing, +guard and
// +fair as run_lock_config configures the lock: WAIT with --wait-replicas 1 or more (the row
// waits for one), fencing unless check's --fencing off, fair unless --unfair with one
// instance (Redlock waits unfairly), and +permits-3 for a semaphore of any N above 1.
std::string simulated_row(const options& o);

}  // namespace edgelock::cli
