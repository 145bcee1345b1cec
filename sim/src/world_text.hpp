// SPDX-License-Identifier: Apache-2.0
// edgelock sim (internal): what the world's files share besides world.hpp: the lock's name,
// the instant that never comes, and printf into a std::string for the judges' words.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

namespace edgelock::sim {

// The lock's name: under Redis Cluster one with a hash tag, as a user who keeps related keys
// on one node writes it, so the slot the client computes from the tag must be the one the
// simulated cluster computes on its own (key_slot.hpp); elsewhere one without.
inline constexpr const char* lock_name_untagged = "stock:42";
inline constexpr const char* lock_name_tagged = "{stock}:42";
inline constexpr std::int64_t never_us = std::numeric_limits<std::int64_t>::max();

#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
std::string
format(const char* pattern, ...);

// "12.000345s": true time, as the checks and the timeline print it.
std::string seconds_text(std::int64_t us);

}  // namespace edgelock::sim
