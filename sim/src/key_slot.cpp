// SPDX-License-Identifier: Apache-2.0
#include "edgelock/sim/key_slot.hpp"

#include <array>
#include <cstddef>

namespace edgelock::sim {

namespace {

constexpr std::uint16_t polynomial = 0x1021;
constexpr std::uint16_t slots = 16384;

// table[b]: the CRC register after shifting byte b through a zero register, so each input
// byte costs one lookup: crc' = (crc << 8) ^ table[(crc >> 8) ^ byte].
constexpr std::array<std::uint16_t, 256> make_table() noexcept {
    std::array<std::uint16_t, 256> table{};
    for (unsigned b = 0; b < table.size(); ++b) {
        unsigned reg = b << 8;
        for (int shift = 0; shift < 8; ++shift) {
            reg = (reg & 0x8000u) != 0 ? (reg << 1) ^ polynomial : reg << 1;
        }
        table[b] = static_cast<std::uint16_t>(reg & 0xffffu);
    }
    return table;
}

constexpr std::array<std::uint16_t, 256> crc_table = make_table();

}  // namespace

std::uint16_t server_crc16(std::string_view bytes) noexcept {
    unsigned crc = 0;
    for (const char c : bytes) {
        const unsigned index = ((crc >> 8) ^ static_cast<unsigned char>(c)) & 0xffu;
        crc = ((crc << 8) ^ crc_table[index]) & 0xffffu;
    }
    return static_cast<std::uint16_t>(crc);
}

std::uint16_t server_key_slot(std::string_view key) noexcept {
    std::string_view hashed = key;
    const std::size_t open = key.find('{');
    if (open != std::string_view::npos) {
        const std::size_t close = key.find('}', open + 1);
        if (close != std::string_view::npos && close > open + 1) {
            hashed = key.substr(open + 1, close - open - 1);
        }
    }
    return static_cast<std::uint16_t>(server_crc16(hashed) % slots);
}

}  // namespace edgelock::sim
