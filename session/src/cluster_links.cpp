// SPDX-License-Identifier: Apache-2.0
#include "edgelock/session/cluster_links.hpp"

namespace edgelock::session {

bool cluster_links::set_seeds(const node_address* seeds, std::size_t count) noexcept {
    seed_count_ = 0;
    seed_next_ = 0;
    for (std::size_t s = 0; s < count; ++s) {
        const std::uint8_t k = map_.add_node(seeds[s]);
        if (k == none) return false;
        bool known = false;
        for (std::size_t t = 0; t < seed_count_; ++t) known = known || seed_indices_[t] == k;
        if (known) continue;  // the same node twice
        if (seed_count_ == seeds_.size()) return false;
        seeds_[seed_count_] = seeds[s];
        seed_indices_[seed_count_++] = k;
    }
    return true;
}

std::uint8_t cluster_links::seed() const noexcept {
    if (seed_count_ == 0) return none;
    const std::uint8_t k = map_.index_of(seeds_[seed_next_]);
    return k != none ? k : seed_indices_[seed_next_];
}

void cluster_links::next_seed() noexcept {
    if (seed_count_ > 0) seed_next_ = (seed_next_ + 1) % seed_count_;
}

bool cluster_links::needs_setup(std::uint8_t k) const noexcept {
    return !linked(k) || !addresses_[k].same_node(map_.node(k));
}

const node_address& cluster_links::set_up(std::uint8_t k) noexcept {
    addresses_[k] = map_.node(k);
    linked_ |= node_set{1} << k;
    return addresses_[k];
}

std::uint8_t cluster_links::reader(node_set ready) const noexcept {
    const std::size_t count = cluster_masters_max;
    const std::size_t after = last_reader_ == none ? count - 1 : last_reader_;
    for (std::size_t n = 1; n <= count; ++n) {
        const std::size_t k = (after + n) % count;
        if (((ready >> k) & 1u) != 0) return static_cast<std::uint8_t>(k);
    }
    return none;
}

void cluster_links::read_sent(std::uint8_t k) noexcept {
    refresh_.sent();
    last_reader_ = k;
}

bool cluster_links::read_wanted(linking how, bool lock_has_requests) const noexcept {
    return (how == linking::eager || lock_has_requests) && map_.stale();
}

bool cluster_links::route_lost_after_read(linking how, const failure& unread,
                                          bool routed) noexcept {
    // An eager client reads the map again by itself: its locks' writes mark it stale.
    if (routed || how != linking::on_demand) return false;
    // Read, with no master for the slot: read again after the gap, the slot may be served again.
    if (!unread) map_.mark_stale();
    return !unread || unread == failure::of(transport_errc::too_many_masters);
}

bool cluster_links::wanted(linking how, std::uint8_t k, std::uint8_t target, bool read_due,
                           bool ready) const noexcept {
    if (kept_up(how, k)) return true;
    return k == target || (read_due && linked(k) && (ready || k == seed()));
}

std::uint8_t cluster_links::subscriber_move(std::uint16_t slot,
                                            const node_address* at) const noexcept {
    const std::uint8_t m = map_.master_of(slot);
    if (m == none || (at != nullptr && at->same_node(map_.node(m)))) return none;
    return m;
}

void cluster_links::link_ended(const connection_end& ended) noexcept {
    if (ended.was_ready || ended.why) map_.mark_stale();
}

failure cluster_links::read_answered(std::uint8_t k, const reply_node* nodes, std::size_t count,
                                     node_set in_use, std::int64_t now) noexcept {
    const bool fails = faults_ != nullptr && faults_->fire(fault_point::fail_map_read);
    const errc read =
        fails ? errc::unexpected_reply : map_.read_slots(nodes, count, addresses_[k], in_use);
    refresh_.ended(now);  // read or not: the next read may go after the gap
    read_failed_ = read != errc::ok;
    prune_due_ = !read_failed_;
    if (read == errc::ok) return {};
    // A cluster of more masters than one client reaches: no later read helps.
    if (read == errc::invalid_instances) return failure::of(transport_errc::too_many_masters);
    return failure::of(transport_errc::no_slot_map);
}

cluster_links::node_set cluster_links::in_use(const node_port& port) const {
    node_set used = 0;
    for (std::uint8_t k = 0; k < cluster_masters_max; ++k) {
        const connection* c = port.link(k);
        if (linked(k) && c != nullptr && c->state() != connection_state::idle)
            used |= node_set{1} << k;
    }
    return used;
}

cluster_links::node_set cluster_links::ready_links(const node_port& port) const {
    node_set ready = 0;
    for (std::uint8_t k = 0; k < cluster_masters_max; ++k) {
        const connection* c = port.link(k);
        if (linked(k) && !needs_setup(k) && c != nullptr && c->ready()) ready |= node_set{1} << k;
    }
    return ready;
}

map_tending cluster_links::tend_map(node_port& port, linking how, bool lock_has_requests,
                                    std::int64_t now) {
    if (prune_due_) prune(port);
    if (!read_wanted(how, lock_has_requests) || !read_due(now)) return map_tending::idle;
    // Only an eager client makes it beside the read: one linking on demand connects before it
    // writes, and would hold its lock's requests back for the connect.
    if (read_failed_ && how == linking::eager) (void)open_seed(port, now);
    // A link whose write failed is not tried again in this pass.
    node_set tried = 0;
    for (;;) {
        const std::uint8_t k = reader(ready_links(port) & ~tried);
        if (k == none) break;
        tried |= node_set{1} << k;
        if (!port.send_map_read(k)) continue;
        read_sent(k);
        return map_tending::sent;
    }
    return open_seed(port, now) ? map_tending::waiting : map_tending::unreachable;
}

// The cursor stays on the seed made, so a client that finds it unreachable later moves on. With
// none able to connect, it is left on the one whose reconnect delay ends first: the seed a
// client linking on demand wakes up for (wanted).
bool cluster_links::open_seed(node_port& port, std::int64_t now) {
    std::size_t soonest = seed_next_;
    std::int64_t soonest_ms = no_deadline_ms;
    for (std::size_t tried = 0; tried < seed_count_; ++tried, next_seed()) {
        const std::uint8_t k = seed();
        if (k == none) continue;
        const connection* c = needs_setup(k) ? nullptr : port.link(k);
        if (c != nullptr && c->ready()) continue;  // it can carry a read already
        if (c != nullptr && !c->may_start(now) && c->state() == connection_state::idle) {
            if (c->start_not_before_ms() < soonest_ms) {
                soonest = seed_next_;
                soonest_ms = c->start_not_before_ms();
            }
            continue;
        }
        keep_up(k);  // the read waits for it: an eager client keeps it up
        if (c != nullptr && c->state() != connection_state::idle) return true;
        port.open(k);
        c = port.link(k);
        if (c != nullptr && c->state() != connection_state::idle) return true;
    }
    seed_next_ = soonest;
    return false;
}

void cluster_links::prune(node_port& port) {
    prune_due_ = false;
    node_set needed = port.routed();
    for (std::uint16_t slot = 0; slot < cluster_slots; ++slot) {
        const std::uint8_t owner = map_.master_of(slot);
        if (owner != none) needed |= node_set{1} << owner;
    }
    for (std::uint8_t k = 0; k < cluster_masters_max; ++k) {
        const connection* c = port.link(k);
        const node_set bit = node_set{1} << k;
        if (!linked(k) || c == nullptr || ((needed | pruned_) & bit) != 0) continue;
        // An idle link too: an eager one is waiting out its delay before it tries again.
        if (c->requests_in_flight() > 0) continue;
        pruned_ |= bit;
        port.stop(k);
    }
}

}  // namespace edgelock::session
