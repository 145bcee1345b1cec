// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include "edgelock/session/reconnect.hpp"

namespace {

using edgelock::errc;
using edgelock::session::check_timing;
using edgelock::session::reconnect_backoff;
using edgelock::session::timing;

TEST(reconnect, the_defaults_are_valid_and_shared) {
    const timing t;
    EXPECT_EQ(check_timing(t), errc::ok);
    EXPECT_EQ(t.connect_timeout_ms, 2000);
    EXPECT_EQ(t.command_timeout_ms, 2000);
}

TEST(reconnect, every_timing_field_is_bounded) {
    const auto refused = [](auto change) {
        timing t;
        change(t);
        return check_timing(t) == errc::invalid_config;
    };
    EXPECT_TRUE(refused([](timing& t) { t.connect_timeout_ms = 0; }));
    EXPECT_TRUE(
        refused([](timing& t) { t.connect_timeout_ms = edgelock::session::timeout_ms_max + 1; }));
    EXPECT_TRUE(refused([](timing& t) { t.command_timeout_ms = -1; }));
    EXPECT_TRUE(refused([](timing& t) { t.command_timeout_ms = INT64_MAX; }));
    EXPECT_TRUE(refused([](timing& t) { t.reconnect_delay_min_ms = 0; }));
    EXPECT_TRUE(refused([](timing& t) { t.reconnect_delay_max_ms = 99; }));
    EXPECT_TRUE(refused([](timing& t) { t.reconnect_delay_max_ms = INT64_MAX; }));
    EXPECT_FALSE(refused([](timing& t) { t.reconnect_delay_max_ms = t.reconnect_delay_min_ms; }));
    EXPECT_FALSE(
        refused([](timing& t) { t.command_timeout_ms = edgelock::session::timeout_ms_max; }));
}

TEST(reconnect, failures_push_the_next_attempt_out_and_an_answer_resets) {
    timing t;
    t.reconnect_delay_min_ms = 100;
    t.reconnect_delay_max_ms = 400;
    reconnect_backoff b;
    b.seed(3);
    EXPECT_TRUE(b.may_connect(0)) << "a fresh connection may connect at once";
    std::int64_t longest = 0;
    for (int i = 1; i <= 20; ++i) {
        b.failed(1000, t);
        EXPECT_EQ(b.failures(), static_cast<std::uint32_t>(i));
        const std::int64_t delay = b.not_before_ms() - 1000;
        EXPECT_GE(delay, 1);
        EXPECT_LE(delay, i == 1 ? 100 : i == 2 ? 200 : 400);
        EXPECT_FALSE(b.may_connect(1000));
        EXPECT_TRUE(b.may_connect(b.not_before_ms()));
        longest = std::max(longest, delay);
    }
    EXPECT_GT(longest, 200) << "the cap grew to the maximum";
    b.reset();
    EXPECT_EQ(b.failures(), 0u);
    EXPECT_TRUE(b.may_connect(1000));
    b.failed(1000, t);
    EXPECT_LE(b.not_before_ms() - 1000, 100) << "after an answer the shortest cap applies again";
}

TEST(reconnect, two_connections_seeded_apart_spread_apart) {
    timing t;
    reconnect_backoff a;
    reconnect_backoff b;
    a.seed(10);
    b.seed(11);
    int same = 0;
    for (int i = 0; i < 20; ++i) {
        a.failed(0, t);
        b.failed(0, t);
        same += a.not_before_ms() == b.not_before_ms();
        a.reset();
        b.reset();
    }
    EXPECT_LT(same, 3);
}

}  // namespace
