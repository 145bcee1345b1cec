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

TEST(resource, unfenced_requests_are_always_accepted) {
    fenced_resource r(10);
    EXPECT_TRUE(r.read(true, 9).accepted);
    EXPECT_TRUE(r.write(false, 0, 1).accepted);
    EXPECT_EQ(r.value(), 1);
    EXPECT_EQ(r.highest_token(), 9);
}

// A fenced semaphore's resource keeps the highest token per permit (token mod N): a live
// holder of one permit is not refused for the higher tokens of another, while a holder
// superseded on its own permit is.
TEST(resource, a_semaphores_tokens_are_judged_per_permit) {
    fenced_resource r(0, 3);
    EXPECT_TRUE(r.write(true, 30, 1).accepted) << "permit 0";
    EXPECT_TRUE(r.write(true, 31, 2).accepted) << "permit 1";
    EXPECT_TRUE(r.write(true, 35, 3).accepted) << "permit 2";
    EXPECT_TRUE(r.write(true, 31, 4).accepted) << "permit 1's holder, below 35 of another";
    EXPECT_TRUE(r.read(true, 33).accepted) << "permit 0 passed on: 33 after 30";
    EXPECT_FALSE(r.write(true, 30, 5).accepted) << "permit 0's superseded holder";
    EXPECT_EQ(r.highest_token(30), 33);
    EXPECT_EQ(r.highest_token(31), 31);
    EXPECT_EQ(r.value(), 4);
}

}  // namespace
