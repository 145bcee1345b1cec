// SPDX-License-Identifier: Apache-2.0
// The lease oracle: it samples what a client believes (held()) against where Redis keeps
// the token, so it catches a lease that outlives its key even when no second client is
// there to take the lock (the overlap check needs one).
#include <gtest/gtest.h>

#include "edgelock/sim/matrix.hpp"

namespace {

using namespace edgelock::sim;

// One client, no watchdog, a job longer than the lease: the hold runs to the end of its
// validity, where the oracle's last sample is taken.
run_result run_alone(const char* config, const char* schedule_text) {
    run_request r;
    r.config = find_configuration(config);
    r.mode = run_mode::schedule;
    r.seed = 3;
    std::string error;
    EXPECT_TRUE(parse_schedule(schedule_text, r.faults, error)) << error;
    run_spec spec = make_spec(r);
    spec.params = scripted_params();
    spec.params.clients = 1;
    spec.params.watchdog = false;
    spec.params.work_ms_min = 1500;
    spec.params.work_ms_max = 1500;
    spec.params.job_timeout_ms = 2000;
    return run(spec);
}

// A 60 ms pause while the acquire reply is in flight (within the 100 ms attempt timeout; the
// first acquire already runs its script by digest, the handshake having loaded it):
// validity counts from before the request, so the lease ends before the key does. Counted
// from the reply instead (a mutant of scripts/mutants.txt), it would end 60 ms after the
// key expired, and this run's oracle fails although nobody else ever acquires.
constexpr const char* pause_during_acquire = "pause.c0@c0.acquire_sent#1+0,d=60";

TEST(lease_oracle, a_single_client_paused_during_acquire_keeps_its_lease_backed) {
    const run_result r = run_alone("single", pause_during_acquire);
    EXPECT_TRUE(r.checks.all_ok()) << checks_text(r.checks) << "\n" << r.checks.checks[4].detail;
    EXPECT_EQ(r.anomalies, 0u);
    ASSERT_FALSE(r.past.holds.empty());
    for (const hold_record& h : r.past.holds) EXPECT_EQ(h.client, 0u);
}

TEST(lease_oracle, catches_a_key_that_expires_early_with_a_single_client) {
    // The node's wall clock jumps 2 s forward 50 ms into the hold: the key is gone while the
    // client, alone and correct, still holds it. Only the oracle can see this.
    const run_result r = run_alone("single", "wall_step.n0@c0.acquired#1+50,x=2000");
    EXPECT_FALSE(r.checks.ok(check_kind::oracle));
    EXPECT_TRUE(r.checks.ok(check_kind::overlap)) << "one client cannot overlap";
    EXPECT_NE(
        r.checks.checks[static_cast<std::size_t>(check_kind::oracle)].detail.find("c0 (hold #0)"),
        std::string::npos);
}

TEST(lease_oracle, catches_a_quorum_lost_to_restarts) {
    // Three of five Redlock nodes restart empty 20 ms into the hold: the holder's token now
    // backs two nodes, short of the quorum.
    const run_result r =
        run_alone("redlock-5",
                  "crash.n0@c0.acquired#1+20,d=5,p=none;crash.n1@c0.acquired#1+20,d=5,p=none;"
                  "crash.n2@c0.acquired#1+20,d=5,p=none");
    EXPECT_FALSE(r.checks.ok(check_kind::oracle));
    EXPECT_NE(r.checks.checks[static_cast<std::size_t>(check_kind::oracle)].detail.find(
                  "backs 2 of the 3"),
              std::string::npos)
        << r.checks.checks[static_cast<std::size_t>(check_kind::oracle)].detail;
}

TEST(lease_oracle, a_node_that_is_down_still_backs_the_holder) {
    // A minority down for longer than the lease, with persistence: nobody can take the lock
    // from it, and the quorum holds on the others.
    const run_result r = run_alone("redlock-5", "crash.n0@c0.acquired#1+20,d=3000,p=always");
    EXPECT_TRUE(r.checks.ok(check_kind::oracle)) << r.checks.checks[4].detail;
}

}  // namespace
