// SPDX-License-Identifier: Apache-2.0
// The lock's defaults, in one place (lock.hpp, lock_config and resolve()).
#include <algorithm>
#include <limits>

#include "edgelock/lock.hpp"

namespace edgelock {
namespace {

constexpr std::int64_t retry_delay_ms_min_default = 50;
constexpr std::int64_t retry_delay_ms_max_default = 1000;
constexpr std::int64_t recheck_ms_default = 1000;

// Defaults built from values the caller gave may overflow when those are out of range (which
// configure() then refuses): saturated, so resolve() is defined for any input.
std::int64_t saturating_add(std::int64_t a, std::int64_t b) noexcept {
    constexpr std::int64_t high = std::numeric_limits<std::int64_t>::max();
    constexpr std::int64_t low = std::numeric_limits<std::int64_t>::min();
    if (b > 0 && a > high - b) return high;
    if (b < 0 && a < low - b) return low;
    return a + b;
}

}  // namespace

lock_config resolve(const lock_config& config) noexcept {
    lock_config out = config;
    const std::int64_t ttl = config.ttl_ms;
    if (out.drift_ms < 0) out.drift_ms = ttl / 100 + 2;
    if (out.renew_interval_ms <= 0) out.renew_interval_ms = ttl / 3;
    if (out.attempt_timeout_ms <= 0) out.attempt_timeout_ms = std::max<std::int64_t>(ttl / 10, 1);
    if (out.retry_delay_ms_min <= 0) out.retry_delay_ms_min = retry_delay_ms_min_default;
    if (out.retry_delay_ms_max <= 0) {
        out.retry_delay_ms_max = std::max(out.retry_delay_ms_min, retry_delay_ms_max_default);
    }
    // Half the attempt leaves WAIT's answer time to come back within it.
    if (out.replica_wait_ms <= 0) out.replica_wait_ms = out.attempt_timeout_ms / 2;
    if (out.restart_guard_ms < 0) out.restart_guard_ms = saturating_add(ttl, out.drift_ms);
    if (out.recheck_ms <= 0) out.recheck_ms = recheck_ms_default;
    if (out.queue_entry_ttl_ms <= 0) {
        const std::int64_t gap = saturating_add(out.recheck_ms, out.attempt_timeout_ms);
        out.queue_entry_ttl_ms = saturating_add(gap, gap);
    }
    return out;
}

}  // namespace edgelock
