// SPDX-License-Identifier: Apache-2.0
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

struct kept_run {
    const char* config;
    std::uint64_t seed;
    const char* schedule;
    const char* reached;  // timeline text showing the run still reaches the case it was kept for
};

run_request request_of(const kept_run& k) {
    run_request r;
    r.config = find_configuration(k.config);
    r.mode = run_mode::schedule;
    r.seed = k.seed;
    std::string error;
    EXPECT_TRUE(parse_schedule(k.schedule, r.faults, error)) << error;
    return r;
}

// Replays a kept run, recorded, and checks it still reaches its case without anomalies.
run_result replay(const kept_run& k) {
    run_spec spec = make_spec(request_of(k));
    spec.record = true;
    run_result r = run(spec);
    EXPECT_NE(r.timeline.find(k.reached), std::string::npos)
        << "the run no longer reaches the case: " << replay_command(request_of(k));
    EXPECT_EQ(r.anomalies, 0u);
    return r;
}

// io-error-resends-stale-release-always. The client writes one request at a time. A release
// of its token is lost with its connection (in flight when the connection was lost or the reply
// timed out) while a newer claim of that token waits unwritten behind it; re-sent behind
// that claim, the release would delete the key the claim sets while the client holds the
// lock (oracle, and here overlap and stale too). A release lost with its connection must
// not be re-sent behind a newer claim of its token, nor once another token is current.
TEST(counterexamples, a_lost_release_is_not_resent_behind_a_newer_claim_of_its_token) {
    const kept_run runs[] = {
        {"single", 16195699167990257498ULL, "loss.c0@t324,to=n0,d=230,x=116772", "request lost"},
        {"single", 8395422440366521353ULL, "drop_reply.c0@c0.release_called#1+0,to=n0,k=1",
         "reply lost"},
    };
    for (const kept_run& k : runs) {
        EXPECT_EQ(make_spec(request_of(k)).params.write_window, 1u)
            << "the run no longer writes one request at a time";
        const run_result r = replay(k);
        EXPECT_TRUE(r.checks.all_ok()) << checks_text(r.checks) << "\n"
                                       << replay_command(request_of(k));
    }
}

// token-gone-renewal-retried. A split brain: a holder renews on the promoted master, which
// never had its key, and is told so (renew -> :0). It must lose the lock there and then;
// retrying the renewal keeps it believing until its validity ends, and it writes to the
// resource after a later holder did (stale; in the first run it also overlaps). The oracle
// breaks in these runs anyway (the split brain before the renewal).
TEST(counterexamples, a_renewal_that_finds_its_key_gone_loses_the_lock_at_once) {
    const kept_run runs[] = {
        {"sentinel", 17742084865001078514ULL, "isolate.n0@c2.acquired#1+0,d=1288",
         "lock: lost token_gone"},
        {"sentinel", 1, "isolate.n0@c0.acquired#1+0,d=1800", "lock: lost token_gone"},
    };
    for (const kept_run& k : runs) {
        const run_result r = replay(k);
        EXPECT_TRUE(r.checks.ok(check_kind::stale)) << checks_text(r.checks) << "\n"
                                                    << replay_command(request_of(k));
    }
}

// fair-wake-during-attempt-dropped. A waiter's subscriber is slowed, so the release naming
// its turn reaches it while an attempt of its own is in flight, one the lock's holder
// refuses just before releasing. The wake-up that came during the attempt must start the
// next one as soon as the refusal arrives; dropped, the waiter sits at a free lock until its
// re-check (wakeup).
TEST(counterexamples, a_wake_up_during_an_attempt_starts_the_next_one) {
    const kept_run runs[] = {
        {"single+fair", 16055439586361741683ULL,
         "slow_subscribe.c1@t395,to=n0,d=674,x=21;slow_link.c1@t0,to=n0,d=1097,x=6", "on_wake("},
        {"sentinel+WAIT+guard+fair", 7207558244079900046ULL,
         "slow_subscribe.c1@t423,to=n0,d=634,x=138,rst=1;slow_link.c1@t0,to=n0,d=416,x=9",
         "on_wake("},
    };
    for (const kept_run& k : runs) {
        const run_result r = replay(k);
        EXPECT_TRUE(r.checks.all_ok()) << checks_text(r.checks) << "\n"
                                       << replay_command(request_of(k));
    }
}

