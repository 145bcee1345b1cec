// SPDX-License-Identifier: Apache-2.0
// edgelock: exponential backoff with full jitter, the one used for every retry.
//
// The lock waits this long between acquire attempts, and the session between reconnects.
// "Full jitter" draws the whole delay uniformly below an exponentially growing cap, so
// clients that failed together (a restarted Redis, a lock freed to eight waiters) spread out
// instead of retrying in step; a fixed or half-jittered delay keeps them bunched.
//
// Sans-IO and deterministic: the generator is seeded by the caller (the lock from its token
// bytes, the simulator from its seed), so a run replays exactly.
#pragma once

#include <cstdint>

namespace edgelock {

class full_jitter_backoff {
public:
    // Spreads any 64 bits (splitmix64) into the generator's state.
    void seed(std::uint64_t bits) noexcept;

    // The delay after `failures` consecutive failures (1 for the first): uniform in
    // [1, min(max_ms, min_ms * 2^(failures-1))]. The doubling stops at 2^30, so with min_ms
    // and max_ms within a day nothing overflows. Requires 1 <= min_ms <= max_ms.
    std::int64_t delay_ms(std::uint32_t failures, std::int64_t min_ms,
                          std::int64_t max_ms) noexcept;

private:
    std::uint64_t state_ = 1;  // xorshift64*: never 0
};

}  // namespace edgelock
