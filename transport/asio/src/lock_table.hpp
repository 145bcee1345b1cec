// SPDX-License-Identifier: Apache-2.0
// The async client's lock table: a fixed number of slots, allocated at open(), taken and given
// back without allocating. A handle names a slot and the generation it was taken in, so a
// stale handle never reaches the lock now in its slot. The slots of a closed table stay alive
// (retired) until the handlers running over them have returned.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <system_error>
#include <vector>

#include "edgelock/async_client.hpp"
#include "edgelock/lock.hpp"
#include "edgelock/session/lock_links.hpp"
#include "edgelock/session/lock_metrics.hpp"

namespace edgelock::async::detail {

// A lock as a waiter list or the dirty list names it: its slot, and the slot's generation.
struct lock_ref {
    std::uint32_t index = 0;
    std::uint32_t generation = 0;
};

// One lock of the client: the sans-IO core and what the client keeps beside it.
struct lock_entry {
    lock core;
    handler_slot acquire_handler;
    handler_slot release_handler;
    handler_slot lost_handler;
    std::array<event, events_max> deferred{};  // events taken out during a call-in
    std::uint8_t deferred_count = 0;
    std::uint32_t generation = 0;
    std::int64_t deadline_ms = no_deadline_ms;  // the core's; the heap key may be earlier
    std::uint32_t renewals = 0;
    session::lock_meter meter;  // this lock's metrics (client::metrics(handle))
    errc last_cause = errc::ok;
    std::int64_t guard_until_ms = 0;  // the last restart_guard failure's end of the guard
    std::error_code failure;          // the running acquire's last instance error, if any
    std::uint32_t waiting_mask = 0;   // links on whose write buffer it waits (bit per link)
    std::uint32_t dropped_mask = 0;   // links whose ended connection dropped its requests
    session::lock_links place;        // what the links tell it (its cluster route too)
    // Written on a connection, reply not yet read. Each connection's in-flight queue
    // has room for requests_per_instance_max per slot, which the core bounds for a live
    // lock; a removed lock's requests keep their share until answered or dropped.
    std::uint16_t requests_in_flight = 0;
    bool draining = false;  // removed, the slot freed once requests_in_flight is 0
    bool fair = false;      // lock_config::fair: has (or waits for) a wake-up channel
    bool in_use = false;
    bool dirty = false;  // has deferred events to deliver
    // A hold the caller was told of (its acquire completed with success) whose end it has
    // not heard: release() not called, no lost handler called for its loss.
    bool hold_reported = false;
    bool lost_unreported = false;  // skip the next `lost`: its hold was never reported
    bool release_after_events = false;
};

class lock_table {
public:
    // Fresh slots, all free (the previous ones are retired).
    void open(std::size_t capacity);
    // No slots (find() finds nothing); the old ones are retired.
    void close();
    // Frees retired slots: no handler runs over them any more.
    void drop_retired() noexcept { retired_.clear(); }

    std::size_t capacity() const noexcept { return capacity_; }
    bool full() const noexcept { return free_.empty(); }
    lock_entry& operator[](std::uint32_t index) noexcept { return slots_[index]; }
    const lock_entry& operator[](std::uint32_t index) const noexcept { return slots_[index]; }
    // Starts loading a slot into the cache, every line of it (a reply's handling touches the
    // core, the handlers, the meter and the flags after them). With a thousand locks the
    // table outgrows the cache (docs/BENCHMARKS.md, "A lock's slot loaded before its reply").
    void prefetch(std::uint32_t index) const noexcept {
        if (index >= capacity_) return;
        const char* slot = reinterpret_cast<const char*>(&slots_[index]);
        for (std::size_t at = 0; at < sizeof(lock_entry); at += cache_line_bytes)
            __builtin_prefetch(slot + at);
    }
    std::uint32_t index_of(const lock_entry& e) const noexcept {
        return static_cast<std::uint32_t>(&e - slots_.get());
    }
    // The slot take() would give (the caller configures it first; not full()).
    lock_entry& next_free() noexcept { return slots_[free_.back()]; }
    // Takes the next free slot for a new lock: in use, with a generation never used before.
    lock_handle take() noexcept;
    void give_back(std::uint32_t index) noexcept { free_.push_back(index); }

    // The lock `handle` names, or null (out of range, free, or of an earlier generation).
    lock_entry* find(lock_handle handle) noexcept;
    const lock_entry* find(lock_handle handle) const noexcept;

private:
    static constexpr std::size_t cache_line_bytes = 64;

    std::unique_ptr<lock_entry[]> slots_;
    std::size_t capacity_ = 0;
    std::vector<std::uint32_t> free_;  // reserved to capacity_: push/pop never allocate
    std::uint32_t generation_counter_ = 0;
    std::vector<std::unique_ptr<lock_entry[]>> retired_;
};

}  // namespace edgelock::async::detail
