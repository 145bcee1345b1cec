// SPDX-License-Identifier: Apache-2.0
// Pub/sub frames read from literal RESP, and the subscription commands written.
#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

#include "edgelock/session/pubsub.hpp"

namespace {

using namespace edgelock;
using namespace edgelock::session;

pubsub_frame frame_of(const std::string& resp, std::vector<reply_node>& nodes) {
    nodes.assign(nodes_max, reply_node{});
    const parse_result r = parse_reply(resp.data(), resp.size(), nodes.data(), nodes.size());
    EXPECT_EQ(r.code, errc::ok) << resp;
    return parse_pubsub(nodes.data(), r.nodes);
}

TEST(pubsub, reads_messages_and_confirmations) {
    std::vector<reply_node> n;
    // The frames' views point into the RESP text: each is kept alive while its frame is read.
    const std::string message_resp = "*3\r\n$7\r\nmessage\r\n$9\r\n{x}:queue\r\n$3\r\nabc\r\n";
    const pubsub_frame message = frame_of(message_resp, n);
    EXPECT_EQ(message.kind, pubsub_kind::message);
    EXPECT_EQ(message.channel, "{x}:queue");
    EXPECT_EQ(message.payload, "abc");
    const std::string subscribed_resp = "*3\r\n$9\r\nsubscribe\r\n$9\r\n{x}:queue\r\n:2\r\n";
    const pubsub_frame subscribed = frame_of(subscribed_resp, n);
    EXPECT_EQ(subscribed.kind, pubsub_kind::subscribe);
    EXPECT_EQ(subscribed.channel, "{x}:queue");
    EXPECT_EQ(subscribed.subscriptions, 2);
    const std::string unsubscribed_resp = "*3\r\n$11\r\nunsubscribe\r\n$9\r\n{x}:queue\r\n:0\r\n";
    const pubsub_frame unsubscribed = frame_of(unsubscribed_resp, n);
    EXPECT_EQ(unsubscribed.kind, pubsub_kind::unsubscribe);
    EXPECT_EQ(unsubscribed.subscriptions, 0);
    const std::string empty_resp = "*3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$0\r\n\r\n";
    const pubsub_frame empty = frame_of(empty_resp, n);
    EXPECT_EQ(empty.kind, pubsub_kind::message);
    EXPECT_EQ(empty.payload, "");
}

TEST(pubsub, anything_else_is_other) {
    std::vector<reply_node> n;
    for (const std::string& resp : {
             std::string("-NOPERM this user has no permissions to access the channel\r\n"),
             std::string("+OK\r\n"),
             std::string("*2\r\n$4\r\npong\r\n$0\r\n\r\n"),  // PING in subscribed mode
             std::string(
                 "*4\r\n$8\r\npmessage\r\n$1\r\n*\r\n$1\r\nc\r\n$1\r\np\r\n"),  // a pattern's
                                                                                // message
             std::string("*3\r\n$7\r\nmessage\r\n$1\r\nc\r\n:1\r\n"),  // payload not a string
             std::string(
                 "*3\r\n$9\r\nsubscribe\r\n$1\r\nc\r\n$1\r\n1\r\n"),  // count not an integer
             std::string("*3\r\n$7\r\nunknown\r\n$1\r\nc\r\n$1\r\np\r\n"),
             std::string("*3\r\n*1\r\n$7\r\nmessage\r\n$1\r\nc\r\n$1\r\np\r\n"),  // nested
         }) {
        const pubsub_frame f = frame_of(resp, n);
        EXPECT_EQ(f.kind, pubsub_kind::other) << resp;
        EXPECT_TRUE(f.channel.empty()) << resp;
    }
}

TEST(pubsub, writes_one_channel_per_command_within_its_bound) {
    std::array<char, subscription_request_bytes_max> out{};
    std::size_t size = write_subscription(true, "{x}:queue", out.data(), out.size());
    EXPECT_EQ(std::string(out.data(), size), "*2\r\n$9\r\nSUBSCRIBE\r\n$9\r\n{x}:queue\r\n");
    size = write_subscription(false, "{x}:queue", out.data(), out.size());
    EXPECT_EQ(std::string(out.data(), size), "*2\r\n$11\r\nUNSUBSCRIBE\r\n$9\r\n{x}:queue\r\n");
    const std::string longest(wake_channel_bytes_max, 'k');
    EXPECT_GT(write_subscription(false, longest, out.data(), out.size()), 0u)
        << "the bound holds the longest";
    EXPECT_EQ(write_subscription(true, longest + "k", out.data(), out.size()), 0u)
        << "longer than any wake-up channel";
    EXPECT_EQ(write_subscription(true, "", out.data(), out.size()), 0u);
    EXPECT_EQ(write_subscription(true, "{x}:queue", out.data(), 20), 0u) << "does not fit";
}

}  // namespace
