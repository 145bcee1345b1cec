// SPDX-License-Identifier: Apache-2.0
// edgelock sim: the one pseudo-random generator of the simulator.
//
// Every random choice in a run comes from a prng seeded from the run's seed, so a seed
// replays the run exactly. The algorithm is fixed (xoshiro256** seeded through splitmix64)
// and every draw is plain integer arithmetic: no std::*_distribution (their output differs
// between standard libraries), no floating point, no 128-bit integers (absent on 32-bit ARM).
// The same seed therefore yields the same numbers on x86-64, aarch64 and armhf.
#pragma once

#include <array>
#include <cstdint>

namespace edgelock::sim {

// One step of splitmix64: advances `state` and returns the next output.
std::uint64_t splitmix64(std::uint64_t& state) noexcept;

// A well-mixed 64-bit value from two inputs, for deriving seeds (cell seeds, stream seeds).
std::uint64_t mix_seed(std::uint64_t seed, std::uint64_t salt) noexcept;

class prng {
public:
    explicit prng(std::uint64_t seed = 0) noexcept;

    // An independent generator for one part of the world (a path, a client), so adding a
    // fault to one part does not shift the numbers every other part draws.
    static prng stream(std::uint64_t seed, std::uint64_t stream_id) noexcept;

    std::uint64_t next() noexcept;
    // Uniform in [0, bound); bound must be > 0. Unbiased (rejection sampling).
    std::uint64_t below(std::uint64_t bound) noexcept;
    // Uniform in [lo, hi], both included; lo <= hi.
    std::int64_t between(std::int64_t lo, std::int64_t hi) noexcept;
    // True with probability per_million / 1'000'000.
    bool chance(std::uint32_t per_million) noexcept;

private:
    std::array<std::uint64_t, 4> state_{};
};

}  // namespace edgelock::sim
