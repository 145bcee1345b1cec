// SPDX-License-Identifier: Apache-2.0
// edgelock: every capacity of the core, in one place, units last.
//
// The core allocates nothing; these constants size its fixed buffers and bound every loop.
// Changing one changes sizeof(lock) and the wire limits, so each says what it bounds.
#pragma once

#include <cstddef>
#include <cstdint>

namespace edgelock {

// Lock names. A companion key (the fence counter, a fair lock's queue keys, the owner key, a
// fenced semaphore's slots key) is the name plus at most fence_suffix_bytes_max bytes
// (":fence", ":queue", ":qttl", ":owner" or ":slots" after it, and before it "{" "}" or "{" plus a
// 4-byte tag plus "}": keys.hpp), so every key fits in key_bytes_max.
inline constexpr std::size_t name_bytes_max = 128;
inline constexpr std::size_t fence_suffix_bytes_max = 12;
inline constexpr std::size_t key_bytes_max = name_bytes_max + fence_suffix_bytes_max;

// Owner tokens: 128 random bits from the caller, sent as 32 lower-case hex characters.
inline constexpr std::size_t token_bytes = 16;
inline constexpr std::size_t token_hex_bytes = 2 * token_bytes;

// A fair waiter's wake-up channel: its line's key, ":" and its token (keys.hpp).
inline constexpr std::size_t wake_channel_bytes_max = key_bytes_max + 1 + token_hex_bytes;

// Redis instances one lock spans: 1 (single/Sentinel) or an odd count (Redlock).
inline constexpr std::size_t instances_max = 7;
// A majority of them: what an acquire, a renewal and a release must reach. The one formula,
// used by the lock, the clients, the CLI and the simulator.
inline constexpr std::uint8_t quorum_of(std::size_t instances) noexcept {
    return static_cast<std::uint8_t>(instances / 2 + 1);
}

// Lease bounds. A day is far beyond any sane lease and keeps all arithmetic in int64.
inline constexpr std::int64_t ttl_ms_max = 24 * 60 * 60 * 1000;
inline constexpr std::int64_t wait_ms_max = 24 * 60 * 60 * 1000;
// How long a fence counter outlives the last acquire or raise that wrote it (scripts.hpp sets
// it with PEXPIRE): without an expiry every name ever locked ("orders:42") would leave its
// counter in Redis for good. A counter that expired restarts from the node's clock in
// microseconds, above every earlier token (lock.hpp, "Fence counters expire"). A week is far
// beyond the longest lease, so a name in use keeps its counter from one holder to the next,
// and it is also how far the node's clock may step back without a repeated token.
inline constexpr std::int64_t fence_ttl_ms = 7LL * 24 * 60 * 60 * 1000;
static_assert(fence_ttl_ms >= 2 * ttl_ms_max, "a counter outlives the longest lease by a margin");
// Every now_ms passed to the lock lies within +-now_ms_limit: with each duration at most a
// day, no sum the lease arithmetic forms can overflow int64. (2^62 ms is 146 million years.)
inline constexpr std::int64_t now_ms_limit = std::int64_t{1} << 62;

// Nested acquire() calls one owner may stack on a held lock.
inline constexpr std::uint16_t holds_max = 65535;

// Requests one lock may have queued or in flight on one instance. A claiming request
// (acquire, fence raise, renew) is only queued while two slots are free, so the release
// that may have to follow it always fits.
inline constexpr std::size_t requests_per_instance_max = 4;

// Events waiting to be polled. One input call produces at most events_per_call_max events;
// an input call finding fewer free slots than that refuses with errc::invalid_state.
inline constexpr std::size_t events_max = 4;
inline constexpr std::size_t events_per_call_max = 2;

// The largest request the core encodes: EVAL with a fair acquire script (the lock's, about
// 1.9 KB, with four keys at key_bytes_max; the fenced semaphore's, about 3.5 KB, with five),
// the token and up to three integer arguments, with RESP framing (lock_wire.cpp checks the
// sums). Only a first contact (NOSCRIPT) sends a script's text; every other call its digest.
inline constexpr std::size_t request_bytes_max = 4608;

// A semaphore's permits (lock_config::permits): the holders one name may have at once.
inline constexpr std::uint16_t permits_max = 1000;

// Replies. The core's own replies are a few bytes; the limits leave room for the
// transports' discovery and status commands while refusing hostile input early.
inline constexpr std::size_t reply_bytes_max = 64 * 1024;
inline constexpr std::size_t bulk_bytes_max = 16 * 1024;
inline constexpr std::size_t array_elements_max = 64;
inline constexpr std::size_t depth_max = 4;
inline constexpr std::size_t nodes_max = 256;

}  // namespace edgelock
