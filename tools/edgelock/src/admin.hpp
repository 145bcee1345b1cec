// SPDX-License-Identifier: Apache-2.0
// edgelock CLI: `edgelock status` and `edgelock release`, the operators' commands.
//
// They read and delete keys directly (hiredis), without an edgelock::blocking::lock: status
// must not take the lock, and release deletes on behalf of another owner. Both ask every
// instance (or the master the sentinels name), each request bounded by --redis-timeout.
#pragma once

#include "options.hpp"

namespace edgelock::cli {

// Prints holder (its token, and host, pid, command and since from the owner key when it names
// that token), remaining ttl, fence counter and the waiters in line per instance; with
// o.json one JSON object. Returns exit_ok (held by one
// token on a majority), exit_negative (free), or exit_unavailable / exit_redis_refused.
int show_status(const options& o);

// Lists the keys named o.prefix... that hold a token (and are no companion key), per instance,
// with their remaining ttl and holder when known; at most 10000 keys examined per instance.
// Returns exit_ok (a lock found), exit_negative (none), or exit_unavailable /
// exit_redis_refused.
int list_locks(const options& o);

// Compare-and-delete of o.name with o.token on every instance. Returns exit_ok (deleted on a
// majority), exit_negative (the token does not hold the lock), or exit_unavailable /
// exit_redis_refused.
int release_token(const options& o);

}  // namespace edgelock::cli
