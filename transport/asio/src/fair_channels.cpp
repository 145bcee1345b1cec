// SPDX-License-Identifier: Apache-2.0
#include "fair_channels.hpp"

#include "edgelock/assert.hpp"

namespace edgelock::async::detail {
namespace {

std::uint64_t fnv1a(std::string_view bytes) noexcept {
    std::uint64_t hash = 14695981039346656037ull;
    for (const char c : bytes) {
        hash ^= static_cast<unsigned char>(c);
        hash *= 1099511628211ull;
    }
    return hash;
}

}  // namespace

void fair_channels::set_up(std::size_t locks_max) {
    capacity_ = channels_per_lock * locks_max;
    locks_max_ = locks_max;
    slots_.reset(new slot[capacity_]);
    free_.reset(new std::uint32_t[capacity_]);
    std::size_t index_size = 2;
    while (index_size < 2 * capacity_) index_size *= 2;
    index_.reset(new std::uint32_t[index_size]);
    index_mask_ = index_size - 1;
    channel_of_.reset(new std::uint32_t[locks_max_]);
    next_lock_.reset(new std::uint32_t[locks_max_]);
    lock_wants_.reset(new bool[locks_max_]);
    work_.init(capacity_);
    clear();
}

void fair_channels::clear() noexcept {
    for (std::size_t i = 0; i < capacity_; ++i) {
        slots_[i] = slot{};
        free_[i] = static_cast<std::uint32_t>(capacity_ - 1 - i);
    }
    free_count_ = capacity_;
    channel_count_ = 0;
    channels_wanting_ = 0;
    for (std::size_t i = 0; i <= index_mask_ && index_; ++i) index_[i] = 0;
    for (std::size_t i = 0; i < locks_max_; ++i) {
        channel_of_[i] = none;
        next_lock_[i] = none;
        lock_wants_[i] = false;
    }
    work_.clear();
}

std::size_t fair_channels::home_of(std::string_view name) const noexcept {
    return static_cast<std::size_t>(fnv1a(name)) & index_mask_;
}

std::uint32_t fair_channels::find(std::string_view name) const noexcept {
    if (capacity_ == 0) return none;
    // The index is at most half full: an empty cell is always reached.
    for (std::size_t at = home_of(name);; at = (at + 1) & index_mask_) {
        const std::uint32_t cell = index_[at];
        if (cell == 0) return none;
        if (slots_[cell - 1].name.view() == name) return cell - 1;
    }
}

std::uint32_t fair_channels::make(std::string_view name) noexcept {
    if (free_count_ == 0) return none;  // more channels leaving than locks: attach() says so
    const std::uint32_t channel = free_[--free_count_];
    slot& s = slots_[channel];
    const std::uint32_t generation = s.generation + 1;
    s = slot{};
    s.generation = generation;
    s.in_use = true;
    const bool fits = s.name.assign(name);
    EDGELOCK_ASSERT(fits);
    std::size_t at = home_of(name);
    while (index_[at] != 0) at = (at + 1) & index_mask_;
    index_[at] = channel + 1;
    ++channel_count_;
    return channel;
}

bool fair_channels::attach(std::uint32_t lock, std::string_view name) noexcept {
    EDGELOCK_ASSERT(lock < locks_max_);
    EDGELOCK_ASSERT(channel_of_[lock] == none);
    if (name.empty() || name.size() > wake_channel_bytes_max) return false;
    std::uint32_t channel = find(name);
    if (channel == none) channel = make(name);
    if (channel == none) return false;
    slot& s = slots_[channel];
    channel_of_[lock] = channel;
    next_lock_[lock] = s.first_lock;
    s.first_lock = lock;
    ++s.locks;
    lock_wants_[lock] = false;
    return true;
}

void fair_channels::detach(std::uint32_t lock) noexcept {
    if (!attached(lock)) return;
    set_wants(lock, false);
    const std::uint32_t channel = channel_of_[lock];
    slot& s = slots_[channel];
    std::uint32_t* link = &s.first_lock;
    for (std::size_t n = 0; n < s.locks && *link != lock; ++n) link = &next_lock_[*link];
    EDGELOCK_ASSERT(*link == lock);
    *link = next_lock_[lock];
    next_lock_[lock] = none;
    channel_of_[lock] = none;
    --s.locks;
    free_if_unused(channel);
}

void fair_channels::set_wants(std::uint32_t lock, bool wants_now) noexcept {
    if (!attached(lock) || lock_wants_[lock] == wants_now) return;
    lock_wants_[lock] = wants_now;
    const std::uint32_t channel = channel_of_[lock];
    slot& s = slots_[channel];
    const bool before = wants(s);
    s.wanting = wants_now ? s.wanting + 1 : s.wanting - 1;
    if (before == wants(s)) return;
    channels_wanting_ = wants(s) ? channels_wanting_ + 1 : channels_wanting_ - 1;
    queue(channel);
}

void fair_channels::queue(std::uint32_t channel) noexcept {
    slot& s = slots_[channel];
    if (s.queued) return;
    s.queued = true;
    const bool pushed = work_.push(channel);
    EDGELOCK_ASSERT(pushed);  // one entry per channel, as many entries as channels
}

// A channel without locks goes once nothing of it is on the wire; a subscription still
// confirmed is dropped first (its UNSUBSCRIBE is queued by the wanting count falling).
void fair_channels::free_if_unused(std::uint32_t channel) noexcept {
    slot& s = slots_[channel];
    if (!s.in_use || s.locks > 0) return;
    if (!s.sub.quiet()) return;
    if (s.queued) {
        work_.erase_if([channel](std::uint32_t queued) { return queued == channel; });
        s.queued = false;
    }
    unindex(channel);
    s.in_use = false;
    s.first_lock = none;
    free_[free_count_++] = channel;
    --channel_count_;
}

// Backward-shift deletion: the cells after the removed one that probed past it move back,
// so every lookup still finds its name before an empty cell.
void fair_channels::unindex(std::uint32_t channel) noexcept {
    std::size_t hole = home_of(slots_[channel].name.view());
    while (index_[hole] != channel + 1) hole = (hole + 1) & index_mask_;
    index_[hole] = 0;
    for (std::size_t at = (hole + 1) & index_mask_; index_[at] != 0; at = (at + 1) & index_mask_) {
        const std::size_t home = home_of(slots_[index_[at] - 1].name.view());
        // The cell may fill the hole when its home is not within (hole, at] cyclically.
        const bool stays = hole <= at ? (hole < home && home <= at) : (hole < home || home <= at);
        if (stays) continue;
        index_[hole] = index_[at];
        index_[at] = 0;
        hole = at;
    }
}

fair_channels::answer fair_channels::on_answer(const session::in_flight& entry,
                                               const reply_node* nodes,
                                               std::size_t count) noexcept {
    answer result;
    if (entry.owner >= capacity_) {
        result.violation = true;
        return result;
    }
    slot& s = slots_[entry.owner];
    if (!s.in_use || s.generation != entry.tag) {
        result.violation = true;  // one command per channel in flight: this cannot be
        return result;
    }
    const session::subscription::answer answered = s.sub.on_answer(s.name.view(), nodes, count);
    if (answered.violation) {
        result.violation = true;
        return result;
    }
    result.channel = entry.owner;
    result.subscribed = answered.subscribed;
    // Decide again: what is wanted may have changed while the command was out. A channel
    // its locks have left goes at once, making room for another name.
    free_if_unused(entry.owner);
    if (s.in_use) queue(entry.owner);
    return result;
}

void fair_channels::on_connection_lost() noexcept {
    for (std::uint32_t channel = 0; channel < capacity_; ++channel) {
        slot& s = slots_[channel];
        if (!s.in_use) continue;
        s.sub.on_connection_lost();
        if (wants(s)) {
            queue(channel);
        } else {
            free_if_unused(channel);
        }
    }
}

}  // namespace edgelock::async::detail
