// SPDX-License-Identifier: Apache-2.0
// A client of a Redis Cluster deployment (workload.hpp): the slot map, its reads and the
// nodes' links kept by session/cluster_links.hpp, the lock's route (cluster_route.hpp) and a
// connection per node index, as the clients keep and drive them.
#include <array>
#include <string>

#include "edgelock/assert.hpp"
#include "edgelock/session/cluster.hpp"
#include "edgelock/session/cluster_links.hpp"
#include "edgelock/session/cluster_route.hpp"
#include "edgelock/session/lock_traffic.hpp"
#include "edgelock/sim/addresses.hpp"
#include "edgelock/sim/workload.hpp"
#include "edgelock/sim/world.hpp"
#include "request_sink.hpp"

namespace edgelock::sim {
namespace {

// Who a request on a cluster connection is for (session::in_flight::owner): the lock, or the
// map (a CLUSTER SLOTS the client wrote).
constexpr std::uint32_t lock_owner = 0;
constexpr std::uint32_t map_owner = session::cluster_links::map_owner;
constexpr std::uint8_t no_node = session::slot_map::no_master;
// The seeds a deployment lists: the three masters it was created with.
constexpr std::array<std::uint8_t, 3> seed_nodes = {0, 2, 4};
constexpr std::size_t cluster_slots_request_bytes_max = 64;

std::string text_of(const session::node_address& address) {
    return std::string(session::format_address(address).view());
}

}  // namespace

void client::setup_cluster(const session::connection_setup& s) {
    cluster_ = true;
    cluster_setup_ = s;
    place_ = session::lock_links::in_cluster(lock_name_);
    links_.set_faults(&faults_);
    std::array<session::node_address, seed_nodes.size()> seeds{};
    for (std::size_t n = 0; n < seeds.size(); ++n) seeds[n] = address_of_node(seed_nodes[n]);
    const bool seeded = links_.set_seeds(seeds.data(), seeds.size());
    EDGELOCK_ASSERT(seeded);
    // The first seed's link; tend_map makes the others' when the map must be read elsewhere.
    ensure_cluster_connection(links_.seed());
}

// The connection of node index `index`, set up at the address cluster_links keeps for it. The
// map keeps a node's index while the client says it is in use (every node with a connection
// is, and the table has room for every node of the simulated cluster), so an index never
// changes node.
void client::ensure_cluster_connection(std::uint8_t index) {
    EDGELOCK_ASSERT(index < cluster_connections_.size());
    if (!links_.needs_setup(index)) return;
    // An index the map gave to another node (its connection was idle) is set up anew.
    EDGELOCK_ASSERT(cluster_connections_[index].state() == session::connection_state::idle);
    session::connection_setup s = cluster_setup_;
    s.node = &links_.set_up(index);
    s.seed = rng_.next();
    s.read_node = world_.config().restart_guard;
    cluster_connections_[index].setup(world_, *this, id_, index, s, world_.params().write_window);
}

bool client::map_read_wanted() const {
    return cluster_ && links_.read_wanted(linking_, lock_.has_request(0));
}

bool client::wants(const sim_connection& c) const {
    if (cluster_) return wants_link(c.instance());
    return session::link_wanted(linking_, lock_.has_request(c.instance()));
}

// A node's link opens by itself only when an eager client keeps it up; otherwise the requests
// (send_cluster_requests) or a read (tend_map) open it, as in both clients.
bool client::opens(const sim_connection& c) const {
    if (cluster_) return links_.kept_up(linking_, c.instance());
    return session::opens_by_itself(linking_);
}

bool client::wants_link(std::uint8_t k) const {
    const std::uint8_t target = place_.next_node(lock_, links_);
    const bool read_due = map_read_wanted() && links_.read_due(now_ms());
    const bool ready = links_.linked(k) && cluster_connections_[k].connection().ready();
    return links_.wanted(linking_, k, target, read_due, ready);
}

class client::cluster_port final : public session::node_port {
public:
    explicit cluster_port(client& c) : c_(c) {}

