// SPDX-License-Identifier: Apache-2.0
#include "edgelock/sim/script_digest.hpp"

#include <cstddef>
#include <cstdint>

namespace edgelock::sim {

namespace {

std::uint32_t rotl(std::uint32_t x, int n) noexcept { return (x << n) | (x >> (32 - n)); }

// The hash state, fed one 64-byte block at a time.
struct sha1_state {
    std::array<std::uint32_t, 5> h{0x67452301u, 0xEFCDAB89u, 0x98BADCFEu, 0x10325476u, 0xC3D2E1F0u};

    void block(const unsigned char* p) noexcept {
        std::array<std::uint32_t, 80> w{};
        for (std::size_t t = 0; t < 16; ++t) {
            w[t] = std::uint32_t{p[4 * t]} << 24 | std::uint32_t{p[4 * t + 1]} << 16 |
                   std::uint32_t{p[4 * t + 2]} << 8 | std::uint32_t{p[4 * t + 3]};
        }
        for (std::size_t t = 16; t < 80; ++t) {
            w[t] = rotl(w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16], 1);
        }
        std::uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
        for (std::size_t t = 0; t < 80; ++t) {
            std::uint32_t f = 0;
            std::uint32_t k = 0;
            if (t < 20) {
                f = (b & c) | (~b & d);
                k = 0x5A827999u;
            } else if (t < 40) {
                f = b ^ c ^ d;
                k = 0x6ED9EBA1u;
            } else if (t < 60) {
                f = (b & c) | (b & d) | (c & d);
                k = 0x8F1BBCDCu;
            } else {
                f = b ^ c ^ d;
                k = 0xCA62C1D6u;
            }
            const std::uint32_t next = rotl(a, 5) + f + e + k + w[t];
            e = d;
            d = c;
            c = rotl(b, 30);
            b = a;
            a = next;
        }
        h[0] += a;
        h[1] += b;
        h[2] += c;
        h[3] += d;
        h[4] += e;
    }
};

}  // namespace

std::array<char, 40> server_script_digest(std::string_view text) noexcept {
    sha1_state state;
    std::array<unsigned char, 64> buffer{};
    std::size_t used = 0;
    const auto feed = [&](unsigned char byte) {
        buffer[used++] = byte;
        if (used == buffer.size()) {
            state.block(buffer.data());
            used = 0;
        }
    };
    for (const char c : text) feed(static_cast<unsigned char>(c));
    // The padding: a 1 bit, zeros up to 56 bytes into a block, the length in bits (64-bit
    // big-endian).
    const std::uint64_t bits = static_cast<std::uint64_t>(text.size()) * 8;
    feed(0x80);
    while (used != 56) feed(0);
    for (int shift = 56; shift >= 0; shift -= 8) feed(static_cast<unsigned char>(bits >> shift));

    static constexpr char hex[] = "0123456789abcdef";
    std::array<char, 40> out{};
    for (std::size_t i = 0; i < state.h.size(); ++i) {
        for (std::size_t j = 0; j < 8; ++j) {
            out[8 * i + j] = hex[(state.h[i] >> (28 - 4 * j)) & 0xfu];
        }
    }
    return out;
}

}  // namespace edgelock::sim
