// SPDX-License-Identifier: Apache-2.0
// Redlock over 5 independent masters: a quorum of 3 is enough; without it acquire fails
// within its wait and deletes what it wrote on the live masters.
#include <gtest/gtest.h>

#include <chrono>

#include "edgelock/blocking_lock.hpp"
#include "edgelock/testing/redis_client.hpp"
#include "edgelock/testing/redis_process.hpp"
#include "redis_test_util.hpp"

namespace {

using namespace std::chrono_literals;
using edgelock::redis_tests::elapsed_ms;
using edgelock::redis_tests::options_for;
using edgelock::testing::redis_client;
using edgelock::testing::redis_masters;

int keys_on(redis_masters& masters, const std::string& key) {
    int found = 0;
    for (std::size_t i = 0; i < masters.size(); ++i) {
        if (!masters[i].running()) continue;
        redis_client client(masters[i].port());
        if (client.exists(key)) ++found;
    }
    return found;
}

TEST(redlock, two_of_five_stopped_still_acquires_and_releases) {
    redis_masters masters(5);
    masters[0].stop();
    masters[3].stop();
    edgelock::blocking::lock lock;
    ASSERT_FALSE(lock.open(options_for("redlock", masters.urls(), 2000)));
    ASSERT_FALSE(lock.try_acquire());
    EXPECT_TRUE(lock.held());
    EXPECT_EQ(keys_on(masters, "redlock"), 3);
    EXPECT_EQ(lock.instance_error(0), std::errc::connection_refused);
    EXPECT_FALSE(lock.release());
    EXPECT_EQ(keys_on(masters, "redlock"), 0);
}

TEST(redlock, two_of_five_frozen_still_acquires_without_waiting_for_them) {
    redis_masters masters(5);
    masters[1].freeze();
    masters[2].freeze();
    edgelock::blocking::lock lock;
    auto options = options_for("redlock", masters.urls(), 2000);
    options.command_timeout_ms = 5000;  // longer than the attempt: only the quorum decides
    ASSERT_FALSE(lock.open(options));
    const auto start = std::chrono::steady_clock::now();
    ASSERT_FALSE(lock.try_acquire());
    EXPECT_LT(elapsed_ms(start), 2000) << "replies were collected in parallel, not one by one";
    EXPECT_TRUE(lock.held());
    EXPECT_FALSE(lock.release());
    masters[1].thaw();
    masters[2].thaw();
}

TEST(redlock, three_of_five_stopped_fails_within_the_wait_and_leaves_no_key) {
    redis_masters masters(5);
    masters[0].stop();
    masters[2].stop();
    masters[4].stop();
    edgelock::blocking::lock lock;
    ASSERT_FALSE(lock.open(options_for("redlock", masters.urls(), 2000)));
    const auto start = std::chrono::steady_clock::now();
    const std::error_code ec = lock.acquire(1000ms);
    const std::int64_t took = elapsed_ms(start);
    EXPECT_EQ(ec, edgelock::errc::no_quorum)
        << "several instances: no one instance's failure is the reason";
    EXPECT_EQ(lock.instance_error(0), std::errc::connection_refused)
        << lock.instance_error(0).message();
    EXPECT_FALSE(lock.held());
    // The wait, one last attempt (attempt timeout 200 ms) and the cleanup (command timeout).
    EXPECT_LT(took, 1000 + 200 + 500 + 500);
    EXPECT_EQ(keys_on(masters, "redlock"), 0) << "the live masters' keys were deleted";

    masters[0].start();
    const std::error_code again = lock.try_acquire();
    ASSERT_FALSE(again) << "usable again once a quorum is back: " << again.message();
    EXPECT_FALSE(lock.release());
}

TEST(redlock, fence_tokens_increase_from_holder_to_holder) {
    redis_masters masters(5);
    std::int64_t previous = 0;
    for (int round = 0; round < 5; ++round) {
        edgelock::blocking::lock lock;
        auto options = options_for("fenced", masters.urls(), 2000);
        options.fencing = true;
        ASSERT_FALSE(lock.open(options));
        edgelock::blocking::hold hold;
        ASSERT_FALSE(lock.try_acquire(&hold));
        EXPECT_GT(hold.fence, previous);
        previous = hold.fence;
        masters[static_cast<std::size_t>(round)].restart();  // a lost counter must not matter
        ASSERT_FALSE(lock.release());
    }
}

}  // namespace
