// SPDX-License-Identifier: Apache-2.0
// The blocking client's watch of a Sentinel deployment: one connection to a sentinel at a
// time, subscribed to +switch-master for the lock's whole life. A master the sentinels
// replaced may still answer us (cut off from the sentinels and its replicas, not from this
// client): its writes are nobody's lock any more, so the lock's connections leave it the
// moment a sentinel says so, by the rule every client follows
// (session::connection::follow_switch).
//
// Nothing on it can fail a call: a watch that cannot connect is tried again after the
// reconnect delay, the next sentinel first, and meanwhile the lock's own connections still
// go back to the sentinels whenever their master fails them.
#include "hiredis_lock_impl.hpp"

namespace edgelock::blocking {

std::error_code lock::impl::set_up_watch(std::uint64_t seed) {
    watch_hooks.owner = this;
    if (watcher.setup(where.watch_setup(seed), watch_hooks, &tls) != errc::ok)
        return make_error_code(errc::invalid_config);
    watching = true;
    return {};
}

// Connects the watch when it is idle and its reconnect delay allows (the connect releases
// `held`, as every connect of this client does), and reports an end it met.
void lock::impl::tend_watch(std::unique_lock<std::mutex>& held) {
    if (watching) watcher.settle(now_ms(), true, &held);
}

// The SUBSCRIBE's confirmation (the handshake's), and the announcements after it.
void lock::impl::read_watch() {
    watcher.receive(now_ms());
    if (watcher.connection().state() == session::connection_state::closing)
        watcher.settle(now_ms(), false);
}

// The command connection and the subscriber follow the announced master; the end of one
// that was on the old master reaches the core as any connection's end does, so a request in
// flight there is given up and goes again to the new master.
void lock::impl::on_switch_master() {
    const session::node_address& master = watcher.connection().switched_to();
    const std::int64_t now = now_ms();
    // Closed here and made again by the next round that wants them, not connected under the
    // mutex from inside a read.
    if (connections[0].connection().follow_switch(master, now)) connections[0].settle(now, false);
    if (fair && subscriber.connection().follow_switch(master, now)) subscriber.settle(now, false);
}

}  // namespace edgelock::blocking
