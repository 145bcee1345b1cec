// SPDX-License-Identifier: Apache-2.0
// The world's Redis processes and Sentinel (world_nodes.cpp): a paused process reads what
// waited, a host that powers off sends no reset, a master cut off from the sentinels keeps
// taking writes from the clients that still reach it until it is reconfigured, and a
// restarted old master stays a master until then.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "edgelock/sim/matrix.hpp"

namespace {

using namespace edgelock::sim;

// A recorded run of `schedule_text` with the scripted parameters, `clients` clients, and
// whatever `tweak` changes in them.
template <typename Tweak>
run_result run_recorded(const char* config, const char* schedule_text, std::uint8_t clients,
                        Tweak tweak, std::uint64_t seed = 5) {
    run_request r;
    r.config = find_configuration(config);
    r.mode = run_mode::schedule;
    r.seed = seed;
    std::string error;
    EXPECT_TRUE(parse_schedule(schedule_text, r.faults, error)) << error;
    run_spec spec = make_spec(r);
    spec.params = scripted_params();
    spec.params.clients = clients;
    tweak(spec.params);
    spec.record = true;
    return run(spec);
}

run_result run_recorded(const char* config, const char* schedule_text, std::uint8_t clients = 3) {
    return run_recorded(config, schedule_text, clients, [](world_params&) {});
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
    EXPECT_GE(count_lines(r.timeline, {at.c_str(), "c0 renew"}), 1u)
        << "the renewal runs at the resume:\n"
        << r.timeline;
    EXPECT_GE(count_lines(r.timeline, {"c0", "closed: reply timed out"}), 1u);
    EXPECT_EQ(r.anomalies, 0u);
}

// A crash resets the clients' connections and its host refuses new ones; a host that loses
// power does neither, and clients notice only through their timeouts.
TEST(world_nodes, a_host_that_powers_off_sends_no_reset_and_refuses_nothing) {
    const run_result crashed = run_recorded("single", "crash.n0@c0.acquired#1+0,d=1000,p=none", 1);
    const run_result powered_off =
        run_recorded("single", "power_off.n0@c0.acquired#1+0,d=1000,p=none", 1);
    EXPECT_GE(count_lines(crashed.timeline, {"node crashed (reset)"}), 1u);
    EXPECT_EQ(count_lines(crashed.timeline, {"(silent)"}), 0u);
    EXPECT_GE(count_lines(crashed.timeline, {"failed: connection refused"}), 1u);
    EXPECT_GE(count_lines(powered_off.timeline, {"host powered off (silent)"}), 1u);
    EXPECT_EQ(count_lines(powered_off.timeline, {"(reset)"}), 0u);
    EXPECT_EQ(count_lines(powered_off.timeline, {"connection refused"}), 0u);
    EXPECT_GE(count_lines(powered_off.timeline, {"c0", "closed: reply timed out"}), 1u);
    EXPECT_GE(count_lines(powered_off.timeline, {"c0", "failed: connect timed out"}), 1u);
}

// Another server put behind the node's address (a VIP or DNS name re-pointed, a container
// replaced), empty and up for a day, while the holder (c0) is paused. Its INFO says nothing of
// the swap but its run_id: a client that read the server before counts the new one from the
// reading (the restart guard's wait), one whose first reading is the new server counts it from
// the day-old start it reports, and takes the lock c0 still believes it holds (README, "The
// restart guard": noticed only by clients that saw the one before).
constexpr const char* replaced_under_a_paused_holder =
    "pause.c0@c0.acquired#1+5,d=700;replace.n0@c0.acquired#1+10,d=20,x=86400000,p=none";

TEST(world_nodes, a_server_replaced_behind_its_address_is_kept_out_by_a_client_that_knew_it) {
    const run_result r = run_recorded("single+guard", replaced_under_a_paused_holder, 2);
    EXPECT_GE(count_lines(r.timeline, {"n0", "another server, up 86400000 ms, with 0 key(s)"}), 1u)
        << r.timeline;
    EXPECT_GE(count_lines(r.timeline, {"c1", "node read", "a restart"}, "another server"), 1u)
        << "its new run_id: a restart, counted from the reading";
    EXPECT_TRUE(r.checks.ok(check_kind::overlap)) << checks_text(r.checks) << r.timeline;
    EXPECT_EQ(r.anomalies, 0u);
}

TEST(known_unsafe_scripted, a_server_replaced_behind_its_address_fools_a_client_reading_it_first) {
    const std::string schedule =
        std::string("partition.c1@t0,to=n0,d=60;") + replaced_under_a_paused_holder;
    const run_result r = run_recorded("single+guard", schedule.c_str(), 2);
    EXPECT_EQ(count_lines(r.timeline, {"c1", "node read", "a restart"}), 0u) << r.timeline;
    EXPECT_FALSE(r.checks.ok(check_kind::overlap)) << checks_text(r.checks);
}

// Split brain: the master is cut off from the sentinels and replicas for 2.5 s while the
// holder (c0) still reaches it, on its side of the network (cut off from the sentinels too:
// no +switch-master reaches it), and the other clients do not. The sentinels promote a
// replica; c0 keeps renewing on the old master, the others take the lock on the new one,
// until the old master is reconfigured and answers c0 with READONLY.
constexpr const char* split_brain =
    "isolate.n0@c0.acquired#1+0,d=2500;partition.c0@c0.acquired#1+0,to=S,d=2500;"
    "partition.c1@c0.acquired#1+0,to=n0,d=2500;partition.c2@c0.acquired#1+0,to=n0,d=2500";

TEST(world_nodes, a_master_cut_off_from_the_sentinels_keeps_taking_writes_until_reconfigured) {
    const run_result r = run_recorded("sentinel", split_brain);
    ASSERT_NE(find_mark(r, world_mark::kind::promote), nullptr) << r.timeline;
    const std::string promotion = r.timeline.substr(r.timeline.find("promoted by Sentinel") - 40);
    EXPECT_GE(count_lines(r.timeline, {"n0", "c0 renew", "-> :1"}, promotion), 1u)
        << "the old master renews c0's lease after the promotion";
    EXPECT_GE(count_lines(r.timeline, {"n0", "reconfigured by Sentinel: a replica of n"}), 1u);
    EXPECT_GE(count_lines(r.timeline, {"connection to n0 broken: CLIENT KILL by Sentinel"},
                          r.timeline.substr(r.timeline.find("reconfigured by Sentinel"))),
              1u)
        << "the reconfigured old master closes its clients' connections (CLIENT KILL)";
    EXPECT_FALSE(r.checks.ok(check_kind::overlap)) << checks_text(r.checks);
    EXPECT_EQ(r.anomalies, 0u);
}

// With WAIT, the same split brain is harmless: a renewal on the cut-off master gets no
// replica's acknowledgement (the WAIT answers 0), so nothing it grants or renews counts.
TEST(world_nodes, wait_gets_no_acknowledgement_on_a_master_cut_off_from_its_replicas) {
    const run_result brief = run_recorded("sentinel+WAIT", "isolate.n0@c0.renew_sent#1+0,d=80");
    EXPECT_EQ(find_mark(brief, world_mark::kind::promote), nullptr)
        << "shorter than down_after: no failover";
    EXPECT_GE(count_lines(brief.timeline, {"n0", "c0 (unblocked) -> :0"}), 1u) << brief.timeline;
    const run_result r = run_recorded("sentinel+WAIT", split_brain);
    ASSERT_NE(find_mark(r, world_mark::kind::promote), nullptr);
    EXPECT_TRUE(r.checks.all_ok()) << checks_text(r.checks) << "\n" << r.timeline;
    EXPECT_GE(r.past.holds.size(), 2u) << "the lock is taken again on the new master";
}

// A holder that still reaches the sentinels hears their +switch-master and leaves the cut-off
// master for the promoted replica at once, where it goes on renewing.
TEST(world_nodes, a_holder_that_hears_the_switch_leaves_the_cut_off_master) {
    const run_result r = run_recorded("sentinel+WAIT",
                                      "isolate.n0@c0.acquired#1+0,d=2500;"
                                      "partition.c1@c0.acquired#1+0,to=n0,d=2500;"
                                      "partition.c2@c0.acquired#1+0,to=n0,d=2500");
    const world_mark* promoted = find_mark(r, world_mark::kind::promote);
    ASSERT_NE(promoted, nullptr) << r.timeline;
    const std::string target = "n" + std::to_string(promoted->target);
    const std::string after = r.timeline.substr(r.timeline.find("promoted by Sentinel"));
    const std::string heard = "heard +switch-master to " + target + ":6379";
    EXPECT_GE(count_lines(after, {"c0", heard.c_str()}), 1u) << r.timeline;
    EXPECT_GE(count_lines(after, {"c0", "closed: sentinel announced a new master"}), 1u);
    const std::string reached = "connected to " + target + ":6379 (instance 0)";
    EXPECT_GE(count_lines(after, {"c0", reached.c_str()}), 1u) << "straight to the new master";
    EXPECT_TRUE(r.checks.all_ok()) << checks_text(r.checks) << "\n" << r.timeline;
}

// But not when a replica is cut off on the old master's side: it acknowledges the WAIT, the
// old master keeps c0's lease alive while the others take the lock on the promoted replica.
TEST(world_nodes, wait_does_not_help_when_a_replica_is_cut_off_with_the_old_master) {
    const run_result r = run_recorded(
        "sentinel+WAIT",
        "isolate.n0@c0.acquired#1+0,to=n1,d=2500;partition.c0@c0.acquired#1+0,to=S,d=2500;"
        "partition.c1@c0.acquired#1+0,to=n0,d=2500;partition.c2@c0.acquired#1+0,to=n0,d=2500");
    const world_mark* promoted = find_mark(r, world_mark::kind::promote);
    ASSERT_NE(promoted, nullptr);
    EXPECT_EQ(promoted->target, 2u) << "n1 is on the cut-off side";
    EXPECT_FALSE(r.checks.ok(check_kind::overlap)) << checks_text(r.checks);
    EXPECT_FALSE(r.checks.ok(check_kind::oracle));
}

// Redis 7.0's order, reproduced on real processes: the master pauses, the sentinels promote
// n1, and the old master resumes while n2 still follows it (re-pointed only later, one
// replica at a time) and while the sentinels still name it: a client takes the lock there
// and n2 acknowledges its WAIT. A hold confirmed by a replica, on a master nobody else uses.
TEST(world_nodes, a_replica_not_yet_re_pointed_acknowledges_the_old_masters_wait) {
    const run_result r =
        run_recorded("sentinel+WAIT", "pause.n0@c0.acquired#1+0,d=600;partition.c1@t0,to=n1,d=3000",
                     3, [](world_params& p) {
                         p.repoint_ms_min = 1500;
                         p.repoint_ms_max = 1500;
                         p.sentinel_lag_ms_max = 1500;
                         p.reconfigure_ms = 1500;
                     });
    const world_mark* promoted = find_mark(r, world_mark::kind::promote);
    ASSERT_NE(promoted, nullptr) << r.timeline;
    EXPECT_EQ(promoted->target, 1u);
    const std::string after_resume = r.timeline.substr(r.timeline.find("resumed"));
    EXPECT_GE(count_lines(after_resume, {"n0", "(unblocked) -> :1"}), 1u)
        << "n2 acknowledges the resumed old master's WAIT\n"
        << r.timeline;
    const std::string repointed = "re-pointed by Sentinel from n0 to n1";
    ASSERT_GE(count_lines(r.timeline, {"n2", repointed.c_str()}), 1u) << r.timeline;
    EXPECT_EQ(count_lines(r.timeline, {"n2", repointed.c_str()}, "promoted by Sentinel"), 1u);
    EXPECT_LT(r.timeline.find("promoted by Sentinel"), r.timeline.find(repointed));
    EXPECT_FALSE(r.checks.ok(check_kind::oracle)) << "held on a master that is no longer one";
    EXPECT_EQ(r.anomalies, 0u);
}

// Runs `schedule` on "sentinel" once per seed 1..8, so that each sentinel in turn leads the
// failover (the leader is drawn) while the others stay stale for long (`tweak` adds to
// that). Every run must be free of anomalies, and keep every check when `all_ok`. Returns
// how many timeline lines contain every one of `parts`, from the first line with `after` on.
template <typename Tweak>
std::size_t count_over_leaders(const char* schedule, Tweak tweak, const char* after,
                               std::initializer_list<const char*> parts, bool all_ok = true) {
    std::size_t count = 0;
    for (std::uint64_t seed = 1; seed <= 8; ++seed) {
        const run_result r = run_recorded(
            "sentinel", schedule, 3,
            [&](world_params& p) {
                p.sentinel_lag_ms_max = 3000;
                tweak(p);
            },
            seed);
        EXPECT_NE(find_mark(r, world_mark::kind::promote), nullptr) << r.timeline;
        count += count_lines(r.timeline, parts, after);
        if (all_ok) {
            EXPECT_TRUE(r.checks.all_ok())
                << "seed " << seed << ": " << checks_text(r.checks) << "\n"
                << r.timeline;
        }
        EXPECT_EQ(r.anomalies, 0u) << "seed " << seed << "\n" << r.timeline;
    }
    return count;
}

// Only the leader of a failover names the new master at once; the other sentinels still name
// the old one, which restarts (empty, a master again until it is reconfigured). The key was
// replicated before the crash, so the promotion alone is harmless. A client that asks the
// sentinels in turn moves past a stale one whose master refuses it, and nobody takes the
// lock on the restarted old master while the others hold it on the new one (a client that
// kept asking one stale sentinel would).
TEST(world_nodes, clients_ask_the_sentinels_in_turn_past_a_stale_one) {
    const std::size_t stale_answers = count_over_leaders(
        "crash.n0@c0.acquired#1+100,d=600,p=none", [](world_params& p) { p.reconfigure_ms = 2000; },
        "promoted by Sentinel", {"SENTINEL get-master-addr-by-name", "[\"n0\""});
    EXPECT_GE(stale_answers, 1u) << "a stale sentinel still names the old master";
}

// A restarted node loads its data set for a drawn time first, answering LOADING (the
// handshake's PING too); the clients' connections give up on it and come back later.
TEST(world_nodes, a_restarted_node_answers_loading_before_it_serves) {
    const char* crash = "crash.n0@c0.acquired#1+0,d=50,p=always";
    const run_result r =
        run_recorded("single", crash, 3, [](world_params& p) { p.loading_ms_max = 400; });
    const std::string after = r.timeline.substr(r.timeline.find("restart with"));
    EXPECT_GE(count_lines(after, {"n0", "PING -> -LOADING"}), 1u) << r.timeline;
    EXPECT_TRUE(r.checks.all_ok()) << checks_text(r.checks);
    EXPECT_EQ(r.anomalies, 0u);
    const run_result at_once = run_recorded("single", crash);
    EXPECT_EQ(count_lines(at_once.timeline, {"LOADING"}), 0u);
}

// The old master crashes, the sentinels fail over, and it restarts (empty) before they
// reconfigure it: for reconfigure_ms it stays a master, then becomes the new one's replica.
TEST(world_nodes, a_restarted_old_master_stays_a_master_until_reconfigured) {
    const run_result r = run_recorded("sentinel", "crash.n0@c0.acquired#1+0,d=400,p=none");
    const world_mark* promoted = find_mark(r, world_mark::kind::promote);
    const world_mark* restarted = find_mark(r, world_mark::kind::restart);
    ASSERT_NE(promoted, nullptr);
    ASSERT_NE(restarted, nullptr);
    EXPECT_LT(promoted->start_us, restarted->start_us);
    const world_mark* reconfigured = nullptr;
    for (const world_mark& m : r.marks) {
        if (m.what == world_mark::kind::note && m.label.find("reconfigured") != std::string::npos)
            reconfigured = &m;
    }
    ASSERT_NE(reconfigured, nullptr) << r.timeline;
    EXPECT_EQ(reconfigured->start_us - restarted->start_us,
              scripted_params().reconfigure_ms * 1000);
    EXPECT_EQ(reconfigured->target, 0u);
    EXPECT_NE(reconfigured->label.find("a replica of n" + std::to_string(promoted->target)),
              std::string::npos)
        << reconfigured->label;
}

// A master paused longer than down_after is failed over, and reconfigured once it resumes;
// one paused for less is not.
TEST(world_nodes, a_paused_master_is_failed_over_only_past_down_after) {
    const run_result long_pause = run_recorded("sentinel", "pause.n0@c0.acquired#1+0,d=600");
    const world_mark* promoted = find_mark(long_pause, world_mark::kind::promote);
    ASSERT_NE(promoted, nullptr);
    EXPECT_LT(promoted->start_us, 600'000 + 10'000);
    EXPECT_GE(count_lines(long_pause.timeline, {"n0", "reconfigured by Sentinel: a replica of n"}),
              1u);
    const run_result short_pause = run_recorded("sentinel", "pause.n0@c0.acquired#1+0,d=50");
    EXPECT_EQ(find_mark(short_pause, world_mark::kind::promote), nullptr);
    EXPECT_TRUE(short_pause.checks.all_ok()) << checks_text(short_pause.checks);
}

// A replica cut off for a while resynchronises when it is back; one that restarts while its
// master is away waits for it, follows the promoted replica, and can be promoted itself.
TEST(world_nodes, replicas_that_were_away_follow_the_current_master_again) {
    const run_result cut = run_recorded("sentinel", "isolate.n1@t300,d=200");
    EXPECT_GE(count_lines(cut.timeline, {"n1", "resynchronised from n0"}), 1u) << cut.timeline;
    const run_result r = run_recorded(
        "sentinel", "pause.n0@t300,d=10000;crash.n1@t350,d=50,p=none;crash.n2@t2000,d=8000,p=none");
    std::vector<std::uint8_t> promoted;
    for (const world_mark& m : r.marks) {
        if (m.what == world_mark::kind::promote) promoted.push_back(m.target);
    }
    EXPECT_EQ(promoted, (std::vector<std::uint8_t>{2, 1})) << r.timeline;
}

// The sentinels promote the replica whose last INFO showed the highest offset: not n1, whose
// replication lags 3 s behind.
TEST(world_nodes, the_promoted_replica_is_the_one_the_sentinels_saw_furthest_ahead) {
    const run_result r = run_recorded(
        "sentinel", "repl_lag.n0@t0,to=n1,d=5000,x=3000;crash.n0@c0.acquired#1+50,d=2000,p=none");
    const world_mark* promoted = find_mark(r, world_mark::kind::promote);
    ASSERT_NE(promoted, nullptr);
    EXPECT_EQ(promoted->target, 2u) << promoted->label;
}

// The sentinels decide on a failover only for the silence that is still going on: a
// promotion decided while the master was away the first time is dropped when it has come
// back and gone silent again for less than down_after (failover_ms long, so the decision
// falls inside the second silence).
TEST(world_nodes, a_failover_decided_for_an_earlier_silence_is_dropped) {
    const run_result r = run_recorded("sentinel", "pause.n0@t300,d=150;pause.n0@t650,d=300", 3,
                                      [](world_params& p) { p.failover_ms = 300; });
    EXPECT_EQ(find_mark(r, world_mark::kind::promote), nullptr) << r.timeline;
    EXPECT_EQ(count_lines(r.timeline, {"n0", "resumed"}), 2u);
}

// A replica that restarts empty while the master is away is a new instance to the
// sentinels, offset 0: the other replica, which holds the key, is promoted.
TEST(world_nodes, a_replica_that_restarted_empty_is_not_promoted_over_one_holding_the_key) {
    // The sentinels look every 250 ms (0, 250, 500, 750 ms): n1 restarts at 550 ms, between
    // their looks, and the failover (616 ms) comes before the next one.
    const run_result r =
        run_recorded("sentinel+WAIT", "pause.n0@t300,d=10000;crash.n1@t350,d=200,p=none", 3,
                     [](world_params& p) {
                         p.down_after_ms = 250;
                         p.info_period_ms = 250;
                     });
    const world_mark* promoted = find_mark(r, world_mark::kind::promote);
    ASSERT_NE(promoted, nullptr);
    EXPECT_EQ(promoted->target, 2u) << promoted->label;
    EXPECT_TRUE(r.checks.ok(check_kind::oracle)) << checks_text(r.checks);
}

// Two nodes cut off each on its own are two sides: replication does not pass between them,
// so the old master's WAIT is not acknowledged by the other cut-off replica.
TEST(world_nodes, nodes_cut_off_separately_do_not_replicate_to_each_other) {
    const run_result r = run_recorded(
        "sentinel+WAIT", "isolate.n0@c0.renew_sent#1+0,d=80;isolate.n1@c0.renew_sent#1+0,d=80");
    EXPECT_GE(count_lines(r.timeline, {"n0", "c0 (unblocked) -> :0"}), 1u) << r.timeline;
}

// A crash during a pause ends the pause: the pause's own end, later, does nothing.
TEST(world_nodes, a_pause_cut_short_by_a_crash_does_not_resume_later) {
    const run_result r =
        run_recorded("sentinel", "pause.n0@t300,d=2000;crash.n0@t500,d=100,p=none");
    EXPECT_EQ(count_lines(r.timeline, {"n0", "resumed"}), 0u) << r.timeline;
}

// With replica-read-only no, the old master reconfigured as a replica takes writes for
// itself. A stale sentinel still names it: only the handshake's ROLE check keeps a client
// from taking the lock there while another holds it on the new master.
TEST(world_nodes, the_role_check_keeps_clients_off_a_writable_replica_a_stale_sentinel_names) {
    // Once n0 is a replica, c1 and c2 lose the new master for a while and ask again.
    const std::size_t turned_away = count_over_leaders(
        "crash.n0@c0.acquired#1+100,d=600,p=none;partition.c1@t1100,to=n1,d=400;"
        "partition.c2@t1100,to=n1,d=400",
        [](world_params& p) {
            p.reconfigure_ms = 300;
            p.replica_read_only = false;
        },
        "reconfigured by Sentinel", {"n0", "ROLE -> [\"slave\""});
    EXPECT_GE(turned_away, 1u) << "a stale sentinel sends a client to the writable replica";
}

// A replica whose master is gone answers MASTERDOWN to the handshake's PING (with
// replica-serve-stale-data no). A stale sentinel sends clients to the old master, now a
// replica of the crashed new one: each such connection must end as master_down, what the
// client reports and counts, not as an ordinary error reply (the workload checks it).
TEST(world_nodes, a_replica_without_its_master_refuses_the_handshake_with_masterdown) {
    const std::size_t refused = count_over_leaders(
        "crash.n0@c0.acquired#1+100,d=600,p=none;crash.n1@t1100,d=600,p=none",
        [](world_params& p) {
            p.reconfigure_ms = 300;
            p.replica_serve_stale_data = false;
        },
        "reconfigured by Sentinel", {"n0", "PING -> -MASTERDOWN"}, false);
    EXPECT_GE(refused, 1u) << "a stale sentinel sends a client to the replica without its master";
}

// Sentinel's CLIENT KILL, sent as it reconfigures a returned old master, can end a
// connection between a claim's reply and the WAIT that would confirm it: here the client is
// paused while its claim on the cut-off old master is answered and the connection closed. A
// WAIT sent on the next connection reaches the new master, whose replicas acknowledge at
// once; the claim went with the old master's data, so it must count as failed
// (lock::forget_unconfirmable), or the client believes in a hold no master keeps.
TEST(world_nodes, a_claim_whose_connection_sentinel_closed_before_its_wait_confirms_nothing) {
    const run_result r = run_recorded(
        "sentinel+WAIT", "isolate.n0@c0.acquire_sent#2+0,d=300;pause.c0@c0.acquire_sent#2+0,d=600",
        1, [](world_params& p) {
            p.ttl_ms = 3000;
            p.attempt_timeout_ms = 2000;  // the claim's reply is read after the pause
            p.down_after_ms = 100;
            p.info_period_ms = 20;
            p.failover_ms = 0;
            p.reconfigure_ms = 100;
            p.sentinel_lag_ms_max = 0;
        });
    ASSERT_NE(find_mark(r, world_mark::kind::promote), nullptr) << r.timeline;
    const std::string killed = r.timeline.substr(r.timeline.find("reconfigured by Sentinel"));
    EXPECT_GE(count_lines(killed, {"c0", "connection to n0 broken: CLIENT KILL by Sentinel"}), 1u)
        << r.timeline;
    EXPECT_TRUE(r.checks.all_ok()) << checks_text(r.checks) << "\n" << r.timeline;
    EXPECT_EQ(r.anomalies, 0u);
}

}  // namespace

