// SPDX-License-Identifier: Apache-2.0
// edgelock session: when a client's link to an instance (one Redis, Sentinel's master, one of
// Redlock's N) connects. It is the one choice in which the clients differ, so it is a property
// of the links, decided here, and the simulator's clients run either:
//
//   eager      the async client: every instance's link connects at open() and again after
//              each end, once its reconnect delay allows; a request queued meanwhile waits
//              for the link (the round's deadline bounds the wait)
//   on_demand  the blocking client, and so the C API: a link connects only for a request
//              queued for its instance. A request that meets the link idle inside its
//              reconnect delay fails at once (give_up_unsent): nothing would come back to
//              send it when the delay ends
//
// Under Redis Cluster a node's link is made when a lock's requests first target it
// (cluster_links.hpp); the async client then keeps it up eagerly while a lock needs the node,
// and the blocking client and the simulator work it on demand (cluster_links::wanted).
// No allocation, no I/O, no clock.
#pragma once

#include <cstdint>

#include "edgelock/session/connection.hpp"

namespace edgelock::session {

enum class linking : std::uint8_t { eager, on_demand };

// What a client does with requests queued for an instance before it writes them.
enum class queued_step : std::uint8_t {
    write,    // write what the link accepts now (write_requests); the rest waits on it
    connect,  // connect the idle link first (its driver's settle, wanted), then ask again
    give_up,  // the link is idle inside its reconnect delay: give_up_unsent
};

// Whether an idle link connects by itself when its reconnect delay allows (connection_driver's
// settle, wanted): an eager one does; one made on demand connects only through
// step_for_queued's connect.
bool link_wanted(linking how) noexcept;

// The step for requests queued for an instance whose link is `link`: write, unless the link is
// idle and links are made on demand, when it connects or, inside its reconnect delay, gives
// the requests up. An eager link reconnects by itself (link_wanted), so its requests wait.
queued_step step_for_queued(linking how, const connection& link, std::int64_t now) noexcept;

}  // namespace edgelock::session
