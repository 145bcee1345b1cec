// SPDX-License-Identifier: Apache-2.0
#include "edgelock/session/linking.hpp"

#include "edgelock/session/lock_traffic.hpp"

namespace edgelock::session {

bool link_wanted(linking how) noexcept { return how == linking::eager; }

queued_step step_for_queued(linking how, const connection& link, std::int64_t now) noexcept {
    if (how == linking::eager || link.state() != connection_state::idle) return queued_step::write;
    return unreachable_now(link, now) ? queued_step::give_up : queued_step::connect;
}

}  // namespace edgelock::session
