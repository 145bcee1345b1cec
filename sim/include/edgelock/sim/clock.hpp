// SPDX-License-Identifier: Apache-2.0
// edgelock sim: per-process clocks over the simulator's true time.
//
// True time is the simulator's integer virtual time in microseconds; no process can read
// it. Every process (client or Redis node) has two clocks, as a Linux process has
// CLOCK_MONOTONIC and CLOCK_REALTIME: `mono` for leases and timeouts, `wall` for what Redis
// uses to expire keys. Each is a piecewise-linear function of true time: an offset, a rate
// error in parts per million (a 2% fast clock is +20'000 ppm), and steps (an NTP jump, an
// operator setting the date). A monotonic clock only ever steps forward.
//
// Readings are in microseconds; processes see whole milliseconds (read_ms), as the core's
// millisecond interfaces do.
#pragma once

#include <cstdint>
#include <vector>

namespace edgelock::sim {

// Floor division for possibly negative numerators (C++ division truncates toward zero).
std::int64_t floor_div(std::int64_t value, std::int64_t divisor) noexcept;

class sim_clock {
public:
    sim_clock() : sim_clock(0, 0, false) {}
    sim_clock(std::int64_t offset_us, std::int32_t rate_ppm, bool monotonic);

    std::int64_t read_us(std::int64_t true_us) const noexcept;
    std::int64_t read_ms(std::int64_t true_us) const noexcept {
        return floor_div(read_us(true_us), 1000);
    }

    // From true time `at_us` on (at_us must not precede the last change), the reading jumps
    // by delta_us. A monotonic clock refuses backward steps (the call asserts).
    void step(std::int64_t at_us, std::int64_t delta_us);
    // From true time `at_us` on, the clock runs at 1 + rate_ppm / 1e6 of true time.
    // rate_ppm must be in (-1'000'000, +1'000'000).
    void set_rate(std::int64_t at_us, std::int32_t rate_ppm);

    // The earliest true time >= not_before_us at which read_ms() >= local_ms, assuming no
    // change after the last one recorded. Only for monotonic clocks (never decreasing).
    std::int64_t true_us_at_ms(std::int64_t local_ms, std::int64_t not_before_us) const noexcept;

    std::int32_t rate_ppm() const noexcept { return segments_.back().rate_ppm; }
    bool monotonic() const noexcept { return monotonic_; }

private:
    struct segment {
        std::int64_t start_true_us;
        std::int64_t start_local_us;
        std::int32_t rate_ppm;
    };
    std::size_t segment_at(std::int64_t true_us) const noexcept;
    static std::int64_t local_in(const segment& s, std::int64_t true_us) noexcept;

    std::vector<segment> segments_;
    bool monotonic_ = false;
};

struct process_clocks {
    sim_clock mono;
    sim_clock wall;
};

}  // namespace edgelock::sim
