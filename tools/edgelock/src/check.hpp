// SPDX-License-Identifier: Apache-2.0
// edgelock CLI: `edgelock check`, a deployment linter.
//
// For the configured --redis instances (or the master the sentinels name) it reads, per node,
// role, version, uptime, persistence (AOF and its fsync policy, RDB snapshots), eviction
// policy, replicas and their lag, and the clock against this host's (TIME, with the round
// trip as error bar). It picks the simulator's matrix row for the deployment and the client's
// settings (--fencing, --restart-guard, --wait-replicas), runs edgelock-sim on that row, and
// prints which fault scenarios the deployment survives, which it does not, and what to
// change. S10 (eviction) applies only where a node may evict keys: without such a node it is
// listed as not exposed. --json prints the same as one JSON object.
//
// On Redis Cluster (--cluster) it reads CLUSTER SLOTS from a seed, reports every master with
// its slot ranges and replicas, reads every master and replica, counts the slots a master
// that answers serves, and names the row cluster[+WAIT][+fencing][+guard], saying so in place
// of a verdict while edgelock-sim has no such configuration (its --help lists them).
#pragma once

#include "options.hpp"

namespace edgelock::cli {

// Returns exit_ok when the deployment is exposed to nothing beyond the row's other limits,
// exit_deployment_worse when a node may evict keys (S10, which no configuration survives),
// exit_unavailable / exit_redis_refused when a node cannot be read, exit_unavailable when a
// cluster has slots no master that answers serves, exit_not_found
// when edgelock-sim is missing.
int check_deployment(const options& o);

}  // namespace edgelock::cli
