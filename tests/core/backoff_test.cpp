// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "edgelock/backoff.hpp"

namespace {

using edgelock::full_jitter_backoff;

std::vector<std::int64_t> draws(std::uint64_t seed, std::uint32_t failures, std::int64_t min_ms,
                                std::int64_t max_ms, int count) {
    full_jitter_backoff backoff;
    backoff.seed(seed);
    std::vector<std::int64_t> out;
    for (int i = 0; i < count; ++i) out.push_back(backoff.delay_ms(failures, min_ms, max_ms));
    return out;
}

TEST(backoff, the_cap_doubles_per_failure_up_to_the_maximum) {
    for (std::uint32_t failures = 1; failures <= 40; ++failures) {
        const std::int64_t cap = std::min<std::int64_t>(
            5000, std::int64_t{100} << std::min<std::uint32_t>(failures - 1, 30));
        for (const std::int64_t d : draws(failures, failures, 100, 5000, 200)) {
            ASSERT_GE(d, 1);
            ASSERT_LE(d, cap) << "failures " << failures;
        }
    }
}

TEST(backoff, full_jitter_uses_the_whole_range_below_the_cap) {
    // Equal jitter ([cap/2, cap]) would keep clients that failed together within a factor of
    // two of each other; full jitter spreads them from 1 ms to the cap.
    const std::vector<std::int64_t> d = draws(7, 1, 100, 5000, 2000);
    EXPECT_LT(*std::min_element(d.begin(), d.end()), 10);
    EXPECT_GT(*std::max_element(d.begin(), d.end()), 90);
    const auto below_half =
        std::count_if(d.begin(), d.end(), [](std::int64_t x) { return x <= 50; });
    EXPECT_GT(below_half, 800);
    EXPECT_LT(below_half, 1200);
}

TEST(backoff, a_seed_replays_and_different_seeds_differ) {
    EXPECT_EQ(draws(42, 3, 10, 1000, 50), draws(42, 3, 10, 1000, 50));
    EXPECT_NE(draws(42, 3, 10, 1000, 50), draws(43, 3, 10, 1000, 50));
    EXPECT_NE(draws(0, 3, 10, 1000, 50), draws(1, 3, 10, 1000, 50))
        << "seed 0 is spread like any other";
}

TEST(backoff, extreme_inputs_stay_in_range) {
    full_jitter_backoff backoff;
    backoff.seed(1);
    const std::int64_t day_ms = 24LL * 60 * 60 * 1000;
    for (const std::uint32_t failures : {0u, 1u, 31u, 32u, 1000u, 0xffffffffu}) {
        const std::int64_t d = backoff.delay_ms(failures, day_ms, day_ms);
        EXPECT_GE(d, 1);
        EXPECT_LE(d, day_ms);
        EXPECT_EQ(backoff.delay_ms(failures, 1, 1), 1);
    }
}

}  // namespace
