// SPDX-License-Identifier: Apache-2.0
// edgelock test support: the Redis Cluster hash slot of a key, computed without the core.
//
// Redis Cluster hashes a key's hash tag (the bytes after its first '{' up to the first '}'
// after that, when there is at least one byte between them) or else the whole key, with
// CRC16-XMODEM (polynomial 0x1021, initial value 0, no reflection, no final xor), and keeps
// the low 14 bits. Written from the Cluster specification, independently of core/src/keys.cpp,
// so a test can check the core's fence keys against it; tests/redis/keyslot_test.cpp checks it
// against CLUSTER KEYSLOT of a real redis-server. Header only, no dependencies.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace edgelock::testing {

inline constexpr std::uint16_t cluster_slots = 16384;

inline std::uint16_t crc16_xmodem(std::string_view bytes) noexcept {
    std::uint16_t crc = 0;
    for (const char c : bytes) {
        crc = static_cast<std::uint16_t>(crc ^ (static_cast<std::uint8_t>(c) << 8));
        for (int bit = 0; bit < 8; ++bit) {
            const bool carry = (crc & 0x8000) != 0;
            crc = static_cast<std::uint16_t>(crc << 1);
            if (carry) crc = static_cast<std::uint16_t>(crc ^ 0x1021);
        }
    }
    return crc;
}

// The bytes Redis Cluster hashes for `key`.
inline std::string_view hashed_part(std::string_view key) noexcept {
    std::size_t open = 0;
    while (open < key.size() && key[open] != '{') ++open;
    if (open == key.size()) return key;
    std::size_t close = open + 1;
    while (close < key.size() && key[close] != '}') ++close;
    if (close == key.size() || close == open + 1) return key;
    return key.substr(open + 1, close - open - 1);
}

inline std::uint16_t key_slot(std::string_view key) noexcept {
    return static_cast<std::uint16_t>(crc16_xmodem(hashed_part(key)) % cluster_slots);
}

}  // namespace edgelock::testing
