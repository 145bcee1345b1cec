// SPDX-License-Identifier: Apache-2.0
// The async client's metrics and event hook: each lock's meter (session/lock_metrics.hpp)
// hears its verdicts, renewals, losses and releases; the client's own meter hears the
// instances' connections; client_config::on_event hears all of it as it happens.
#include "client_impl.hpp"
#include "edgelock/session/outcome.hpp"

namespace edgelock::async {
namespace detail {

void client_impl::tell(lock_event_kind kind, std::size_t instance, std::error_code code,
                       std::int64_t valid_until_ms, std::int64_t elapsed_ms,
                       std::string_view lock) const {
    if (!config_.on_event) return;
    config_.on_event(lock_event{kind, instance, code, valid_until_ms, elapsed_ms, lock});
}

// A reentrant acquire is counted, but told as no attempt: it made none (as the blocking
// client, which tells attempts only).
client_impl::attempt_told client_impl::end_acquire(lock_entry& e, std::error_code heard,
                                                   std::int64_t now) {
    attempt_told told;
    told.to_tell = e.meter.acquiring() && config_.on_event;
    told.heard = heard;
    told.valid_until_ms = heard ? 0 : e.core.valid_until_ms();
    told.elapsed_ms = e.meter.since_acquire_started_ms(now);
    if (told.to_tell) told.lock.assign_prefix(e.core.name());
    e.meter.acquire_ended(to_failure(heard), e.core.attempts(), e.core.valid_until_ms(), now);
    return told;
}

void client_impl::tell_attempt(const attempt_told& told) const {
    if (!told.to_tell) return;
    tell(lock_event_kind::attempt, lock_event::any_instance, told.heard, told.valid_until_ms,
         told.elapsed_ms, told.lock.view());
}

void client_impl::note_acquire_ended(lock_entry& e, std::error_code heard, std::int64_t now) {
    tell_attempt(end_acquire(e, heard, now));
}

void client_impl::note_renewed(lock_entry& e, const event& ev, std::int64_t now) {
    ++e.renewals;
    e.meter.renewed(ev.valid_until_ms, now);
    tell(lock_event_kind::renewed, lock_event::any_instance, {}, ev.valid_until_ms,
         e.meter.held_for_ms(now), e.core.name());
}

void client_impl::note_renewal_failed(lock_entry& e, std::uint8_t instance, std::error_code code) {
    e.meter.renewal_failed();
    tell(lock_event_kind::renewal_failed, instance, code, e.core.valid_until_ms(), 0,
         e.core.name());
}

void client_impl::note_lost(lock_entry& e, errc why) {
    e.meter.lost(why);
    tell(lock_event_kind::lost, lock_event::any_instance, make_error_code(why),
         e.core.valid_until_ms(), e.meter.held_for_ms(now_ms()), e.core.name());
}

void client_impl::note_released(lock_entry& e, std::error_code heard) {
    e.meter.released(to_failure(heard));
    if (!config_.on_event) return;  // spares the clock read
    tell(lock_event_kind::released, lock_event::any_instance, heard, 0,
         e.meter.held_for_ms(now_ms()), e.core.name());
}

// A request given up with its connection: remembered, so that the connection's end counts
// one renewal failure per lock, as the blocking client does (note_renewal_cut_off).
void client_impl::on_request_dropped(std::uint8_t link, std::uint32_t index) {
    if (index == map_read_owner) return on_map_read_lost();
    on_request_done(index);
    if (index >= locks_.capacity()) return;
    lock_entry& e = locks_[index];
    if (e.in_use) e.dropped_mask |= link_set{1} << link;
}

// Link `link`'s connection ended: a held lock that had requests on it, or queued ones the
// link cannot take now (the reconnect delay), failed its part of a renewal there, once.
void client_impl::note_renewal_cut_off(lock_entry& e, std::uint8_t link) {
    const link_set bit = link_set{1} << link;
    const bool dropped = (e.dropped_mask & bit) != 0;
    e.dropped_mask &= ~bit;
    const std::uint8_t instance = instance_on(e, link);
    const asio_connection& c = *connections_[link];
    const bool unsent =
        e.core.has_request(instance) && session::unreachable_now(c.connection(), now_ms());
    if (e.core.state() != lock_state::held || (!dropped && !unsent)) return;
    const std::error_code why = c.last_error();
    note_renewal_failed(e, instance,
                        why ? why : make_error_code(transport_errc::connection_closed));
}

// A link of a cluster reaches one node (an index the map gives to another node is another
// link: no reconnect); an instance's follows its master (Sentinel).
void client_impl::note_connected(std::uint8_t link) {
    const node_address& reached = connections_[link]->connection().address();
    const session::link_kind kind =
        cluster_ ? session::link_kind::node : session::link_kind::followed_master;
    connection_meter_.connected(link_records_[link], kind, reached);
    tell(lock_event_kind::connected, link, {}, 0, 0, {});
}

// Told when lock traffic flowed on it, or an attempt failed; a connection that only moved
// on (a sentinel's answer, to the master it named) is no disconnection.
void client_impl::note_disconnected(std::uint8_t link, const session::connection_end& closed) {
    if (!closed.was_ready && !closed.why) return;
    tell(lock_event_kind::disconnected, link, to_error_code(closed.why), 0, 0, {});
}

// A lock leaves the table: its counts stay in the client's (a gauge is no history).
void client_impl::retire_counts(lock_entry& e) noexcept {
    session::lock_metrics counted = e.meter.counts();
    counted.requests_in_flight = 0;
    retired_counts_.add(counted);
    e.meter = session::lock_meter{};
}

session::lock_metrics client_impl::metrics() const noexcept {
    session::lock_metrics total = retired_counts_;
    total.add(connection_meter_.counts());
    for (std::uint32_t index = 0; index < locks_.capacity(); ++index) {
        if (locks_[index].in_use) total.add(locks_[index].meter.counts());
    }
    total.requests_in_flight = 0;
    for (std::size_t i = 0; i < links_; ++i) {
        if (connections_[i])
            total.requests_in_flight += connections_[i]->connection().requests_in_flight();
    }
    return total;
}

session::lock_metrics client_impl::metrics(lock_handle handle) const noexcept {
    const lock_entry* e = locks_.find(handle);
    if (e == nullptr) return {};
    session::lock_metrics counted = e->meter.counts();
    counted.requests_in_flight = e->requests_in_flight;
    return counted;
}

}  // namespace detail

session::lock_metrics client::metrics() const noexcept { return impl_->metrics(); }

session::lock_metrics client::metrics(lock_handle handle) const noexcept {
    return impl_->metrics(handle);
}

}  // namespace edgelock::async
