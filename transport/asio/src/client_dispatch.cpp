// SPDX-License-Identifier: Apache-2.0
// The async client: from the core's events to the caller's handlers (delivery passes, the lock
// timer), and the locks' requests into the connections' write buffers.
#include <asio/post.hpp>

#include <algorithm>
#include <utility>

#include "client_impl.hpp"
#include "handler_memory.hpp"
#include "edgelock/session/outcome.hpp"

namespace edgelock::async {
namespace detail {
namespace {

// Bounds on how much one delivery pass may do before yielding to the io_context: a user
// handler that starts an operation which completes at once (a reentrant acquire) must not
// spin the client forever.
constexpr int events_per_pass_max = 64;
constexpr int io_passes_max = 8;
constexpr int dispatch_passes_max = 4;

}  // namespace

// ---- driving the core ------------------------------------------------------------------

// After a call in from the user, whether the core accepted it or not: events wait for the
// next delivery pass (never delivered inside the caller's call), which comes before any
// completion the call posts; requests go out at once.
// `clock` holds the time the call gave the core: its requests went out no earlier.
void client_impl::after_call(std::uint32_t index, step_clock clock) noexcept {
    lock_entry& e = locks_[index];
    defer_events(index);
    write_requests(index, clock);
    update_deadline(index);
    note_wake_interest(index);
    if (depth_ == 0) {
        finish_io();
        if (e.dirty) post_flush();
    }
}

// Takes the lock's events out for the next delivery pass (the dirty list), as a call in
// from the user leaves them, or a move to another cluster node.
void client_impl::defer_events(std::uint32_t index) noexcept {
    lock_entry& e = locks_[index];
    event ev;
    while (e.deferred_count < events_max && e.core.poll_event(ev))
        e.deferred[e.deferred_count++] = ev;
    if ((e.deferred_count > 0 || e.release_after_events) && !e.dirty) {
        e.dirty = true;
        const bool pushed = dirty_.push(lock_ref{index, e.generation});
        EDGELOCK_ASSERT(pushed);
    }
}

// Delivers every pending event of a lock. False when a handler closed the client or
// removed the lock (the caller must not touch it then). `clock` is the caller's step: the
// first event is told at its time, and it starts afresh after every handler.
bool client_impl::deliver_pending(std::uint32_t index, step_clock& clock) {
    lock_entry& e = locks_[index];
    const std::uint32_t generation = e.generation;
    const std::uint32_t open_epoch = open_epoch_;
    for (int n = 0; n < events_per_pass_max; ++n) {
        event ev;
        if (e.deferred_count > 0) {
            ev = e.deferred[0];
            std::move(e.deferred.begin() + 1, e.deferred.begin() + e.deferred_count,
                      e.deferred.begin());
            --e.deferred_count;
        } else if (!e.core.poll_event(ev)) {
            break;
        }
        deliver(e, ev, clock);
        clock = step_clock();
        if (open_epoch_ != open_epoch || e.generation != generation) return false;
    }
    if (e.release_after_events && e.deferred_count == 0) {
        e.release_after_events = false;
        e.release_handler.complete({});
        clock = step_clock();
        if (open_epoch_ != open_epoch || e.generation != generation) return false;
    }
    return true;
}

void client_impl::deliver(lock_entry& e, const event& ev, step_clock& clock) {
    switch (ev.type) {
        case event_type::acquired: deliver_acquired(e, ev, clock.now()); break;
        case event_type::acquire_failed:
            e.last_cause = ev.code == errc::wait_timeout ? ev.cause : ev.code;
            e.guard_until_ms = ev.guard_until_ms;
            deliver_acquire_failed(e, ev, clock.now());
            break;
        case event_type::renewed: note_renewed(e, ev, clock.now()); break;
        case event_type::lost: deliver_lost(e, ev.code); break;
        case event_type::released: deliver_released(e, ev); break;
    }
}

void client_impl::deliver_acquire_failed(lock_entry& e, const event& ev, std::int64_t now) {
    const std::error_code heard =
        to_error_code(session::acquire_result(ev, instance_count_, instance_failure(e)));
    note_acquire_ended(e, heard, now);
    e.acquire_handler.complete(heard, 0);
}

void client_impl::deliver_released(lock_entry& e, const event& ev) {
    e.hold_reported = false;
    const std::error_code heard =
        to_error_code(session::release_result(ev, instance_count_, instance_failure(e)));
    note_released(e, heard);
    e.release_handler.complete(heard);
}

// The core decided at its last input, and handlers may have run since (those of earlier
// replies in the same read, or whatever ran before a reentrant acquire's posted delivery):
// success is told only while the lease still runs.
void client_impl::deliver_acquired(lock_entry& e, const event& ev, std::int64_t now) {
    if (!e.core.held(now)) return fail_late_acquire(e, now);
    if (e.core.hold_count() <= 1) e.renewals = 0;
    e.last_cause = errc::ok;
    e.hold_reported = true;
    // The event hook is the user's code too: what it takes must not come between the lease's
    // check and the handler, so it hears of the hold after the handler, unless the handler
    // closed the client (a hook of the session it opened next must not hear of this one).
    const attempt_told told = end_acquire(e, {}, now);
    const std::uint32_t open_epoch = open_epoch_;
    e.acquire_handler.complete({}, ev.fence);
    if (open_epoch_ == open_epoch) tell_attempt(told);
}

void client_impl::fail_late_acquire(lock_entry& e, std::int64_t now) {
    // Lets the core see the lease's end now (lost, clean-up queued) rather than at the lock
    // timer, so status() and the next acquire find the lock lost, not held. Called while
    // events are handed out, so the core may lack room (events_pending): the lock timer
    // then ends the lease instead.
    const errc timed = e.core.on_timer(now);
    EDGELOCK_ASSERT(timed == errc::ok || timed == errc::events_pending);
    // A hold the user was never told of ends without a lost call; its `lost` is queued
    // (or comes with the next input, when the core had no room for it yet).
    const lock_state state = e.core.state();
    if (!e.hold_reported && (state == lock_state::lost || state == lock_state::held)) {
        e.lost_unreported = true;
    }
    e.last_cause = errc::validity_expired;
    note_acquire_ended(e, make_error_code(errc::validity_expired), now);
    e.acquire_handler.complete(make_error_code(errc::validity_expired), 0);
}

// The handler stays installed for the next hold, unless it installed another, removed its
// lock (the slot may already hold a new lock) or closed the client.
void client_impl::deliver_lost(lock_entry& e, errc why) {
    if (e.lost_unreported) {
        e.hold_reported = false;
        e.lost_unreported = false;
        return;
    }
    note_lost(e, why);
    // The loss is heard by the lost handler; with none, the hold's end is heard only from
    // release(), and until then acquire() completes with expired (client_impl::acquire).
    e.hold_reported = e.lost_handler.empty();
    handler_slot running(std::move(e.lost_handler));
    const std::uint32_t generation = e.generation;
    const std::uint32_t open_epoch = open_epoch_;
    running.call(make_error_code(why));
    if (open_epoch_ == open_epoch && e.generation == generation && e.lost_handler.empty()) {
        e.lost_handler = std::move(running);
    }
}

// What the single instance said about the running operation: its reply's error, or why its
// connection is down (session::acquire_result decides whether it is reported).
failure client_impl::instance_failure(const lock_entry& e) const {
    if (e.failure) return to_failure(e.failure);
    if (cluster_) return cluster_failure(e);
    const asio_connection& c = *connections_[0];
    if (!c.ready() && c.last_error()) return to_failure(c.last_error());
    return {};
}

// Inside a completion: deliver what is pending, then send and re-arm.
void client_impl::service(std::uint32_t index, step_clock& clock) {
    if (!deliver_pending(index, clock)) return;
    write_requests(index, clock);
    update_deadline(index);
    note_wake_interest(index);
}

// Encodes the lock's queued requests into the write buffers of the sockets that take them
// (session::write_requests); a full buffer puts the lock on that socket's waiters.
// `clock` gives when the requests go out (their command timeout); it is read only once one
// does, since most calls (the service() after every reply) find nothing queued.
void client_impl::write_requests(std::uint32_t index, step_clock& clock) noexcept {
    if (cluster_) return write_cluster_requests(index, clock);
    lock_entry& e = locks_[index];
    for (std::size_t i = 0; i < instance_count_; ++i) {
        const auto instance = static_cast<std::uint8_t>(i);
        if ((e.waiting_mask >> i & 1u) != 0 || !e.core.has_request(instance)) continue;
        write_link(e, index, i, instance, clock.now(), false);
    }
}

// The lock's requests for `instance` onto link `link`'s write buffer.
void client_impl::write_link(lock_entry& e, std::uint32_t index, std::size_t link,
                             std::uint8_t instance, std::int64_t now, bool asking) noexcept {
    asio_connection& c = *connections_[link];
    const session::write_report sent = session::write_requests(e.core, instance, c.connection(),
                                                               index, e.generation, now, c, asking);
    e.requests_in_flight += static_cast<std::uint32_t>(sent.written);
    if (sent.stop == session::write_stop::full) {
        // One entry per lock and connection (the mask), so the ring always has room.
        const bool added = c.add_waiter(lock_ref{index, e.generation});
        EDGELOCK_ASSERT(added);
        e.waiting_mask |= link_set{1} << link;
    }
}

void client_impl::wake_waiters(std::uint8_t link) {
    asio_connection& c = *connections_[link];
    fixed_ring<lock_ref>& waiters = c.waiters();
    const link_set bit = link_set{1} << link;
    step_clock clock;  // one for all: writing runs no handler
    for (std::size_t budget = waiters.size(); budget > 0 && !waiters.empty(); --budget) {
        if (c.room() < request_bytes_max) return;
        const lock_ref ref = waiters.front();
        waiters.pop();
        lock_entry& e = locks_[ref.index];
        if (!e.in_use || e.generation != ref.generation) continue;
        e.waiting_mask &= ~bit;
        write_requests(ref.index, clock);
    }
}

// The heap key of a lock is a lower bound of its deadline: it is only moved when the
// deadline comes earlier, which keeps the common case (every operation pushes the deadline
// later) off the heap. A stale key fires early and is corrected then.
void client_impl::update_deadline(std::uint32_t index) noexcept {
    lock_entry& e = locks_[index];
    const std::int64_t deadline = e.core.next_deadline_ms();
    e.deadline_ms = deadline;
    if (deadline < deadlines_.key(index)) deadlines_.set(index, deadline);
    if (deadline < lock_timer_ms_) arm_lock_timer(deadline);
}

void client_impl::arm_lock_timer(std::int64_t deadline_ms) {
    lock_timer_ms_ = deadline_ms;
    lock_timer_epoch_ = next_epoch();
    lock_timer_->expires_at(to_time_point(deadline_ms));
    lock_timer_->async_wait(
        with_handler_memory([self = shared_from_this(), epoch = lock_timer_epoch_](
                                std::error_code ec) { self->on_lock_timer(epoch, ec); }));
}

void client_impl::on_lock_timer(std::uint32_t epoch, std::error_code ec) {
    if (epoch != lock_timer_epoch_ || ec == asio::error::operation_aborted) return;
    dispatch_scope scope(*this);
    lock_timer_ms_ = no_deadline_ms;
    const std::uint32_t open_epoch = open_epoch_;
    for (std::size_t n = 0; n < 2 * locks_.capacity() && !deadlines_.empty(); ++n) {
        const std::int64_t now = now_ms();  // again for every lock: handlers ran meanwhile
        if (deadlines_.top_deadline_ms() > now) break;
        const std::uint32_t index = deadlines_.top();
        lock_entry& e = locks_[index];
        if (e.deadline_ms > now) {
            deadlines_.set(index, e.deadline_ms);  // a stale key: the deadline moved later
            continue;
        }
        step_clock clock(now);
        if (deliver_pending(index, clock)) {
            const errc timed = e.core.on_timer(clock.now());
            EDGELOCK_ASSERT(timed == errc::ok);  // the event queue was just emptied
            service(index, clock);
        }
        if (open_epoch_ != open_epoch) return;
        if (e.in_use && deadlines_.key(index) <= now) {
            // Re-key to the deadline the core now reports; never spin on one lock.
            deadlines_.set(index, std::max(e.deadline_ms, now + 1));
        }
    }
    if (!deadlines_.empty() && deadlines_.top_deadline_ms() < lock_timer_ms_) {
        arm_lock_timer(std::max(deadlines_.top_deadline_ms(), now_ms() + 1));
    }
}

// ---- delivery passes ---------------------------------------------------------------------

void client_impl::finish_dispatch() {
    for (int pass = 0; pass < dispatch_passes_max; ++pass) {
        if (ready_check_) check_ready();
        drain_dirty();
        if (open_) finish_io();
        if (!ready_check_ && dirty_.empty()) return;
    }
    if (open_) post_flush();  // more work than one pass should do: continue later
}

void client_impl::drain_dirty() {
    const std::uint32_t open_epoch = open_epoch_;
    for (std::size_t budget = locks_.capacity() + 1; budget > 0 && !dirty_.empty(); --budget) {
        const lock_ref ref = dirty_.front();
        dirty_.pop();
        lock_entry& e = locks_[ref.index];
        if (!e.in_use || e.generation != ref.generation) continue;
        e.dirty = false;
        step_clock clock;
        service(ref.index, clock);
        if (open_epoch_ != open_epoch) return;
    }
}

void client_impl::finish_io() {
    drive_subscriber();
    if (cluster_) drive_map();
    for (int pass = 0; pass < io_passes_max; ++pass) {
        bool woke = false;
        for (std::size_t i = 0; i < connections_.size(); ++i) {
            if (!connections_[i]) continue;
            asio_connection& c = *connections_[i];
            c.flush();
            if (i < links_ && c.ready() && !c.writing() && !c.waiters().empty()) {
                wake_waiters(static_cast<std::uint8_t>(i));
                woke = true;
            }
        }
        if (!woke) return;
    }
    for (auto& c : connections_) {
        if (c) c->flush();
    }
}

}  // namespace detail
}  // namespace edgelock::async
