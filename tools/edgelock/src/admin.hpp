// SPDX-License-Identifier: Apache-2.0
// edgelock CLI: `edgelock status` and `edgelock release`, the operators' commands.
//
// They read and delete keys directly (hiredis), without an edgelock::blocking::lock: status
// must not take the lock, and release deletes on behalf of another owner. Both ask every
// instance (or the master the sentinels name), each request bounded by --redis-timeout.
//
// A semaphore's name (lock.hpp, "Semaphores") is a sorted set of leases, not the lock's string:
// status and release tell them apart with TYPE, list by the WRONGTYPE its GET meets; each then
// reads or removes leases, and the holders' descriptions (owner.hpp) per token.
#pragma once

#include "options.hpp"

namespace edgelock::cli {

// Prints holder (its token, and host, pid, command and since from the owner key when it names
// that token), remaining ttl, fence counter and the waiters in line per instance; with
// o.json one JSON object. On a semaphore: its N, and every live lease with its holder's
// description and remaining time. Returns exit_ok (held by one token on a majority, or a
// semaphore's permit held on a majority), exit_negative (free), or exit_unavailable /
// exit_redis_refused.
int show_status(const options& o);

// Lists the keys named o.prefix... that hold a token (and are no companion key), per instance,
// with their remaining ttl and holder when known, and the semaphores with a live lease, with
// each holder's; at most 10000 keys examined per instance.
// Returns exit_ok (a lock or semaphore found), exit_negative (none), or exit_unavailable /
// exit_redis_refused.
int list_locks(const options& o);

// Compare-and-delete of o.name with o.token on every instance, or on a semaphore the removal
// of o.token's lease. Returns exit_ok (deleted, or removed, on a majority), exit_negative (the
// token does not hold the lock, or no live lease), or exit_unavailable / exit_redis_refused.
int release_token(const options& o);

}  // namespace edgelock::cli
