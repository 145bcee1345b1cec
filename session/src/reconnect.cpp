// SPDX-License-Identifier: Apache-2.0
#include "edgelock/session/reconnect.hpp"

#include "edgelock/assert.hpp"
#include "edgelock/limits.hpp"

namespace edgelock::session {
namespace {

bool within(std::int64_t value, std::int64_t low, std::int64_t high) noexcept {
    return value >= low && value <= high;
}

}  // namespace

errc check_timing(const timing& t) noexcept {
    if (!within(t.connect_timeout_ms, timeout_ms_min, timeout_ms_max)) return errc::invalid_config;
    if (!within(t.command_timeout_ms, timeout_ms_min, timeout_ms_max)) return errc::invalid_config;
    if (!within(t.reconnect_delay_min_ms, 1, reconnect_delay_ms_limit)) return errc::invalid_config;
    if (!within(t.reconnect_delay_max_ms, t.reconnect_delay_min_ms, reconnect_delay_ms_limit)) {
        return errc::invalid_config;
    }
    return errc::ok;
}

void reconnect_backoff::failed(std::int64_t now_ms, const timing& t) noexcept {
    EDGELOCK_ASSERT(check_timing(t) == errc::ok);
    if (failures_ < 64) ++failures_;
    not_before_ms_ =
        now_ms + jitter_.delay_ms(failures_, t.reconnect_delay_min_ms, t.reconnect_delay_max_ms);
}

void reconnect_backoff::reset() noexcept {
    failures_ = 0;
    not_before_ms_ = -now_ms_limit;
}

}  // namespace edgelock::session
