// SPDX-License-Identifier: Apache-2.0
#include "simulated_row.hpp"

namespace edgelock::cli {

std::string simulated_row(const options& o) {
    const lock_config lock = run_lock_config(o);
    std::string row;
    if (!o.cluster_urls.empty()) {
        row = "cluster";
    } else if (!o.sentinel_urls.empty()) {
        row = "sentinel";
    } else if (o.redis_urls.size() == 1) {
        row = "single";
    } else {
        row = "redlock-" + std::to_string(o.redis_urls.size());
    }
    if (lock.replicas_to_wait > 0) row += "+WAIT";
    if (o.fencing) row += "+fencing";  // run always fences; check asks --fencing
    if (lock.restart_guard_ms != 0) row += "+guard";
    if (lock.fair) row += "+fair";
    // The simulator's semaphores have 3 permits (N + 1 clients, one of them waiting): what
    // its rows find for N = 3 is what edgelock claims of every N above 1.
    if (lock.permits > 1) row += "+permits-3";
    return row;
}

}  // namespace edgelock::cli
