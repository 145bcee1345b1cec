// SPDX-License-Identifier: Apache-2.0
// The async client's part in fair waiting (edgelock/lock.hpp, "Fair waiting"): the subscriber
// socket, which lock wants wake-ups (fair_channels.hpp decides the subscriptions), and the
// routing of messages and confirmed subscriptions to the waiting locks.
#include <array>
#include <memory>
#include <string_view>

#include "client_impl.hpp"
#include "edgelock/keys.hpp"
#include "edgelock/session/pubsub.hpp"

namespace edgelock::async::detail {
namespace {

// Each of the subscriber's two write buffers: eight SUBSCRIBE or UNSUBSCRIBE commands of the
// longest channel (the rest wait for the next flush); lock requests never go there. Its read
// buffer is every connection's: one whole reply and more.
constexpr std::size_t subscriber_buffer_bytes = 8 * session::subscription_request_bytes_max;

}  // namespace

// The first fair lock of this open(): the channel table and the subscriber socket, sized for
// every channel of the table (a command of each in flight at most) and small write buffers.
// It connects while a channel wants it.
void client_impl::build_subscriber() {
    if (subscriber_index_ != no_socket) return;
    channels_.set_up(config_.locks_max);
    // Redis Cluster: it connects once placed (place_cluster_subscriber); until then its setup
    // points at the first seed.
    subscriber_placed_ = false;
    if (cluster_) subscriber_node_ = where_.seeds.front();
    session::connection_setup setup =
        cluster_ ? where_.node_setup(subscriber_node_, 0) : instance_setup(0);
    setup.kind = session::connection_kind::subscriber;
    setup.seed = seed_bits_ + connections_.size();
    subscriber_index_ = connections_.size();
    connections_.push_back(std::make_unique<asio_connection>(
        *this, io_, static_cast<std::uint8_t>(subscriber_index_), connection_role::subscriber));
    const errc built =
        connections_.back()->init(setup, channels_.capacity(), subscriber_buffer_bytes, 1);
    EDGELOCK_ASSERT(built == errc::ok);
    connections_.back()->start();
}

// After every call into a fair lock: whether it wants wake-ups decides its channel's
// subscription (written at the end of the dispatch, drive_subscriber). A wait joins its
// acquire()'s channel, leaving the last wait's, once its first attempt has been answered
// without the lock (nothing of it queued or in flight), as the blocking client does: an
// acquire that finds the lock free subscribes nothing, and one refused is woken by the
// confirmation ("look now") of whatever was published before it. A lock that finds no free
// channel (fair_channels.hpp) joins one at a later call once one is free, and until then its
// re-checks alone find the lock freed.
void client_impl::note_wake_interest(std::uint32_t index) noexcept {
    lock_entry& e = locks_[index];
    if (!e.fair || !channels_.ready()) return;
    const bool wants = e.core.wants_wake_ups();
    if (wants) {
        std::array<char, wake_channel_bytes_max> bytes{};
        const std::string_view channel(bytes.data(),
                                       e.core.wake_channel(bytes.data(), bytes.size()));
        const bool joined = channels_.attached(index) && channels_.channel_name(index) == channel;
        const bool refused = !e.core.has_request(0) && e.core.requests_in_flight(0) == 0;
        if (!joined && !refused) return;
        if (!joined) channels_.detach(index);
        if (!joined && !channels_.attach(index, channel)) return;
    }
    channels_.set_wants(index, wants);
}

void client_impl::drive_subscriber() {
    asio_connection* s = subscriber();
    if (s == nullptr) return;
    if (cluster_ && !place_cluster_subscriber(*s)) return;
    if (channels_.wanted() && s->connection().state() == session::connection_state::idle)
        s->start();
    if (channels_.has_work() && s->ready()) channels_.write_commands(s->connection(), now_ms(), *s);
}

// Redis Cluster: the subscriber listens where session::cluster_links::subscriber_move says, for
// the locks that want wake-ups: it stays while it listens on the master of any of their slots
// (so locks on two masters taking turns do not move it back and forth), and otherwise moves to
// the master of the first one's. The others' releases reach it over the cluster bus, or their
// re-checks find them. A move closes the old connection (its subscriptions end with it); the
// next one subscribes there. False while it was never placed.
bool client_impl::place_cluster_subscriber(asio_connection& s) {
    const session::node_address* at = subscriber_placed_ ? &subscriber_node_ : nullptr;
    std::uint8_t move_to = session::cluster_links::none;
    for (std::uint32_t index = 0; channels_.wanted() && index < locks_.capacity(); ++index) {
        const lock_entry& e = locks_[index];
        if (!e.in_use || !e.fair || !e.core.wants_wake_ups()) continue;
        const std::uint16_t slot = e.place.route().slot;
        const std::uint8_t m = cluster_links_->subscriber_move(slot, at);
        const bool there = m == session::cluster_links::none &&
                           cluster_links_->map().master_of(slot) != session::cluster_links::none;
        if (there && at != nullptr) return true;
        if (move_to == session::cluster_links::none) move_to = m;
    }
    if (move_to == session::cluster_links::none) return subscriber_placed_;
    const bool moving = subscriber_placed_;
    subscriber_node_ = cluster_links_->map().node(move_to);
    subscriber_placed_ = true;
    if (moving) s.move_on();
    return true;
}

void client_impl::on_subscriber_down() { channels_.on_connection_lost(); }

// A confirmed SUBSCRIBE: releases published before it are lost, so its locks look now.
void client_impl::on_subscription_answer(const session::in_flight& entry, const reply_node* nodes,
                                         std::size_t count) {
    const fair_channels::answer answered = channels_.on_answer(entry, nodes, count);
    if (answered.violation) {
        subscriber()->connection().close(failure::of(errc::unexpected_reply), now_ms());
        return;
    }
    if (answered.subscribed) wake_channel(answered.channel, {});
}

void client_impl::on_wake_message(const reply_node* nodes, std::size_t count) {
    const session::pubsub_frame frame = session::parse_pubsub(nodes, count);
    const std::uint32_t channel = channels_.find(frame.channel);
    // One published before the subscription was confirmed was meant for an earlier wait.
    if (channel != fair_channels::none && channels_.live(channel))
        wake_channel(channel, frame.payload);
}

// Hands `message` to the channel's waiting locks. No handler runs here (their events wait
// for the end of the dispatch, as after a user's call), so the channel's list stays as it is.
void client_impl::wake_channel(std::uint32_t channel, std::string_view message) {
    const std::int64_t now = now_ms();
    std::uint32_t index = channels_.first_lock(channel);
    for (std::size_t n = 0; n < locks_.capacity() && index != fair_channels::none; ++n) {
        const std::uint32_t next = channels_.next_lock(index);
        lock_entry& e = locks_[index];
        if (e.core.wants_wake_ups()) {
            event ev;
            while (e.deferred_count < events_max && e.core.poll_event(ev))
                e.deferred[e.deferred_count++] = ev;
            // A release naming this waiter: its handover starts (see lock_metrics.hpp).
            const std::array<char, token_hex_bytes> ours = e.core.token_hex();
            if (wake_names(message, std::string_view(ours.data(), ours.size()))) e.meter.woken(now);
            // Refused only while the lock's events fill both of its queues (their handlers
            // not yet run): this wake-up is then lost, and the lock's re-check stands in.
            (void)e.core.on_wake(now, message);
            after_call(index, step_clock(now));
        }
        index = next;
    }
}

}  // namespace edgelock::async::detail
