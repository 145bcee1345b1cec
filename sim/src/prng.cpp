// SPDX-License-Identifier: Apache-2.0
#include "edgelock/sim/prng.hpp"

#include "edgelock/assert.hpp"

namespace edgelock::sim {
namespace {

std::uint64_t rotl(std::uint64_t value, int bits) noexcept {
    return (value << bits) | (value >> (64 - bits));
}

}  // namespace

std::uint64_t splitmix64(std::uint64_t& state) noexcept {
    state += 0x9e3779b97f4a7c15ULL;
    std::uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

std::uint64_t mix_seed(std::uint64_t seed, std::uint64_t salt) noexcept {
    std::uint64_t state = seed ^ rotl(salt * 0xd1342543de82ef95ULL, 23);
    splitmix64(state);
    return splitmix64(state);
}

prng::prng(std::uint64_t seed) noexcept {
    std::uint64_t state = seed;
    for (std::uint64_t& word : state_) word = splitmix64(state);
}

prng prng::stream(std::uint64_t seed, std::uint64_t stream_id) noexcept {
    return prng(mix_seed(seed, stream_id + 1));
}

std::uint64_t prng::next() noexcept {
    const std::uint64_t result = rotl(state_[1] * 5, 7) * 9;
    const std::uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = rotl(state_[3], 45);
    return result;
}

std::uint64_t prng::below(std::uint64_t bound) noexcept {
    EDGELOCK_ASSERT(bound > 0);
    // Values below `threshold` would make some results more likely than others.
    const std::uint64_t threshold = (0 - bound) % bound;
    for (;;) {
        const std::uint64_t value = next();
        if (value >= threshold) return value % bound;
    }
}

std::int64_t prng::between(std::int64_t lo, std::int64_t hi) noexcept {
    EDGELOCK_ASSERT(lo <= hi);
    const std::uint64_t span = static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo);
    if (span == ~std::uint64_t{0}) return static_cast<std::int64_t>(next());
    return static_cast<std::int64_t>(static_cast<std::uint64_t>(lo) + below(span + 1));
}

bool prng::chance(std::uint32_t per_million) noexcept { return below(1'000'000) < per_million; }

}  // namespace edgelock::sim
