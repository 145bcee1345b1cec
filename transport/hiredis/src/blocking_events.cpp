// SPDX-License-Identifier: Apache-2.0
// The blocking client's events: each core event as the caller's outcome, the metrics, and
// on_event's events, gathered under the mutex and handed over without it.
#include "hiredis_lock_impl.hpp"

#include <algorithm>

#include "edgelock/session/outcome.hpp"

namespace edgelock::blocking {

void lock::impl::note_renewal_failed(std::uint8_t i, std::error_code code) {
    meter.renewal_failed();
    emit(lock_event_kind::renewal_failed, i, code, core.valid_until_ms());
}

void lock::impl::note_error(std::uint8_t i, const failure& why, const session::error_text* text) {
    last_errors[i] = to_error_code(why);
    if (text != nullptr) {
        last_error_texts[i] = *text;
    } else {
        last_error_texts[i].clear();  // the text went with the error reply it came with
    }
    call_error = last_errors[i];
}

// The last hold ended by release(): counted and told as release() will report it.
void lock::impl::note_released(const event& e) {
    released = {true, e};
    const failure why = session::release_result(e, instances, to_failure(call_error));
    meter.released(why);
    emit(lock_event_kind::released, lock_event::any_instance, to_error_code(why), 0);
}

// A hold acquire() has not told of ends as the call's verdict: the observer, which heard its
// attempt succeed, hears it end (held for no time, as far as the caller goes), and nothing
// else does.
void lock::impl::note_lost(const event& e) {
    const std::error_code code = make_error_code(e.code);
    if (hold_untold) {
        if (options.on_event) {
            push_event(lock_event{lock_event_kind::lost, lock_event::any_instance, code,
                                  core.valid_until_ms(), 0, options.name});
        }
        return;
    }
    meter.lost(e.code);
    emit(lock_event_kind::lost, lock_event::any_instance, code, core.valid_until_ms());
    lost_flag = true;
    lost_code = e.code;
    notice = {true, hold_serial, e.code};
    notice_changed.notify_all();
}

void lock::impl::drain_events() {
    event e;
    while (core.poll_event(e)) {
        switch (e.type) {
            case event_type::acquired:
                note_attempt(&e);
                acquired = {true, {}};
                last_hold.fence = e.fence;
                last_hold.valid_until_ms = e.valid_until_ms;
                lost_flag = false;
                lost_code = errc::ok;
                break;
            case event_type::acquire_failed:
                note_attempt(&e);
                guard_until_ms = e.guard_until_ms;
                acquired = {true, to_error_code(session::acquire_result(e, instances,
                                                                        to_failure(call_error)))};
                break;
            case event_type::renewed:
                meter.renewed(e.valid_until_ms, now_ms());
                emit(lock_event_kind::renewed, lock_event::any_instance, {}, e.valid_until_ms);
                break;
            case event_type::lost: note_lost(e); break;
            case event_type::released: note_released(e); break;
        }
    }
    note_attempt(nullptr);
}

// An attempt ended: with an event (the acquire's verdict), or by a move to backing_off,
// which has none. Each is told once: a verdict after the backoff (the wait ran out, a
// cancel) ends no attempt of its own, but a grant (a release handed the waiter the lock,
// lock.hpp "Fair waiting") ends the wait as its successful attempt would have.
void lock::impl::note_attempt(const event* ended) {
    if (!options.on_event) return;
    const bool granted = ended != nullptr && ended->type == event_type::acquired && hold_untold;
    if (core.attempts() == attempts_reported && !granted) return;
    if (ended == nullptr && core.state() != lock_state::backing_off) return;
    attempts_reported = core.attempts();
    if (ended != nullptr && ended->type == event_type::acquired) {
        return emit(lock_event_kind::attempt, lock_event::any_instance, {}, ended->valid_until_ms);
    }
    event failed;
    failed.type = event_type::acquire_failed;
    failed.code = ended != nullptr ? ended->code : core.last_cause();
    failed.cause = ended != nullptr ? ended->cause : core.last_cause();
    const failure why = session::acquire_result(failed, instances, to_failure(call_error));
    emit(lock_event_kind::attempt, lock_event::any_instance, to_error_code(why), 0);
}

void lock::impl::emit(lock_event_kind kind, std::size_t instance, std::error_code code,
                      std::int64_t valid_until_ms) {
    if (!options.on_event) return;  // no observer: nothing gathered
    const std::int64_t now = now_ms();
    std::int64_t elapsed_ms = 0;
    if (kind == lock_event_kind::attempt) elapsed_ms = meter.since_acquire_started_ms(now);
    if (kind == lock_event_kind::renewed || kind == lock_event_kind::lost ||
        kind == lock_event_kind::released) {
        elapsed_ms = meter.held_for_ms(now);
    }
    push_event(lock_event{kind, instance, code, valid_until_ms, elapsed_ms, options.name});
}

void lock::impl::push_event(const lock_event& e) {
    if (pending_count == pending_events.size()) {
        ++events_dropped;
        return;
    }
    pending_events[pending_count++] = e;
}

// Instance i reaches a ready connection: its link is counted, and the lock told `connected`
// unless it was already (a cluster lock moving between ready nodes stays connected).
void lock::impl::note_connected(std::uint8_t i) {
    const blocking_connection* l = instance_link(i);
    if (l == nullptr || !l->connection().ready()) return;
    note_link_ready(cluster ? place.route().home : i);
    if (connection_up[i]) return;
    connection_up[i] = true;
    emit(lock_event_kind::connected, i, {}, 0);
}

// Link k's connection is ready: counted once per connection (session::lock_meter::connected).
void lock::impl::note_link_ready(std::uint8_t k) {
    const blocking_connection& l = link_at(k);
    if (link_counted[k] || !l.connection().ready()) return;
    link_counted[k] = true;
    const session::link_kind kind =
        cluster ? session::link_kind::node : session::link_kind::followed_master;
    meter.connected(link_records[k], kind, l.connection().address());
}

// A connection that ended, or one that could not be made (never up: `why` says so).
void lock::impl::note_disconnected(std::uint8_t i, std::error_code why, bool renewal_dropped) {
    const bool was_up = connection_up[i];
    connection_up[i] = false;
    if (!was_up && !why) return;  // a sentinel's answer: the connection only moved on
    emit(lock_event_kind::disconnected, i, why, 0);
    if (renewal_dropped && core.state() == lock_state::held) {
        note_renewal_failed(i, why ? why : make_error_code(transport_errc::connection_closed));
    }
}

std::size_t lock::impl::take_events(std::array<lock_event, lock_events_pending_max>& out) {
    const std::size_t count = pending_count;
    std::copy_n(pending_events.begin(), count, out.begin());
    pending_count = 0;
    return count;
}

// Without the mutex: the observer may take as long as it must (it holds up only this lock's
// I/O, which is this thread's), and accessors on other threads go on meanwhile.
void lock::impl::call_on_event(const std::array<lock_event, lock_events_pending_max>& events,
                               std::size_t count) const {
    for (std::size_t k = 0; k < count; ++k) options.on_event(events[k]);
}

void lock::impl::deliver_events(std::unique_lock<std::mutex>& held) {
    if (pending_count == 0) return;
    std::array<lock_event, lock_events_pending_max> due;
    const std::size_t count = take_events(due);
    held.unlock();
    call_on_event(due, count);
    held.lock();
}

}  // namespace edgelock::blocking
