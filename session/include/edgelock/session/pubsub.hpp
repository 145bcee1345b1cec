// SPDX-License-Identifier: Apache-2.0
// edgelock session: Redis pub/sub frames (RESP2), read and written without allocation.
//
// A connection in subscribed mode carries no other commands. Redis answers each SUBSCRIBE or
// UNSUBSCRIBE of one channel with one confirmation, in order, and sends messages at any
// moment in between:
//   ["subscribe",   channel, subscriptions]   confirms SUBSCRIBE (subscriptions: an integer)
//   ["unsubscribe", channel, subscriptions]   confirms UNSUBSCRIBE (also for a channel that
//                                             was not subscribed)
//   ["message",     channel, payload]         a PUBLISH on a subscribed channel
// A message never answers a command; a confirmation (or an error reply: an ACL refusing the
// channel) answers the oldest command not yet answered. Used by the watch connection
// (+switch-master) and by fair locks' wake-ups (lock.hpp, "Fair waiting").
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "edgelock/limits.hpp"
#include "edgelock/resp_reader.hpp"

namespace edgelock::session {

enum class pubsub_kind : std::uint8_t {
    other,  // not a pub/sub frame of the three shapes above (an error reply, ...)
    message,
    subscribe,
    unsubscribe,
};

struct pubsub_frame {
    pubsub_kind kind = pubsub_kind::other;
    std::string_view channel;        // views into the nodes' text
    std::string_view payload;        // message: the published bytes
    std::int64_t subscriptions = 0;  // subscribe, unsubscribe: the connection's count after it
};

// Reads one reply (nodes as parse_reply gave them).
pubsub_frame parse_pubsub(const reply_node* nodes, std::size_t count) noexcept;

// SUBSCRIBE or UNSUBSCRIBE of one channel of at most wake_channel_bytes_max bytes (a fair
// waiter's channel is the longest: limits.hpp): the longest fits in
// subscription_request_bytes_max.
inline constexpr std::size_t subscription_request_bytes_max = 64 + wake_channel_bytes_max;

// Writes the command into out[0, capacity) and returns its size, or 0 when it does not fit
// (or the channel is empty or longer than wake_channel_bytes_max).
std::size_t write_subscription(bool subscribe, std::string_view channel, char* out,
                               std::size_t capacity) noexcept;

}  // namespace edgelock::session
