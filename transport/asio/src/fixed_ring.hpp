// SPDX-License-Identifier: Apache-2.0
// The async client's fixed-capacity ring: allocated once when the client opens.
#pragma once

#include <cstddef>
#include <memory>

#include "edgelock/assert.hpp"

namespace edgelock::async::detail {

// A ring buffer whose capacity is fixed when it is set up (the only allocation).
template <typename T>
class fixed_ring {
public:
    void init(std::size_t capacity) {
        items_.reset(new T[capacity]);
        capacity_ = capacity;
        head_ = 0;
        count_ = 0;
    }
    bool push(const T& value) noexcept {
        if (count_ == capacity_) return false;
        items_[(head_ + count_) % capacity_] = value;
        ++count_;
        return true;
    }
    T& front() noexcept {
        EDGELOCK_ASSERT(count_ > 0);
        return items_[head_];
    }
    void pop() noexcept {
        EDGELOCK_ASSERT(count_ > 0);
        head_ = (head_ + 1) % capacity_;
        --count_;
    }
    // Drops every item for which `drop` is true, keeping the order of the rest.
    template <typename Predicate>
    void erase_if(Predicate drop) noexcept {
        std::size_t kept = 0;
        for (std::size_t n = 0; n < count_; ++n) {
            const T item = items_[(head_ + n) % capacity_];
            if (drop(item)) continue;
            items_[(head_ + kept) % capacity_] = item;
            ++kept;
        }
        count_ = kept;
    }
    bool empty() const noexcept { return count_ == 0; }
    std::size_t size() const noexcept { return count_; }
    void clear() noexcept {
        head_ = 0;
        count_ = 0;
    }

private:
    std::unique_ptr<T[]> items_;
    std::size_t capacity_ = 0;
    std::size_t head_ = 0;
    std::size_t count_ = 0;
};

}  // namespace edgelock::async::detail
