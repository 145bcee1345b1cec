// SPDX-License-Identifier: Apache-2.0
// `edgelock run --permits N` and `edgelock hold --permits N` (a counting lock: lock.hpp,
// "Semaphores") against real redis-server processes, held to the promise "at most N at once,
// and a dead holder's permit comes back". Each CMD checks the bound itself: it INCRs a counter
// in Redis on its start, records the value it got, pauses, and DECRs before it exits, so the
// values recorded are the numbers of CMDs running at once.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "edgelock/testing/redis_client.hpp"
#include "edgelock/testing/redis_cluster.hpp"
#include "edgelock/testing/redis_process.hpp"
#include "program_run.hpp"

namespace {

using namespace std::chrono_literals;
using edgelock::cli_tests::program;
using edgelock::cli_tests::program_options;
using edgelock::cli_tests::program_result;
using edgelock::cli_tests::run_program;
using edgelock::testing::eventually;
using edgelock::testing::redis_client;
using edgelock::testing::redis_server;
using edgelock::testing::sentinel_topology;

using clock_type = std::chrono::steady_clock;

// No deployment from the test's environment; an EDGELOCK_FENCE and an EDGELOCK_PERMIT that a
// semaphore's CMD must not inherit (it gets its own fence token and permit).
program_options cli_env() {
    program_options o;
    o.env = {"EDGELOCK_REDIS",
             "EDGELOCK_SENTINEL",
             "EDGELOCK_MASTER",
             "EDGELOCK_CLUSTER",
             "EDGELOCK_PASSWORD",
             "EDGELOCK_WAIT_REPLICAS",
             "EDGELOCK_WAIT_REPLICAS_TIMEOUT",
             "EDGELOCK_FENCE=inherited-from-the-parent",
             "EDGELOCK_PERMIT=inherited-from-the-parent"};
    o.timeout = 30s;
    return o;
}

long long millis(clock_type::duration d) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

// The server's clock in ms, as the semaphore's scripts read it (TIME).
long long server_now_ms(redis_client& admin) {
    const auto time = admin.command({"TIME"});
    return std::stoll(time.elements.at(0).text) * 1000 +
           std::stoll(time.elements.at(1).text) / 1000;
}

// The holders' tokens in the semaphore's sorted set `name` (without its "permits" member).
std::vector<std::string> holders(redis_client& admin, const std::string& name) {
    std::vector<std::string> tokens;
    for (const auto& e : admin.command({"ZRANGE", name, "0", "-1"}).elements)
        if (e.text != "permits") tokens.push_back(e.text);
    return tokens;
}

long long score(redis_client& admin, const std::string& name, const std::string& token) {
    const auto r = admin.command({"ZSCORE", name, token});
    return r.is_nil() ? -1 : std::stoll(r.text);
}

// What one race showed: each run's result, the counter's value each CMD got on its start (the
// CMDs running at once, itself included), the same per permit (those of its permit at once),
// and what each found in EDGELOCK_FENCE and EDGELOCK_PERMIT ("fence permit").
struct race_outcome {
    std::vector<program_result> runs;
    std::vector<long long> seen;
    std::vector<long long> seen_on_permit;
    std::vector<std::string> fences;
};

// CMD: counts itself in on the counter server (and on its permit's counter), records both
// counts and its fence and permit, pauses, counts itself out.
std::string counting_cmd(std::uint16_t counter_port, const std::string& tag) {
    const std::string cli = "redis-cli -p " + std::to_string(counter_port);
    const std::string mine = "on:" + tag + ":$EDGELOCK_PERMIT";
    return "v=$(" + cli + " INCR inside:" + tag + ") || exit 9; p=$(" + cli + " INCR " + mine +
           ") || exit 9; " + cli + " RPUSH seen:" + tag + " \"$v\" >/dev/null; " + cli +
           " RPUSH seen-on-permit:" + tag + " \"$p\" >/dev/null; " + cli + " RPUSH fences:" + tag +
           " \"${EDGELOCK_FENCE-unset} ${EDGELOCK_PERMIT-unset}\" >/dev/null; sleep 0.5; " + cli +
           " DECR " + mine + " >/dev/null; " + cli + " DECR inside:" + tag + " >/dev/null";
}

// Starts `runs` copies of `edgelock run <args> -- sh -c CMD` together and collects them.
race_outcome race(const std::vector<std::string>& args, int runs, std::uint16_t counter_port,
                  const std::string& tag) {
    std::vector<std::string> argv = {EDGELOCK_CLI, "run"};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.insert(argv.end(), {"--", "sh", "-c", counting_cmd(counter_port, tag)});
    std::vector<std::unique_ptr<program>> started;
    for (int i = 0; i < runs; ++i) started.push_back(std::make_unique<program>(argv, cli_env()));
    race_outcome outcome;
    for (auto& p : started) outcome.runs.push_back(p->wait());
    redis_client counter(counter_port);
    for (const auto& e : counter.command({"LRANGE", "seen:" + tag, "0", "-1"}).elements)
        outcome.seen.push_back(std::stoll(e.text));
    for (const auto& e : counter.command({"LRANGE", "seen-on-permit:" + tag, "0", "-1"}).elements)
        outcome.seen_on_permit.push_back(std::stoll(e.text));
    for (const auto& e : counter.command({"LRANGE", "fences:" + tag, "0", "-1"}).elements)
        outcome.fences.push_back(e.text);
    EXPECT_EQ(counter.get("inside:" + tag), "0") << "every CMD counted itself out";
    return outcome;
}

// `edgelock hold --permits 2 --name pair`'s lines: name, token, fence, and the permit the
// fence token names.
void expect_hold_lines(const std::string& out, const std::string& token) {
    const std::string head = "name=pair\ntoken=" + token + "\nfence=";
    ASSERT_EQ(out.substr(0, head.size()), head) << out;
    const std::size_t end = out.find('\n', head.size());
    ASSERT_NE(end, std::string::npos) << out;
    const long long fence = std::stoll(out.substr(head.size(), end - head.size()));
    EXPECT_EQ(out.substr(end + 1), "permit=" + std::to_string(fence % 2) + "\n") << out;
}

long long most_at_once(const race_outcome& r) {
    return r.seen.empty() ? 0 : *std::max_element(r.seen.begin(), r.seen.end());
}

// N + 2 runs for N permits, all started together, each waiting long enough for its turn: all
// run, never more than N at once, and N at once at some point (the permits are used, not only
// bounded); each CMD has a fence token of its own and its permit (the token's remainder by N),
// and no two CMDs of one permit ran at once.
void expect_n_at_most_and_at_once(const race_outcome& r, long long permits) {
    ASSERT_EQ(r.runs.size(), static_cast<std::size_t>(permits + 2));
    for (const program_result& run : r.runs) {
        EXPECT_EQ(run.exit_code, 0) << run.err;
        EXPECT_EQ(run.err, "");
    }
    ASSERT_EQ(r.seen.size(), r.runs.size()) << "every CMD ran once";
    for (const long long at_once : r.seen) EXPECT_LE(at_once, permits);
    EXPECT_EQ(most_at_once(r), permits) << "the CMDs overlapped, N at once";
    ASSERT_EQ(r.fences.size(), r.runs.size());
    std::set<long long> tokens;
    for (const std::string& both : r.fences) {
        const std::size_t space = both.find(' ');
        ASSERT_NE(space, std::string::npos) << both;
        ASSERT_NE(both.find_first_of("0123456789"), std::string::npos) << both;
        const long long fence = std::stoll(both.substr(0, space));
        EXPECT_EQ(both.substr(space + 1), std::to_string(fence % permits))
            << "EDGELOCK_PERMIT is the token's remainder, not the inherited value";
        tokens.insert(fence);
    }
    EXPECT_EQ(tokens.size(), r.fences.size()) << "a token each";
    ASSERT_EQ(r.seen_on_permit.size(), r.runs.size());
    for (const long long on_permit : r.seen_on_permit)
        EXPECT_EQ(on_permit, 1) << "one CMD per permit at once";
}

// The counter in each CMD sees more than N when more run at once: the same five CMDs under a
// semaphore of five permits reach more than three.
void expect_the_check_sees_more_than(const race_outcome& r, long long bound) {
    for (const program_result& run : r.runs) EXPECT_EQ(run.exit_code, 0) << run.err;
    EXPECT_GT(most_at_once(r), bound) << "the counter check can see an overlap beyond N";
}

TEST(CliSemaphore, RacingRunsHoldAtMostNAtOnceAndReachN) {
    redis_server server;
    redis_client admin(server.port());
    const auto started = clock_type::now();
    const race_outcome three =
        race({"--redis", server.url(), "--name", "uplink", "--permits", "3", "--wait", "20s"}, 5,
             server.port(), "three");
    expect_n_at_most_and_at_once(three, 3);
    EXPECT_FALSE(admin.exists("uplink")) << "the last release deletes the set";
    // Five CMDs of 0.5 s each, at most three at once: at least two rounds.
    EXPECT_GE(clock_type::now() - started, 1s);

    const race_outcome five =
        race({"--redis", server.url(), "--name", "uplink-5", "--permits", "5", "--wait", "20s"}, 5,
             server.port(), "five");
    expect_the_check_sees_more_than(five, 3);
}

// `hold` without a word (SIGKILL: no release is sent): its permit comes back when its lease
// ends on the server's clock, not before, and a waiter standing in line then takes it; the
// other holder keeps its own throughout.
TEST(CliSemaphore, AKilledHoldersPermitComesBackWhenItsLeaseEnds) {
    redis_server server;
    redis_client admin(server.port());
    const std::string name = "pair";
    const auto hold = [&](std::vector<std::string> extra) {
        std::vector<std::string> argv = {EDGELOCK_CLI, "hold", "--redis",   server.url(),
                                         "--name",     name,   "--permits", "2",
                                         "--ttl",      "2s"};
        argv.insert(argv.end(), extra.begin(), extra.end());
        return argv;
    };
    // One after the other, so that each token is known to be its process's.
    program first(hold({}), cli_env());
    ASSERT_TRUE(eventually([&] { return holders(admin, name).size() == 1; }, 10s));
    const std::string first_token = holders(admin, name).at(0);
    program second(hold({}), cli_env());
    ASSERT_TRUE(eventually([&] { return holders(admin, name).size() == 2; }, 10s));
    std::string second_token;
    for (const std::string& t : holders(admin, name))
        if (t != first_token) second_token = t;

    program third(hold({"--wait", "10s"}), cli_env());
    ASSERT_TRUE(eventually(
        [&] {
            for (const auto& e :
                 admin.command({"ZRANGE", "{" + name + "}:queue", "0", "-1"}).elements)
                if (e.text != first_token && e.text != second_token) return true;
            return false;
        },
        10s))
        << "the third never stood in line";
    EXPECT_EQ(holders(admin, name).size(), 2u) << "two permits, two holders";

    // Killed right after a renewal: its lease then has almost the whole TTL to run.
    const long long before = score(admin, name, first_token);
    ASSERT_TRUE(eventually([&] { return score(admin, name, first_token) != before; }, 3s))
        << "the first holder never renewed";
    const auto killed_at = clock_type::now();
    ::kill(first.pid(), SIGKILL);
    const long long lease_left_ms = score(admin, name, first_token) - server_now_ms(admin);
    EXPECT_GT(lease_left_ms, 1500) << "killed just after a renewal";

    std::string third_token;
    const bool came_back = eventually(
        [&] {
            for (const std::string& t : holders(admin, name)) {
                if (t != first_token && t != second_token) third_token = t;
            }
            return !third_token.empty();
        },
        2s + 4s);
    const auto came_back_after = clock_type::now() - killed_at;
    ASSERT_TRUE(came_back) << "the dead holder's permit never came back";
    const std::vector<std::string> now_held = holders(admin, name);
    EXPECT_EQ(std::set<std::string>(now_held.begin(), now_held.end()),
              (std::set<std::string>{second_token, third_token}))
        << "the dead lease is gone, the live one kept";
    EXPECT_GE(millis(came_back_after) + 10, lease_left_ms) << "not before the dead lease ended";
    EXPECT_GE(came_back_after, 1500ms);
    EXPECT_LE(came_back_after, 2s + 3s) << "within a TTL and a few seconds";
    std::printf("the killed holder's permit came back after %lld ms (its lease had %lld ms)\n",
                static_cast<long long>(millis(came_back_after)), lease_left_ms);

    const program_result dead = first.wait();
    EXPECT_EQ(dead.exit_code, 128 + SIGKILL);
    expect_hold_lines(dead.out, first_token);
    // A signal at the instant of the take ends a hold before it prints (docs/CLI.md): the
    // third has printed its lines once its watchdog renewed.
    const long long taken = score(admin, name, third_token);
    ASSERT_TRUE(eventually([&] { return score(admin, name, third_token) != taken; }, 3s))
        << "the third holder never renewed";
    ::kill(second.pid(), SIGTERM);
    ::kill(third.pid(), SIGTERM);
    const program_result kept = second.wait();
    const program_result waited = third.wait();
    EXPECT_EQ(kept.exit_code, 0) << kept.err;
    expect_hold_lines(kept.out, second_token);
    EXPECT_EQ(waited.exit_code, 0) << waited.err;
    expect_hold_lines(waited.out, third_token);
    EXPECT_FALSE(admin.exists(name)) << "both released";
}

std::vector<std::string> sentinel_run(sentinel_topology& topology, std::vector<std::string> args) {
    std::vector<std::string> argv = {EDGELOCK_CLI, "run"};
    for (const std::string& url : topology.sentinel_urls())
        argv.insert(argv.end(), {"--sentinel", url});
    argv.insert(argv.end(), {"--master", sentinel_topology::master_name});
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
}

// A failover mid-hold with WAIT (--wait-replicas 1): the promoted replica has both leases
// (WAIT confirmed them), so the holders go on, their renewals following the new master, as
// transport_sentinel.a_failover_keeps_replicated_holds_and_loses_expired_or_missing_ones shows
// for the lock. The old master is frozen until the promotion, then thawed and made a replica
// of the new one, as Sentinel would do some 10 s later (a renewal counts only once WAIT finds
// a replica). The CMDs run past the leases' first end and finish with exit 0: a loss would
// have ended them with SIGTERM and exit 80. A third run is refused on the new master meanwhile.
TEST(CliSemaphoreSentinel, HoldersWithWaitRideOutAFailoverAndStayAtMostN) {
    sentinel_topology topology;
    const std::uint16_t old_port = topology.master_port();
    const std::filesystem::path files = std::filesystem::temp_directory_path() /
                                        ("edgelock-semaphore-fo-" + std::to_string(::getpid()));
    std::filesystem::create_directories(files);
    const std::string done_file = (files / "done").string();
    // Each CMD says it started (it holds a permit) by a file of its own.
    const std::string cmd = "touch " + (files / "started.").string() + "$$; while [ ! -e " +
                            done_file + " ]; do sleep 0.05; done; echo done";
    // Long enough for the failover, the old master's resync and a renewal WAIT confirms, on
    // a loaded machine too (an 8s lease ran out there).
    constexpr auto ttl = 16s;
    const std::vector<std::string> holder_args = {
        "--name", "fo", "--permits", "2", "--wait-replicas", "1", "--ttl", "16s",
        "--",     "sh", "-c",        cmd};
    program a(sentinel_run(topology, holder_args), cli_env());
    program b(sentinel_run(topology, holder_args), cli_env());
    redis_client primary(old_port);
    // Both CMDs started, not two leases in the set: an attempt whose reply timed out (a loaded
    // machine) leaves a lease its cleanup removes later, and its holder tries again.
    const auto started = [&] {
        std::size_t n = 0;
        for (const auto& f : std::filesystem::directory_iterator(files))
            n += f.path().filename().string().rfind("started.", 0) == 0 ? 1 : 0;
        return n;
    };
    ASSERT_TRUE(eventually([&] { return started() == 2; }, 20s)) << "both holders ran CMD";
    const auto acquired_at = clock_type::now();
    const std::vector<std::string> tokens = holders(primary, "fo");
    ASSERT_EQ(tokens.size(), 2u) << "two permits, the two holders' leases";

    topology.primary().freeze();
    const std::uint16_t new_port = topology.wait_for_failover(old_port);
    const auto promoted_at = clock_type::now();
    redis_client promoted(new_port);
    const std::vector<std::string> there = holders(promoted, "fo");
    EXPECT_EQ(std::set<std::string>(there.begin(), there.end()),
              std::set<std::string>(tokens.begin(), tokens.end()))
        << "WAIT made sure the replica had both leases";
    topology.primary().thaw();
    redis_client old_master(old_port);
    old_master.command({"REPLICAOF", "127.0.0.1", std::to_string(new_port)});
    ASSERT_TRUE(eventually(
        [&] { return old_master.info_field("replication", "master_link_status") == "up"; }, 10s))
        << "the old master never replicated the new one";

    const program_result third = run_program(
        sentinel_run(topology, {"--name", "fo", "--permits", "2", "-n", "--", "echo", "ran"}),
        cli_env());
    EXPECT_EQ(third.exit_code, 75) << "both permits still held, on the new master: " << third.err;
    EXPECT_EQ(third.out, "");

    // Past the leases' first end (on the test's clock, which started after the acquire).
    std::this_thread::sleep_until(acquired_at + ttl + 1s);
    for (const std::string& token : tokens) {
        EXPECT_GT(score(promoted, "fo", token), server_now_ms(promoted))
            << "the lease of " << token << " lives on the new master";
    }
    std::printf("promoted %lld ms after the acquire; CMDs ended %lld ms after it\n",
                static_cast<long long>(millis(promoted_at - acquired_at)),
                static_cast<long long>(millis(clock_type::now() - acquired_at)));
    std::ofstream(done_file).put('x');
    const program_result ra = a.wait();
    const program_result rb = b.wait();
    std::filesystem::remove_all(files);
    for (const program_result* r : {&ra, &rb}) {
        EXPECT_EQ(r->exit_code, 0) << r->err;
        EXPECT_EQ(r->out, "done\n") << "CMD ran to its end, never signalled";
    }
    EXPECT_FALSE(promoted.exists("fo")) << "released on the new master";
}

// The race of RacingRunsHoldAtMostNAtOnceAndReachN on a Redis Cluster: the set lives on the
// master of the name's slot. The cluster's nodes are volatile, so the restart guard is off;
// the CMDs count on a server of their own.
TEST(CliSemaphoreCluster, RacingRunsHoldAtMostNAtOnceAndReachN) {
    edgelock::testing::redis_cluster cluster;
    redis_server counter;
    std::string seeds;
    for (const std::string& url : cluster.seed_urls()) seeds += (seeds.empty() ? "" : ",") + url;
    const race_outcome three = race({"--cluster", seeds, "--restart-guard", "off", "--name",
                                     "uplink", "--permits", "3", "--wait", "20s"},
                                    5, counter.port(), "three");
    expect_n_at_most_and_at_once(three, 3);
    for (std::size_t i = 0; i < cluster.size(); ++i)
        EXPECT_FALSE(cluster.admin(i).exists("uplink")) << "the last release deletes the set";
    const race_outcome five = race({"--cluster", seeds, "--restart-guard", "off", "--name",
                                    "uplink-5", "--permits", "5", "--wait", "20s"},
                                   5, counter.port(), "five");
    expect_the_check_sees_more_than(five, 3);
}

}  // namespace
