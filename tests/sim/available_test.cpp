// SPDX-License-Identifier: Apache-2.0
// The available check's acquirer half (checker.hpp): a free lock that a client asks for is
// taken within a bound while the fault the configuration rides out is in force. Here,
// Redlock over five instances with one of them down for the whole run: a quorum of the other
// four grants every acquire, so the lock keeps changing hands throughout.
#include <gtest/gtest.h>

#include "edgelock/sim/matrix.hpp"

namespace {

using namespace edgelock::sim;

run_result run_with(const char* config, const char* schedule_text, std::uint8_t clients) {
    run_request r;
    r.config = find_configuration(config);
    r.mode = run_mode::schedule;
    r.seed = 5;
    std::string error;
    EXPECT_TRUE(parse_schedule(schedule_text, r.faults, error)) << error;
    run_spec spec = make_spec(r);
    spec.params = scripted_params();
    spec.params.clients = clients;
    return run(spec);
}

std::size_t holds_begun_between(const run_result& r, std::int64_t from_us, std::int64_t to_us) {
    std::size_t count = 0;
    for (const hold_record& h : r.past.holds) count += h.start_us >= from_us && h.start_us < to_us;
    return count;
}

// One client alone (two would contend, and Redlock's split votes are not judged): every
// acquire while n4 is down is judged, and each is served.
TEST(available_acquirers, one_redlock_instance_down_keeps_the_lock_available) {
    const run_result r = run_with("redlock-5", "crash.n4@t0,d=6000", 1);
    EXPECT_TRUE(r.checks.all_ok()) << checks_text(r.checks);
    EXPECT_EQ(r.anomalies, 0u);
    EXPECT_GE(holds_begun_between(r, 0, 6'000'000), 3u) << "the lock is taken while n4 is down";
}

// Three clients contend over Sentinel with WAIT while the master is cut off and replaced:
// once the sentinels name the new master, the free lock there is taken again.
TEST(available_acquirers, a_sentinel_failover_with_wait_leaves_the_lock_available) {
    const run_result r = run_with("sentinel+WAIT", "isolate.n0@t300,d=8000", 3);
    EXPECT_TRUE(r.checks.all_ok()) << checks_text(r.checks);
    EXPECT_EQ(r.anomalies, 0u);
    EXPECT_GE(holds_begun_between(r, 1'000'000, 8'000'000), 2u)
        << "the lock is taken on the promoted master while the old one is cut off";
}

}  // namespace
