// SPDX-License-Identifier: Apache-2.0
// session::subscription: one command in flight, subscribed exactly while wanted, and only a
// confirmed subscription's messages current.
#include "edgelock/session/subscription.hpp"

#include <gtest/gtest.h>

#include <string>

#include "pubsub_replies.hpp"

namespace {

using edgelock::session::subscription;
using edgelock::testing::confirmation;
using edgelock::testing::message;
using edgelock::testing::reply;
using command = subscription::command;
using state = subscription::state;

constexpr std::string_view channel = "{job}:queue";

TEST(subscription, subscribes_while_wanted_and_unsubscribes_when_not) {
    subscription s;
    EXPECT_EQ(s.due(false), command::none);
    ASSERT_EQ(s.due(true), command::subscribe);
    s.sent(command::subscribe);
    EXPECT_EQ(s.due(true), command::none);   // one in flight
    EXPECT_EQ(s.due(false), command::none);  // decided again at its confirmation
    EXPECT_FALSE(s.live());
    const reply ok = confirmation("subscribe", channel);
    const subscription::answer a = s.on_answer(channel, ok.nodes.data(), ok.count);
    EXPECT_TRUE(a.subscribed);
    EXPECT_FALSE(a.violation);
    EXPECT_TRUE(s.live());
    ASSERT_EQ(s.due(false), command::unsubscribe);
    s.sent(command::unsubscribe);
    EXPECT_FALSE(s.live());  // a message now was meant for the wait that ended
    const reply gone = confirmation("unsubscribe", channel);
    EXPECT_FALSE(s.on_answer(channel, gone.nodes.data(), gone.count).subscribed);
    EXPECT_EQ(s.current(), state::off);
    EXPECT_TRUE(s.quiet());
}

TEST(subscription, a_confirmation_of_something_else_is_a_violation) {
    subscription s;
    const reply stray = confirmation("subscribe", channel);
    EXPECT_TRUE(s.on_answer(channel, stray.nodes.data(), stray.count).violation);  // none out
    s.sent(command::subscribe);
    const reply other = confirmation("subscribe", "{other}:queue");
    EXPECT_TRUE(s.on_answer(channel, other.nodes.data(), other.count).violation);
    const reply wrong_kind = confirmation("unsubscribe", channel);
    EXPECT_TRUE(s.on_answer(channel, wrong_kind.nodes.data(), wrong_kind.count).violation);
}

TEST(subscription, a_refused_subscribe_is_not_asked_again_on_that_connection) {
    subscription s;
    s.sent(command::subscribe);
    const reply refused("-NOPERM this user has no permissions to access the channel\r\n");
    const subscription::answer a = s.on_answer(channel, refused.nodes.data(), refused.count);
    EXPECT_FALSE(a.subscribed);
    EXPECT_FALSE(a.violation);
    EXPECT_EQ(s.current(), state::refused);
    EXPECT_EQ(s.due(true), command::none);
    s.on_connection_lost();
    EXPECT_EQ(s.due(true), command::subscribe);
}

TEST(subscription, a_lost_connection_forgets_the_subscription) {
    subscription s;
    s.sent(command::subscribe);
    const reply ok = confirmation("subscribe", channel);
    ASSERT_TRUE(s.on_answer(channel, ok.nodes.data(), ok.count).subscribed);
    s.on_connection_lost();
    EXPECT_FALSE(s.live());
    EXPECT_EQ(s.due(true), command::subscribe);
    EXPECT_EQ(s.due(false), command::none);
}

}  // namespace

namespace {

TEST(subscription, routes_the_payload_of_its_channels_messages_while_live) {
    subscription s;
    const reply m = message(channel, "a1b2");
    std::string_view payload = "untouched";
    EXPECT_FALSE(s.message_for(channel, m.nodes.data(), m.count, payload));  // not subscribed
    s.sent(s.due(true));
    EXPECT_FALSE(s.message_for(channel, m.nodes.data(), m.count, payload));  // not confirmed
    const reply ok = confirmation("subscribe", channel);
    ASSERT_TRUE(s.on_answer(channel, ok.nodes.data(), ok.count).subscribed);
    ASSERT_TRUE(s.message_for(channel, m.nodes.data(), m.count, payload));
    EXPECT_EQ(payload, "a1b2");  // the payload, not the channel
    const reply other = message("{other}:queue", "c3d4");
    EXPECT_FALSE(s.message_for(channel, other.nodes.data(), other.count, payload));
    EXPECT_FALSE(s.message_for(channel, ok.nodes.data(), ok.count, payload));  // no message
    EXPECT_EQ(payload, "a1b2");
}

}  // namespace
