// SPDX-License-Identifier: Apache-2.0
// session::wake_subscription: the channel follows the wanted one, a new one taken up only
// once the old is quiet, and the old one's confirmation and messages wake nobody.
#include "edgelock/session/wake_subscription.hpp"

#include <gtest/gtest.h>

#include <string>

#include "pubsub_replies.hpp"

namespace {

using edgelock::session::wake_subscription;
using edgelock::testing::confirmation;
using edgelock::testing::message;
using edgelock::testing::reply;
using command = wake_subscription::command;
using state = edgelock::session::subscription::state;

constexpr std::string_view first_wait = "{job}:queue:0123456789abcdef0123456789abcdef";
constexpr std::string_view second_wait = "{job}:queue:fedcba9876543210fedcba9876543210";

// Subscribes `wanted` from quiet and confirms it.
void subscribe(wake_subscription& s, std::string_view wanted) {
    ASSERT_EQ(s.due(wanted), command::subscribe);
    ASSERT_EQ(s.channel(), wanted);
    s.sent(command::subscribe);
    const reply ok = confirmation("subscribe", wanted);
    ASSERT_TRUE(s.on_answer(ok.nodes.data(), ok.count).subscribed);
}

TEST(wake_subscription, subscribes_the_wanted_channel_and_drops_it_when_the_wait_ends) {
    wake_subscription s;
    EXPECT_EQ(s.due({}), command::none);
    subscribe(s, first_wait);
    EXPECT_TRUE(s.live());
    const reply turn = message(first_wait, "0123456789abcdef0123456789abcdef");
    std::string_view payload;
    ASSERT_TRUE(s.message_for(turn.nodes.data(), turn.count, payload));
    EXPECT_EQ(payload, "0123456789abcdef0123456789abcdef");
    ASSERT_EQ(s.due({}), command::unsubscribe);
    EXPECT_EQ(s.channel(), first_wait);
    s.sent(command::unsubscribe);
    const reply gone = confirmation("unsubscribe", first_wait);
    EXPECT_FALSE(s.on_answer(gone.nodes.data(), gone.count).violation);
    EXPECT_EQ(s.current(), state::off);
}

TEST(wake_subscription, a_new_wait_drops_the_old_channel_before_taking_up_its_own) {
    wake_subscription s;
    subscribe(s, first_wait);
    ASSERT_EQ(s.due(second_wait), command::unsubscribe);
    EXPECT_EQ(s.channel(), first_wait);
    EXPECT_FALSE(s.live());
    s.sent(command::unsubscribe);
    const reply late = message(first_wait, "0123456789abcdef0123456789abcdef");
    std::string_view payload;
    EXPECT_FALSE(s.message_for(late.nodes.data(), late.count, payload)) << "an earlier wait's";
    const reply gone = confirmation("unsubscribe", first_wait);
    ASSERT_FALSE(s.on_answer(gone.nodes.data(), gone.count).violation);
    subscribe(s, second_wait);
    EXPECT_TRUE(s.live());
}

TEST(wake_subscription, the_old_channels_confirmation_wakes_nobody) {
    wake_subscription s;
    ASSERT_EQ(s.due(first_wait), command::subscribe);
    s.sent(command::subscribe);
    EXPECT_EQ(s.due(second_wait), command::none) << "one command in flight";
    const reply ok = confirmation("subscribe", first_wait);
    const edgelock::session::subscription::answer a = s.on_answer(ok.nodes.data(), ok.count);
    EXPECT_FALSE(a.violation);
    EXPECT_FALSE(a.subscribed) << "confirmed for the wait that ended";
    EXPECT_FALSE(s.live());
    EXPECT_EQ(s.due(second_wait), command::unsubscribe);
    EXPECT_EQ(s.channel(), first_wait);
}

TEST(wake_subscription, a_lost_connection_lets_the_new_channel_in_at_once) {
    wake_subscription s;
    subscribe(s, first_wait);
    s.on_connection_lost();
    EXPECT_FALSE(s.live());
    subscribe(s, second_wait);
}

TEST(wake_subscription, a_channel_longer_than_any_lock_forms_is_wanted_nowhere) {
    wake_subscription s;
    const std::string too_long(edgelock::wake_channel_bytes_max + 1, 'k');
    EXPECT_EQ(s.due(too_long), command::none);
    EXPECT_TRUE(s.channel().empty());
}

}  // namespace
