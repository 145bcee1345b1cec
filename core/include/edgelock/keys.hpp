// edgelock: the Redis keys one lock uses.
//
// The lock key is the lock name exactly as given, holding the plain token string, so any
// Redlock-style client (redis-py, node-redlock, redsync) excludes us on the same key.
// The fence counter lives beside it in the same Redis Cluster slot, because a script may only
// touch keys of one slot: "{name}:fence" hashes like "name" when the name has no hash tag;
// a name that already carries one ("job{7}") keeps it ("job{7}:fence").
#pragma once

#include <cstddef>
#include <string_view>

namespace edgelock {

// True when Redis Cluster would hash only part of `name`: a '{' followed later by a '}'
// with at least one byte between them (the first such '{' decides, as in Redis).
bool has_hash_tag(std::string_view name) noexcept;

// Writes the fence key for `name` into out[0, capacity) and returns its length, or 0 when it
// does not fit. With capacity >= name.size() + fence_suffix_bytes_max it always fits.
std::size_t write_fence_key(std::string_view name, char* out, std::size_t capacity) noexcept;

}  // namespace edgelock
