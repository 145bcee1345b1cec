// SPDX-License-Identifier: Apache-2.0
// The blocking client in a Redis Cluster: the slot map, its reads and the nodes' links as
// session/cluster_links.hpp rules them (a connection per node of the map made on first use),
// and the lock's way to the master of its slot (session/lock_links.hpp: MOVED and ASK
// followed, a move heard as a change of connection). The lock is instance 0 throughout; its
// connection is the route's home.
#include <array>

#include "hiredis_lock_impl.hpp"
#include "edgelock/assert.hpp"
#include "edgelock/keys.hpp"

namespace edgelock::blocking {
namespace {

using session::slot_map;

// CLUSTER SLOTS as a request: "*2\r\n$7\r\nCLUSTER\r\n$5\r\nSLOTS\r\n" with room to spare.
constexpr std::size_t map_request_bytes_max = 64;

}  // namespace

// Every seed in the map (its index kept for the first reads) with a connection set up for it;
// no traffic until the first acquire(). The subscriber is set up when a wait needs it, on the
// slot's master as the map says then.
std::error_code lock::impl::configure_cluster() {
    cluster = true;
    place = session::lock_links::in_cluster(options.name);
    // validate() allows fewer seeds than the map has nodes.
    const bool seeded = links.set_seeds(where.seeds.data(), where.seeds.size());
    EDGELOCK_ASSERT(seeded);
    for (std::size_t s = 0; s < links.seed_count(); ++s, links.next_seed()) {
        if (!set_up_node_link(links.seed())) return make_error_code(errc::invalid_config);
    }
    if (!options.fair) return {};
    std::array<char, key_bytes_max> line{};  // the waiters' channels begin with it
    if (write_companion_key(options.name, companion::queue, line.data(), line.size()) == 0)
        return make_error_code(errc::invalid_name);
    fair = true;
    subscriber_hooks.owner = this;
    return {};
}

// Connection k reaches the node the map has at index k. An index the map gave to another node
// (only while its connection was idle: the map's reads keep the ones in use) is set up again.
bool lock::impl::set_up_node_link(std::uint8_t k) {
    blocking_connection& l = node_links[k];
    if (!links.needs_setup(k)) return node_link_set_up[k];
    if (links.linked(k) && l.connection().state() != session::connection_state::idle) return false;
    link_records[k] = {};  // another node's link now: its first connection is no reconnect
    link_counted[k] = false;
    node_hooks[k].owner = this;
    node_hooks[k].k = k;
    const session::node_address& node = links.set_up(k);
    node_link_set_up[k] = l.setup(where.node_setup(node, link_seed + k), node_hooks[k], &tls,
                                  session::cluster_reply_nodes_max) == errc::ok;
    return node_link_set_up[k];
}

const blocking_connection* lock::impl::instance_link(std::uint8_t i) const {
    if (!cluster) return &connections[i];
    const std::uint8_t home = place.route().home;
    return home == slot_map::no_master ? nullptr : &node_links[home];
}

// The map is read only for a lock that has requests to route: a stale map of an idle lock
// waits for its next acquire() or renewal.
bool lock::impl::map_wanted() const {
    return cluster && links.read_wanted(linking, core.has_request(0));
}

// In a cluster: the node the lock's requests go to next, linked or not yet (a promoted
// replica, an importing master: send_cluster_requests() links it) once its requests in flight
// elsewhere came back (lock_links::next_node), and while a read of the map is due, a ready
// connection to carry it or the seed tend_map() makes next (only that one: the others would
// wake the loop for nothing while it connects).
bool lock::impl::wants_link(std::uint8_t k) const {
    if (!cluster) return session::link_wanted(linking, core.has_request(k));
    return links.wanted(linking, k, place.next_node(core, links),
                        map_wanted() && links.read_due(now_ms()), node_links[k].ready());
}

// The map first (its read goes out before the lock's requests, which may need it), then the
// lock's requests on its route's node, made on demand.
void lock::impl::send_cluster_requests(std::unique_lock<std::mutex>& held) {
    tend_map(held);
    if (!core.has_request(0)) return;
    drain_events();  // the core refuses input while its event queue lacks room
    const session::lock_writes writes = place.route_writes(core, links, now_ms());
    const session::route_step& step = writes.step;
    EDGELOCK_ASSERT(step.code == errc::ok);
    drain_events();
    const std::uint8_t k = step.to.node;
    // No node known (the map is read again: begin_writes marked it stale), or requests still
    // out on the node the lock leaves.
    if (k == slot_map::no_master) return;
    if (!set_up_node_link(k)) {
        // A node in use keeps its index, so only a connection that cannot be set up (no
        // memory) comes here: the requests fail rather than wait on it.
        note_error(0, failure::of(transport_errc::out_of_memory));
        return give_up_unsent(0);
    }
    if (step.moved) tell_moved(writes);
    blocking_connection& l = node_links[k];
    if (l.closed_while_idle(now_ms())) {
        l.settle(now_ms(), false);
        if (!core.has_request(0)) return;
    }
    // Made now for the requests, which fail at once inside its reconnect delay (linking.hpp).
    if (session::step_for_queued(linking, l.connection(), now_ms()) ==
        session::queued_step::connect)
        l.settle(now_ms(), true, &held);
    if (session::step_for_queued(linking, l.connection(), now_ms()) ==
        session::queued_step::give_up)
        return give_up_unsent(0);
    hear_node_start(k);
    write_requests(0, step.to.asking);
}

// The lock writes on the node `writes` moved it to from now on. A move off a node whose
// connection ended since the lock came to it is a failover (the metrics).
void lock::impl::tell_moved(const session::lock_writes& writes) {
    if (writes.failed_over) meter.failed_over();
    note_connected(0);  // told `connected` if the lock had lost its connection with the old node
}

// Before writing on node k: the lock hears the start its connection read, when it has not yet
// (it moved there, or the connection is new), as the async client and the simulator do.
void lock::impl::hear_node_start(std::uint8_t k) {
    const session::connection& c = node_links[k].connection();
    if (place.heard_start(k) || !c.knows_node()) return;
    starts[0] = c.started();
    start_known[0] = true;
    drain_events();
    const errc told = place.hear_start(core, k, c, options.restart_guard, now_ms());
    EDGELOCK_ASSERT(told == errc::ok);
    drain_events();
}

class lock::impl::cluster_port final : public session::node_port {
public:
    // `held`: the mutex a connect lets go of meanwhile (null: nothing is opened).
    cluster_port(impl& lock, std::unique_lock<std::mutex>* held) : lock_(lock), held_(held) {}

