// SPDX-License-Identifier: Apache-2.0
// The async client in a Redis Cluster deployment: a link per node of the slot map, made on first
// use; the map read with CLUSTER SLOTS (from a seed first, then from a ready link) and read
// again when stale; each lock's requests written to the node of its route. The rules are the
// session's (edgelock/session/cluster_links.hpp, cluster_route.hpp); this is their asio
// adapter.
#include "client_impl.hpp"

namespace edgelock::async::detail {

// The map, its seeds, and the first seed's link. Every other link is made when a lock or a map
// read first needs it.
void client_impl::build_cluster_links() {
    cluster_links_ = std::make_unique<session::cluster_links>();
    // validate() refused more seeds than the map holds.
    const bool seeded = cluster_links_->set_seeds(where_.seeds.data(), where_.seeds.size());
    EDGELOCK_ASSERT(seeded);
    map_failure_ = failure{};
    connections_.resize(links_);
    (void)make_link(cluster_links_->seed());
}

// The link of node `node`, made (and started) if new. Its connection points at the address
// cluster_links keeps for the index, which serves one node while the link is in use
// (cluster_links::in_use); a stopped link whose index went to another node starts there.
asio_connection& client_impl::make_link(std::uint8_t node) {
    std::unique_ptr<asio_connection>& link = connections_[node];
    if (cluster_links_->needs_setup(node)) point_link(node);
    if (link) {
        if (link->stopped() && open_) link->start();  // pruned, and needed again
        return *link;
    }
    const session::connection_setup setup =
        where_.node_setup(cluster_links_->address(node), seed_bits_ + node);
    link = std::make_unique<asio_connection>(*this, io_, node, connection_role::instance);
    // Each request may go after an ASKING of its own, and one map read may be in flight.
    const errc built = link->init(setup, 2 * config_.locks_max * requests_per_instance_max + 1,
                                  config_.buffer_bytes, config_.locks_max);
    EDGELOCK_ASSERT(built == errc::ok);  // validate() refused what could fail here
    if (open_) link->start();
    return *link;
}

// Link `node` serves the node the map has at its index from now on: another link, as the
// metrics count it (its first connection is no reconnect).
void client_impl::point_link(std::uint8_t node) {
    (void)cluster_links_->set_up(node);
    link_records_[node] = {};
}

class client_impl::cluster_port final : public session::node_port {
public:
    explicit cluster_port(client_impl& c) : c_(c) {}

