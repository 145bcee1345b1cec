// SPDX-License-Identifier: Apache-2.0
// edgelock CLI: the owner key, where `edgelock run` says who holds a lock.
//
// The lock key holds the plain token (keys.hpp), so other clients (redis-py, node-redlock,
// redsync) still exclude us and are excluded. Who holds it (host, pid, command, since) goes
// into a hash beside it, the owner key `{N}:owner` in the name's slot, written by `edgelock
// run` right after its acquire, never by the library. The hash names the token it describes,
// and `status` and `list` show it only while that token still holds the lock, so a
// description left by a run that ended (or crashed) is never shown for another holder.
//
// The write is a script that writes only while the lock key still holds this run's token (128
// random bits: no other hold has it). The fence counter is no test: with Redlock an instance
// outside the quorum that granted the fence token may hold our token with a counter of its
// own, higher or lower, and its description would be missing (it was, on one of three). The key
// expires fence_ttl_ms (a week) after the write, as the counter does: names used once leave nothing
// for good, and a hold longer than a week shows no description after that.
#pragma once

#include <cstdint>
#include <string>

#include "options.hpp"

namespace edgelock::cli {

// The owner key of lock `name`.
std::string owner_key(const std::string& name);

// Writes the owner key of o.name on every instance (a connection of its own each, bounded by
// --redis-timeout), for the hold of owner token `token` (32 hex characters) and fence token
// `fence`. Best effort: a failure only leaves the holder undescribed, and is not reported.
void describe_holder(const options& o, const std::string& token, std::int64_t fence);

}  // namespace edgelock::cli
