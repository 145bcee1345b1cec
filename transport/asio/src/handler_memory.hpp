// SPDX-License-Identifier: Apache-2.0
// Memory for the async client's socket and timer operations, so that lock traffic allocates
// nothing once connected, over TLS too, and with a fair lock's subscriber connection, whose
// timer and reads are outstanding beside the lock connection's.
//
// Asio recycles operation memory per thread in a cache of two blocks of any size. Over TLS a
// read's completion can start a write while the SSL stream's read and write, and the socket
// operations under each, hold blocks of several sizes, and about once in 10,000 lock cycles
// no cached block was large enough: a new one was allocated. Here every block has one size,
// large enough for any of the client's operations, so any free block serves any operation; a
// thread keeps up to handler_blocks_per_thread free ones until it exits. A larger request
// (none is made) would fall back to operator new.
#pragma once

#include <asio/bind_allocator.hpp>

#include <cstddef>
#include <utility>

namespace edgelock::async::detail {

inline constexpr std::size_t handler_block_bytes = 1024;
inline constexpr std::size_t handler_blocks_per_thread = 16;

void* take_handler_block(std::size_t bytes);
void give_handler_block(void* block, std::size_t bytes) noexcept;

template <typename T>
struct handler_allocator {
    using value_type = T;

    handler_allocator() noexcept = default;
    template <typename U>
    handler_allocator(const handler_allocator<U>&) noexcept {}

    T* allocate(std::size_t count) {
        return static_cast<T*>(take_handler_block(count * sizeof(T)));
    }
    void deallocate(T* block, std::size_t count) noexcept {
        give_handler_block(block, count * sizeof(T));
    }

    template <typename U>
    bool operator==(const handler_allocator<U>&) const noexcept {
        return true;
    }
    template <typename U>
    bool operator!=(const handler_allocator<U>&) const noexcept {
        return false;
    }
};

// `handler`, with its operations' memory taken from the blocks above.
template <typename Handler>
auto with_handler_memory(Handler&& handler) {
    return asio::bind_allocator(handler_allocator<void>(), std::forward<Handler>(handler));
}

}  // namespace edgelock::async::detail
