// SPDX-License-Identifier: Apache-2.0
// The blocking client's watch of a Sentinel deployment: one connection to a sentinel at a
// time, subscribed to +switch-master for the lock's whole life. A master the sentinels
// replaced may still answer us (cut off from the sentinels and its replicas, not from this
// client): its writes are nobody's lock any more, so the lock's connections leave it the
// moment a sentinel says so, by the rule every client follows
// (session::connection::follow_switch).
//
// The watch runs on a thread of its own, which alone touches its connection: its connects
// block (up to the connect timeout per sentinel), and neither a renewal nor a user's call
// may wait behind them. What it hears is handed over under the mutex and followed by
// whichever thread does the lock's I/O next (the helper at once: it is woken). Nothing on it
// can fail a call: a watch that cannot connect is tried again after the reconnect delay, and
// meanwhile the lock's own connections still go back to the sentinels whenever their master
// fails them. Closing the lock waits for the watch's connect under way, if any.
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>

#include "hiredis_lock_impl.hpp"

namespace edgelock::blocking {
namespace {

// The watch's poll never sleeps longer than this, so its timeouts are looked at.
constexpr std::int64_t watch_slice_ms_max = 1000;

}  // namespace

std::error_code lock::impl::set_up_watch(std::uint64_t seed) {
    watch_hooks.owner = this;
    if (watcher.setup(where.watch_setup(seed), watch_hooks, &tls) != errc::ok)
        return make_error_code(errc::invalid_config);
    watching = true;
    return {};
}

std::error_code lock::impl::start_watch() {
    if (!watching) return {};
    watch_stop_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (watch_stop_fd < 0) return make_error_code(transport_errc::thread_failed);
    return start_thread<&impl::watch_loop>(watch_thread, watch_started);
}

void lock::impl::stop_watch() {
    if (!watch_started) return;
    watch_stopping.store(true);
    const std::uint64_t one = 1;
    [[maybe_unused]] const ssize_t ignored = ::write(watch_stop_fd, &one, sizeof one);
    pthread_join(watch_thread, nullptr);
    watch_started = false;
}

// Connect (when idle and the reconnect delay allows), wait for bytes or the next deadline,
// read, time out a SUBSCRIBE left unanswered; until the lock stops it.
void lock::impl::watch_loop() {
    while (!watch_stopping.load()) {
        std::int64_t now = now_ms();
        if (watcher.busy() && watcher.timed_out(now)) watcher.settle(now, false);
        watcher.settle(now, true);
        now = now_ms();
        std::array<pollfd, 2> fds{pollfd{watch_stop_fd, POLLIN, 0},
                                  pollfd{watcher.fd(), watcher.events(), 0}};
        const nfds_t count = watcher.fd() >= 0 ? 2 : 1;
        const std::int64_t wake = session::wake_ms(watcher.connection(), true, now);
        const std::int64_t timeout =
            watcher.has_buffered() ? 0
                                   : std::clamp<std::int64_t>(wake - now, 0, watch_slice_ms_max);
        ::poll(fds.data(), count, static_cast<int>(timeout));
        if (count == 2 && (fds[1].revents != 0 || watcher.has_buffered())) {
            watcher.receive(now_ms());
            if (watcher.connection().state() == session::connection_state::closing)
                watcher.settle(now_ms(), false);
        }
    }
}

// On the watch's thread: a sentinel announced another master. Handed over; the I/O thread
// follows it (follow_switch()).
void lock::impl::on_switch_heard() {
    std::lock_guard<std::mutex> guard(mutex);
    switch_from = watcher.connection().switched_from();
    switch_to = watcher.connection().switched_to();
    switch_pending = true;
    wake_helper();
}

// On the thread that does the lock's I/O: the command connection and the subscriber follow
// the announced master. The end of one that was on the old master reaches the core as any
// connection's end does, so a request in flight there is given up and goes again; each is
// made again by the next round that wants it (not connected here).
void lock::impl::follow_switch() {
    if (!switch_pending) return;
    switch_pending = false;
    const std::int64_t now = now_ms();
    if (connections[0].connection().follow_switch(switch_from, switch_to, now))
        connections[0].settle(now, false);
    if (fair && subscriber.connection().follow_switch(switch_from, switch_to, now))
        subscriber.settle(now, false);
}

}  // namespace edgelock::blocking