    const session::connection* link(std::uint8_t k) const override {
        const std::unique_ptr<asio_connection>& l = c_.connections_[k];
        return l ? &l->connection() : nullptr;
    }
    void open(std::uint8_t k) override { (void)c_.make_link(k); }
    bool send_map_read(std::uint8_t k) override {
        asio_connection& l = *c_.connections_[k];
        const std::size_t size = session::write_cluster_slots(l.cursor(), l.room());
        if (size == 0 || !l.connection().track(map_read_owner, 0, now_ms())) return false;
        return l.commit(size);  // always true: the write happens at flush()
    }
    // A link some lock waits on for room stays: the lock is queued there.
    void stop(std::uint8_t k) override {
        asio_connection& l = *c_.connections_[k];
        if (l.waiters().empty()) l.stop();
    }
    std::uint32_t routed() const override {
        std::uint32_t nodes = 0;
        for (std::uint32_t index = 0; index < c_.locks_.capacity(); ++index) {
            const lock_entry& e = c_.locks_[index];
            if (e.in_use || e.draining) nodes |= e.place.routes();
        }
        return nodes;
    }

private:
    client_impl& c_;
};

// The lock's requests go to the node of its route (session::lock_links): after its requests
// in flight elsewhere came back, and once it heard the move as a new connection.
void client_impl::write_cluster_requests(std::uint32_t index, step_clock& clock) noexcept {
    lock_entry& e = locks_[index];
    if (!e.core.has_request(0)) return;
    const std::int64_t now = clock.now();
    const std::uint8_t home = e.place.route().home;
    const session::lock_writes writes = e.place.route_writes(e.core, *cluster_links_, now);
    const session::route_step& step = writes.step;
    if (step.code != errc::ok) return;  // events first: service() comes back after them
    if (step.to.node == session::slot_map::no_master) return;
    if (step.moved) {
        if (writes.failed_over) e.meter.failed_over();
        if (home != session::slot_map::no_master && (e.waiting_mask >> home & 1u) != 0) {
            // Off the old link's waiters too: a move back while it is full must not queue
            // the lock there twice.
            e.waiting_mask &= ~(link_set{1} << home);
            connections_[home]->waiters().erase_if(
                [index](const lock_ref& ref) { return ref.index == index; });
        }
        // Hearing the move may have decided something (a WAIT's claim failed): told at the
        // next delivery pass.
        defer_events(index);
    }
    // The restart guard: the lock hears the start of the node it writes to first (a link not
    // yet past its node's reading takes no request: on_node_read tells it then).
    const std::uint8_t node = step.to.node;
    asio_connection& to = make_link(node);
    const errc told = e.place.hear_start(e.core, node, to.connection(), config_.restart_guard, now);
    if (told != errc::ok) return;  // events first, as above
    defer_events(index);           // what hearing it decided, told at the next pass
    if ((e.waiting_mask >> step.to.node & 1u) != 0) return;
    write_link(e, index, step.to.node, 0, now, step.to.asking);
}

// The map's drive is the session's (cluster_links::tend_map): an eager client reads a stale
// map whatever its locks have queued (read_wanted). Too soon after the last read, the lock
// timer comes back.
void client_impl::drive_map() {
    cluster_port port(*this);
    const session::map_tending tended = cluster_links_->tend_map(port, linking, true, now_ms());
    if (tended != session::map_tending::idle) return;
    const std::int64_t next = cluster_links_->next_read_ms();
    if (next != no_deadline_ms && next < lock_timer_ms_) arm_lock_timer(next);
}

void client_impl::on_map_answer(std::uint8_t link, const reply_node* nodes, std::size_t count) {
    const cluster_port port(*this);
    map_failure_ =
        cluster_links_->read_answered(link, nodes, count, cluster_links_->in_use(port), now_ms());
    // A link whose index the map gave to another node (it was idle) reaches that node from
    // its next connection on.
    for (std::uint8_t k = 0; k < links_; ++k) {
        if (connections_[k] && cluster_links_->needs_setup(k)) point_link(k);
    }
    ready_check_ = true;
    // Locks waiting for a node may go now.
    step_clock clock;  // one for all: writing runs no handler
    for (std::uint32_t index = 0; index < locks_.capacity(); ++index) {
        if (locks_[index].in_use) write_requests(index, clock);
    }
}

// The metrics count the end; under Cluster a connection that ended may mean a node that moved
// on, and the map is read again (cluster_links::link_ended).
void client_impl::on_link_ended(std::uint8_t link, const session::connection_end& closed) {
    note_disconnected(link, closed);
    if (cluster_) cluster_links_->link_ended(closed);
}

void client_impl::on_map_read_lost() { cluster_links_->read_lost(now_ms()); }

// Ready once the map was read; failed when a node answered CLUSTER SLOTS with no usable map,
// or when every seed's link finished an attempt without one.
void client_impl::check_cluster_ready() {
    if (cluster_links_->map().reads() > 0) return ready_handler_.complete({});
    if (map_failure_) return ready_handler_.complete(to_error_code(map_failure_));
    std::error_code first_error;
    // The seeds hold the map's first indices, a seed named twice once.
    for (std::size_t i = 0; i < cluster_links_->seed_count(); ++i) {
        const asio_connection* c = connections_[i].get();
        if (c == nullptr || c->ready() || c->attempts_finished() == ready_marks_[i]) return;
        if (!first_error) first_error = c->last_error();
    }
    ready_handler_.complete(first_error ? first_error
                                        : make_error_code(transport_errc::no_slot_map));
}

// What a cluster lock's running operation met: its node's failure while that node's link is
// down, or the map's when the lock has no node.
failure client_impl::cluster_failure(const lock_entry& e) const {
    const std::uint8_t home = e.place.route().home;
    if (home == session::slot_map::no_master || !connections_[home]) {
        return map_failure_ ? map_failure_ : failure::of(transport_errc::no_slot_map);
    }
    const asio_connection& c = *connections_[home];
    if (!c.ready() && c.last_error()) return to_failure(c.last_error());
    return {};
}

}  // namespace edgelock::async::detail
