// SPDX-License-Identifier: Apache-2.0
#include "edgelock/session/subscription.hpp"

#include "edgelock/session/pubsub.hpp"

namespace edgelock::session {

subscription::command subscription::due(bool wanted) const noexcept {
    if (wanted && state_ == state::off) return command::subscribe;
    if (!wanted && state_ == state::on) return command::unsubscribe;
    return command::none;
}

void subscription::sent(command c) noexcept {
    if (c == command::subscribe) state_ = state::subscribing;
    if (c == command::unsubscribe) state_ = state::unsubscribing;
}

subscription::answer subscription::on_answer(std::string_view channel, const reply_node* nodes,
                                             std::size_t count) noexcept {
    answer result;
    if (state_ != state::subscribing && state_ != state::unsubscribing) {
        result.violation = true;  // one command in flight, and this answers none
        return result;
    }
    if (nodes[0].type == reply_type::error) {
        // An ACL refusing the channel: the locks re-check on their own; asked again on the
        // next connection. An UNSUBSCRIBE refused leaves nothing subscribed that matters.
        state_ = state_ == state::subscribing ? state::refused : state::off;
        return result;
    }
    const pubsub_frame frame = parse_pubsub(nodes, count);
    const pubsub_kind expected =
        state_ == state::subscribing ? pubsub_kind::subscribe : pubsub_kind::unsubscribe;
    if (frame.kind != expected || frame.channel != channel) {
        result.violation = true;
        return result;
    }
    result.subscribed = frame.kind == pubsub_kind::subscribe;
    state_ = result.subscribed ? state::on : state::off;
    return result;
}

bool subscription::message_for(std::string_view channel, const reply_node* nodes, std::size_t count,
                               std::string_view& payload) const noexcept {
    const pubsub_frame frame = parse_pubsub(nodes, count);
    if (!live() || frame.kind != pubsub_kind::message || frame.channel != channel) return false;
    payload = frame.payload;
    return true;
}

}  // namespace edgelock::session
