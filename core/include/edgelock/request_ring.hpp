// SPDX-License-Identifier: Apache-2.0
// edgelock: the requests a lock has queued or in flight on one instance, and the owner tokens
// they carry. Part of lock's insides (lock.hpp), kept apart so that the pipeline's bookkeeping
// (what is written, what awaits a reply, which token each request carries) reads, and is
// tested, on its own. Fixed capacity, no heap, nothing here knows about rounds or time.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "edgelock/limits.hpp"

namespace edgelock {

using owner_token = std::array<std::uint8_t, token_bytes>;

// What a request asks of Redis: take the key (the acquire), raise the fence counters (N > 1
// with fencing), wait for replicas (WAIT), extend the key (renew), or delete it (release).
enum class request_kind : std::uint8_t { acquire, raise, replicate, renew, release };

// One queued or in-flight request. `current` marks the requests of the running, undecided
// round; it is cleared the moment the round is decided, so a late reply can never be mistaken
// for a fresh one. `token_slot` names the token it carries (token_slots), so a cleanup release
// still unwritten when a new acquire() brings a new token keeps its own. Packed into one
// byte: the rings are most of a lock's size.
// `native`: an acquire written as SET NX PX GET rather than the script (set when it is
// written: the form depends on what the instance's connection accepts by then).
struct lock_request {
    std::uint8_t kind_bits : 3;
    std::uint8_t eval : 1;
    std::uint8_t current : 1;
    std::uint8_t token_slot : 1;
    std::uint8_t native : 1;
    // A fair waiter's request that leaves it in line without the lock: a release that keeps
    // its place (the cleanup of a failed attempt), or an acquire that only joins (the restart
    // guard keeps the instance out; the script answers "join").
    std::uint8_t in_line_only : 1;
    request_kind kind() const noexcept { return static_cast<request_kind>(kind_bits); }
};
static_assert(sizeof(lock_request) == 1, "a request is one byte");

// One instance's requests in FIFO order: the oldest in_flight() were written and await their
// replies, which come in the order they were written (one pipelined connection); the rest
// wait to be written. A zeroed ring is empty.
class request_ring {
public:
    std::uint8_t size() const noexcept { return count_; }
    std::uint8_t in_flight() const noexcept { return in_flight_; }
    bool has_unsent() const noexcept { return count_ > in_flight_; }
    std::size_t free_slots() const noexcept { return requests_per_instance_max - count_; }

    // The n-th oldest request, n < size(): the first in_flight() are in flight.
    const lock_request& at(std::uint8_t n) const noexcept;

    // Appends `r` as unsent when at least free_slots_needed (>= 1) slots are free; a claim
    // asks for two, so the release that may have to follow it always fits. False, and
    // nothing changes, otherwise.
    bool push(const lock_request& r, std::size_t free_slots_needed) noexcept;

    // The oldest unsent request (has_unsent() must hold), to be encoded; mark_sent() then
    // counts it in flight. Nothing is in flight until mark_sent().
    lock_request& next_unsent() noexcept;
    void mark_sent() noexcept;
    // Counts every request in flight, as if all were written on a connection now failing.
    void mark_all_sent() noexcept;

    // Takes the oldest request in flight (in_flight() > 0). token_replaced says whether its
    // token slot was reused (reuse_token_slot) while it was in flight: the slot then no longer
    // holds the token it was written with.
    lock_request pop_in_flight(bool& token_replaced) noexcept;

    // Removes the unsent requests of the running round (current), keeping the order of the
    // rest; true when there were any.
    bool drop_unsent_current() noexcept;
    // The running round is decided: none of the requests belongs to it any more, and its
    // WAITs not written yet are dropped.
    void clear_current() noexcept;
    // A new token goes into token slot `slot`: the requests in flight that carry the slot's
    // old token are marked replaced, and the unsent ones are dropped (their keys expire by
    // TTL).
    void reuse_token_slot(std::uint8_t slot) noexcept;

private:
    std::uint8_t index(std::uint8_t n) const noexcept {
        return static_cast<std::uint8_t>((head_ + n) % requests_per_instance_max);
    }
    template <typename Predicate>
    bool drop_unsent_if(Predicate drop) noexcept;

    std::array<lock_request, requests_per_instance_max> slots_{};
    std::uint8_t head_ = 0;
    std::uint8_t count_ = 0;
    std::uint8_t in_flight_ = 0;
    std::uint8_t replaced_ = 0;  // bit i: slots_[i] is in flight and its token slot was reused
};
static_assert(requests_per_instance_max <= 8, "request_ring::replaced_ has a bit per slot");

// The owner tokens requests carry: the current acquire()'s, and the previous one's, whose
// cleanup releases may still wait to be written or be in flight.
class token_slots {
public:
    std::uint8_t current() const noexcept { return token_slot_; }
    // The slot the next take() fills: the one before the current.
    std::uint8_t next() const noexcept { return static_cast<std::uint8_t>(1 - token_slot_); }
    const owner_token& token(std::uint8_t slot) const noexcept { return tokens_[slot & 1u]; }
    // The token of `slot` as 32 lower-case hex characters, as it is sent to Redis.
    std::array<char, token_hex_bytes> hex(std::uint8_t slot) const noexcept;
    // Puts a new acquire()'s token into next() and makes that slot current.
    void take(const owner_token& token) noexcept;

private:
    std::array<owner_token, 2> tokens_{};
    std::uint8_t token_slot_ = 0;
};

}  // namespace edgelock
