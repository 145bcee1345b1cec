// SPDX-License-Identifier: Apache-2.0
// edgelock CLI: the exit codes, one per outcome a script may want to tell apart.
//
// `edgelock run` passes CMD's own status through (0..255, or 128+N when CMD died of signal
// N, as shells report it); every code below is then the CLI's own verdict. The numbers follow
// sysexits(3) where one fits (64 usage, 69 unavailable, 70 software, 75 tempfail, 76
// protocol, 77 no permission), and the shells' 126/127 for a CMD that cannot be started.
// docs/CLI.md and `edgelock --help` print the same table (help.cpp).
#pragma once

namespace edgelock::cli {

enum exit_code : int {
    exit_ok = 0,
    exit_negative = 1,           // status: the lock is free; release: that token does not hold it
    exit_usage = 64,             // bad command line: unknown flag, bad duration or URL, no CMD
    exit_unavailable = 69,       // Redis unreachable: refused, timed out, no quorum, no master
    exit_internal = 70,          // an internal error (a bug, or the OS refused a resource)
    exit_busy = 75,              // --wait 0 and another owner holds the lock
    exit_redis_refused = 76,     // Redis answered with an error: AUTH, SELECT, a script error
    exit_tls = 77,               // TLS refused: the server's certificate (untrusted CA, wrong
                                 // name, expired), or ours
    exit_deployment_worse = 78,  // check: a node may evict lock keys (S10)
    exit_wait_timeout = 79,      // the lock stayed held by another owner for the whole --wait
    exit_lost = 80,              // the lock was lost while CMD ran; CMD was signalled
    exit_restart_guard = 81,     // a Redis node started without durable data too recently to
                                 // count (restart guard), beyond --wait: it is reachable
    exit_cannot_execute = 126,   // CMD exists but could not be executed
    exit_not_found = 127,        // CMD (or edgelock-sim) was not found
};

}  // namespace edgelock::cli
