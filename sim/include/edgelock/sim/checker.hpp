// SPDX-License-Identifier: Apache-2.0
// edgelock sim: what happened in a run, and the safety and liveness checks over it.
//
// The world records every hold (from the moment the client learns it acquired the lock to
// the moment it stops believing so), every window in which a client acted on a belief it
// had checked earlier (held() said yes, then the write went out), and every request the
// resource saw. The checks are judged on true time, which no process can read:
//
//   overlap   two clients believed they held the lock at one true instant (a semaphore of
//             N permits: N + 1 clients)
//   stale     the resource accepted a write from a holder after it had already served a
//             later holder (the lost update fencing exists to prevent); a semaphore's: a
//             write that arrived after its holder's belief ended, while N other clients the
//             resource had served still held (N + 1 owners at the resource); a fenced
//             semaphore's, the lock's per permit (as the server numbered each lease)
//   order     with fencing: tokens of successive holders strictly increase; a holder that
//             began after another one had stopped (lease over, no write still to go out)
//             carries the larger token (holders that overlap are already an overlap); a
//             semaphore's, per permit (as the server numbered each lease), and each token
//             names its lease's permit (its remainder by N)
//   liveness  after the last fault healed, some client acquired the lock again
//   oracle    the lease oracle: whenever a client's held() is true, its token is live (by
//             each node's own clock) where it must be: on a quorum of the Redlock nodes, or
//             on the node that is master (a node that is down counts, as nobody can take
//             the lock from it while it is down); and `acquired`/`renewed` never arrive
//             with their validity already over. The world samples it at every client
//             step, at every node crash, restart and promotion, and at the last instant
//             of each validity; the checker only reports what the world recorded.
//   kept      a hold is lost only for a reason: a holder whose watchdog renews it must not
//             lose its lock (on_lost) while a master that keeps the key with its token
//             (the slot's owner, the master the sentinels name, or a Redlock quorum) is up
//             and answering and nothing that concerns the holder was disturbed for the whole
//             last renewal interval before the loss: no fault in force or healing, no
//             promotion, slot move or Sentinel news, no reply dropped, its clock not at a
//             faulted rate, fewer of its messages in the network's long tail than the lease
//             leaves renewal attempts. Such a loss is the client's: it had a master that
//             would have renewed and did not reach it. The world judges each loss as it
//             happens (docs/SIMULATION.md, "The checks").
//   available a hold is kept through what the configuration rides out: a holder whose
//             watchdog renews it must not lose its lock while a master that keeps the key
//             with its token (as for kept, the node importing the slot counting too) is up
//             and answering through the last renewal interval, and the only disturbances
//             then are ones the configuration is built to ride out: the lock's slot moving
//             between Redis Cluster masters (MOVED and ASK followed, each request's
//             redirects counted afresh), and under Sentinel with WAIT the master going away
//             once the sentinels replaced it and all of them name the new master (the
//             promoted master, with the replicas WAIT needs, keeps the token; the promotion,
//             the sentinels' news and the re-pointed replica older than what a client takes to
//             reach it and renew there: a client that follows +switch-master does). A slot's
//             move counts as ridden out once it is that old too. Judged with the kept check,
//             on the losses it leaves out for a disturbance ridden out.
//             Its acquirer half: a free lock that a client asks for is taken, by someone,
//             within a bound, in calm and through what the configuration rides out alike.
//             Free: no master that is up holds the key, and a request would be granted (the
//             master, or a Redlock quorum, up, answering, with WAIT's replicas and counted by
//             the restart guard; a slot that moves, on the importing node too, and never for
//             a script of several keys, which Redis refuses with TRYAGAIN then; under fair
//             waiting, every live entry of the line a waiter that can act). The bound: what a
//             fault's effects take on a connection, three attempts at their worst and the
//             retry delay's cap (fair: the wakeup check's due bound). Judged while nothing
//             but what the configuration rides out concerned an asker or the granting nodes
//             since that settling time before the lock was free, with at most one of the
//             asker's messages in the network's long tail (fair: the lock counts as free only
//             while no asker, any of whom may head the line, was disturbed within it); not
//             while two ask for a Redlock lock (their attempts may split the votes, each time).
//   claim     a claim is counted only on the server's evidence, two rules the simulated
//             server judges on each client connection as the commands arrive: a WAIT
//             follows a write of its own connection since that connection's last WAIT (WAIT
//             counts the replicas that acknowledged the connection's own writes, so a claim
//             is confirmed on the connection that wrote it, never on a later one that may
//             reach another master); and a replica runs a client's write (a claim, a
//             renewal, a fence's raise) only on a connection that asked it ROLE (a client
//             sent to a node by a sentinel, which may be stale, checks the role before it
//             counts anything there). Stricter than the outcome: a WAIT on a new
//             connection to the same master confirms as much as the old one would have,
//             and still fails the check, so a soak finds the mistake wherever it happens,
//             not only where a failover makes it cost a lease.
//   wakeup    fair configurations: no missed wake-up. A fair waiter is due when its
//             acquire() runs, the lock key is free on every master that is up, and no other
//             live waiter (one whose acquire() runs) is ahead of it in the master's line.
//             Once told (a PUBLISH of its token reached it, or its subscription was
//             confirmed, while due) it must stop being due within fair_bounds::told_us; in
//             any case within fair_bounds::due_us (its re-check). Judged from the last
//             fault's healing on (and, with the restart guard, a guard later), on clients
//             that are not paused; the world records the violations.
//   fifo      fair configurations: the lock never goes to a token while a live waiter's
//             unexpired entry is ahead of it in the line (or in it at all, when the token
//             was not queued); recorded by the world at every grant.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace edgelock::sim {

