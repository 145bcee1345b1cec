// SPDX-License-Identifier: Apache-2.0
// edgelock: the Redis keys one lock uses.
//
// The lock key is the lock name exactly as given, holding the plain token string, so any
// Redlock-style client (redis-py, node-redlock, redsync) excludes us on the same key.
// The fence counter lives beside it in the same Redis Cluster slot, because a script may only
// touch keys of one slot. Redis hashes a key's hash tag, the bytes between its first '{' and
// the first '}' after that when there is at least one byte between them, or else the whole
// key. So the fence key is, for a name
//   - with a hash tag: the name and ":fence"                "job{7}"    -> "job{7}:fence"
//   - without one, and without a '}': the name as the tag   "orders:42" -> "{orders:42}:fence"
//   - without one but with a '}' ("x}y", "a{}b"): as a tag the name would end at its '}', so
//     a 4-byte tag of '@'..'O' computed to hash to the name's slot comes first
//                                                           "x}y"       -> "{BN@B}x}y:fence"
// (The first two are the keys edgelock has always used; the third replaced "{x}y}:fence",
// which Redis Cluster put in another slot.) Two names may share a counter ("x" and "{x}"):
// INCR and the raise only move it up, so the tokens of each lock still increase.
//
// A fair lock (lock_config::fair) keeps its waiters in two more keys of the same slot, with
// the suffixes ":queue" (a sorted set: the waiters' tokens in arrival order; with ":" and a
// waiter's token after it, the pub/sub channel of that waiter's wake-ups) and ":qttl" (a
// sorted set: each waiter's expiry, so a waiter that died drops out of the line). Unlike a
// counter, a line must belong to one name alone: "x" and "{x}" sharing one would keep each
// other's waiters out of a free lock. So a name without a '}' has the tag form
// ("orders:42" -> "{orders:42}:queue"), and every other name, a name with a hash tag
// included, comes after the computed 4-byte tag of its slot:
//                                                           "{x}"       -> "{BJN@}{x}:queue"
//                                                           "x}y"       -> "{BN@B}x}y:queue"
// Each line key names its lock: after the first tag comes nothing (the tag is the name), a
// name without a hash tag, or a name with one; so no two names share a line.
// The owner key (":owner") has the form of the line keys, for the same reason: it describes
// one name's holder, so "x" and "{x}" must not share it. So has a fenced semaphore's
// ":slots" key (a sorted set: each holder's token scored by its permit number, scripts.hpp):
// two names sharing it would number each other's leases.
//
// Lock names and fence keys never meet: every fence key is some P + ":fence" where P has a
// hash tag, and every such string is the fence key of the lock named P. So a name of that
// form is refused (lock::configure returns invalid_name): "{x}:fence" is lock x's counter, a
// key without TTL, which as a lock would look held forever, while lock x with fencing would
// fail every attempt on it. Other names ending in ":fence" ("db:fence", "{}:fence") are fine.
// The queue keys, the owner key and the slots key are refused alike: "{x}:queue" is lock x's
// line of waiters.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "edgelock/limits.hpp"

namespace edgelock {

// True when Redis Cluster would hash only part of `name`: a '{' followed later by a '}'
// with at least one byte between them (the first such '{' decides, as in Redis).
bool has_hash_tag(std::string_view name) noexcept;

// Redis Cluster's hash slots, and the one `key` is in: CRC16-XMODEM of its hash tag (or of
// the whole key) modulo cluster_slots, as CLUSTER KEYSLOT answers.
inline constexpr std::uint16_t cluster_slots = 16384;
std::uint16_t cluster_slot(std::string_view key) noexcept;

// The keys that live beside a lock: its fence counter, a fair lock's queue and the queue
// entries' expiries, the owner key, where `edgelock run` describes the holder (a hash: the
// token it describes, host, pid, command, since; for a semaphore, each holder's fields named
// after its token; the library never writes it), and a fenced semaphore's permit numbers.
enum class companion : std::uint8_t { fence, queue, queue_ttl, owner, slots };

// Writes `which` key for `name` into out[0, capacity) and returns its length, or 0 when it
// does not fit. With capacity >= name.size() + fence_suffix_bytes_max it always fits. The key
// is in the Redis Cluster slot of `name`, whatever bytes `name` holds.
std::size_t write_companion_key(std::string_view name, companion which, char* out,
                                std::size_t capacity) noexcept;
std::size_t write_fence_key(std::string_view name, char* out, std::size_t capacity) noexcept;

// A fair waiter's wake-up channel: the line's key (companion::queue), ":" and the waiter's
// token as the scripts send it (32 hex characters), so a release publishes the head's turn to
// the head alone (scripts.hpp). Written into out[0, capacity); returns its length, or 0 when
// it does not fit (wake_channel_bytes_max always does) or the token is not 32 bytes.
std::size_t write_wake_channel(std::string_view name, std::string_view token_hex, char* out,
                               std::size_t capacity) noexcept;

// True when a message on a waiter's channel names the waiter of `token_hex`: the token alone
// (a wake-up), or the token, a space and what follows (a grant: the release handed it the
// lock, scripts.hpp, fair_release; lock::on_wake reads its fence).
bool wake_names(std::string_view message, std::string_view token_hex) noexcept;

// True when `name` is the fence key of some lock name: it ends in ":fence" and the bytes
// before that have a hash tag. lock::configure refuses such names (invalid_name).
bool is_fence_key(std::string_view name) noexcept;

// True when `name` is a companion key of some lock name (fence, queue, queue_ttl, owner or
// slots): lock::configure refuses such names (invalid_name).
bool is_companion_key(std::string_view name) noexcept;

}  // namespace edgelock
