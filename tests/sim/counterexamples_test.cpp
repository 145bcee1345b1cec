// Runs where a plausible core bug shows, kept as they were found. Each was found by
// `edgelock-sim explore` with a mutant of scripts/mutants.txt applied: the correct lock keeps
// the check named below in this exact run, the mutant breaks it, and the timeline shows why.
// They are pinned to a seed, so a change to the simulator's draws can turn one into an
// ordinary run; the mutation score (scripts/mutation-score.sh) then reports the mutant as
// surviving, and the run is found again the same way.
#include <gtest/gtest.h>

#include <string>

#include "edgelock/sim/matrix.hpp"

namespace {

using namespace edgelock::sim;

run_request request_of(const char* config, std::uint64_t seed, const char* schedule_text) {
    run_request r;
    r.config = find_configuration(config);
    r.mode = run_mode::schedule;
    r.seed = seed;
    std::string error;
    EXPECT_TRUE(parse_schedule(schedule_text, r.faults, error)) << error;
    return r;
}

run_result replay(const run_request& r) {
    run_spec spec = make_spec(r);
    spec.record = true;
    return run(spec);
}

// io-error-resends-stale-release-always. The client writes one request at a time. Its
// acquire fails on a lossy link; the clean-up release goes out, the retried acquire (same
// token) waits behind it, and the connection is lost with the release in flight. Re-sent
// after the queued acquire, the release would delete the key that acquire set while the
// client holds the lock (overlap, stale and oracle all break): a release lost with its
// connection must not be re-sent behind a newer claim of its token.
TEST(counterexamples, a_lost_release_is_not_resent_behind_a_newer_claim_of_its_token) {
    const run_request request = request_of("single", 16195699167990257498ULL, "loss.c0@t287,to=n0,d=266,x=116772");
    EXPECT_EQ(make_spec(request).params.write_window, 1u) << "the run no longer writes one request at a time";
    const run_result r = replay(request);
    EXPECT_TRUE(r.checks.all_ok()) << checks_text(r.checks) << "\n" << r.timeline;
    EXPECT_EQ(r.anomalies, 0u);
}

// token-gone-renewal-retried. A split brain: c0 renews on the promoted master n1, which
// never had its key, and is told so (renew -> :0). It must lose the lock there and then;
// retrying the renewal keeps it believing until its validity ends, and it writes to the
// resource after a later holder did (stale). Overlap and oracle break in this run anyway
// (the split brain before the renewal); stale is the one check the correct lock keeps.
TEST(counterexamples, a_renewal_that_finds_its_key_gone_loses_the_lock_at_once) {
    const run_result r = replay(request_of("sentinel", 17742084865001078514ULL, "isolate.n0@c2.acquired#1+0,d=1245"));
    EXPECT_TRUE(r.checks.ok(check_kind::stale)) << checks_text(r.checks) << "\n" << r.timeline;
    EXPECT_NE(r.timeline.find("c0 renew (EVALSHA) -> :0"), std::string::npos) << "the run no longer reaches the case";
    EXPECT_NE(r.timeline.find("lock: lost token_gone"), std::string::npos);
}

}  // namespace
