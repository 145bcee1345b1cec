// SPDX-License-Identifier: Apache-2.0
// The async client's locks ordered by their next deadline, so one timer serves them all.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "edgelock/lock.hpp"

namespace edgelock::async::detail {

// Locks ordered by their next deadline (a binary min-heap with positions, fixed capacity).
class deadline_heap {
public:
    void init(std::size_t capacity);
    // Inserts, moves or (with no_deadline_ms) removes `index`.
    void set(std::uint32_t index, std::int64_t deadline_ms) noexcept;
    // The key of `index`, or no_deadline_ms when it is not in the heap.
    std::int64_t key(std::uint32_t index) const noexcept {
        const std::uint32_t at = position_[index];
        return at == absent ? no_deadline_ms : heap_[at].deadline_ms;
    }
    bool empty() const noexcept { return size_ == 0; }
    std::uint32_t top() const noexcept { return heap_[0].index; }
    std::int64_t top_deadline_ms() const noexcept {
        return size_ == 0 ? no_deadline_ms : heap_[0].deadline_ms;
    }

private:
    struct item {
        std::int64_t deadline_ms;
        std::uint32_t index;
    };
    static constexpr std::uint32_t absent = 0xffffffff;

    void place(std::size_t at, const item& value) noexcept;
    void sift_up(std::size_t at) noexcept;
    void sift_down(std::size_t at) noexcept;

    std::unique_ptr<item[]> heap_;
    std::unique_ptr<std::uint32_t[]> position_;  // per lock index: its heap slot, or absent
    std::size_t size_ = 0;
};

}  // namespace edgelock::async::detail
