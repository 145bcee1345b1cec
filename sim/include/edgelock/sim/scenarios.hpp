// SPDX-License-Identifier: Apache-2.0
// edgelock sim: the scenario catalogue S1..S10.
//
// Each scenario is one fault of the Kleppmann/antirez debate, in two forms:
//   scripted  a fixed schedule that lands the fault where it hurts most (run with a seed
//             that only moves the network jitter, tokens and think times)
//   random    a family of schedules drawn from a seed: where, when and how hard the fault
//             hits varies, and so do the world's parameters
// The same fault has to be shaped differently per configuration (a clock step hurts a
// single Redis on its only node, but Redlock only when the stepped node is the one two
// majorities share), so both forms take the configuration.
//
//   S1 pause after acquire, longer than the TTL (Kleppmann's GC pause)
//   S2 the holder's write to the resource delayed in the network beyond the TTL
//   S3 pause while acquire replies are in flight (antirez: caught by validity from T1), or
//      renew replies, the renewal then being the last before the lease runs out
//   S4 wall-clock step on a Redis node
//   S5 Redis crash + restart without persistence, with and without delayed restart
//   S6 the master goes away (crash, power-off, pause, cut off alone); Sentinel fails over
//      with async replication, with and without WAIT
//   S7 client clock rate drift beyond the drift factor, and client wall-clock steps
//   S8 lost reply to release/renew, retried after the lock moved on
//   S9 a network partition with clients on both sides: Sentinel's old master keeps a replica
//      on its side; Redlock's nodes split into a minority and a majority
//   S10 memory pressure on a node with maxmemory and an evicting policy: volatile-* takes
//      the lock keys, allkeys-* the fence counters too
//   S11 a missed wake-up (fair waiting): the waiter's subscription is confirmed only after
//      the holder's release published; the confirmation (on_wake with "") must start its
//      next attempt at once, long before its re-check
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "edgelock/sim/configuration.hpp"
#include "edgelock/sim/prng.hpp"
#include "edgelock/sim/schedule.hpp"

namespace edgelock::sim {

enum class scenario_id : std::uint8_t { s1, s2, s3, s4, s5, s6, s7, s8, s9, s10, s11 };
inline constexpr std::size_t scenario_count = 11;
// S1..S10, the faults of the debate: what explore mixes on a configuration without fair waiting.
inline constexpr std::size_t debate_scenario_count = 10;

struct scenario_info {
    scenario_id id;
    std::string_view code;  // "S1"
    std::string_view title;
};

const std::array<scenario_info, scenario_count>& scenarios() noexcept;
const scenario_info* find_scenario(std::string_view code) noexcept;

// The world of the scripted run, and of a random run drawn from `rng`.
world_params scripted_params(scenario_id id) noexcept;
world_params random_params(scenario_id id, prng& rng) noexcept;

schedule scripted_schedule(scenario_id id, const configuration& config, const world_params& params);
schedule random_schedule(scenario_id id, const configuration& config, const world_params& params,
                         prng& rng);

// Any mix of the scenarios' faults (explore): one to three families drawn at random.
schedule random_faults(const configuration& config, const world_params& params, prng& rng);

}  // namespace edgelock::sim
