// SPDX-License-Identifier: Apache-2.0
// edgelock CLI: the exit codes, one per outcome a script may want to tell apart.
//
// `edgelock run` passes CMD's own status through (0..255, or 128+N when CMD died of signal
// N, as shells report it); every code below is then the CLI's own verdict. The numbers follow
// sysexits(3) where one fits (64 usage, 69 unavailable, 70 software, 75 tempfail, 76
// protocol, 77 no permission), and the shells' 126/127 for a CMD that cannot be started.
// exit_code_meanings below is the one text of each: `edgelock --help` prints it (help.cpp),
// and tests/cli/cli_exit_codes_test checks that docs/CLI.md's table and the man page's EXIT
// STATUS say the same words for the same codes.
#pragma once

#include <cstddef>

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

// One row of the exit-code table: the code ("75", or a range: "1..255", "128+N") and what it
// means, one plain-text sentence (the docs may add markup and, after it, more words).
struct exit_code_meaning {
    const char* code;
    const char* meaning;
};

inline constexpr exit_code_meaning exit_code_meanings[] = {
    {"0",
     "success (run: CMD exited 0; status: the lock is held; list: a lock found; release: "
     "deleted)"},
    {"1..255", "run: CMD's own status, passed through (128+N when CMD died of signal N)"},
    {"1",
     "status: the lock is free; list: none held; release: that token does not hold the "
     "lock; sim: a check was violated"},
    {"2", "sim: a usage error of edgelock-sim"},
    {"64",
     "bad command line: unknown flag, bad duration or URL, missing --name or CMD, a "
     "deployment that cannot work (an address given twice, an empty EDGELOCK_REDIS, "
     "EDGELOCK_SENTINEL or EDGELOCK_CLUSTER, a --ttl below its floor), a TLS file, "
     "password file or --metrics-file directory that cannot be used (the message names "
     "it and why)"},
    {"69",
     "Redis unreachable: connection refused or timed out, connected but no answer in "
     "time, a server at maxclients, no quorum, no master, closed before any reply, or no "
     "TLS handshake in time (often redis:// and rediss:// mixed up); too few replicas "
     "confirmed the lock (--wait-replicas); a replica where a master is needed; check: a "
     "node cannot be read, or the deployment cannot hold locks (a replica, too few "
     "masters, cluster slots that no master serves)"},
    {"70", "internal error"},
    {"75",
     "busy: --wait 0 (-n) and another owner holds the lock; -E CODE replaces 75, and "
     "CMD does not run"},
    {"76",
     "Redis refused: a password needed and none given (NOAUTH), a wrong password or "
     "user (AUTH refused), SELECT or INFO (restart guard) failed, an error reply (the "
     "message quotes Redis's text)"},
    {"77",
     "TLS refused: the server's certificate (untrusted CA, wrong name, expired), or ours "
     "(69 when TLS gets no answer: check redis:// against rediss://)"},
    {"78", "check: a node may evict lock keys (S10, which no configuration survives)"},
    {"79",
     "wait timeout: the lock stayed held by another owner for the whole --wait; -E CODE "
     "replaces 79, and CMD does not run"},
    {"80",
     "lost: the lock was lost while CMD ran (hold: while held); CMD got --on-lost (then "
     "SIGKILL)"},
    {"81",
     "restart guard: a Redis node started without durable data too recently to count, "
     "beyond --wait (it is reachable; it counts a TTL plus drift after its start)"},
    {"126", "CMD could not be executed"},
    {"127", "CMD (or edgelock-sim) not found"},
    {"128+N",
     "run, hold: ended by signal N (SIGINT, SIGTERM, SIGHUP) while waiting, after "
     "leaving the line"},
};

// Whether the table has a row for exactly `code` (not a range).
constexpr bool has_meaning(int code) {
    for (const exit_code_meaning& row : exit_code_meanings) {
        int value = 0;
        const char* digit = row.code;
        for (; *digit >= '0' && *digit <= '9'; ++digit) value = value * 10 + (*digit - '0');
        if (*digit == '\0' && value == code) return true;
    }
    return false;
}

inline constexpr exit_code every_exit_code[] = {exit_ok,
                                                exit_negative,
                                                exit_usage,
                                                exit_unavailable,
                                                exit_internal,
                                                exit_busy,
                                                exit_redis_refused,
                                                exit_tls,
                                                exit_deployment_worse,
                                                exit_wait_timeout,
                                                exit_lost,
                                                exit_restart_guard,
                                                exit_cannot_execute,
                                                exit_not_found};

constexpr bool every_exit_code_has_meaning() {
    for (const exit_code code : every_exit_code) {
        if (!has_meaning(code)) return false;
    }
    return true;
}
static_assert(every_exit_code_has_meaning(), "every exit code has its row in the table");

}  // namespace edgelock::cli
