// SPDX-License-Identifier: Apache-2.0
// The blocking client's fair waiting: the subscriber connection and the wake-ups it brings.
#include "hiredis_lock_impl.hpp"

#include "edgelock/assert.hpp"
#include "edgelock/keys.hpp"
#include "edgelock/session/pubsub.hpp"

namespace edgelock::blocking {

// ---- fair waiting: the subscriber connection -----------------------------------------------
//
// Nothing on it can fail an acquire(): a connection that fails is made again after the
// reconnect delay, and meanwhile the core's re-checks (every recheck_ms) stand in for the
// wake-ups it would have brought.

// A user's acquire() is waiting fairly (the helper's background I/O never listens).
bool lock::impl::listening(bool background) const {
    return fair && !background && core.wants_wake_ups();
}

// The acquire has to wait: its attempt was refused (nothing is owed on the command connection,
// nothing queued). Only then is the subscriber made, so an uncontended acquire never makes it.
bool lock::impl::must_wait() const {
    const blocking_connection* l = instance_link(0);
    return (l == nullptr || !l->busy()) && !core.has_request(0);
}

// Connects the subscriber once the acquire has to wait (and the reconnect delay allows).
// A connection kept from an earlier wait is ready already: it subscribes again at once.
void lock::impl::tend_subscriber(std::unique_lock<std::mutex>& held) {
    if (!must_wait()) return;
    if (cluster && !place_subscriber()) return;
    wake_wanted = true;
    drive_subscription();
    subscriber.settle(now_ms(), true, &held);
}

// Hands the core each wake-up: an empty one when the subscription is confirmed (whatever was
// published before it is lost), the payload of each current message on the channel
// (session::subscription: one published before the confirmation was meant for an earlier
// wait). A refused SUBSCRIBE (an ACL) wakes nothing: the core's re-checks stand in.
void lock::impl::read_wake_ups() {
    subscriber.receive(now_ms());
    drive_subscription();
    end_subscriber_if_closing();
}

void lock::impl::on_subscription_answer(const reply_node* nodes, std::size_t count) {
    const session::subscription::answer answered = sub.on_answer(nodes, count);
    if (answered.violation) {
        subscriber.connection().close(failure::of(errc::unexpected_reply), now_ms());
        return;
    }
    if (answered.subscribed && wake_wanted) wake_core({});
}

void lock::impl::on_wake_message(const reply_node* nodes, std::size_t count) {
    std::string_view payload;
    if (sub.message_for(nodes, count, payload) && wake_wanted) wake_core(payload);
}

void lock::impl::wake_core(std::string_view message) {
    const std::array<char, token_hex_bytes> ours = core.token_hex();
    // A release naming us: the handover starts (an empty "look now" is no release).
    if (wake_names(message, std::string_view(ours.data(), ours.size()))) meter.woken(now_ms());
    drain_events();
    [[maybe_unused]] const errc told = core.on_wake(now_ms(), message);
    drain_events();
}

// Writes the SUBSCRIBE or UNSUBSCRIBE the subscription policy asks for now, on a ready
// connection (one in flight at most; its confirmation decides again). A wait subscribes its
// acquire()'s own channel (core::lock::wake_channel), after the last wait's is dropped.
void lock::impl::drive_subscription() {
    if (!fair || !subscriber.connection().ready()) return;
    std::array<char, wake_channel_bytes_max> wanted{};
    const std::size_t wanted_size =
        wake_wanted ? core.wake_channel(wanted.data(), wanted.size()) : 0;
    const session::subscription::command due = sub.due({wanted.data(), wanted_size});
    if (due == session::subscription::command::none) return;
    std::array<char, session::subscription_request_bytes_max> command{};
    const bool subscribe = due == session::subscription::command::subscribe;
    const std::size_t size =
        session::write_subscription(subscribe, sub.channel(), command.data(), command.size());
    EDGELOCK_ASSERT(size > 0);
    if (!subscriber.send(command.data(), size, 0, now_ms())) return end_subscriber_if_closing();
    sub.sent(due);
}

// The wait is over: Redis stops sending the channel's messages to us, so nothing piles up in
// its output buffer while the lock is held or idle. The connection stays for the next wait,
// which subscribes again (one round trip on an open connection, and its confirmation is the
// wake-up that makes the first attempt). The confirmation is read by whichever thread does the
// lock's I/O next (the helper at once), within the command timeout like any reply.
void lock::impl::unsubscribe() {
    wake_wanted = false;
    drive_subscription();
}

void lock::impl::end_subscriber_if_closing() {
    if (subscriber.connection().state() == session::connection_state::closing)
        subscriber.settle(now_ms(), false);
}

// Every subscription ended with its connection (Redis forgets them too). In a cluster the
// node may be gone (a failover): the slot map is read again before the lock's next attempt.
void lock::impl::on_subscriber_end() {
    sub.on_connection_lost();
    if (cluster) links.map().mark_stale();
}

}  // namespace edgelock::blocking
