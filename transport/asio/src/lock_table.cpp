// SPDX-License-Identifier: Apache-2.0
#include "lock_table.hpp"

namespace edgelock::async::detail {

void lock_table::open(std::size_t capacity) {
    if (slots_) retired_.push_back(std::move(slots_));
    slots_.reset(new lock_entry[capacity]);
    capacity_ = capacity;
    free_.clear();
    free_.reserve(capacity);
    for (std::size_t i = capacity; i > 0; --i) free_.push_back(static_cast<std::uint32_t>(i - 1));
}

void lock_table::close() {
    if (slots_) retired_.push_back(std::move(slots_));
    capacity_ = 0;
    free_.clear();
}

lock_handle lock_table::take() noexcept {
    const std::uint32_t index = free_.back();
    free_.pop_back();
    lock_entry& e = slots_[index];
    e.in_use = true;
    e.generation = ++generation_counter_;
    return lock_handle{index, e.generation};
}

lock_entry* lock_table::find(lock_handle handle) noexcept {
    if (handle.index >= capacity_) return nullptr;
    lock_entry& e = slots_[handle.index];
    return e.in_use && e.generation == handle.generation ? &e : nullptr;
}

const lock_entry* lock_table::find(lock_handle handle) const noexcept {
    if (handle.index >= capacity_) return nullptr;
    const lock_entry& e = slots_[handle.index];
    return e.in_use && e.generation == handle.generation ? &e : nullptr;
}

}  // namespace edgelock::async::detail
