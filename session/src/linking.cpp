// SPDX-License-Identifier: Apache-2.0
#include "edgelock/session/linking.hpp"

#include "edgelock/session/lock_traffic.hpp"

namespace edgelock::session {

bool link_wanted(linking how, bool requests_queued) noexcept {
    return how == linking::eager || requests_queued;
}

bool opens_by_itself(linking how) noexcept { return how == linking::eager; }

queued_step step_for_queued(linking how, const connection& link, std::int64_t now) noexcept {
    if (how == linking::eager || link.state() != connection_state::idle) return queued_step::write;
    return unreachable_now(link, now) ? queued_step::give_up : queued_step::connect;
}

void on_user_call(linking how, connection& link) noexcept {
    if (how == linking::on_demand) link.retry_now();
}

}  // namespace edgelock::session
