// SPDX-License-Identifier: Apache-2.0
// edgelock session: one pub/sub channel's subscription on one subscriber connection, the
// policy both clients follow for fair locks' wake-ups (edgelock/lock.hpp, "Fair waiting";
// wake_subscription.hpp moves it from one acquire's channel to the next).
//
// A channel is subscribed exactly while a lock wants its wake-ups, and unsubscribed when none
// does, so Redis sends a client only the releases it waits for. At most one SUBSCRIBE or
// UNSUBSCRIBE of the channel is in flight: the next is decided when its confirmation comes,
// from what is wanted then. So a confirmation always answers the one command out, and a
// message is current exactly while the subscription is confirmed (state on): one published
// before the SUBSCRIBE was confirmed, or after an UNSUBSCRIBE was sent, was meant for an
// earlier wait and wakes nobody. A confirmed SUBSCRIBE is itself a wake-up ("look now":
// whatever was published before it is lost). A lost connection forgets the subscription, as
// Redis does; a SUBSCRIBE refused (an ACL) is not asked again on that connection, and the
// locks' re-checks stand in for the wake-ups.
//
// No allocation, no I/O: the caller writes the command (write_subscription) and tracks it on
// its connection, and hands the answer back.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "edgelock/resp_reader.hpp"

namespace edgelock::session {

class subscription {
public:
    enum class state : std::uint8_t {
        off,            // not subscribed on the current connection (or no connection)
        subscribing,    // SUBSCRIBE written, not confirmed
        on,             // confirmed: the channel's messages are current
        unsubscribing,  // UNSUBSCRIBE written, not confirmed
        refused,        // Redis refused SUBSCRIBE: not asked again on this connection
    };
    enum class command : std::uint8_t { none, subscribe, unsubscribe };

    // What the confirmation of the command in flight meant.
    struct answer {
        bool subscribed = false;  // SUBSCRIBE confirmed: wake the channel's locks
        bool violation = false;   // not the confirmation expected: drop the connection
    };

    state current() const noexcept { return state_; }
    // Nothing of the channel is on the wire (off or refused): it may be dropped.
    bool quiet() const noexcept { return state_ == state::off || state_ == state::refused; }
    // A published message is current: wake the locks with it.
    bool live() const noexcept { return state_ == state::on; }

    // The command to write now for what is `wanted`: none while one is in flight, when the
    // state is already as wanted, or after a refusal.
    command due(bool wanted) const noexcept;
    // `c` (what due() returned) was written and tracked on the connection.
    void sent(command c) noexcept;
    // The reply (nodes[0..count)) answering the command in flight on `channel`. Returns a
    // violation when nothing was in flight or the reply confirms something else.
    answer on_answer(std::string_view channel, const reply_node* nodes, std::size_t count) noexcept;
    // A frame pushed on the connection (nodes[0..count)): true, with the payload to wake the
    // channel's locks with, for a message on `channel` while the subscription is live; false
    // for anything else (one published before the confirmation was meant for an earlier wait).
    bool message_for(std::string_view channel, const reply_node* nodes, std::size_t count,
                     std::string_view& payload) const noexcept;
    // The connection ended: nothing is subscribed any more.
    void on_connection_lost() noexcept { state_ = state::off; }

private:
    state state_ = state::off;
};

}  // namespace edgelock::session
