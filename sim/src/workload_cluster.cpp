// SPDX-License-Identifier: Apache-2.0
// A client of a Redis Cluster deployment (workload.hpp): the slot map, the lock's route and
// a connection per node index, driven by session/cluster.hpp and session/cluster_route.hpp as
// a real client drives them.
#include <array>
#include <string>

#include "edgelock/assert.hpp"
#include "edgelock/session/cluster.hpp"
#include "edgelock/session/cluster_route.hpp"
#include "edgelock/session/lock_traffic.hpp"
#include "edgelock/sim/addresses.hpp"
#include "edgelock/sim/workload.hpp"
#include "edgelock/sim/world.hpp"
#include "request_sink.hpp"

namespace edgelock::sim {
namespace {

// Who a request on a cluster connection is for (session::in_flight::owner).
constexpr std::uint32_t lock_owner = 0;
constexpr std::uint32_t map_owner = 1;  // a CLUSTER SLOTS the client wrote
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
    route_ = session::route_of(lock_name_);
    for (const std::uint8_t node : seed_nodes) {
        const std::uint8_t index = map_.add_node(address_of_node(node));
        EDGELOCK_ASSERT(index != no_node);
        ensure_cluster_connection(index);
    }
}

// The connection of node index `index`, set up at the map's first word of it. The map keeps a
// node's index while the client says it is in use (every node with a connection is, and the
// table has room for every node of the simulated cluster), so an index never changes node.
void client::ensure_cluster_connection(std::uint8_t index) {
    EDGELOCK_ASSERT(index < cluster_connections_.size());
    if (((cluster_made_ >> index) & 1u) != 0) {
        EDGELOCK_ASSERT(text_of(cluster_nodes_[index]) == text_of(map_.node(index)));
        return;
    }
    cluster_nodes_[index] = map_.node(index);
    session::connection_setup s = cluster_setup_;
    s.node = &cluster_nodes_[index];
    s.seed = rng_.next();
    s.read_node = world_.config().restart_guard;
    cluster_connections_[index].setup(world_, *this, id_, index, s, world_.params().write_window);
    cluster_made_ |= session::slot_map::node_set{1} << index;
}

// CLUSTER SLOTS on the lock's node when it is ready, else on the first ready connection.
void client::read_map_if_due() {
    if (!refresh_.due(map_, now_ms())) return;
    std::uint8_t on = no_node;
    const auto ready = [this](std::uint8_t i) {
        return i != no_node && ((cluster_made_ >> i) & 1u) != 0 &&
               cluster_connections_[i].connection().ready();
    };
    if (ready(route_.home)) on = route_.home;
    for (std::uint8_t i = 0; on == no_node && i < cluster_connections_.size(); ++i) {
        if (ready(i)) on = i;
    }
    if (on == no_node) return;
    std::array<char, cluster_slots_request_bytes_max> request{};
    const std::size_t size = session::write_cluster_slots(request.data(), request.size());
    EDGELOCK_ASSERT(size > 0);
    const bool tracked = cluster_connections_[on].connection().track(map_owner, 0, now_ms());
    EDGELOCK_ASSERT(tracked);
    cluster_connections_[on].send(std::string(request.data(), size));
    refresh_.sent();
    map_read_on_ = on;
}

// The lock's queued requests go where its route says (begin_writes), each after ASKING while
// an ASK is in force. A lock that moves hears the new node's start first, as on a new
// connection, when that connection has read it already (else node_started tells it).
bool client::send_cluster_requests() {
    read_map_if_due();
    if (!lock_.has_request(0)) return false;
    const session::route_step step = session::begin_writes(lock_, 0, route_, map_, now_ms());
    if (step.code == errc::events_pending) return true;  // drain, then come again
    if (step.code != errc::ok) anomaly("on_io_error", step.code);
    if (step.code != errc::ok || step.to.node == no_node) return false;
    ensure_cluster_connection(step.to.node);
    sim_connection& to = cluster_connections_[step.to.node];
    if (step.moved) {
        if (world_.recording())
            world_.note_client(id_, "lock routed to " + text_of(cluster_nodes_[step.to.node]));
        if (to.connection().accepts_requests()) {
            drain();
            const errc code = session::tell_node_started(lock_, 0, to.connection(),
                                                         world_.config().restart_guard, now_ms());
            if (code != errc::ok) anomaly("on_node_started", code);
            drain();
        }
    }
    request_sink sink;
    sink.deletes_without_compare = behaviour_ == behaviour::deletes_without_compare;
    sink.lock_name = lock_name_;
    sink.to = &to;
    const session::write_report written = session::write_requests(
        lock_, 0, to.connection(), lock_owner, 0, now_ms(), sink, step.to.asking);
    EDGELOCK_ASSERT(written.stop != session::write_stop::failed);
    if (sink.sent_acquire) reach(point::acquire_sent);
    if (sink.sent_renew && !paused()) reach(point::renew_sent);
    return sink.sent > 0;
}

// A map read's reply (from a node that may be out of date itself), or a reply to one of the
// lock's requests: a redirect followed, anything else the lock's.
void client::on_cluster_answer(std::uint8_t index, const session::in_flight& entry,
                               const reply_node* nodes, std::size_t count) {
    if (entry.owner == map_owner) {
        map_read_on_ = no_node;
        const errc code = map_.read_slots(nodes, count, cluster_nodes_[index], cluster_made_);
        refresh_.ended(now_ms());
        if (world_.recording()) {
            world_.note_client(id_, std::string("slot map read from ") +
                                        text_of(cluster_nodes_[index]) + ": " + to_string(code));
        }
        return;
    }
    drain();  // the lock refuses input while events wait
    failure last;
    const errc code = session::deliver_cluster_answer(lock_, 0, route_, map_, nodes[0],
                                                      cluster_nodes_[index], now_ms(), last);
    if (code != errc::ok && code != errc::error_reply) anomaly("on_reply", code);
    drain();
}

void client::on_dropped(std::uint8_t instance, const session::in_flight& entry) {
    if (!cluster_ || entry.owner != map_owner || instance != map_read_on_) return;
    map_read_on_ = no_node;
    refresh_.ended(now_ms());
}

// A lost connection may mean a node that moved on: the map is read again. The lock hears of
// its own node's only.
void client::on_cluster_connection_end(std::uint8_t index) {
    map_.mark_stale();
    if (index != route_.home) return;
    drain();
    const errc code =
        session::hear_close(lock_, 0, cluster_connections_[index].connection(), now_ms());
    if (code != errc::ok) anomaly("on_io_error", code);
    drain();
}

}  // namespace edgelock::sim
