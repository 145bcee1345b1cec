// SPDX-License-Identifier: Apache-2.0
// edgelock session: one fair waiter's subscription, whose channel follows its acquire().
//
// A release wakes the waiter whose turn it is on that waiter's own channel, the line's key,
// ":" and its token (keys.hpp, write_wake_channel), and each acquire() brings a new token. So
// the channel a lock wants wake-ups on changes from one wait to the next, while a subscriber
// connection carries one command of it at a time (subscription.hpp). This keeps the channel of
// the subscription (or of the command in flight) beside its state: a new channel is taken up
// only once the old one is quiet (unsubscribed, never subscribed, or gone with its
// connection), and the old one's confirmation and messages, meant for an earlier wait, wake
// nobody. The blocking client and the simulator's client follow it; the async client keeps
// a table of such channels (fair_channels).
//
// No allocation, no I/O: the caller writes the command for channel() and hands the answers
// back.
#pragma once

#include <cstddef>
#include <string_view>

#include "edgelock/limits.hpp"
#include "edgelock/resp_reader.hpp"
#include "edgelock/session/fixed_text.hpp"
#include "edgelock/session/subscription.hpp"

namespace edgelock::session {

class wake_subscription {
public:
    using command = subscription::command;

    // The command to write now when the lock wants wake-ups on `wanted` ("" for none): a
    // SUBSCRIBE of it, an UNSUBSCRIBE of another channel still subscribed, or none (one in
    // flight, already as wanted, or refused on this connection). channel() names the
    // command's channel.
    command due(std::string_view wanted) noexcept;
    // The channel of the subscription or of the command in flight (of the command due()
    // returned, until sent()).
    std::string_view channel() const noexcept { return channel_.view(); }
    // `c` (what due() returned) was written on the connection.
    void sent(command c) noexcept { sub_.sent(c); }

    // The reply (nodes[0..count)) answering the command in flight: subscribed only when the
    // confirmed channel is the one wanted at the last due().
    subscription::answer on_answer(const reply_node* nodes, std::size_t count) noexcept;
    // A frame pushed on the connection: true, with its payload, for a current message on the
    // wanted channel (subscription::message_for).
    bool message_for(const reply_node* nodes, std::size_t count,
                     std::string_view& payload) const noexcept;
    // The wanted channel's messages are current.
    bool live() const noexcept { return wanted_ && sub_.live(); }
    subscription::state current() const noexcept { return sub_.current(); }
    // The connection ended: nothing is subscribed any more.
    void on_connection_lost() noexcept { sub_.on_connection_lost(); }

private:
    subscription sub_;
    fixed_text<wake_channel_bytes_max> channel_;
    bool wanted_ = false;  // channel_ is the channel wanted at the last due()
};

}  // namespace edgelock::session
