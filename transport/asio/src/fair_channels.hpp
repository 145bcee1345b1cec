// SPDX-License-Identifier: Apache-2.0
// The async client's wake-up channels for fair locks (edgelock/lock.hpp, "Fair waiting").
//
// A release wakes the waiter whose turn it is on that waiter's own channel, the line's key,
// ":" and its token (keys.hpp, write_wake_channel), so each waiting acquire() has a channel
// of its own, and a lock moves to a new one with each acquire()'s token (client_impl's
// note_wake_interest). A channel knows its locks (a list through per-lock links: one, as
// tokens are random, though nothing here relies on it), how many of them want wake-ups now,
// and where its subscription on the client's subscriber connection stands. Sized once
// (set_up: as many channels as the table has locks); attaching, detaching, subscribing and
// routing allocate nothing.
//
// Each channel's subscription follows session::subscription (subscribed exactly while one of
// its locks wants wake-ups, one command in flight, decided again at each confirmation), the
// policy the blocking client follows for its one channel at a time too
// (session::wake_subscription). A lost connection forgets every
// subscription; the wanted ones are subscribed again on the next connection, whose
// confirmations wake their locks.
//
// A channel whose last lock left stays until its UNSUBSCRIBE is confirmed (or the connection
// drops), while the lock goes on to its next wait's channel, or its slot in the client's table
// is free again at once for another lock. So the table has two channels per lock: every
// lock's own, and one more leaving per lock. A channel that finds no free slot even so (more
// channels leaving than locks: waits begun faster than the subscriber's round trip) is not
// attached: attach() says so, the lock waits with its re-checks alone, and its caller tries
// again later.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "edgelock/limits.hpp"
#include "edgelock/session/fixed_text.hpp"
#include "edgelock/session/pubsub.hpp"
#include "edgelock/session/connection.hpp"
#include "edgelock/session/subscription.hpp"
#include "fixed_ring.hpp"

namespace edgelock::async::detail {

class fair_channels {
public:
    static constexpr std::uint32_t none = 0xffffffff;

    // Where a channel's subscription stands (session::subscription: the policy and its states).
    using subscription = session::subscription::state;

    // What a confirmation on the subscriber connection meant.
    struct answer {
        std::uint32_t channel = none;
        bool subscribed = false;  // SUBSCRIBE confirmed: wake the channel's locks ("look now")
        bool violation = false;   // not the confirmation expected: drop the connection
    };

    // Channels per lock of the table: its own, and one still leaving (see above).
    static constexpr std::size_t channels_per_lock = 2;

    bool ready() const noexcept { return capacity_ > 0; }
    // Room for `locks_max` locks (lock indices below it) and channels_per_lock channels for
    // each; allocates.
    void set_up(std::size_t locks_max);
    // How many channels: the most commands that can be in flight on the subscriber.
    std::size_t capacity() const noexcept { return capacity_; }
    // Forgets everything (the client closed); keeps the storage.
    void clear() noexcept;

    // A fair lock `lock` joins the channel `name` (its wait's, made when new). False, leaving
    // it unattached, for an empty name or one longer than wake_channel_bytes_max, or when the
    // channel is new and every channel is taken (by locks and channels still leaving): a call
    // once a channel has left succeeds.
    bool attach(std::uint32_t lock, std::string_view name) noexcept;
    // The lock leaves its channel (no-op for a lock never attached); the channel goes when
    // its last lock left and no command of it is in flight.
    void detach(std::uint32_t lock) noexcept;
    bool attached(std::uint32_t lock) const noexcept {
        return lock < locks_max_ && channel_of_[lock] != none;
    }
    // The channel an attached lock is on.
    std::string_view channel_name(std::uint32_t lock) const noexcept {
        return slots_[channel_of_[lock]].name.view();
    }
    // Whether `lock` wants wake-ups now (lock::wants_wake_ups after each call into it).
    void set_wants(std::uint32_t lock, bool wants) noexcept;

    // Some channel wants a subscription: the subscriber connection should be up.
    bool wanted() const noexcept { return channels_wanting_ > 0; }
    // Some channel has a command to write (a subscription to make or to drop).
    bool has_work() const noexcept { return !work_.empty(); }

