// SPDX-License-Identifier: Apache-2.0
// edgelock: owner tokens from the operating system's random source.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "edgelock/errc.hpp"
#include "edgelock/lock.hpp"

namespace edgelock {

// Fills `token` from getrandom(2), retrying on EINTR. Returns ok, or io_error when the
// kernel cannot supply random bytes (the token is then unusable).
errc random_token(owner_token& token) noexcept;

// 64 random bits for the connections' reconnect jitter (session::connection_setup::seed; a client
// gives each of its connections seed + its index, so they spread out too). Returns ok, or io_error
// when the kernel cannot supply them.
[[nodiscard]] errc random_seed(std::uint64_t& bits) noexcept;

// Tokens from one getrandom(2) call per tokens_per_refill tokens. A system call per acquire
// was the largest item in the client's profile (bench/lock_cycle); tokens only need to be
// unique and unguessable, and they are sent to Redis in clear anyway, so holding a few in
// memory costs nothing. Not thread-safe: one pool per client or thread.
class token_pool {
public:
    static constexpr std::size_t tokens_per_refill = 16;

    // Returns ok, or io_error when a refill fails (the token is then unusable).
    errc next(owner_token& token) noexcept;

private:
    std::array<std::uint8_t, token_bytes * tokens_per_refill> bytes_{};
    std::size_t used_ = tokens_per_refill;
};

}  // namespace edgelock
