// SPDX-License-Identifier: Apache-2.0
// edgelock: SHA-1 at compile time, for the script digests EVALSHA sends.
//
// Redis names a cached script by the SHA-1 of its exact text. Computing the digest with
// constexpr from the same string literal the EVAL fallback sends means the two can never
// disagree, and no round trip (SCRIPT LOAD) is needed to learn it. SHA-1 is used here only as
// Redis's cache key, never for security.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace edgelock {

using sha1_hex = std::array<char, 40>;

namespace detail {

constexpr std::uint32_t rotl32(std::uint32_t value, int bits) {
    return (value << bits) | (value >> (32 - bits));
}

// The byte at `index` of the padded message: text, 0x80, zeros, 64-bit big-endian bit length.
constexpr std::uint8_t sha1_padded_byte(std::string_view text, std::size_t padded_size,
                                        std::size_t index) {
    if (index < text.size()) return static_cast<std::uint8_t>(text[index]);
    if (index == text.size()) return 0x80;
    const std::size_t length_start = padded_size - 8;
    if (index < length_start) return 0;
    const std::uint64_t bit_length = static_cast<std::uint64_t>(text.size()) * 8;
    const int shift = static_cast<int>(8 * (7 - (index - length_start)));
    return static_cast<std::uint8_t>(bit_length >> shift);
}

constexpr void sha1_block(std::array<std::uint32_t, 5>& state, std::string_view text,
                          std::size_t padded_size, std::size_t block_start) {
    std::array<std::uint32_t, 80> words{};
    for (std::size_t i = 0; i < 16; ++i) {
        std::uint32_t word = 0;
        for (std::size_t j = 0; j < 4; ++j) {
            word = (word << 8) | sha1_padded_byte(text, padded_size, block_start + 4 * i + j);
        }
        words[i] = word;
    }
    for (std::size_t i = 16; i < 80; ++i) {
        words[i] = rotl32(words[i - 3] ^ words[i - 8] ^ words[i - 14] ^ words[i - 16], 1);
    }
    std::uint32_t a = state[0], b = state[1], c = state[2], d = state[3], e = state[4];
    for (std::size_t i = 0; i < 80; ++i) {
        std::uint32_t mix = 0;
        std::uint32_t constant = 0;
        if (i < 20) {
            mix = (b & c) | (~b & d);
            constant = 0x5a827999;
        } else if (i < 40) {
            mix = b ^ c ^ d;
            constant = 0x6ed9eba1;
        } else if (i < 60) {
            mix = (b & c) | (b & d) | (c & d);
            constant = 0x8f1bbcdc;
        } else {
            mix = b ^ c ^ d;
            constant = 0xca62c1d6;
        }
        const std::uint32_t next = rotl32(a, 5) + mix + e + constant + words[i];
        e = d;
        d = c;
        c = rotl32(b, 30);
        b = a;
        a = next;
    }
    state[0] += a;
    state[1] += b;
    state[2] += c;
    state[3] += d;
    state[4] += e;
}

}  // namespace detail

// Lower-case hex SHA-1 of `text`, as Redis prints it for SCRIPT LOAD.
constexpr sha1_hex sha1(std::string_view text) {
    std::array<std::uint32_t, 5> state{0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0};
    const std::size_t padded_size = ((text.size() + 8) / 64 + 1) * 64;
    for (std::size_t block = 0; block < padded_size; block += 64) {
        detail::sha1_block(state, text, padded_size, block);
    }
    constexpr char digits[] = "0123456789abcdef";
    sha1_hex hex{};
    for (std::size_t i = 0; i < 5; ++i) {
        for (std::size_t nibble = 0; nibble < 8; ++nibble) {
            hex[8 * i + nibble] = digits[(state[i] >> (28 - 4 * nibble)) & 0xf];
        }
    }
    return hex;
}

}  // namespace edgelock
