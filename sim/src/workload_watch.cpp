// SPDX-License-Identifier: Apache-2.0
// The simulated client's watch of a Sentinel deployment, as both clients keep it: one
// connection to a sentinel at a time (the session's driver rotates them), subscribed to
// +switch-master from the start. When a sentinel announces another master, the lock's
// connection and the subscriber leave the old one by the rule every client follows
// (session::connection::follow_switch), even while it still answers: a master cut off from
// the sentinels is not cut off from its clients.
#include "edgelock/sim/workload.hpp"
#include "edgelock/sim/world.hpp"

namespace edgelock::sim {

// `s` as the lock's connections are set up (the sentinels, the master's name, the timing).
void client::setup_watch(session::connection_setup s) {
    s.kind = session::connection_kind::watch;
    s.node = nullptr;
    s.seed = rng_.next();
    s.read_node = false;
    s.refuse_evicting = false;
    watcher_.setup(world_, *this, id_, 0, s, 0, lane::watch);
    watching_ = true;
}

void client::on_switch_master(const session::node_address& from, const session::node_address& to) {
    if (world_.recording()) {
        world_.note_client(id_, "heard +switch-master to " +
                                    std::string(session::format_address(to).view()));
    }
    const std::int64_t now = now_ms();
    for (std::uint8_t i = 0; i < instances_; ++i) {
        if (connections_[i].connection().follow_switch(from, to, now))
            connections_[i].settle(now, opens(connections_[i]));
    }
    if (subscriber_made_ && subscriber_.connection().follow_switch(from, to, now))
        subscriber_.settle(now);
    drain_and_write();
    reschedule();
}

}  // namespace edgelock::sim
