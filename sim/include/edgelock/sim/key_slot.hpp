// SPDX-License-Identifier: Apache-2.0
// The simulated cluster's key-to-slot function, written from the Redis Cluster specification
// ("Keys distribution model", "Hash tags") and shared with nothing the clients run (they use
// core's cluster_slot, edgelock/keys.hpp): a client whose hash is wrong must meet a model
// that disagrees with it, as a real cluster does (MOVED to every request), not one that
// agrees because it is the same function. The conformance test checks it against a real
// cluster's CLUSTER KEYSLOT.
#pragma once

#include <cstdint>
#include <string_view>

namespace edgelock::sim {

// CRC16 as the specification names it (XMODEM: polynomial 0x1021, initial value 0, bits not
// reflected, no final XOR); CRC16("123456789") is 0x31C3. A byte at a time, from a table.
std::uint16_t server_crc16(std::string_view bytes) noexcept;

// HASH_SLOT(key): CRC16 modulo 16384 of the key's hash tag when it has one (the bytes between
// its first '{' and the first '}' after that, when there is at least one byte between them),
// else of the whole key.
std::uint16_t server_key_slot(std::string_view key) noexcept;

}  // namespace edgelock::sim
