// SPDX-License-Identifier: Apache-2.0
#include "edgelock/session/wake_subscription.hpp"

namespace edgelock::session {

wake_subscription::command wake_subscription::due(std::string_view wanted) noexcept {
    // Only a quiet channel is given up: a command in flight names the old one, and a
    // subscription still on must be dropped first.
    if (sub_.quiet() && !wanted.empty() && wanted != channel_.view() && !channel_.assign(wanted))
        wanted = {};  // longer than any channel a lock forms: wanted nowhere
    wanted_ = !wanted.empty() && wanted == channel_.view();
    return sub_.due(wanted_);
}

subscription::answer wake_subscription::on_answer(const reply_node* nodes,
                                                  std::size_t count) noexcept {
    subscription::answer answered = sub_.on_answer(channel_.view(), nodes, count);
    answered.subscribed = answered.subscribed && wanted_;
    return answered;
}

bool wake_subscription::message_for(const reply_node* nodes, std::size_t count,
                                    std::string_view& payload) const noexcept {
    return wanted_ && sub_.message_for(channel_.view(), nodes, count, payload);
}

}  // namespace edgelock::session
