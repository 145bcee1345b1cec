// SPDX-License-Identifier: Apache-2.0
// Whole runs: determinism (same seed, same trace hash), and what each scripted scenario
// does on the configurations it is known to break or known not to break.
#include "edgelock/sim/world.hpp"

#include <gtest/gtest.h>

#include "edgelock/sim/matrix.hpp"

namespace {

using namespace edgelock::sim;

run_result run_scripted(std::string_view scenario, std::string_view config, std::uint64_t seed,
                        behaviour clients = behaviour::correct) {
    run_request request;
    request.scenario = find_scenario(scenario);
    request.config = find_configuration(config);
    EXPECT_NE(request.scenario, nullptr);
    EXPECT_NE(request.config, nullptr);
    request.seed = seed;
    request.clients = clients;
    return run(make_spec(request));
}

TEST(world_determinism, every_scripted_run_twice_gives_the_same_hash) {
    for (const scenario_info& s : scenarios()) {
        for (const configuration& c : configurations()) {
            const run_result first = run_scripted(s.code, c.name, 42);
            const run_result second = run_scripted(s.code, c.name, 42);
            EXPECT_EQ(first.trace_hash, second.trace_hash) << s.code << " " << c.name;
            EXPECT_EQ(first.events, second.events) << s.code << " " << c.name;
            EXPECT_EQ(checks_text(first.checks), checks_text(second.checks))
                << s.code << " " << c.name;
            EXPECT_EQ(first.anomalies, 0u) << s.code << " " << c.name;
        }
    }
}

TEST(world_determinism, recording_the_timeline_does_not_change_the_run) {
    run_request request;
    request.scenario = find_scenario("S6");
    request.config = find_configuration("sentinel+WAIT");
    request.seed = 9;
    run_spec spec = make_spec(request);
    const run_result quiet = run(spec);
    spec.record = true;
    const run_result recorded = run(spec);
    EXPECT_EQ(quiet.trace_hash, recorded.trace_hash);
    EXPECT_FALSE(recorded.timeline.empty());
    EXPECT_TRUE(quiet.timeline.empty());
}

TEST(world_determinism, random_runs_replay_from_their_seed) {
    for (const scenario_info& s : scenarios()) {
        run_request request;
        request.scenario = &s;
        request.config = find_configuration("redlock-5+fencing");
        request.mode = run_mode::random;
        request.seed = cell_seed(3, s.id, 5, 17);
        EXPECT_EQ(run(make_spec(request)).trace_hash, run(make_spec(request)).trace_hash) << s.code;
    }
}

TEST(world_determinism, different_seeds_give_different_runs) {
    EXPECT_NE(run_scripted("S8", "single", 1).trace_hash,
              run_scripted("S8", "single", 2).trace_hash);
}

TEST(world_run, without_faults_every_configuration_is_safe_and_live) {
    for (const configuration& c : configurations()) {
        for (std::uint64_t seed = 1; seed <= 5; ++seed) {
            run_request request;
            request.config = &c;
            request.mode = run_mode::schedule;
            request.seed = seed;
            const run_result r = run(make_spec(request));
            EXPECT_TRUE(r.checks.all_ok())
                << c.name << " seed " << seed << ": " << checks_text(r.checks);
            EXPECT_GE(r.past.holds.size(), 2u) << c.name << " seed " << seed;
            EXPECT_EQ(r.anomalies, 0u) << c.name;
        }
    }
}

// The blocking client's schedule (session/linking.hpp): every client connects an instance (or a
// cluster node) only for a request queued for it, and fails one queued inside the reconnect
// delay at once. Without faults every configuration stays as safe and live as with eager
// links, and the trace names the schedule.
TEST(world_run, clients_that_link_on_demand_are_safe_and_live_without_faults) {
    for (const configuration& c : configurations()) {
        for (std::uint64_t seed = 1; seed <= 3; ++seed) {
            run_request request;
            request.config = &c;
            request.mode = run_mode::schedule;
            request.seed = seed;
            run_spec spec = make_spec(request);
            spec.params.on_demand_clients = ~0u;
            spec.record = true;
            const run_result r = run(spec);
            const std::string where = std::string(c.name) + " seed " + std::to_string(seed);
            EXPECT_TRUE(r.checks.all_ok()) << where << ": " << checks_text(r.checks);
            EXPECT_GE(r.past.holds.size(), 2u) << where;
            EXPECT_EQ(r.anomalies, 0u) << where;
            EXPECT_NE(r.timeline.find("links on demand"), std::string::npos) << where;
        }
    }
}

// What users do besides taking and releasing, turned all the way up: every client but client 0
// cancels often and then closes for good (its cleanups first), and everyone working under the
// lock releases as a renewal goes out. Without faults every property holds, the lock's next
// event after each release is `released` (an anomaly otherwise), and the trace shows both.
TEST(world_run, users_who_close_mid_acquire_or_release_as_a_renewal_goes_out_break_nothing) {
    for (const char* name : {"single+fair", "sentinel+WAIT+guard+fair", "redlock-5", "cluster"}) {
        bool raced = false;
        bool closed = false;
        for (std::uint64_t seed = 1; seed <= 6; ++seed) {
            run_request request;
            request.config = find_configuration(name);
            ASSERT_NE(request.config, nullptr) << name;
            request.mode = run_mode::schedule;
            request.seed = seed;
            run_spec spec = make_spec(request);
            spec.params.cancel_per_million = 500'000;
            spec.params.leave_per_million = 1'000'000;
            spec.params.release_at_renewal_per_million = 1'000'000;
            spec.record = true;
            const run_result r = run(spec);
            const std::string where = std::string(name) + " seed " + std::to_string(seed);
            EXPECT_TRUE(r.checks.all_ok()) << where << ": " << checks_text(r.checks);
            EXPECT_EQ(r.anomalies, 0u) << where;
            raced = raced || r.timeline.find("as a renewal goes out") != std::string::npos;
            closed = closed || r.timeline.find("] closed") != std::string::npos;
        }
        EXPECT_TRUE(raced) << name;
        EXPECT_TRUE(closed) << name;
    }
}

// Without fencing the lock acquires with SET NX PX GET; a server before 7.0 refuses that with
// a syntax error and gets the acquire script instead, on every configuration, and the runs
// stay as safe and live as on new servers. With half the nodes old, a Sentinel failover or
// Redlock's quorum mixes both forms.
TEST(world_run, servers_before_7_get_the_acquire_script_and_the_lock_stays_safe_and_live) {
    for (const std::uint32_t old_per_million : {0u, 500'000u, 1'000'000u}) {
        for (const configuration& c : configurations()) {
            run_request request;
            request.config = &c;
            request.mode = run_mode::schedule;
            request.seed = 3;
            run_spec spec = make_spec(request);
            spec.params.old_server_per_million = old_per_million;
            spec.record = true;
            const run_result r = run(spec);
            const std::string where =
                std::string(c.name) + " old=" + std::to_string(old_per_million);
            EXPECT_TRUE(r.checks.all_ok()) << where << ": " << checks_text(r.checks);
            EXPECT_GE(r.past.holds.size(), 2u) << where;
            EXPECT_EQ(r.anomalies, 0u) << where;
            const bool native_sent = r.timeline.find("acquire (SET)") != std::string::npos;
            const bool refused =
                r.timeline.find("acquire (SET) -> -ERR syntax error") != std::string::npos;
            const bool scripted = r.timeline.find("acquire (EVALSHA)") != std::string::npos ||
                                  r.timeline.find("acquire (EVAL)") != std::string::npos;
            if (old_per_million == 500'000u) continue;  // which nodes are old is drawn
            const bool all_old = old_per_million == 1'000'000u;
            // A fair lock always sends its fair_acquire script ("fair_acquire (EVAL)"), a
            // semaphore its permit_acquire script.
            const bool native = !c.fencing && !c.fair && c.permits == 1;
            EXPECT_EQ(native_sent, native) << where << ": tried first on every connection";
            EXPECT_EQ(refused, native && all_old) << where;
            EXPECT_EQ(scripted, !native || all_old) << where;
        }
    }
}

// Sentinel: the clients know only the sentinels' addresses. Each connection asks one for the
// master and connects to the node it names; after the failover the sentinels name the
// promoted replica, and the clients hold the lock there.
TEST(world_run, sentinel_clients_find_the_master_through_the_sentinels) {
    run_request request;
    request.scenario = find_scenario("S6");
    request.config = find_configuration("sentinel");
    request.seed = 1;
    run_spec spec = make_spec(request);
    spec.record = true;
    const run_result r = run(spec);
    EXPECT_EQ(r.anomalies, 0u);
    std::int64_t promoted_us = -1;
    std::string promoted;
    for (const world_mark& m : r.marks) {
        if (m.what != world_mark::kind::promote) continue;
        promoted_us = m.start_us;
        promoted = "n" + std::to_string(m.target);
    }
    ASSERT_GE(promoted_us, 0) << "the scripted crash of the master is failed over";
    EXPECT_NE(r.timeline.find("SENTINEL get-master-addr-by-name mymaster -> [\"n0\""),
              std::string::npos);
    EXPECT_NE(r.timeline.find("SENTINEL get-master-addr-by-name mymaster -> [\"" + promoted + "\""),
              std::string::npos);
    EXPECT_NE(r.timeline.find("connected to " + promoted + ":6379"), std::string::npos);
    std::size_t holds_after = 0;
    for (const hold_record& h : r.past.holds) holds_after += h.start_us > promoted_us ? 1 : 0;
    EXPECT_GE(holds_after, 2u) << "the lock is taken on the promoted master";
}

}  // namespace
