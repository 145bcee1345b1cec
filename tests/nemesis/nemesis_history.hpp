// SPDX-License-Identifier: Apache-2.0
// The nemesis checker: what the holders' logs (nemesis_holder.cpp) say about one run.
//
// Every time is CLOCK_MONOTONIC in microseconds, read by the process that logged it, on this
// one machine, so times from different holders compare directly.
//
//   overlap   two holders believed they held the lock at one instant: a hold's belief runs
//             from "hold" (logged after acquire() returned) to its last "write" or its "end"
//             (logged before release()), whichever is later. A write made after a pause on
//             the strength of an earlier held() check extends the belief to that write (S1).
//             Judged by checks (S3), a write's belief ends at the held() check it followed,
//             and the write is judged stale or not as of that check: a pause that lands
//             between a check and its write is S1's fault, not a reply read late. A "landed" write
//             (S2: sent while held, delivered by the network after the holder released) counts for
//             stale but not for the belief.
//   stale     the fenced store accepted a write of a hold after it had accepted one of a
//             hold acquired later (the simulator's check, sim/src/checker.cpp): the resource
//             served a superseded holder. With fencing the store refuses it (a lower token).
//             A write that reaches the store after the next holder acquired but before that
//             holder's first write is accepted even with fencing, and is not stale.
//   liveness  some holder started a hold after the fault began and no later than the bound
//             after the fault ended.
//   lost      a hold was lost ("lost": held() said no before the job ended) at or after a
//             time the runner gives, judged only in runs whose fault the deployment is built
//             to ride out (the runner says which and against which matrix check: kept, for a
//             loss a renewal interval and its timeouts after a cluster's failover ended, when
//             the promoted master had been reachable and unfaulted all along; available, for
//             a loss while or after the lock's slot moved).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace edgelock::nemesis {

struct write_record {
    std::int64_t t_us = 0;
    std::int64_t checked_us = 0;  // the held() check the write followed (t_us if not logged)
    bool accepted = false;
    bool landed = false;  // delivered by the network after the holder released (S2)
};

struct hold_record {
    std::string holder;
    std::int64_t fence = 0;
    std::int64_t start_us = 0;
    std::int64_t end_us = 0;   // the "end" line; 0 when the hold was lost or cut short
    std::int64_t lost_us = 0;  // the "lost" line; 0 when the hold was not lost
    std::vector<write_record> writes;
};

// Where a hold's belief ends: at its last write (S1: a write after a pause on an earlier
// check is a belief) or at the last held() check a write followed (S3).
enum class belief_rule { through_writes, through_checks };

struct verdict {
    bool overlap = false;
    bool stale = false;
    bool liveness_violated = false;
    bool lost = false;           // set by lost_holds(), where the run judges it
    bool harness_error = false;  // the run did not happen as planned (the runner's to say)
    std::string detail;          // the first violation seen, for the report
};

// The holds in the log files, in the order they were logged (a file per holder).
std::vector<hold_record> read_holds(const std::vector<std::string>& log_paths);

// Judges the holds. Liveness looks for a hold started in [fault_start_us, heal_us + bound_us].
verdict judge(const std::vector<hold_record>& holds, std::int64_t fault_start_us,
              std::int64_t heal_us, std::int64_t bound_us,
              belief_rule rule = belief_rule::through_writes);

// Marks `out` lost when a hold was lost at or after `from_us`, the first one in its detail.
void lost_holds(const std::vector<hold_record>& holds, std::int64_t from_us, verdict& out);

std::int64_t monotonic_us();

}  // namespace edgelock::nemesis
