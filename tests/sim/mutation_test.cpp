// SPDX-License-Identifier: Apache-2.0
// Every check must be able to fail: deliberately broken clients are caught, while correct
// clients pass the same schedule.
#include "edgelock/sim/workload.hpp"

#include <gtest/gtest.h>

#include "edgelock/sim/matrix.hpp"

namespace {

using namespace edgelock::sim;

run_result run_with(const char* config, const char* schedule_text, behaviour clients,
                    std::uint64_t seed = 1) {
    run_request r;
    r.config = find_configuration(config);
    r.mode = run_mode::schedule;
    r.seed = seed;
    r.clients = clients;
    std::string error;
    EXPECT_TRUE(parse_schedule(schedule_text, r.faults, error)) << error;
    run_spec spec = make_spec(r);
    spec.params = scripted_params();
    return run(spec);
}

run_result run_scripted(const char* scenario, const char* config, behaviour clients) {
    run_request r;
    r.scenario = find_scenario(scenario);
    r.config = find_configuration(config);
    r.seed = 1;
    r.clients = clients;
    return run(make_spec(r));
}

// A pause between the read and the held() check: a correct client finds the lease gone and
// does not write; one that ignores validity writes anyway.
constexpr const char* pause_before_check = "pause.c0@c0.read_done#1+0,d=2500";

TEST(mutation, ignoring_validity_is_caught_by_overlap_and_stale) {
    const run_result correct = run_with("single", pause_before_check, behaviour::correct);
    EXPECT_TRUE(correct.checks.all_ok()) << checks_text(correct.checks);
    const run_result broken = run_with("single", pause_before_check, behaviour::ignores_validity);
    EXPECT_FALSE(broken.checks.ok(check_kind::overlap));
    EXPECT_FALSE(broken.checks.ok(check_kind::stale));
}

TEST(mutation, skipping_fencing_is_caught_by_stale) {
    const run_result correct = run_scripted("S1", "single+fencing", behaviour::correct);
    EXPECT_TRUE(correct.checks.ok(check_kind::stale)) << checks_text(correct.checks);
    const run_result broken = run_scripted("S1", "single+fencing", behaviour::skips_fencing);
    EXPECT_FALSE(broken.checks.ok(check_kind::stale));
    const run_result redlock = run_scripted("S2", "redlock-5+fencing", behaviour::skips_fencing);
    EXPECT_FALSE(redlock.checks.ok(check_kind::stale));
}

TEST(mutation, deleting_without_comparing_is_caught_by_overlap) {
    const run_result correct = run_scripted("S8", "single", behaviour::correct);
    EXPECT_TRUE(correct.checks.all_ok()) << checks_text(correct.checks);
    const run_result broken = run_scripted("S8", "single", behaviour::deletes_without_compare);
    EXPECT_FALSE(broken.checks.ok(check_kind::overlap));
}

// A short partition of another client marks when the faults heal; after it, a client that
// never releases keeps everyone else out.
constexpr const char* late_heal = "partition.c1@t500,to=n0,d=100";

TEST(mutation, never_releasing_is_caught_by_liveness) {
    const run_result correct = run_with("single", late_heal, behaviour::correct);
    EXPECT_TRUE(correct.checks.all_ok()) << checks_text(correct.checks);
    const run_result broken = run_with("single", late_heal, behaviour::never_releases);
    EXPECT_FALSE(broken.checks.ok(check_kind::liveness));
    EXPECT_TRUE(broken.checks.ok(check_kind::overlap)) << "it keeps the lock legitimately";
}

// The order check: a Redis restart without persistence resets the fence counter.
// A counter a restart forgot starts again from the node's clock (scripts.hpp), so only a node
// whose clock also went back hands out a token again, and order catches that.
TEST(mutation, a_forgotten_fence_counter_on_a_clock_gone_back_is_caught_by_order) {
    const char* forgotten =
        "wall_step.n0@c1.acquired#1+10,x=-60000;crash.n0@c1.acquired#1+20,d=50,p=none";
    const run_result r = run_with("single+fencing", forgotten, behaviour::correct);
    EXPECT_FALSE(r.checks.ok(check_kind::order));
    const run_result clock_kept =
        run_with("single+fencing", "crash.n0@c1.acquired#1+20,d=50,p=none", behaviour::correct);
    EXPECT_TRUE(clock_kept.checks.ok(check_kind::order))
        << "the clock carries the counter over the restart";
    const char* kept =
        "wall_step.n0@c1.acquired#1+10,x=-60000;crash.n0@c1.acquired#1+20,d=50,p=always";
    const run_result counter_kept = run_with("single+fencing", kept, behaviour::correct);
    EXPECT_TRUE(counter_kept.checks.ok(check_kind::order))
        << checks_text(counter_kept.checks) << ": appendfsync always keeps the counter";
}

// Fair waiting. S11: client 1's subscription is confirmed after client 0's release published
// its wake-up. A client that does not pass the confirmation to on_wake("") waits for its
// re-check (1 s) with the lock free at its turn: the wakeup check's told bound catches it.
TEST(mutation, a_confirmation_not_passed_to_the_lock_is_caught_by_wakeup) {
    for (const char* config : {"single+fair", "sentinel+WAIT+guard+fair"}) {
        const run_result correct = run_scripted("S11", config, behaviour::correct);
        EXPECT_TRUE(correct.checks.all_ok()) << config << ": " << checks_text(correct.checks);
        const run_result broken = run_scripted("S11", config, behaviour::ignores_confirmation);
        EXPECT_FALSE(broken.checks.ok(check_kind::wakeup)) << config;
        EXPECT_TRUE(broken.checks.ok(check_kind::overlap)) << config;
    }
}

// Whether a broken client's S11 random runs on `config` break `check` within 20 seeds, while
// the correct client keeps it on each seed tried and neither breaks exclusion.
bool caught_in_s11(const char* config, behaviour broken, check_kind check) {
    for (std::uint64_t seed = 1; seed <= 20; ++seed) {
        run_request r;
        r.scenario = find_scenario("S11");
        r.config = find_configuration(config);
        r.mode = run_mode::random;
        r.seed = seed;
        const run_result correct = run(make_spec(r));
        EXPECT_TRUE(correct.checks.ok(check)) << replay_command(r);
        r.clients = broken;
        const run_result result = run(make_spec(r));
        EXPECT_TRUE(result.checks.ok(check_kind::overlap)) << replay_command(r);
        if (!result.checks.ok(check)) return true;
    }
    return false;
}

// A client that acquires with the plain acquire script takes a free lock ahead of the fair
// waiters (as lock.hpp says a client outside the line may): the fifo check sees it.
TEST(mutation, a_client_jumping_the_line_is_caught_by_fifo) {
    EXPECT_TRUE(caught_in_s11("single+fair", behaviour::jumps_the_line, check_kind::fifo));
}

// The same of a fair semaphore (3 permits, 4 clients): a waiter woken late, or one that takes a
// permit with the plain script while others wait ahead of it, is seen by the semaphore's own
// rules of the two checks (world_pubsub.cpp: as many ahead as permits are free).
TEST(mutation, a_semaphores_confirmation_not_passed_is_caught_by_wakeup) {
    EXPECT_TRUE(caught_in_s11("single+fair+permits-3", behaviour::ignores_confirmation,
                              check_kind::wakeup));
}

TEST(mutation, a_client_jumping_the_semaphores_line_is_caught_by_fifo) {
    EXPECT_TRUE(
        caught_in_s11("single+fair+permits-3", behaviour::jumps_the_line, check_kind::fifo));
}

}  // namespace