enum class hold_end : std::uint8_t { open, released, lost, expired, run_end };
const char* to_string(hold_end e) noexcept;

struct hold_record {
    std::uint8_t client = 0;
    std::uint32_t index = 0;    // acquisition order across all clients
    std::int64_t start_us = 0;  // the `acquired` event reached the client
    std::int64_t end_us = 0;    // the belief ended (valid while `end` is not open)
    std::int64_t fence = 0;
    // A fenced semaphore's permit, as the server numbered the lease (its slots key), which
    // the stale check judges by: not the token's remainder a resource reads, which a wrong
    // token would skew.
    std::uint16_t permit = 0;
    std::int64_t valid_until_ms = 0;  // latest validity, on the client's monotonic clock
    hold_end end = hold_end::open;
};

// The client checked held() at check_us and acted on it at send_us: in between it believed
// it held the lock, whatever the lease said by then.
struct action_record {
    std::uint8_t client = 0;
    std::uint32_t hold = 0;
    std::int64_t check_us = 0;
    std::int64_t send_us = 0;
};

struct resource_record {
    std::int64_t at_us = 0;
    std::uint8_t client = 0;
    std::uint32_t hold = 0;
    bool write = false;
    bool fenced = false;
    bool accepted = false;
    std::int64_t token = 0;
    std::int64_t value = 0;
};

// What the world judged while the run went on (the lease oracle's sampled instants, the
// losses the kept check judged): how many failed, and the first one in words.
struct judged_record {
    std::uint32_t violations = 0;
    std::int64_t first_us = -1;
    std::string first;
};

// The two checks of fair waiting, as the world judged them while the run went on.
struct fair_record {
    bool judged = false;             // a fair configuration
    std::int64_t told_bound_us = 0;  // told -> no longer due
    std::int64_t due_bound_us = 0;   // due -> no longer due
    std::uint32_t wakeup_violations = 0;
    std::string first_wakeup;
    std::uint32_t fifo_violations = 0;
    std::string first_fifo;
};

struct history {
    std::vector<hold_record> holds;
    std::vector<action_record> actions;
    std::vector<resource_record> resource_ops;
    judged_record oracle;
    judged_record kept;
    judged_record available;
    judged_record claim;
    fair_record fair;
    bool fencing = false;
    std::uint16_t permits = 1;  // a semaphore's (1: the lock)
    std::int64_t heal_us = 0;   // the last fault's effects ended
    std::int64_t end_us = 0;    // the run ended
};

enum class check_kind : std::uint8_t {
    overlap,
    stale,
    order,
    liveness,
    oracle,
    kept,
    available,
    claim,
    wakeup,
    fifo
};
inline constexpr std::size_t check_count = 10;
// The checks every configuration is judged by; the rest (wakeup, fifo) judge fair ones only.
inline constexpr std::size_t common_check_count = 8;
const char* to_string(check_kind k) noexcept;
// The check named `name` ("overlap", ...). False when there is none.
bool parse_check(std::string_view name, check_kind& out) noexcept;

struct check_outcome {
    bool ok = true;
    std::string detail;  // the first violation, in words
};

struct verdict {
    std::array<check_outcome, check_count> checks{};
    bool ok(check_kind k) const noexcept { return checks[static_cast<std::size_t>(k)].ok; }
    bool all_ok() const noexcept;
};

verdict check_history(const history& h);

}  // namespace edgelock::sim
