// SPDX-License-Identifier: Apache-2.0
// Pub/sub frames as Redis pushes them (RESP2), parsed into nodes for the subscription tests.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <string>
#include <string_view>

#include "edgelock/resp_reader.hpp"

namespace edgelock::testing {

// The nodes of one RESP reply, kept with their bytes.
struct reply {
    std::string bytes;
    std::array<reply_node, 8> nodes{};
    std::size_t count = 0;

    explicit reply(std::string text) : bytes(std::move(text)) {
        const parse_result parsed =
            parse_reply(bytes.data(), bytes.size(), nodes.data(), nodes.size());
        EXPECT_EQ(parsed.code, errc::ok);
        count = parsed.nodes;
    }
};

// [kind, channel, 1]: a confirmation of SUBSCRIBE or UNSUBSCRIBE.
inline reply confirmation(std::string_view kind, std::string_view channel) {
    return reply("*3\r\n$" + std::to_string(kind.size()) + "\r\n" + std::string(kind) + "\r\n$" +
                 std::to_string(channel.size()) + "\r\n" + std::string(channel) + "\r\n:1\r\n");
}

// ["message", channel, payload]: a PUBLISH on the channel.
inline reply message(std::string_view channel, std::string_view payload) {
    return reply("*3\r\n$7\r\nmessage\r\n$" + std::to_string(channel.size()) + "\r\n" +
                 std::string(channel) + "\r\n$" + std::to_string(payload.size()) + "\r\n" +
                 std::string(payload) + "\r\n");
}

}  // namespace edgelock::testing
