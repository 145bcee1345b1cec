// SPDX-License-Identifier: Apache-2.0
// The asio client: what the instances' connections tell the locks (replies, readiness, ends,
// a node's start, a new master).
#include "client_impl.hpp"

namespace edgelock::async {
namespace detail {

// ---- connection callbacks ----------------------------------------------------------------

void client_impl::on_lock_reply(std::uint8_t instance, const session::in_flight& entry,
                                const reply_node& reply) {
    if (entry.owner >= locks_.capacity()) return;
    on_request_done(entry.owner);
    lock_entry& e = locks_[entry.owner];
    if (!e.in_use || e.generation != entry.tag) return;  // the lock was removed meanwhile
    if (!deliver_pending(entry.owner)) return;
    // Read after the handlers above, and after those of earlier replies in the same read:
    // the time they took is subtracted from the lease like any other wait.
    failure refused;
    const bool renewing = e.core.state() == lock_state::held;
    const errc code = session::deliver_answer(e.core, instance, reply, now_ms(), refused);
    // The core refuses a reply only when its event queue is full, and it was just emptied.
    EDGELOCK_ASSERT(code != errc::events_pending);
    if (refused) e.failure = to_error_code(refused);
    if (refused && renewing) note_renewal_failed(e, instance, e.failure);
    service(entry.owner);
}

void client_impl::on_connection_ready(std::uint8_t instance) {
    note_connected(instance);
    for (std::uint32_t index = 0; index < locks_.capacity(); ++index) {
        if (locks_[index].in_use) write_requests(index);
    }
    ready_check_ = true;
}

void client_impl::on_connection_down(std::uint8_t instance) {
    const std::uint32_t open_epoch = open_epoch_;
    const auto bit = static_cast<std::uint8_t>(1u << instance);
    connections_[instance]->waiters().clear();
    for (std::uint32_t index = 0; index < locks_.capacity(); ++index) {
        locks_[index].waiting_mask = static_cast<std::uint8_t>(locks_[index].waiting_mask & ~bit);
    }
    for (std::uint32_t index = 0; index < locks_.capacity(); ++index) {
        lock_entry& e = locks_[index];
        if (!e.in_use) continue;
        if (deliver_pending(index)) {
            if (attempt_running(e.core.state()) && !e.failure)
                e.failure = connections_[instance]->last_error();
            note_renewal_cut_off(e, instance, bit);
            const errc heard = session::hear_close(e.core, instance,
                                                   connections_[instance]->connection(), now_ms());
            EDGELOCK_ASSERT(heard == errc::ok);  // the event queue was just emptied
            service(index);
        }
        if (open_epoch_ != open_epoch) return;
    }
    ready_check_ = true;
}

// A connection to `instance` read its node: a node that may evict keys is reported, and with
// the restart guard every lock hears the node's start before its requests are written there
// (the connection holds them until now).
void client_impl::on_node_read(std::uint8_t instance, const session::node_facts& node,
                               const node_start& start) {
    if (session::warns_of_eviction(config_.eviction, connections_[instance]->connection()) &&
        config_.on_warning) {
        config_.on_warning(instance, session::eviction_warning(node).view());
    }
    if (config_.restart_guard) on_node_started(instance, start);
}

void client_impl::on_node_started(std::uint8_t instance, const node_start& start) {
    node_starts_[instance] = start;
    node_starts_known_ = static_cast<std::uint8_t>(node_starts_known_ | (1u << instance));
    const std::uint32_t open_epoch = open_epoch_;
    for (std::uint32_t index = 0; index < locks_.capacity(); ++index) {
        lock_entry& e = locks_[index];
        if (!e.in_use) continue;
        if (deliver_pending(index)) {
            const errc told = session::tell_node_started(e.core, instance, start,
                                                         config_.restart_guard, now_ms());
            // Refused only when the event queue lacks room, and it was just emptied.
            EDGELOCK_ASSERT(told == errc::ok);
            service(index);
        }
        if (open_epoch_ != open_epoch) return;
    }
}

void client_impl::on_switch_master(const node_address& master) {
    if (!sentinel_mode() || instance_count_ != 1) return;
    asio_connection& c = *connections_[0];
    if (!c.serves(master)) c.follow_new_master();
    asio_connection* s = subscriber();
    if (s != nullptr && s->connection().state() != session::connection_state::idle &&
        !s->serves(master))
        s->follow_new_master();
}

}  // namespace detail
}  // namespace edgelock::async
