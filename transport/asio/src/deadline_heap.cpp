// SPDX-License-Identifier: Apache-2.0
#include "deadline_heap.hpp"

#include "edgelock/assert.hpp"

namespace edgelock::async::detail {

void deadline_heap::init(std::size_t capacity) {
    heap_.reset(new item[capacity]);
    position_.reset(new std::uint32_t[capacity]);
    for (std::size_t i = 0; i < capacity; ++i) position_[i] = absent;
    size_ = 0;
}

void deadline_heap::set(std::uint32_t index, std::int64_t deadline_ms) noexcept {
    const std::uint32_t at = position_[index];
    if (deadline_ms == no_deadline_ms) {
        if (at == absent) return;
        position_[index] = absent;
        --size_;
        if (at == size_) return;
        const item moved = heap_[size_];
        place(at, moved);
        sift_up(at);
        sift_down(position_[moved.index]);
        return;
    }
    if (at == absent) {
        place(size_, item{deadline_ms, index});
        ++size_;
        sift_up(size_ - 1);
        return;
    }
    const std::int64_t previous = heap_[at].deadline_ms;
    heap_[at].deadline_ms = deadline_ms;
    if (deadline_ms < previous) {
        sift_up(at);
    } else {
        sift_down(at);
    }
}

void deadline_heap::place(std::size_t at, const item& value) noexcept {
    heap_[at] = value;
    position_[value.index] = static_cast<std::uint32_t>(at);
}

void deadline_heap::sift_up(std::size_t at) noexcept {
    while (at > 0) {
        const std::size_t parent = (at - 1) / 2;
        if (heap_[parent].deadline_ms <= heap_[at].deadline_ms) return;
        const item child = heap_[at];
        place(at, heap_[parent]);
        place(parent, child);
        at = parent;
    }
}

void deadline_heap::sift_down(std::size_t at) noexcept {
    for (;;) {
        const std::size_t left = 2 * at + 1;
        if (left >= size_) return;
        std::size_t smallest = left;
        if (left + 1 < size_ && heap_[left + 1].deadline_ms < heap_[left].deadline_ms)
            smallest = left + 1;
        if (heap_[at].deadline_ms <= heap_[smallest].deadline_ms) return;
        const item parent = heap_[at];
        place(at, heap_[smallest]);
        place(smallest, parent);
        at = smallest;
    }
}

// ---- open and close --------------------------------------------------------------------

}  // namespace edgelock::async::detail
