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
//
// A semaphore's (--permits N above 1) holders share the owner key, four fields each, named
// after the holder's token T: `T:host`, `T:pid`, `T:command` and `T:since_ms` (permit_field
// below): no encoding for values that may hold any byte (a command line), and `status` reads
// one holder's four with an HMGET. Each holder's script writes its fields only while T has a live
// lease in the set (its score, the lease's expiry, above the server's clock), and first drops every
// field whose token has none, so the hash describes at most the N holders of the moment, and
// expires as the lock's does. A lock's description on the name (its `token` field) goes with them.
#pragma once

#include <cstdint>
#include <string>

#include "options.hpp"

namespace edgelock::cli {

// The owner key of lock `name`.
std::string owner_key(const std::string& name);

// The owner key's field `what` ("host", "pid", "command", "since_ms") for the semaphore's
// holder of token `token`.
std::string permit_field(const std::string& token, const char* what);

// Writes the owner key of o.name on every instance (a connection of its own each, bounded by
// --redis-timeout), for the hold of owner token `token` (32 hex characters) and fence token
// `fence`; with o.permits above 1, the fields of that holder of the semaphore's permits (no
// fence). Best effort: a failure only leaves the holder undescribed, and is not reported.
void describe_holder(const options& o, const std::string& token, std::int64_t fence);

}  // namespace edgelock::cli