    // Writes the SUBSCRIBE and UNSUBSCRIBE commands due while the sink (asio_connection's
    // cursor/room/commit) has room, each tracked on `connection` (ready) with the channel as owner.
    template <typename Sink>
    void write_commands(session::connection& connection, std::int64_t now, Sink& sink) noexcept;

    // The confirmation (or error) answering the command tracked as `entry`.
    answer on_answer(const session::in_flight& entry, const reply_node* nodes,
                     std::size_t count) noexcept;
    // The subscriber connection ended: every subscription is gone.
    void on_connection_lost() noexcept;

    // The channel named `name`, or none.
    std::uint32_t find(std::string_view name) const noexcept;
    // The locks of a channel, in no particular order: first_lock(c), then next_lock(l).
    std::uint32_t first_lock(std::uint32_t channel) const noexcept {
        return slots_[channel].first_lock;
    }
    std::uint32_t next_lock(std::uint32_t lock) const noexcept { return next_lock_[lock]; }
    subscription state(std::uint32_t channel) const noexcept {
        return slots_[channel].sub.current();
    }
    // The channel's messages are current (its subscription is confirmed).
    bool live(std::uint32_t channel) const noexcept { return slots_[channel].sub.live(); }
    std::size_t channels() const noexcept { return channel_count_; }

private:
    struct slot {
        session::fixed_text<wake_channel_bytes_max> name;  // the pub/sub channel
        std::uint32_t first_lock = none;
        std::uint32_t locks = 0;       // attached
        std::uint32_t wanting = 0;     // of them, wanting wake-ups
        std::uint32_t generation = 0;  // tags its commands: a freed and reused slot's differ
        session::subscription sub;
        bool in_use = false;
        bool queued = false;  // on work_
    };

    std::uint32_t make(std::string_view name) noexcept;
    void free_if_unused(std::uint32_t channel) noexcept;
    void queue(std::uint32_t channel) noexcept;
    bool wants(const slot& s) const noexcept { return s.wanting > 0; }
    std::size_t home_of(std::string_view name) const noexcept;
    void unindex(std::uint32_t channel) noexcept;

    std::size_t capacity_ = 0;  // channels
    std::size_t locks_max_ = 0;
    std::unique_ptr<slot[]> slots_;
    std::unique_ptr<std::uint32_t[]> free_;  // a stack of free channel slots
    std::size_t free_count_ = 0;
    std::size_t channel_count_ = 0;
    std::size_t channels_wanting_ = 0;
    // Open addressing with linear probing over channel names: channel + 1, 0 when empty.
    std::unique_ptr<std::uint32_t[]> index_;
    std::size_t index_mask_ = 0;
    // Per lock: its channel, the next lock of that channel, whether it wants wake-ups.
    std::unique_ptr<std::uint32_t[]> channel_of_;
    std::unique_ptr<std::uint32_t[]> next_lock_;
    std::unique_ptr<bool[]> lock_wants_;
    fixed_ring<std::uint32_t> work_;  // channels whose subscription may need a command
};

template <typename Sink>
void fair_channels::write_commands(session::connection& connection, std::int64_t now,
                                   Sink& sink) noexcept {
    for (std::size_t budget = work_.size(); budget > 0 && !work_.empty(); --budget) {
        if (!connection.ready() || sink.room() < session::subscription_request_bytes_max) return;
        const std::uint32_t channel = work_.front();
        work_.pop();
        slot& s = slots_[channel];
        s.queued = false;
        const session::subscription::command due = s.sub.due(wants(s));
        if (due == session::subscription::command::none) {
            free_if_unused(channel);
            continue;  // in flight (its confirmation decides again), refused, or as wanted
        }
        const bool subscribe = due == session::subscription::command::subscribe;
        const std::size_t size =
            session::write_subscription(subscribe, s.name.view(), sink.cursor(), sink.room());
        EDGELOCK_ASSERT(size > 0);  // room checked, names bounded by wake_channel_bytes_max
        const bool tracked = connection.track(channel, s.generation, now);
        EDGELOCK_ASSERT(tracked);  // one command per channel, storage sized for every channel
        s.sub.sent(due);
        if (!sink.commit(size)) return;
    }
}

}  // namespace edgelock::async::detail
