// SPDX-License-Identifier: Apache-2.0
#include "handler_memory.hpp"

#include <array>
#include <new>

namespace edgelock::async::detail {
namespace {

// This thread's free blocks, freed when it exits.
struct free_blocks {
    std::array<void*, handler_blocks_per_thread> blocks{};
    std::size_t count = 0;

    ~free_blocks() {
        while (count > 0) ::operator delete(blocks[--count]);
    }
};

thread_local free_blocks spare;

}  // namespace

void* take_handler_block(std::size_t bytes) {
    if (bytes > handler_block_bytes) return ::operator new(bytes);
    if (spare.count > 0) return spare.blocks[--spare.count];
    return ::operator new(handler_block_bytes);
}

void give_handler_block(void* block, std::size_t bytes) noexcept {
    if (bytes <= handler_block_bytes && spare.count < spare.blocks.size()) {
        spare.blocks[spare.count++] = block;
        return;
    }
    ::operator delete(block);
}

}  // namespace edgelock::async::detail
