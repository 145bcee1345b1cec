// SPDX-License-Identifier: Apache-2.0
#include "edgelock/backoff.hpp"

#include "edgelock/assert.hpp"

namespace edgelock {

void full_jitter_backoff::seed(std::uint64_t bits) noexcept {
    bits += 0x9e3779b97f4a7c15ULL;
    bits = (bits ^ (bits >> 30)) * 0xbf58476d1ce4e5b9ULL;
    bits = (bits ^ (bits >> 27)) * 0x94d049bb133111ebULL;
    state_ = (bits ^ (bits >> 31)) | 1;
}

std::int64_t full_jitter_backoff::delay_ms(std::uint32_t failures, std::int64_t min_ms,
                                           std::int64_t max_ms) noexcept {
    EDGELOCK_ASSERT(min_ms >= 1);
    EDGELOCK_ASSERT(min_ms <= max_ms);
    const std::uint32_t doublings = failures > 31 ? 30 : (failures > 0 ? failures - 1 : 0);
    const std::int64_t grown = min_ms << doublings;
    const std::int64_t cap = grown < max_ms ? grown : max_ms;
    state_ ^= state_ >> 12;
    state_ ^= state_ << 25;
    state_ ^= state_ >> 27;
    const std::uint64_t draw = state_ * 0x2545f4914f6cdd1dULL;
    return 1 + static_cast<std::int64_t>(draw % static_cast<std::uint64_t>(cap));
}

}  // namespace edgelock
