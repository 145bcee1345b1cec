// The world's Redis processes and Sentinel (world_nodes.cpp): a paused process reads what
// waited, a host that powers off sends no reset, a master cut off from the sentinels keeps
// taking writes from the clients that still reach it until it is reconfigured, and a
// restarted old master stays a master until then.
#include <gtest/gtest.h>

#include <string>

#include "edgelock/sim/matrix.hpp"

namespace {

using namespace edgelock::sim;

run_result run_recorded(const char* config, const char* schedule_text, std::uint8_t clients = 3) {
    run_request r;
    r.config = find_configuration(config);
    r.mode = run_mode::schedule;
    r.seed = 5;
    std::string error;
    EXPECT_TRUE(parse_schedule(schedule_text, r.faults, error)) << error;
    run_spec spec = make_spec(r);
    spec.params = scripted_params();
    spec.params.clients = clients;
    spec.record = true;
    return run(spec);
}

// The timeline's lines that contain every one of `parts`, from the line with `after` on.
std::size_t count_lines(const std::string& timeline, std::initializer_list<const char*> parts,
                        const std::string& after = "") {
    std::size_t from = after.empty() ? 0 : timeline.find(after);
    if (from == std::string::npos) return 0;
    std::size_t count = 0;
    while (from < timeline.size()) {
        std::size_t end = timeline.find('\n', from);
        if (end == std::string::npos) end = timeline.size();
        const std::string line = timeline.substr(from, end - from);
        bool all = true;
        for (const char* p : parts) all = all && line.find(p) != std::string::npos;
        count += all ? 1 : 0;
        from = end + 1;
    }
    return count;
}

const world_mark* find_mark(const run_result& r, world_mark::kind what) {
    for (const world_mark& m : r.marks) {
        if (m.what == what) return &m;
    }
    return nullptr;
}

// The holder's renewal reaches a paused Redis, times out and its connection is closed; the
// bytes were in the socket, so Redis runs the renewal when it resumes, replying to nobody.
TEST(world_nodes, a_paused_redis_runs_what_waited_in_its_sockets_when_it_resumes) {
    const run_result r = run_recorded("single", "pause.n0@c0.acquired#1+0,d=600", 1);
    ASSERT_NE(r.timeline.find("PAUSED until"), std::string::npos) << r.timeline;
    const std::size_t resumed = r.timeline.find("resumed");
    ASSERT_NE(resumed, std::string::npos);
    const std::size_t line = r.timeline.rfind('\n', resumed) + 1;
    const std::string at = r.timeline.substr(line, 16);  // "     606.637 n0 ": the resume's instant
    EXPECT_GE(count_lines(r.timeline, {at.c_str(), "c0 renew"}), 1u) << "the renewal runs at the resume:\n" << r.timeline;
    EXPECT_GE(count_lines(r.timeline, {"c0", "closed: reply timed out"}), 1u);
    EXPECT_EQ(r.anomalies, 0u);
}

// A crash resets the clients' connections; a host that loses power does not, and clients
// notice only through their timeouts.
TEST(world_nodes, a_host_that_powers_off_sends_no_reset) {
    const run_result crashed = run_recorded("single", "crash.n0@c0.acquired#1+0,d=300,p=none", 1);
    const run_result powered_off = run_recorded("single", "power_off.n0@c0.acquired#1+0,d=300,p=none", 1);
    EXPECT_GE(count_lines(crashed.timeline, {"node crashed (reset)"}), 1u);
    EXPECT_EQ(count_lines(crashed.timeline, {"(silent)"}), 0u);
    EXPECT_GE(count_lines(powered_off.timeline, {"host powered off (silent)"}), 1u);
    EXPECT_EQ(count_lines(powered_off.timeline, {"(reset)"}), 0u);
    EXPECT_GE(count_lines(powered_off.timeline, {"c0", "closed: reply timed out"}), 1u);
}

// Split brain: the master is cut off from the sentinels and replicas for 2.5 s while the
// holder (c0) still reaches it and the other clients do not. The sentinels promote a
// replica; c0 keeps renewing on the old master, the others take the lock on the new one.
constexpr const char* split_brain =
    "isolate.n0@c0.acquired#1+0,d=2500;partition.c1@c0.acquired#1+0,to=n0,d=2500;"
    "partition.c2@c0.acquired#1+0,to=n0,d=2500";

TEST(world_nodes, a_master_cut_off_from_the_sentinels_keeps_taking_writes_until_reconfigured) {
    const run_result r = run_recorded("sentinel", split_brain);
    const world_mark* promoted = find_mark(r, world_mark::kind::promote);
    ASSERT_NE(promoted, nullptr) << r.timeline;
    const std::string promotion = r.timeline.substr(r.timeline.find("promoted by Sentinel") - 40);
    EXPECT_GE(count_lines(r.timeline, {"n0", "c0 renew", "-> :1"}, promotion), 1u)
        << "the old master renews c0's lease after the promotion";
    EXPECT_GE(count_lines(r.timeline, {"reconfigured by Sentinel as a replica of n"}), 1u);
    EXPECT_FALSE(r.checks.ok(check_kind::overlap)) << checks_text(r.checks);
    EXPECT_EQ(r.anomalies, 0u);
}

// WAIT makes the same split brain harmless: the old master cannot reach a replica, so its
// renewals are refused and c0 loses the lock before anyone can take it on the new master.
TEST(world_nodes, wait_refuses_renewals_on_a_master_cut_off_from_its_replicas) {
    const run_result r = run_recorded("sentinel+WAIT", split_brain);
    ASSERT_NE(find_mark(r, world_mark::kind::promote), nullptr);
    EXPECT_TRUE(r.checks.all_ok()) << checks_text(r.checks) << "\n" << r.timeline;
    EXPECT_GE(r.past.holds.size(), 2u) << "the lock is taken again on the new master";
}

// The old master crashes, the sentinels fail over, and it restarts (empty) before they
// reconfigure it: for reconfigure_ms it answers ROLE as a master.
TEST(world_nodes, a_restarted_old_master_stays_a_master_until_reconfigured) {
    const run_result r = run_recorded("sentinel", "crash.n0@c0.acquired#1+0,d=400,p=none");
    const world_mark* promoted = find_mark(r, world_mark::kind::promote);
    const world_mark* restarted = find_mark(r, world_mark::kind::restart);
    ASSERT_NE(promoted, nullptr);
    ASSERT_NE(restarted, nullptr);
    EXPECT_LT(promoted->start_us, restarted->start_us);
    const world_mark* reconfigured = nullptr;
    for (const world_mark& m : r.marks) {
        if (m.what == world_mark::kind::note && m.label.find("reconfigured") != std::string::npos) reconfigured = &m;
    }
    ASSERT_NE(reconfigured, nullptr) << r.timeline;
    EXPECT_EQ(reconfigured->start_us - restarted->start_us, scripted_params().reconfigure_ms * 1000);
    EXPECT_EQ(reconfigured->target, 0u);
}

}  // namespace
