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
int run_locked(const options& o);

}  // namespace edgelock::cli