    const session::connection* link(std::uint8_t k) const override {
        return c_.links_.linked(k) ? &c_.cluster_connections_[k].connection() : nullptr;
    }
    void open(std::uint8_t k) override {
        c_.ensure_cluster_connection(k);
        c_.cluster_connections_[k].settle(c_.now_ms(), true);
    }
    bool send_map_read(std::uint8_t k) override { return c_.send_map_read(k); }
    void stop(std::uint8_t k) override {
        c_.cluster_connections_[k].stop();
        c_.place_.link_lost(k);
        if (c_.world_.recording())
            c_.world_.note_client(c_.id_, "link to " + text_of(c_.links_.address(k)) + " pruned");
    }
    std::uint32_t routed() const override { return c_.place_.routes(); }

private:
    client& c_;
};

// The map's drive is the session's (cluster_links::tend_map), as in both clients. With no node
// to read it from now and none named for the lock's slot, a client linking on demand fails the
// lock's requests at once (as the blocking client does); an eager one waits for its links.
void client::read_map_if_due() {
    cluster_port port(*this);
    const session::map_tending tended =
        links_.tend_map(port, linking_, lock_.has_request(0), now_ms());
    if (tended == session::map_tending::unreachable && linking_ == session::linking::on_demand &&
        place_.target(links_).node == no_node)
        give_up_cluster_requests();
}

// Requests still in flight are answered on their link: what is queued waits for them.
void client::give_up_cluster_requests() {
    if (!lock_.has_request(0) || lock_.requests_in_flight(0) > 0) return;
    drain();
    const errc given_up = session::give_up_unsent(lock_, 0, now_ms());
    if (given_up != errc::ok) anomaly("on_io_error", given_up);
    drain();
}

// CLUSTER SLOTS on node `index`'s ready connection, tracked as the map's.
bool client::send_map_read(std::uint8_t index) {
    std::array<char, cluster_slots_request_bytes_max> request{};
    const std::size_t size = session::write_cluster_slots(request.data(), request.size());
    EDGELOCK_ASSERT(size > 0);
    const bool tracked = cluster_connections_[index].connection().track(map_owner, 0, now_ms());
    EDGELOCK_ASSERT(tracked);
    cluster_connections_[index].send(std::string(request.data(), size));
    return true;
}

// The lock's queued requests go where its route says (lock_links::route_writes), each after
// ASKING while an ASK is in force. The lock hears the start of the node it writes to first,
// as on a new connection, when that connection has read it already (else on_node_read tells
// it).
bool client::send_cluster_requests() {
    read_map_if_due();
    if (!lock_.has_request(0) || cluster_quiet()) return false;
    const session::lock_writes writes = place_.route_writes(lock_, links_, now_ms());
    const session::route_step& step = writes.step;
    if (step.code == errc::events_pending) return true;  // drain, then come again
    if (step.code != errc::ok) anomaly("on_io_error", step.code);
    if (step.code != errc::ok || step.to.node == no_node) return false;
    ensure_cluster_connection(step.to.node);
    sim_connection& to = cluster_connections_[step.to.node];
    // As the client's linking says (session/linking.hpp): on demand the link is made now for
    // the requests, which fail at once inside its reconnect delay; an eager link made now
    // connects by itself, and they wait for it.
    session::queued_step queued = session::step_for_queued(linking_, to.connection(), now_ms());
    if (queued == session::queued_step::connect) to.settle(now_ms(), true);
    if (queued == session::queued_step::write) to.settle(now_ms(), opens(to));
    queued = session::step_for_queued(linking_, to.connection(), now_ms());
    if (queued == session::queued_step::give_up) {
        give_up_cluster_requests();
        return false;
    }
    if (step.moved && world_.recording()) {
        world_.note_client(id_, "lock routed to " + text_of(links_.address(step.to.node)) +
                                    (writes.failed_over ? " (a failover)" : ""));
    }
    drain();
    const errc told = place_.hear_start(lock_, step.to.node, to.connection(),
                                        world_.config().restart_guard, now_ms());
    if (told != errc::ok) anomaly("on_node_started", told);
    drain();
    request_sink sink;
    sink.deletes_without_compare = behaviour_ == behaviour::deletes_without_compare;
    sink.lock_name = lock_name_;
    sink.to = &to;
    const session::write_report written = session::write_requests(
        lock_, 0, to.connection(), lock_owner, 0, now_ms(), sink, step.to.asking);
    EDGELOCK_ASSERT(written.stop != session::write_stop::failed);
    after_sending(sink.sent_acquire, sink.sent_renew);
    return sink.sent > 0;
}

// The clients' schedule (session/cluster_links.hpp, "work"): the requests wait while nothing
// is in flight on any link and no link has work it can do now (a wanted link in its reconnect
// delay waits for its end, which reschedule() wakes the client for).
bool client::cluster_quiet() const {
    for (std::uint8_t k = 0; k < cluster_connections_.size(); ++k) {
        const session::connection& c = cluster_connections_[k].connection();
        if (links_.linked(k) && c.requests_in_flight() > 0) return false;
        if (!wants_link(k)) continue;
        if (!links_.linked(k) || c.accepts_requests() || c.may_start(now_ms())) return false;
    }
    return true;
}

// A map read's reply (from a node that may be out of date itself), or a reply to one of the
// lock's requests: a redirect followed, anything else the lock's.
void client::on_cluster_answer(std::uint8_t index, const session::in_flight& entry,
                               const reply_node* nodes, std::size_t count) {
    if (entry.owner == map_owner) {
        const cluster_port port(*this);
        const failure unread =
            links_.read_answered(index, nodes, count, links_.in_use(port), now_ms());
        if (world_.recording()) {
            world_.note_client(id_, std::string("slot map read from ") +
                                        text_of(links_.address(index)) + ": " +
                                        (unread ? describe(unread) : std::string("ok")));
        }
        // A client linking on demand fails what no read soon routes, as the blocking one does.
        const bool routed = place_.target(links_).node != no_node;
        if (links_.route_lost_after_read(linking_, unread, routed)) give_up_cluster_requests();
        return;
    }
    drain();  // the lock refuses input while events wait
    failure last;
    const errc code = place_.answer(lock_, index, nodes[0], &links_, now_ms(), last);
    if (code != errc::ok && code != errc::error_reply) anomaly("on_reply", code);
    drain();
}

// One map read is in flight at most: a dropped one is it.
void client::on_dropped(std::uint8_t, const session::in_flight& entry) {
    if (cluster_ && entry.owner == map_owner) links_.read_lost(now_ms());
}

// A node's connection that ended may mean a node that moved on: the map is read again
// (cluster_links::link_ended), whether or not the lock hears of it.
void client::on_link_ended(const session::connection_end& closed) {
    if (cluster_) links_.link_ended(closed);
}

// The lock hears of its own node's only.
void client::on_cluster_connection_end(std::uint8_t index) {
    drain();
    const errc code =
        place_.link_closed(lock_, index, cluster_connections_[index].connection(), true, now_ms());
    if (code != errc::ok) anomaly("on_io_error", code);
    drain();
}

// Fair waiting: the subscriber listens where session::cluster_links::subscriber_move says, as
// in both clients. A move closes the old connection (its subscription ends with it); the next
// one subscribes there. False while the map has named no master for the slot yet.
bool client::place_cluster_subscriber() {
    const std::uint8_t m = links_.subscriber_move(place_.route().slot,
                                                  subscriber_placed_ ? &subscriber_node_ : nullptr);
    if (m == no_node) return subscriber_placed_;
    if (subscriber_placed_ && subscriber_.state() != session::connection_state::idle) {
        subscriber_.connection().close(failure::of(transport_errc::master_changed), now_ms(), true);
        subscriber_.settle(now_ms(), false);
    }
    subscriber_node_ = links_.map().node(m);
    session::connection_setup s = cluster_setup_;
    s.node = &subscriber_node_;
    s.kind = session::connection_kind::subscriber;
    s.seed = rng_.next();
    s.read_node = false;
    s.refuse_evicting = false;
    s.faults = nullptr;  // the fault points are the lock connections'
    subscriber_.setup(world_, *this, id_, m, s, 0, lane::subscriber);
    subscriber_placed_ = true;
    return true;
}

}  // namespace edgelock::sim