// WAIT over one Redis, no Sentinel: the master's own replica synchronises from it again once
// it restarted (empty), and the lock is taken with WAIT acknowledged there after the restart.
TEST(world_nodes, a_masters_own_replica_follows_it_again_after_its_restart) {
    const run_result r = run_recorded("single+WAIT", "crash.n0@c0.acquired#1+0,d=100,p=none", 2);
    const std::string after = "restart with 0 key(s)";
    ASSERT_NE(r.timeline.find(after), std::string::npos) << r.timeline;
    EXPECT_GE(count_lines(r.timeline, {"n1", "resynchronised from n0"}, after), 1u) << r.timeline;
    EXPECT_GE(count_lines(r.timeline, {"n0", "(unblocked) -> :1"}, after), 1u)
        << "a WAIT after the restart is acknowledged by the replica";
    EXPECT_TRUE(r.checks.ok(check_kind::liveness)) << checks_text(r.checks);
    EXPECT_EQ(r.anomalies, 0u);
}

// Redlock with WAIT: a replica's crash costs its master's vote (its WAITs answer 0) until
// it is back and synchronised, and only that master's.
TEST(world_nodes, a_redlock_replica_away_costs_its_master_the_wait) {
    const run_result r = run_recorded("redlock-3+WAIT", "crash.n3@t0,d=1500,p=none", 1);
    EXPECT_GE(count_lines(r.timeline, {"n0", "(unblocked) -> :0"}), 1u) << r.timeline;
    EXPECT_EQ(count_lines(r.timeline, {"n1", "(unblocked) -> :0"}), 0u) << r.timeline;
    EXPECT_GE(count_lines(r.timeline, {"n3", "resynchronised from n0"}), 1u) << r.timeline;
    EXPECT_GE(r.past.holds.size(), 1u) << "a majority of masters still acknowledges";
    EXPECT_EQ(r.anomalies, 0u);
}

// The fair line under Redis Cluster: the subscriber sits on the master the map names for the
// lock's slot, and moves to the promoted replica after a failover (cluster_links::subscriber_move,
// as in both clients).
TEST(world_nodes, a_cluster_subscriber_moves_to_the_slots_new_master) {
    const run_result r =
        run_recorded("cluster+WAIT+fair", "crash.n0@c0.acquired#1+0,d=3000,p=none", 2);
    EXPECT_GE(count_lines(r.timeline, {"connected to n0:6379 (subscriber)"}), 1u) << r.timeline;
    EXPECT_GE(count_lines(r.timeline, {"connected to n1:6379 (subscriber)"}), 1u) << r.timeline;
    EXPECT_GE(count_lines(r.timeline, {"n1", "SUBSCRIBE"}), 1u) << r.timeline;
    EXPECT_TRUE(r.checks.ok(check_kind::wakeup)) << checks_text(r.checks);
    EXPECT_EQ(r.anomalies, 0u);
}
