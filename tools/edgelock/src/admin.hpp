// edgelock CLI: `edgelock status` and `edgelock release`, the operators' commands.
//
// They read and delete keys directly (hiredis), without an edgelock::hiredis::lock: status
// must not take the lock, and release deletes on behalf of another owner. Both ask every
// instance (or the master the sentinels name), each request bounded by --redis-timeout.
#pragma once

#include "options.hpp"

namespace edgelock::cli {

// Prints holder, remaining ttl and fence counter per instance. Returns exit_ok (held by one
// token on a majority), exit_negative (free), or exit_unavailable / exit_redis_refused.
int show_status(const options& o);

// Compare-and-delete of o.name with o.token on every instance. Returns exit_ok (deleted on a
// majority), exit_negative (the token does not hold the lock), or exit_unavailable /
// exit_redis_refused.
int release_token(const options& o);

}  // namespace edgelock::cli