    const session::connection* link(std::uint8_t k) const override {
        if (!lock_.links.linked(k) || !lock_.node_link_set_up[k]) return nullptr;
        return &lock_.node_links[k].connection();
    }
    // Connects now (the mutex is let go meanwhile); the map is read once it is ready.
    void open(std::uint8_t k) override {
        if (held_ != nullptr && lock_.set_up_node_link(k))
            lock_.node_links[k].settle(now_ms(), true, held_);
    }
    bool send_map_read(std::uint8_t k) override { return lock_.send_map_read(k); }
    // A pruned link's next connection is its node's first since then, as after an end.
    void stop(std::uint8_t k) override {
        lock_.node_links[k].stop();
        lock_.link_counted[k] = false;
        lock_.place.link_lost(k);
    }
    std::uint32_t routed() const override { return lock_.place.routes(); }

private:
    impl& lock_;
    std::unique_lock<std::mutex>* held_;
};

// The map's drive is the session's (cluster_links::tend_map), after the connections the server
// closed while they were idle are settled (they read as ready). An on-demand client wants the
// map only for a lock with requests to route; with no node to read it from now, they fail.
void lock::impl::tend_map(std::unique_lock<std::mutex>& held) {
    settle_closed_while_idle();
    cluster_port port(*this, &held);
    const bool requests = core.has_request(0);
    if (links.tend_map(port, linking, requests, now_ms()) == session::map_tending::unreachable)
        no_slot_map();
}

void lock::impl::settle_closed_while_idle() {
    for (std::uint8_t k = 0; k < session::cluster_masters_max; ++k) {
        blocking_connection& l = node_links[k];
        if (links.linked(k) && l.ready() && l.closed_while_idle(now_ms()))
            l.settle(now_ms(), false);
    }
}

// CLUSTER SLOTS on node k's ready connection, tracked as the map's (map_owner). A write that
// fails settles the connection, which is then no longer ready.
bool lock::impl::send_map_read(std::uint8_t k) {
    std::array<char, map_request_bytes_max> request{};
    const std::size_t size = session::write_cluster_slots(request.data(), request.size());
    EDGELOCK_ASSERT(size > 0);
    blocking_connection& l = node_links[k];
    const std::int64_t now = now_ms();
    if (!l.write_all(request.data(), size, now)) {
        l.settle(now, false);
        return false;
    }
    const bool tracked = l.connection().track(map_owner, 0, now);
    EDGELOCK_ASSERT(tracked);  // the in-flight storage has room for it (blocking_connection)
    links.read_sent(k);
    return true;
}

void lock::impl::on_node_answer(std::uint8_t k, const session::in_flight& entry,
                                const reply_node* nodes, std::size_t count) {
    if (entry.owner == map_owner) return on_slots_answer(k, nodes, count);
    on_cluster_answer(k, nodes[0]);
}

// The map as node k sees it. Nodes whose connections are not idle keep their indices. A map
// that cannot be read stays stale (read again after the gap, until the attempt ends with
// no_slot_map); one without a master for the lock's slot fails the requests at once.
void lock::impl::on_slots_answer(std::uint8_t k, const reply_node* nodes, std::size_t count) {
    const cluster_port port(*this, nullptr);
    const failure unread = links.read_answered(k, nodes, count, links.in_use(port), now_ms());
    const bool routed = place.target(links).node != slot_map::no_master;
    const bool hopeless = unread == failure::of(transport_errc::too_many_masters);
    if (unread && (!routed || hopeless)) note_error(0, unread);
    if (!links.route_lost_after_read(linking, unread, routed)) return;
    // Requests still in flight are answered on their link: what is queued waits for them.
    if (core.requests_in_flight(0) > 0) return;
    if (unread) return give_up_unsent(0);
    no_slot_map();
}

// A reply to the lock's request from node k (its home: the route moves only with nothing in
// flight). Redirects are followed (session::lock_links::answer), the rest is the lock's.
void lock::impl::on_cluster_answer(std::uint8_t k, const reply_node& node) {
    note_connected(0);
    const bool renewing = core.state() == lock_state::held;
    failure refused;
    session::error_text text;
    drain_events();  // the core refuses a reply while its event queue lacks room
    const errc code = place.answer(core, k, node, &links, now_ms(), refused, &text);
    EDGELOCK_ASSERT(code != errc::events_pending);
    meter.redirected(place.route().followed);
    if (refused) note_error(0, refused, &text);
    if (refused && renewing) note_renewal_failed(0, last_errors[0]);
    drain_events();
}

// A connection to a node ended: the map may be out of date (a failover, a node gone). The
// lock hears it when it was its home's; a seed's that failed while the map was looked for is
// the lock's no_slot_map.
void lock::impl::on_node_end(std::uint8_t k, const session::connection_end& ended,
                             std::size_t dropped, bool lock_hears) {
    link_counted[k] = false;
    links.link_ended(ended);
    if (k == place.route().home) return on_connection_end(0, ended, dropped, lock_hears);
    // Not the lock's link: it hears nothing, but forgets what it heard of the node there.
    const errc forgot = place.link_closed(core, k, node_links[k].connection(), false, now_ms());
    EDGELOCK_ASSERT(forgot == errc::ok);
    if (ended.why && place.target(links).node == slot_map::no_master)
        note_error(0, failure::of(transport_errc::no_slot_map));
}

// The map has no master for the lock's slot (or none can be read now, and the map names
// none): the lock's queued requests fail at once with no_slot_map rather than at the
// attempt's end.
void lock::impl::no_slot_map() {
    // A stale map that still names the slot's master routes them: nothing failed.
    if (place.target(links).node != slot_map::no_master) return;
    // Requests still in flight are answered on their link: what is queued waits for them.
    if (core.requests_in_flight(0) > 0) return;
    note_error(0, failure::of(transport_errc::no_slot_map));
    give_up_unsent(0);
}

// Fair waiting: the subscriber listens where session::cluster_links::subscriber_move says. A
// move closes the old connection (its subscription ends with it); the next one subscribes there.
bool lock::impl::place_subscriber() {
    const std::uint8_t m = links.subscriber_move(place.route().slot,
                                                 subscriber_set_up ? &subscriber_address : nullptr);
    if (m == slot_map::no_master) return subscriber_set_up;
    if (subscriber_set_up && subscriber.connection().state() != session::connection_state::idle) {
        subscriber.connection().close(failure::of(transport_errc::master_changed), now_ms(), true);
        subscriber.settle(now_ms(), false);
    }
    subscriber_address = links.map().node(m);
    session::connection_setup setup =
        where.node_setup(subscriber_address, link_seed + session::cluster_masters_max);
    setup.kind = session::connection_kind::subscriber;
    setup.read_node = false;
    setup.refuse_evicting = false;
    subscriber_set_up = subscriber.setup(setup, subscriber_hooks, &tls) == errc::ok;
    return subscriber_set_up;
}

}  // namespace edgelock::blocking
