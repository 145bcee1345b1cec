// SPDX-License-Identifier: Apache-2.0
// The blocking client's instances: requests written on each connection (made on demand),
// answers, a node's start and a connection's end told to the core (session::lock_links says
// what the core hears, for an instance's connection and a cluster node's alike).
#include "hiredis_lock_impl.hpp"

#include "edgelock/assert.hpp"
#include "edgelock/session/lock_traffic.hpp"
#include "edgelock/session/reconnect.hpp"

namespace edgelock::blocking {

// Writes every queued request: first on the connections already open (so they are on their
// way before any slow connect), then on the ones that must be made.
void lock::impl::send_requests(std::unique_lock<std::mutex>& held) {
    if (cluster) return send_cluster_requests(held);
    for (int pass = 0; pass < 2; ++pass) {
        for (std::uint8_t i = 0; i < instances; ++i) {
            if (!core.has_request(i)) continue;
            blocking_connection& l = connections[i];
            // An idle connection the server closed (a restart) reads as ready: make it again
            // rather than lose the request on it. Its end is told to the core, whose WAITs
            // confirm only what their own connection wrote.
            if (l.closed_while_idle(now_ms())) {
                l.settle(now_ms(), false);
                if (!core.has_request(i)) continue;
            }
            // Connections are made on demand (a sentinel that cannot be reached is followed at
            // once by the next one), after the open ones were written. Within the reconnect
            // delay the instance fails at once, with its last error.
            const bool idle = l.connection().state() == session::connection_state::idle;
            if (idle && pass == 0) continue;
            session::queued_step step = session::step_for_queued(linking, l.connection(), now_ms());
            if (step == session::queued_step::connect) {
                l.settle(now_ms(), true, &held);
                step = session::step_for_queued(linking, l.connection(), now_ms());
            }
            if (step == session::queued_step::give_up) {
                give_up_unsent(i);
                continue;
            }
            write_requests(i);  // asking a sentinel: they wait for the master it names
        }
    }
}

namespace {

// The blocking socket as session::write_requests' sink: each request is sent before the next
// is encoded.
struct socket_sink {
    blocking_connection& to;
    std::int64_t now;
    std::array<char, request_bytes_max> buffer{};

    char* cursor() noexcept { return buffer.data(); }
    std::size_t room() const noexcept { return buffer.size(); }
    bool commit(std::size_t size) { return to.write_all(buffer.data(), size, now); }
};

}  // namespace

// Instance i's requests, on its connection (in a cluster, the route's home: after ASKING each
// when an ASK is in force).
void lock::impl::write_requests(std::uint8_t i, bool asking) {
    blocking_connection& l = cluster ? node_links[place.route().home] : connections[i];
    socket_sink sink{l, now_ms()};
    const session::write_report sent =
        session::write_requests(core, i, l.connection(), 0, 0, sink.now, sink, asking);
    if (sent.stop == session::write_stop::failed) l.settle(now_ms(), false);
}

// Reads connection k (an instance's; in a cluster, node k's).
void lock::impl::read_replies(std::uint8_t k) {
    blocking_connection& l = link_at(k);
    l.receive(now_ms());
    note_link_ready(k);
    if (!cluster) note_connected(k);
    if (cluster && k == place.route().home) note_connected(0);
    if (l.connection().state() == session::connection_state::closing) l.settle(now_ms(), false);
}

void lock::impl::on_answer(std::uint8_t i, const reply_node& node) {
    note_connected(i);
    const bool renewing = core.state() == lock_state::held;
    failure refused;
    session::error_text text;
    drain_events();  // the core refuses a reply while its event queue lacks room
    const errc code = place.answer(core, i, node, nullptr, now_ms(), refused, &text);
    // error_reply and unexpected_reply are kept in `refused`; nothing else refuses a reply.
    EDGELOCK_ASSERT(code != errc::events_pending);
    if (refused) note_error(i, refused, &text);
    if (refused && renewing) note_renewal_failed(i, last_errors[i]);
    drain_events();
}

// Link k's connection read its node (an instance's, or in a cluster node k's). The restart
// guard: the core hears the start of its own node's process before any request is written on
// the new connection (the connection holds them until now); another node's is heard when the
// lock moves there (send_cluster_requests).
void lock::impl::on_node_read(std::uint8_t k) {
    const session::connection& connection = link_at(k).connection();
    const std::uint8_t i = place.instance_on(k);
    if (i != session::lock_links::none) {
        note_connected(i);
        starts[i] = connection.started();
        start_known[i] = true;
        if (session::warns_of_eviction(options.eviction, connection) && options.on_warning)
            options.on_warning(i, session::eviction_warning(connection.node()).view());
    }
    drain_events();  // the core refuses input while its event queue lacks room
    const errc told =
        place.node_read(core, k, connection.started(), options.restart_guard, now_ms());
    EDGELOCK_ASSERT(told == errc::ok);
    drain_events();
}

void lock::impl::check_timeouts() {
    const std::int64_t now = now_ms();
    for (std::uint8_t k = 0; k < link_count(); ++k) {
        blocking_connection& l = link_at(k);
        if (!l.busy()) continue;
        if (l.timed_out(now)) l.settle(now, false);
    }
    if (fair && subscriber.busy() && subscriber.timed_out(now)) subscriber.settle(now, false);
}

// Instance i's connection (or an attempt at one) ended: its requests in flight are given up,
// and the core hears of it unless the connection only moved on (session::lock_hears_close), as
// session::lock_links tells it: queued requests too when the instance cannot be reached now.
void lock::impl::on_connection_end(std::uint8_t i, const session::connection_end& ended,
                                   std::size_t dropped, bool lock_hears) {
    if (!cluster) link_counted[i] = false;
    const std::uint8_t k = cluster ? place.route().home : i;
    const session::connection& connection = link_at(k).connection();
    const failure why = ended.why ? connection.last_error() : failure{};
    if (why) note_error(i, why);
    // A sentinel passed over (the lock does not hear it) ends no connection of the lock's.
    if (lock_hears || connection_up[i]) note_disconnected(i, to_error_code(why), dropped > 0);
    // One failure per connection end: one that dropped requests was counted just above.
    if (lock_hears && session::unreachable_now(connection, now_ms()) && core.has_request(i) &&
        dropped == 0)
        note_unsent_renewal(i);
    drain_events();  // the core refuses input while its event queue lacks room
    const errc heard = place.link_closed(core, k, connection, lock_hears, now_ms());
    EDGELOCK_ASSERT(heard == errc::ok);
    drain_events();
}

// Instance i cannot be reached: its queued requests fail now instead of at the round's
// deadline (session::give_up_unsent).
void lock::impl::give_up_unsent(std::uint8_t i) {
    if (!core.has_request(i)) return;  // the connection's end gave them up already
    note_unsent_renewal(i);
    const errc given_up = session::give_up_unsent(core, i, now_ms());
    EDGELOCK_ASSERT(given_up == errc::ok);
    drain_events();
}

// A renewal that waits for an instance that cannot be reached fails there.
void lock::impl::note_unsent_renewal(std::uint8_t i) {
    if (core.state() != lock_state::held) return;
    note_renewal_failed(i, last_errors[i]);
}

}  // namespace edgelock::blocking