// grant-fence-dropped. A fenced fair lock's release hands the lock to the head of the line and
// numbers the hold (scripts.hpp, fair_release); the head, taking the grant without a round
// trip, must hand out that fence token: 0 comes after the previous holder's (order). No
// fault is needed: every handover of this run is a grant.
TEST(counterexamples, a_granted_fenced_hold_hands_out_the_fence_its_release_numbered) {
    const kept_run k{"single+fencing+fair", 7271246366510462669ULL, "",
                     "lock: acquired fence=1700000000554000"};
    const run_result r = replay(k);
    EXPECT_TRUE(r.checks.all_ok()) << checks_text(r.checks) << "\n"
                                   << replay_command(request_of(k));
}

// grant-taken-before-replicas-confirm. With WAIT, a grant is only a wake-up: the release's
// SET of the head's token is on the master alone until a WAIT confirms it. Here the
// replication to both replicas lags, the master is paused and a replica promoted; a grant
// taken at once leaves c2 believing while c3 takes the lock on the new master (overlap,
// stale, oracle). Found by explore --config sentinel+WAIT+fair --family S6 --check overlap
// with the mutant.
TEST(counterexamples, a_grant_is_not_a_hold_before_replicas_confirm_it) {
    const kept_run k{"sentinel+WAIT+fair", 18385743275796729586ULL,
                     "repl_lag.n0@t0,to=n1n2,d=2377,x=52;pause.n0@c0.renew_sent#3+7,d=740;"
                     "partition.c1@c0.renew_sent#1+0,to=n1,d=1071;"
                     "partition.c3@c0.renew_sent#1+0,to=n1,d=1072",
                     "c2  [mono 6934570 wall 1700000005500] on_wake(5745819a...)"};
    const run_result r = replay(k);
    EXPECT_TRUE(r.checks.all_ok()) << checks_text(r.checks) << "\n"
                                   << replay_command(request_of(k));
}

// confirmation-past-validity. The acquire's confirmation (WAIT, or the fence raise) must end
// within the attempt's validity: a holder paused while its acquire is in flight resumes to
// a confirmation that came after the lease it was for had ended. Counting it reports
// `acquired` with the validity already over (oracle); with Redlock's fence raise, a token is
// handed out twice (order).
TEST(counterexamples, a_confirmation_after_the_validity_does_not_make_a_hold) {
    const kept_run runs[] = {
        // found by explore --config sentinel+WAIT --family S3 --check oracle with the mutant
        {"sentinel+WAIT", 16117483311215486492ULL, "pause.c0@c0.acquire_sent#2+0,d=418",
         "c0 (unblocked) -> :1"},
        {"redlock-5+fencing", 11856052500550349998ULL, "pause.c0@c0.acquire_sent#1+0,d=270",
         "c0 raise (EVALSHA)"},
    };
    for (const kept_run& k : runs) {
        const run_result r = replay(k);
        EXPECT_TRUE(r.checks.all_ok()) << checks_text(r.checks) << "\n"
                                       << replay_command(request_of(k));
    }
}

// late-quorum-accepted. Client 0 pauses right after writing a Redlock acquire, for nearly
// the whole TTL; when it resumes, a quorum of SET NX PX GET answers is waiting, but the
// lease they would start is already over (valid_until is the instant they are read). The
// lock must fail that attempt and clean up, not report `acquired` with its validity spent
// (oracle).
TEST(counterexamples, a_quorum_that_answers_after_the_validity_is_not_a_hold) {
    const kept_run runs[] = {
        {"redlock-5", 3968323199459445444ULL, "pause.c0@c0.acquire_sent#1+0,d=980",
         "PAUSED until 984 ms"},
    };
    for (const kept_run& k : runs) {
        const run_result r = replay(k);
        EXPECT_TRUE(r.checks.all_ok()) << checks_text(r.checks) << "\n"
                                       << replay_command(request_of(k));
    }
}

}  // namespace
