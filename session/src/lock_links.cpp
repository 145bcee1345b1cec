// SPDX-License-Identifier: Apache-2.0
#include "edgelock/session/lock_links.hpp"

#include "edgelock/assert.hpp"

namespace edgelock::session {

static_assert(cluster_masters_max <= 32 && instances_max <= 32, "a link is a bit of link_bits");

lock_links lock_links::in_cluster(std::string_view name) noexcept {
    lock_links links;
    links.route_ = route_of(name);
    links.clustered_ = true;
    return links;
}

std::uint8_t lock_links::instance_on(std::uint8_t k) const noexcept {
    if (!clustered_) return k;
    return k == route_.home ? 0 : none;
}

std::uint8_t lock_links::next_node(const lock& core, const cluster_links& links) const noexcept {
    if (!core.has_request(0)) return none;
    // A WAIT goes where the writes it confirms went, whatever the map says (begin_writes).
    if (core.next_request_waits(0) && route_.home != none) return route_.home;
    const std::uint8_t node = target(links).node;
    return node == route_.home || core.requests_in_flight(0) == 0 ? node : none;
}

std::uint32_t lock_links::routes() const noexcept {
    link_bits nodes = 0;
    for (const std::uint8_t k : {route_.home, route_.ask}) {
        if (clustered_ && k != none) nodes |= bit(k);
    }
    return nodes;
}

lock_writes lock_links::route_writes(lock& core, cluster_links& links, std::int64_t now) noexcept {
    lock_writes writes;
    writes.step = session::begin_writes(core, 0, route_, links.map(), now);
    if (writes.step.code == errc::ok && writes.step.to.node != none)
        links.keep_up(writes.step.to.node);
    if (writes.step.code != errc::ok || !writes.step.moved) return writes;
    writes.failed_over = is_failover(writes.step, home_lost_);
    home_lost_ = false;
    // The lock heard the move as a new connection (on_io_error): it hears the start of the
    // node it moved to anew, even one it heard before it left.
    heard_ = 0;
    return writes;
}

errc lock_links::hear_start(lock& core, std::uint8_t k, const connection& c, bool guard,
                            std::int64_t now) noexcept {
    const std::uint8_t instance = instance_on(k);
    if (!guard || instance == none || (heard_ & bit(k)) != 0 || !c.knows_node()) return errc::ok;
    const errc code = tell_node_started(core, instance, c, guard, now);
    if (code == errc::ok) heard_ |= bit(k);
    return code;
}

errc lock_links::node_read(lock& core, std::uint8_t k, const node_start& start, bool guard,
                           std::int64_t now, fault_points* faults) noexcept {
    heard_ &= ~bit(k);
    late_ &= ~bit(k);
    const std::uint8_t instance = instance_on(k);
    if (!guard || instance == none) return errc::ok;
    if (faults != nullptr && faults->fire(fault_point::late_node_start)) {
        late_ |= bit(k);
        return errc::ok;
    }
    const errc code = tell_node_started(core, instance, start, guard, now);
    if (code == errc::ok) heard_ |= bit(k);
    return code;
}

errc lock_links::hear_late_start(lock& core, std::uint8_t k, const connection& c, bool guard,
                                 std::int64_t now) noexcept {
    if ((late_ & bit(k)) == 0) return errc::ok;
    const errc code = hear_start(core, k, c, guard, now);
    if (heard_start(k)) late_ &= ~bit(k);  // told; else it waits for the next write
    return code;
}

errc lock_links::answer(lock& core, std::uint8_t k, const reply_node& reply, cluster_links* links,
                        std::int64_t now, failure& last, error_text* text) noexcept {
    if (!clustered_) return deliver_answer(core, k, reply, now, last, text);
    EDGELOCK_ASSERT(links != nullptr);
    return deliver_cluster_answer(core, 0, route_, links->map(), reply, links->address(k), now,
                                  last, text);
}

void lock_links::link_lost(std::uint8_t k) noexcept {
    heard_ &= ~bit(k);
    late_ &= ~bit(k);
    if (clustered_ && k == route_.home) home_lost_ = true;
}

errc lock_links::link_closed(lock& core, std::uint8_t k, const connection& c, bool lock_hears,
                             std::int64_t now) noexcept {
    link_lost(k);
    const std::uint8_t instance = instance_on(k);
    if (!lock_hears || instance == none) return errc::ok;
    return hear_close(core, instance, c, now);
}

}  // namespace edgelock::session
