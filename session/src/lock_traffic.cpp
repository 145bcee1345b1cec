// SPDX-License-Identifier: Apache-2.0
#include "edgelock/session/lock_traffic.hpp"

#include <algorithm>
#include <array>

#include "edgelock/resp_writer.hpp"

namespace edgelock::session {

std::size_t write_asking(char* out, std::size_t capacity) noexcept {
    resp_writer writer(out, capacity);
    writer.array(1);
    writer.bulk("ASKING");
    return writer.status() == errc::ok ? writer.size() : 0;
}

errc deliver_answer(lock& core, std::uint8_t instance, const reply_node& reply, std::int64_t now,
                    failure& last, error_text* text) noexcept {
    const errc code = core.on_reply(instance, reply, now);
    if (code != errc::error_reply && code != errc::unexpected_reply) return code;
    last = failure::of(code);
    if (text == nullptr) return code;
    if (code == errc::error_reply && reply.type == reply_type::error) {
        text->assign_prefix(reply.text);
    } else {
        text->clear();
    }
    return code;
}

errc tell_node_started(lock& core, std::uint8_t instance, const connection& connection,
                       bool restart_guard, std::int64_t now) noexcept {
    return tell_node_started(core, instance, connection.started(), restart_guard, now);
}

errc tell_node_started(lock& core, std::uint8_t instance, const node_start& start,
                       bool restart_guard, std::int64_t now) noexcept {
    if (!restart_guard) return errc::ok;
    return core.on_node_started(instance, start, now);
}

bool warns_of_eviction(eviction_check check, const connection& connection) noexcept {
    return check == eviction_check::warn && connection.node().may_evict();
}

bool lock_hears_close(const connection_end& closed, std::size_t dropped,
                      const connection& connection, std::int64_t now) noexcept {
    // Not when it only moved on: nothing of the locks' was on it, and it connects again at once.
    return closed.was_ready || dropped > 0 || !connection.may_start(now);
}

errc hear_close(lock& core, std::uint8_t instance, const connection& connection,
                std::int64_t now) noexcept {
    return unreachable_now(connection, now) ? give_up_unsent(core, instance, now)
                                            : core.on_io_error(instance, now);
}

errc give_up_unsent(lock& core, std::uint8_t instance, std::int64_t now) noexcept {
    return core.give_up_unsent(instance, now);
}

bool unreachable_now(const connection& connection, std::int64_t now) noexcept {
    return connection.state() == connection_state::idle && !connection.may_start(now);
}

std::int64_t wake_ms(const connection& connection, bool wants_connection,
                     std::int64_t now) noexcept {
    if (connection.state() != connection_state::idle) return connection.next_deadline_ms();
    return wants_connection ? std::max(connection.start_not_before_ms(), now) : no_deadline_ms;
}

}  // namespace edgelock::session
