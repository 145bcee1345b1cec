// SPDX-License-Identifier: Apache-2.0
// Per-process clocks: offset, rate, steps, and the inverse the clients arm timers with.
#include "edgelock/sim/clock.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

namespace {

using edgelock::sim::floor_div;
using edgelock::sim::sim_clock;

TEST(clock, floor_div_rounds_down_for_negative_values) {
    EXPECT_EQ(floor_div(1999, 1000), 1);
    EXPECT_EQ(floor_div(-1, 1000), -1);
    EXPECT_EQ(floor_div(-1000, 1000), -1);
    EXPECT_EQ(floor_div(-1001, 1000), -2);
}

TEST(clock, offset_and_rate) {
    const sim_clock exact(5'000, 0, true);
    EXPECT_EQ(exact.read_us(1'000'000), 1'005'000);
    EXPECT_EQ(exact.read_ms(1'000'000), 1005);
    const sim_clock fast(0, 20'000, true);  // 2% fast
    EXPECT_EQ(fast.read_us(1'000'000), 1'020'000);
    const sim_clock slow(0, -50'000, true);  // 5% slow
    EXPECT_EQ(slow.read_us(1'000'000), 950'000);
}

TEST(clock, steps_and_rate_changes_apply_from_their_instant) {
    sim_clock wall(0, 0, false);
    wall.step(1'000, -500);
    EXPECT_EQ(wall.read_us(999), 999);
    EXPECT_EQ(wall.read_us(1'000), 500);
    wall.set_rate(2'000, 100'000);
    EXPECT_EQ(wall.read_us(2'000), 1'500);
    EXPECT_EQ(wall.read_us(3'000), 2'600);
    EXPECT_EQ(wall.rate_ppm(), 100'000);
}

TEST(clock, the_inverse_finds_the_first_instant_a_reading_is_reached) {
    sim_clock mono(123'456, -30'000, true);
    mono.step(500'000, 2'000'000);
    mono.set_rate(900'000, 70'000);
    for (std::int64_t target_ms = 100; target_ms < 4'000; target_ms += 37) {
        const std::int64_t t = mono.true_us_at_ms(target_ms, 0);
        EXPECT_GE(mono.read_ms(t), target_ms);
        if (t > 0) {
            EXPECT_LT(mono.read_ms(t - 1), target_ms) << target_ms;
        }
    }
    EXPECT_EQ(mono.true_us_at_ms(0, 777), 777) << "already reached: now";
}

RC_GTEST_PROP(clock, inverse_of_any_monotonic_clock, ()) {
    const auto offset = *rc::gen::inRange<std::int64_t>(-1'000'000, 1'000'000'000);
    const auto rate = *rc::gen::inRange<std::int32_t>(-200'000, 200'000);
    sim_clock mono(offset, rate, true);
    std::int64_t at = 0;
    const auto changes = *rc::gen::inRange(0, 4);
    for (int i = 0; i < changes; ++i) {
        at += *rc::gen::inRange<std::int64_t>(0, 2'000'000);
        if (*rc::gen::arbitrary<bool>()) {
            mono.step(at, *rc::gen::inRange<std::int64_t>(0, 3'000'000));
        } else {
            mono.set_rate(at, *rc::gen::inRange<std::int32_t>(-200'000, 200'000));
        }
    }
    const auto from = *rc::gen::inRange<std::int64_t>(0, 5'000'000);
    const auto target = mono.read_ms(from) + *rc::gen::inRange<std::int64_t>(-10, 10'000);
    const std::int64_t t = mono.true_us_at_ms(target, from);
    RC_ASSERT(t >= from);
    RC_ASSERT(mono.read_ms(t) >= target);
    RC_ASSERT(t == from || mono.read_ms(t - 1) < target);
}

}  // namespace
