// SPDX-License-Identifier: Apache-2.0
// The async client: what the instances' connections tell the locks (replies, readiness, ends,
// a node's start, a new master).
#include "client_impl.hpp"

namespace edgelock::async {
namespace detail {

// ---- connection callbacks ----------------------------------------------------------------

void client_impl::on_lock_reply(std::uint8_t link, const session::in_flight& entry,
                                const reply_node& reply) {
    if (entry.owner >= locks_.capacity()) return;
    on_request_done(entry.owner);
    // The lock two replies on is loaded while this one and the next are handled.
    if (const session::in_flight* later = connections_[link]->connection().in_flight_at(1))
        locks_.prefetch(later->owner);
    lock_entry& e = locks_[entry.owner];
    if (!e.in_use || e.generation != entry.tag) return;  // the lock was removed meanwhile
    // The answer's time is read after the handlers deliver_pending runs, and after those of
    // earlier replies in the same read: the time they took is subtracted from the lease like
    // any other wait. The answer's own events are told at that time, no code of the user's
    // having run between.
    step_clock clock;
    if (!deliver_pending(entry.owner, clock)) return;
    failure refused;
    const bool renewing = e.core.state() == lock_state::held;
    const std::uint8_t instance = cluster_ ? 0 : link;
    const errc code =
        e.place.answer(e.core, link, reply, cluster_links_.get(), clock.now(), refused);
    // The core refuses a reply only when its event queue is full, and it was just emptied.
    EDGELOCK_ASSERT(code != errc::events_pending);
    if (cluster_) e.meter.redirected(e.place.route().followed);
    if (refused) e.failure = to_error_code(refused);
    if (refused && renewing) {
        note_renewal_failed(e, instance, e.failure);
        clock = step_clock();  // the event hook ran
    }
    service(entry.owner, clock);
}

void client_impl::on_connection_ready(std::uint8_t link) {
    note_connected(link);
    step_clock clock;  // one for all: writing runs no handler
    for (std::uint32_t index = 0; index < locks_.capacity(); ++index) {
        if (locks_[index].in_use) write_requests(index, clock);
    }
    ready_check_ = true;
}

template <typename Tell>
bool client_impl::tell_locks_on(std::uint8_t link, Tell&& tell) {
    const std::uint32_t open_epoch = open_epoch_;
    for (std::uint32_t index = 0; index < locks_.capacity(); ++index) {
        lock_entry& e = locks_[index];
        if (!e.in_use) continue;
        const std::uint8_t instance = instance_on(e, link);
        if (instance == no_instance) continue;
        step_clock clock;
        if (deliver_pending(index, clock)) {
            tell(e, instance);
            service(index, clock);
        }
        if (open_epoch_ != open_epoch) return false;
    }
    return true;
}

void client_impl::on_connection_down(std::uint8_t link) {
    const link_set bit = link_set{1} << link;
    connections_[link]->waiters().clear();
    // Every lock first (a handler below may move one off the link before it hears the end).
    for (std::uint32_t index = 0; index < locks_.capacity(); ++index) {
        locks_[index].waiting_mask &= ~bit;
        if (locks_[index].in_use) locks_[index].place.link_lost(link);
    }
    const bool open = tell_locks_on(link, [&](lock_entry& e, std::uint8_t) {
        if (attempt_running(e.core.state()) && !e.failure)
            e.failure = connections_[link]->last_error();
        note_renewal_cut_off(e, link);
        const errc heard =
            e.place.link_closed(e.core, link, connections_[link]->connection(), true, now_ms());
        EDGELOCK_ASSERT(heard == errc::ok);  // the event queue was just emptied
    });
    if (open) ready_check_ = true;
}

// A connection to `link` read its node: a node that may evict keys is reported, and with
// the restart guard every lock on the link hears the node's start before its requests are
// written there (the connection holds them until now).
void client_impl::on_node_read(std::uint8_t link, const session::node_facts& node,
                               const node_start& start) {
    if (session::warns_of_eviction(config_.eviction, connections_[link]->connection()) &&
        config_.on_warning) {
        config_.on_warning(link, session::eviction_warning(node).view());
    }
    if (!config_.restart_guard) return;
    tell_locks_on(link, [&](lock_entry& e, std::uint8_t) {
        const errc told = e.place.node_read(e.core, link, start, config_.restart_guard, now_ms());
        // Refused only when the event queue lacks room, and it was just emptied.
        EDGELOCK_ASSERT(told == errc::ok);
    });
}

void client_impl::on_switch_master(const node_address& from, const node_address& to) {
    if (!sentinel_mode() || instance_count_ != 1) return;
    connections_[0]->follow_switch(from, to);
    if (asio_connection* s = subscriber()) s->follow_switch(from, to);
}

}  // namespace detail
}  // namespace edgelock::async
