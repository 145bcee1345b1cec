// SPDX-License-Identifier: Apache-2.0
// The simulator's PRNG: pinned outputs (a seed must mean the same run on every platform),
// bounds, and independent streams.
#include "edgelock/sim/prng.hpp"

#include <gtest/gtest.h>

#include <array>
#include <set>

namespace {

using edgelock::sim::prng;

// xoshiro256** seeded by splitmix64 from 0: the values every platform must reproduce.
TEST(prng, outputs_are_pinned) {
    prng rng(0);
    const std::array<std::uint64_t, 4> expected = {rng.next(), rng.next(), rng.next(), rng.next()};
    prng again(0);
    for (std::uint64_t value : expected) EXPECT_EQ(again.next(), value);
    prng fixed(0);
    EXPECT_EQ(fixed.next(), 0x99ec5f36cb75f2b4ULL);
    EXPECT_EQ(fixed.next(), 0xbf6e1f784956452aULL);
}

TEST(prng, splitmix64_matches_its_reference) {
    std::uint64_t state = 0;
    EXPECT_EQ(edgelock::sim::splitmix64(state), 0xe220a8397b1dcdafULL);
    EXPECT_EQ(edgelock::sim::splitmix64(state), 0x6e789e6aa1b965f4ULL);
}

TEST(prng, below_and_between_stay_in_bounds_and_reach_every_value) {
    prng rng(7);
    std::set<std::uint64_t> seen;
    for (int i = 0; i < 2000; ++i) {
        const std::uint64_t v = rng.below(6);
        ASSERT_LT(v, 6u);
        seen.insert(v);
    }
    EXPECT_EQ(seen.size(), 6u);
    std::set<std::int64_t> range;
    for (int i = 0; i < 2000; ++i) {
        const std::int64_t v = rng.between(-3, 3);
        ASSERT_GE(v, -3);
        ASSERT_LE(v, 3);
        range.insert(v);
    }
    EXPECT_EQ(range.size(), 7u);
    EXPECT_EQ(rng.between(5, 5), 5);
    rng.between(INT64_MIN, INT64_MAX);  // the full range must not overflow
}

TEST(prng, chance_is_never_and_always_at_the_ends) {
    prng rng(3);
    for (int i = 0; i < 1000; ++i) {
        ASSERT_FALSE(rng.chance(0));
        ASSERT_TRUE(rng.chance(1'000'000));
    }
}

TEST(prng, streams_differ_and_replay) {
    prng a = prng::stream(42, 1);
    prng b = prng::stream(42, 2);
    prng a_again = prng::stream(42, 1);
    const std::uint64_t first = a.next();
    EXPECT_NE(first, b.next());
    EXPECT_EQ(first, a_again.next());
}

}  // namespace
