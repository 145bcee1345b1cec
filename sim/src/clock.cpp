// SPDX-License-Identifier: Apache-2.0
#include "edgelock/sim/clock.hpp"

#include <algorithm>

#include "edgelock/assert.hpp"

namespace edgelock::sim {
namespace {

constexpr std::int64_t ppm_scale = 1'000'000;

}  // namespace

std::int64_t floor_div(std::int64_t value, std::int64_t divisor) noexcept {
    EDGELOCK_ASSERT(divisor > 0);
    const std::int64_t quotient = value / divisor;
    return (value % divisor < 0) ? quotient - 1 : quotient;
}

sim_clock::sim_clock(std::int64_t offset_us, std::int32_t rate_ppm, bool monotonic)
    : monotonic_(monotonic) {
    EDGELOCK_ASSERT(rate_ppm > -ppm_scale && rate_ppm < ppm_scale);
    segments_.push_back(segment{0, offset_us, rate_ppm});
}

// Within a segment the reading is start + d + d*rate/1e6 with d the true time elapsed; the
// truncated product changes by at most 1 per microsecond, so the reading never decreases.
std::int64_t sim_clock::local_in(const segment& s, std::int64_t true_us) noexcept {
    const std::int64_t elapsed = true_us - s.start_true_us;
    return s.start_local_us + elapsed + elapsed * s.rate_ppm / ppm_scale;
}

std::size_t sim_clock::segment_at(std::int64_t true_us) const noexcept {
    std::size_t index = segments_.size() - 1;
    while (index > 0 && segments_[index].start_true_us > true_us) --index;
    return index;
}

std::int64_t sim_clock::read_us(std::int64_t true_us) const noexcept {
    return local_in(segments_[segment_at(true_us)], true_us);
}

void sim_clock::step(std::int64_t at_us, std::int64_t delta_us) {
    EDGELOCK_ASSERT(at_us >= segments_.back().start_true_us);
    EDGELOCK_ASSERT(!monotonic_ || delta_us >= 0);
    const segment& last = segments_.back();
    segments_.push_back(segment{at_us, local_in(last, at_us) + delta_us, last.rate_ppm});
}

void sim_clock::set_rate(std::int64_t at_us, std::int32_t rate_ppm) {
    EDGELOCK_ASSERT(at_us >= segments_.back().start_true_us);
    EDGELOCK_ASSERT(rate_ppm > -ppm_scale && rate_ppm < ppm_scale);
    const segment& last = segments_.back();
    segments_.push_back(segment{at_us, local_in(last, at_us), rate_ppm});
}

std::int64_t sim_clock::true_us_at_ms(std::int64_t local_ms,
                                      std::int64_t not_before_us) const noexcept {
    EDGELOCK_ASSERT(monotonic_);
    const std::int64_t target_us = local_ms * 1000;
    if (read_us(not_before_us) >= target_us) return not_before_us;
    for (std::size_t index = segment_at(not_before_us); index < segments_.size(); ++index) {
        const segment& s = segments_[index];
        const bool last = index + 1 == segments_.size();
        if (!last && local_in(s, segments_[index + 1].start_true_us - 1) < target_us) continue;
        // Solve start + d*(1e6+rate)/1e6 >= target, then correct the truncation by steps.
        const std::int64_t needed = target_us - s.start_local_us;
        std::int64_t elapsed = needed <= 0 ? 0 : needed * ppm_scale / (ppm_scale + s.rate_ppm);
        std::int64_t t = std::max(s.start_true_us + elapsed, not_before_us);
        while (t > not_before_us && t > s.start_true_us && local_in(s, t - 1) >= target_us) --t;
        while (local_in(s, t) < target_us) ++t;
        return t;
    }
    EDGELOCK_ASSERT(false);
    return not_before_us;
}

}  // namespace edgelock::sim
