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

// Whether the client looks at an idle link again when its reconnect delay ends (wake_ms's
// wants_connection): an eager one always; one made on demand while requests are queued for its
// instance (a release given up inside the delay is queued again, and goes once it ends).
bool link_wanted(linking how, bool requests_queued) noexcept;
// Whether the link's driver may open it by itself (connection_driver::settle's `wanted`): an
// eager link's does; one made on demand is opened only by step_for_queued's connect.
bool opens_by_itself(linking how) noexcept;

// The step for requests queued for an instance whose link is `link`: write, unless the link is
// idle and links are made on demand, when it connects or, inside its reconnect delay, gives
// the requests up. An eager link reconnects by itself (link_wanted), so its requests wait.
queued_step step_for_queued(linking how, const connection& link, std::int64_t now) noexcept;

// A user's call (acquire, release, close): a link made on demand may connect at once
// (connection::retry_now), so a call is not failed by a delay an earlier failure earned; the
// watchdog's renewals get no such pass. An eager link keeps its delay: it reconnects by itself.
void on_user_call(linking how, connection& link) noexcept;

}  // namespace edgelock::session
