// SPDX-License-Identifier: Apache-2.0
// The fenced resource: lower tokens are refused once a higher one was seen, reads included.
#include "edgelock/sim/resource.hpp"

#include <gtest/gtest.h>

namespace {

using edgelock::sim::fenced_resource;

TEST(resource, fenced_requests_below_the_highest_token_are_refused) {
    fenced_resource r(100);
    EXPECT_TRUE(r.read(true, 5).accepted);
    EXPECT_TRUE(r.write(true, 5, 99).accepted);
    EXPECT_TRUE(r.write(true, 5, 98).accepted) << "the same holder may write again";
    EXPECT_TRUE(r.read(true, 7).accepted);
    const auto stale = r.write(true, 5, 97);
    EXPECT_FALSE(stale.accepted);
    EXPECT_EQ(stale.value, 98);
    EXPECT_FALSE(r.read(true, 6).accepted) << "a read also counts: the newer holder was served";
    EXPECT_EQ(r.value(), 98);
    EXPECT_EQ(r.highest_token(), 7);
}

// A semaphore's resource keeps its N highest tokens: a holder below all of them is refused.
TEST(resource, with_n_writers_a_token_below_the_n_highest_is_refused) {
    fenced_resource r(100, 3);
    for (const std::int64_t token : {5, 9, 7}) EXPECT_TRUE(r.write(true, token, 1).accepted);
    EXPECT_TRUE(r.write(true, 5, 2).accepted) << "5 is still among the three highest";
    EXPECT_TRUE(r.read(true, 6).accepted) << "6 is above one of them, and takes 5's place";
    EXPECT_FALSE(r.write(true, 5, 3).accepted) << "three higher tokens were served";
    EXPECT_TRUE(r.write(true, 6, 4).accepted);
    EXPECT_TRUE(r.write(true, 12, 5).accepted);
    EXPECT_FALSE(r.read(true, 6).accepted) << "now 7, 9 and 12 are the three highest";
    EXPECT_EQ(r.value(), 5);
    EXPECT_EQ(r.highest_token(), 12);
}

TEST(resource, unfenced_requests_are_always_accepted) {
    fenced_resource r(10);
    EXPECT_TRUE(r.read(true, 9).accepted);
    EXPECT_TRUE(r.write(false, 0, 1).accepted);
    EXPECT_EQ(r.value(), 1);
    EXPECT_EQ(r.highest_token(), 9);
}

}  // namespace
