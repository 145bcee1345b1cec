// SPDX-License-Identifier: Apache-2.0
// edgelock CLI: `edgelock run`, a command under a distributed lock.
//
// The order of things: acquire (one attempt first, so an unreachable Redis fails at once;
// then the rest of --wait, with progress on a terminal), start CMD with the fence token in
// its environment, wait for it while the transport's helper thread renews the lease, release,
// exit with CMD's status. A lost lock signals CMD and turns the exit code into exit_lost.
#pragma once

#include "options.hpp"

namespace edgelock::cli {

// Records the file descriptors open at start-up: they (and only they) are passed on to CMD,
// like a shell passes its own. Call first thing in main().
void note_inherited_fds();

// Runs `o.program` under lock `o.name`; returns the process's exit code (exit_codes.hpp).
// SIGINT, SIGTERM or SIGHUP while it waits cancels the wait (a fair waiter leaves the line,
// within --redis-timeout) and ends it by that signal: see signal_to_end_by().
int run_locked(const options& o);

// `edgelock hold`: acquires lock `o.name`, prints name=, token= and fence= lines on stdout,
// renews until SIGINT, SIGTERM or SIGHUP, then releases and returns exit_ok; exit_lost when
// the lock is lost meanwhile. While it waits, a signal ends it as it ends run_locked.
int hold_locked(const options& o);

// The signal that ended the wait of run_locked or hold_locked, or 0: main() raises it, with
// its default action, once the lock is destroyed, so the parent sees the death it caused.
int signal_to_end_by();

}  // namespace edgelock::cli
