// SPDX-License-Identifier: Apache-2.0
#include "edgelock/entropy.hpp"

#include <sys/random.h>

#include <array>
#include <cerrno>
#include <cstddef>
#include <cstring>

namespace edgelock {
namespace {

// Up to 256 bytes never block once the kernel's pool is initialised and are never cut
// short by a signal; a few retries cover EINTR before that.
errc fill_random(std::uint8_t* out, std::size_t size) noexcept {
    std::size_t filled = 0;
    for (int tries = 0; tries < 8 && filled < size; ++tries) {
        const ssize_t got = getrandom(out + filled, size - filled, 0);
        if (got < 0) {
            if (errno == EINTR) continue;
            return errc::io_error;
        }
        filled += static_cast<std::size_t>(got);
    }
    return filled == size ? errc::ok : errc::io_error;
}

}  // namespace

errc random_token(owner_token& token) noexcept { return fill_random(token.data(), token.size()); }

errc random_seed(std::uint64_t& bits) noexcept {
    std::array<std::uint8_t, sizeof bits> bytes{};
    if (const errc code = fill_random(bytes.data(), bytes.size()); code != errc::ok) return code;
    bits = 0;
    for (const std::uint8_t byte : bytes) bits = (bits << 8) | byte;
    return errc::ok;
}

errc token_pool::next(owner_token& token) noexcept {
    if (used_ == tokens_per_refill) {
        if (const errc code = fill_random(bytes_.data(), bytes_.size()); code != errc::ok)
            return code;
        used_ = 0;
    }
    std::memcpy(token.data(), bytes_.data() + used_ * token_bytes, token_bytes);
    // A handed-out token is not kept: the pool never gives the same bytes twice.
    std::memset(bytes_.data() + used_ * token_bytes, 0, token_bytes);
    ++used_;
    return errc::ok;
}

}  // namespace edgelock
