// SPDX-License-Identifier: Apache-2.0
// Property tests: configurations claimed safe against a family of faults keep their checks
// under any schedule RapidCheck draws from that family. A failure is shrunk to a minimal
// schedule and reported with the command that replays it.
//
// The number of schedules per property comes from RC_PARAMS; without it, this file sets a
// fixed seed and a count sized for CI (RC_PARAMS="max_success=5000" to search harder).
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstdlib>

#include "edgelock/sim/matrix.hpp"
#include "schedule_generators.hpp"

namespace {

using namespace edgelock::sim;
using edgelock::sim::testing::fault_menu;
using edgelock::sim::testing::schedule_gen;

// Runs before RapidCheck reads its configuration (on the first property).
const bool rc_params_set = [] {
    setenv("RC_PARAMS", "max_success=1000 seed=20261121", 0);
    return true;
}();

// A schedule run on `config_name` with a drawn seed. Its world parameters come from the
// seed (swarm): the fault generators need them (Sentinel's timing, the TTL), so the seed is
// drawn first.
run_request draw_request(const char* config_name) {
    run_request r;
    r.config = find_configuration(config_name);
    r.mode = run_mode::schedule;
    r.seed = *rc::gen::inRange<std::uint64_t>(1, 1'000'000'000);
    return r;
}

world_params params_of(const run_request& r) { return make_spec(r).params; }

// Runs `r` with `faults`; logs the replay command for RapidCheck's report.
run_result run_schedule(run_request r, const schedule& faults) {
    r.faults = faults;
    RC_LOG() << "replay: " << replay_command(r) << "\n";
    const run_result result = run(make_spec(r));
    RC_LOG() << checks_text(result.checks) << "\n";
    for (const check_outcome& c : result.checks.checks) {
        if (!c.ok) RC_LOG() << c.detail << "\n";
    }
    RC_ASSERT(result.anomalies == 0u);
    return result;
}

// Network faults, pauses (anywhere but between the check and the write), clock noise within
// the drift allowance: every configuration keeps every check.
RC_GTEST_PROP(sim_properties, every_configuration_survives_network_faults_pauses_and_clock_noise,
              ()) {
    const char* config =
        *rc::gen::element("single", "single+fencing", "sentinel", "sentinel+WAIT", "redlock-5",
                          "redlock-5+fencing", "redlock-5+delayed-restart");
    const run_request r = draw_request(config);
    const schedule faults = *schedule_gen(*r.config, params_of(r), fault_menu{});
    RC_ASSERT(run_schedule(r, faults).checks.all_ok());
}

// Fencing: even Kleppmann's pause after the check, writes delayed past the TTL and nodes
// evicting lock keys and fence counters never get a stale write accepted, and tokens keep
// increasing (an evicted counter restarts from the node's clock).
RC_GTEST_PROP(sim_properties, fenced_configurations_never_accept_a_stale_write, ()) {
    const char* config = *rc::gen::element("single+fencing", "redlock-5+fencing");
    fault_menu menu;
    menu.pauses_after_check = true;
    menu.resource_delays = true;
    menu.evictions = true;
    const run_request request = draw_request(config);
    const schedule faults = *schedule_gen(*request.config, params_of(request), menu);
    const run_result r = run_schedule(request, faults);
    RC_ASSERT(r.checks.ok(check_kind::stale));
    RC_ASSERT(r.checks.ok(check_kind::order));
    RC_ASSERT(r.checks.ok(check_kind::liveness));
}

// WAIT does not survive a Sentinel failover (an old master back before it is reconfigured
// still has a replica that was not re-pointed yet, and it acknowledges WAIT): two holders
// may overlap. Fencing tokens still keep the storage safe: no stale write, tokens in order.
RC_GTEST_PROP(sim_properties, sentinel_with_wait_and_fencing_refuses_stale_writes_in_failover, ()) {
    fault_menu menu;
    menu.failover = true;
    const run_request r = draw_request("sentinel+WAIT+fencing");
    const schedule faults = *schedule_gen(*r.config, params_of(r), menu);
    const run_result result = run_schedule(r, faults);
    RC_ASSERT(result.checks.ok(check_kind::stale));
    RC_ASSERT(result.checks.ok(check_kind::order));
    RC_ASSERT(result.checks.ok(check_kind::liveness));
}

// Delayed restart: nodes that crash and lose everything stay down past any lease, so
// Redlock keeps its majority argument.
RC_GTEST_PROP(sim_properties, redlock_with_delayed_restart_survives_crashes, ()) {
    fault_menu menu;
    menu.crashes = true;
    menu.persist = *rc::gen::element(persistence::none, persistence::everysec);
    const run_request r = draw_request("redlock-5+delayed-restart");
    const schedule faults = *schedule_gen(*r.config, params_of(r), menu);
    RC_ASSERT(run_schedule(r, faults).checks.all_ok());
}

// appendfsync always: a restart forgets nothing, keys keep their absolute expiry.
RC_GTEST_PROP(sim_properties, appendfsync_always_survives_crash_and_restart, ()) {
    const char* config =
        *rc::gen::element("single", "single+fencing", "redlock-5", "redlock-5+fencing");
    fault_menu menu;
    menu.crashes = true;
    menu.persist = persistence::always;
    const run_request r = draw_request(config);
    const schedule faults = *schedule_gen(*r.config, params_of(r), menu);
    RC_ASSERT(run_schedule(r, faults).checks.all_ok());
}

}  // namespace
