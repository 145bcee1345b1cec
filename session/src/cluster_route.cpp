// SPDX-License-Identifier: Apache-2.0
#include "edgelock/session/cluster_route.hpp"

#include "edgelock/keys.hpp"

namespace edgelock::session {

lock_route route_of(std::string_view name) noexcept {
    lock_route route;
    route.slot = cluster_slot(name);
    return route;
}

route_target target_of(const lock_route& route, const slot_map& map) noexcept {
    if (route.ask != slot_map::no_master && route.ask_reads == map.reads())
        return {route.ask, true};
    return {map.master_of(route.slot), false};
}

route_step begin_writes(lock& core, std::uint8_t instance, lock_route& route, slot_map& map,
                        std::int64_t now) noexcept {
    route_step step;
    // WAIT counts the replicas of the node it runs on: only the node of the writes it
    // confirms can say they were copied (a move since drops it, below).
    const bool waits = core.next_request_waits(instance) && route.home != slot_map::no_master;
    const route_target to = waits ? route_target{route.home, false} : target_of(route, map);
    if (to.node == slot_map::no_master) {
        map.mark_stale();  // no request goes, so no MOVED will come: only a read tells
        return step;
    }
    if (to.node != route.home) {
        if (core.requests_in_flight(instance) > 0) return step;
        if (route.home != slot_map::no_master) {
            step.code = core.on_io_error(instance, now);
            if (step.code != errc::ok) return step;
        }
        step.left = route.home;
        route.home = to.node;
        step.moved = true;
    }
    if (to.asking) route.ask = slot_map::no_master;  // one request: the one redirected
    step.to = to;
    return step;
}

namespace {

// An answer that is not followed elsewhere: the lock's, and the route's redirect count ends.
errc deliver_here(lock& core, std::uint8_t instance, lock_route& route, const reply_node& reply,
                  std::int64_t now, failure& last, error_text* text) noexcept {
    const errc code = deliver_answer(core, instance, reply, now, last, text);
    if (code != errc::events_pending) route.redirects = 0;
    return code;
}

}  // namespace

errc deliver_cluster_answer(lock& core, std::uint8_t instance, lock_route& route, slot_map& map,
                            const reply_node& reply, const node_address& from, std::int64_t now,
                            failure& last, error_text* text) noexcept {
    route.followed = redirect::kind::none;
    // Only an error redirects: every other answer skips building a redirect (its address is
    // half a kilobyte of fixed storage, cleared).
    if (reply.type != reply_type::error)
        return deliver_here(core, instance, route, reply, now, last, text);
    const redirect r = parse_redirect(reply, from);
    if (r.what == redirect::kind::none)
        return deliver_here(core, instance, route, reply, now, last, text);
    // Decided before anything changes: a refused call (events_pending) leaves map and route.
    const bool unroutable = r.what == redirect::kind::ask && !map.has_room_for(r.to);
    if (unroutable || route.redirects >= redirects_max) {
        const errc code = deliver_answer(core, instance, reply, now, last, text);
        if (code == errc::events_pending) return code;
        route.redirects = 0;
        last = failure::of(unroutable ? transport_errc::no_slot_map
                                      : transport_errc::too_many_redirects);
        return code;
    }
    const errc code = core.on_redirect(instance, now);
    if (code != errc::ok) return code;
    ++route.redirects;
    route.followed = r.what;
    if (r.what == redirect::kind::moved) {
        (void)map.moved(r.slot, r.to);  // a full table leaves the slot unknown: read again
        route.ask = slot_map::no_master;
    } else {
        route.ask = map.add_node(r.to);  // has_room_for() held
        route.ask_reads = map.reads();
    }
    return code;
}

}  // namespace edgelock::session
