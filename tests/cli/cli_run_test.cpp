// SPDX-License-Identifier: Apache-2.0
// `edgelock run`, `status` and `release` against real redis-server processes (tests/support):
// the flock-like contract, the exit codes, and what happens when the lock is lost.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "edgelock/testing/redis_client.hpp"
#include "edgelock/testing/redis_process.hpp"
#include "edgelock/testing/refused_port.hpp"
#include "edgelock/testing/scripted_server.hpp"
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

// What a trapping CMD does on SIGTERM: report it and exit 3.
const std::string report_term = "trap 'echo got TERM; exit 3' TERM";

class CliRun : public ::testing::Test {
public:
    std::vector<std::string> edgelock(const std::string& command, std::vector<std::string> args) {
        args.insert(args.begin(), {EDGELOCK_CLI, command, "--redis", server.url()});
        return args;
    }
    static program_options env() {
        program_options o;
        o.env = {"EDGELOCK_REDIS", "EDGELOCK_SENTINEL", "EDGELOCK_MASTER", "EDGELOCK_FENCE"};
        o.timeout = 30s;
        return o;
    }
    bool key_exists(const std::string& key) { return admin.exists(key); }
    void wait_for_holder(const std::string& name) {
        ASSERT_TRUE(eventually([&] { return key_exists(name); }, 10s))
            << "the holder never took " << name;
    }
    // A CMD that sets up `trap`, then says it runs (a marker file) and polls, so the trap
    // runs promptly. Tests that signal it wait_for_cmd() first: a signal before the trap
    // is set would end the shell instead.
    std::string trapping_cmd(const std::string& trap) {
        return trap + "; touch " + marker.string() + "; while :; do sleep 0.05; done";
    }
    void wait_for_cmd() {
        ASSERT_TRUE(eventually([&] { return std::filesystem::exists(marker); }, 10s))
            << "CMD never started";
    }
    void TearDown() override { std::filesystem::remove(marker); }

    const std::filesystem::path marker = std::filesystem::temp_directory_path() /
                                         ("edgelock-cmd-started-" + std::to_string(::getpid()));

    redis_server server;
    redis_client admin{server.port()};
};

void expect_one_line(const program_result& r, const std::string& fragment) {
    ASSERT_EQ(r.err_lines().size(), 1u) << r.err;
    EXPECT_EQ(r.err.rfind("edgelock: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(fragment), std::string::npos) << r.err;
}

TEST_F(CliRun, PassesCmdStatusAndOutputThrough) {
    program_result r = run_program(
        edgelock("run", {"--name", "job", "--", "sh", "-c", "echo hello; exit 7"}), env());
    EXPECT_EQ(r.exit_code, 7);
    EXPECT_EQ(r.out, "hello\n");
    EXPECT_TRUE(r.err.empty()) << r.err;

    r = run_program(edgelock("run", {"--name", "job", "true"}), env());
    EXPECT_EQ(r.exit_code, 0);

    r = run_program(edgelock("run", {"--name", "job", "--", "sh", "-c", "kill -KILL $$"}), env());
    EXPECT_EQ(r.exit_code, 128 + SIGKILL) << "death by signal N reads as 128+N, as in a shell";
    EXPECT_FALSE(key_exists("job")) << "released after CMD";
}

TEST_F(CliRun, FenceTokensIncreaseFromRunToRun) {
    std::vector<long long> fences;
    for (int i = 0; i < 3; ++i) {
        const program_result r = run_program(
            edgelock("run", {"--name", "fenced", "--", "sh", "-c", "echo $EDGELOCK_FENCE"}), env());
        ASSERT_EQ(r.exit_code, 0) << r.err;
        fences.push_back(std::stoll(r.out));
    }
    EXPECT_LT(fences[0], fences[1]);
    EXPECT_LT(fences[1], fences[2]);

    const program_result custom =
        run_program(edgelock("run", {"--name", "fenced", "--fence-env", "MY_FENCE", "--", "sh",
                                     "-c", "echo \"$MY_FENCE ${EDGELOCK_FENCE:-unset}\""}),
                    env());
    ASSERT_EQ(custom.exit_code, 0) << custom.err;
    EXPECT_EQ(custom.out, admin.get("{fenced}:fence") + " unset\n");
    EXPECT_GT(std::stoll(custom.out), fences[2]);
}

// Two runs of a CMD that writes "start" and "end" around a pause: with the lock the pairs never
// interleave. The same CMDs without edgelock do, which shows the check can fail.
TEST_F(CliRun, TwoRacingRunsNeverOverlap) {
    const std::filesystem::path log = std::filesystem::temp_directory_path() /
                                      ("edgelock-race-" + std::to_string(::getpid()) + ".log");
    const std::string cmd =
        "echo start >> " + log.string() + "; sleep 0.3; echo end >> " + log.string();
    auto read_log = [&] {
        std::ifstream in(log);
        std::vector<std::string> lines;
        for (std::string line; std::getline(in, line);) lines.push_back(line);
        std::filesystem::remove(log);
        return lines;
    };
    const std::vector<std::string> paired = {"start", "end", "start", "end"};

    {
        program first(edgelock("run", {"--name", "race", "--", "sh", "-c", cmd}), env());
        program second(edgelock("run", {"--name", "race", "--", "sh", "-c", cmd}), env());
        EXPECT_EQ(first.wait().exit_code, 0);
        EXPECT_EQ(second.wait().exit_code, 0);
    }
    EXPECT_EQ(read_log(), paired);

    {
        program first({"sh", "-c", cmd}, env());
        program second({"sh", "-c", cmd}, env());
        first.wait();
        second.wait();
    }
    EXPECT_NE(read_log(), paired) << "without the lock the two runs overlap";
}

TEST_F(CliRun, WaitZeroOnAHeldLockIsBusy) {
    program holder(edgelock("run", {"--name", "busy", "--", "sleep", "2"}), env());
    wait_for_holder("busy");
    const program_result r =
        run_program(edgelock("run", {"--name", "busy", "--wait", "0", "--", "echo", "ran"}), env());
    EXPECT_EQ(r.exit_code, 75);
    EXPECT_TRUE(r.out.empty()) << "CMD must not run";
    expect_one_line(r, "held by another owner");
    EXPECT_LT(r.elapsed, 2s);
    EXPECT_EQ(holder.wait().exit_code, 0);
}

TEST_F(CliRun, WaitThatRunsOutHasItsOwnCode) {
    program holder(edgelock("run", {"--name", "slow", "--", "sleep", "3"}), env());
    wait_for_holder("slow");
    const program_result r = run_program(
        edgelock("run", {"--name", "slow", "--wait", "700ms", "--", "echo", "ran"}), env());
    EXPECT_EQ(r.exit_code, 79);
    EXPECT_TRUE(r.out.empty());
    expect_one_line(r, "gave up waiting for lock \"slow\" after 700ms");
    EXPECT_GE(r.elapsed, 600ms);
    EXPECT_EQ(holder.wait().exit_code, 0);
}

// A connection that takes longer to make than the first attempt lasts (a TTL of 1 s: 100 ms
// attempts), as a TLS handshake does on a slow gateway CPU: the run keeps trying within
// --wait on the connection it made, rather than giving up after that attempt. CLIENT PAUSE
// holds every client's commands for 1 s, the handshake's included.
TEST_F(CliRun, AConnectionSlowerThanTheFirstAttemptIsWaitedFor) {
    admin.command({"CLIENT", "PAUSE", "1000", "ALL"});
    const std::vector<std::string> args = {"--name", "slow-start", "--ttl", "1s", "--redis-timeout",
                                           "5s",     "--",         "echo",  "ran"};
    const program_result r = run_program(edgelock("run", args), env());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "ran\n");
    EXPECT_FALSE(key_exists("slow-start")) << "released after CMD";
}

TEST_F(CliRun, WaitEndsWhenTheHolderReleases) {
    program holder(edgelock("run", {"--name", "handoff", "--", "sleep", "1"}), env());
    wait_for_holder("handoff");
    const program_result r = run_program(
        edgelock("run", {"--name", "handoff", "--wait", "20s", "--", "echo", "ran"}), env());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "ran\n");
    EXPECT_TRUE(r.err.empty()) << "no progress on a pipe: " << r.err;
    EXPECT_EQ(holder.wait().exit_code, 0);
}

// Runs a holder, then four waiters started one after another (each once it stands in line, or
// after a fixed gap when it polls), each appending its number to the list "order" as CMD.
std::vector<std::string> waiter_order(CliRun& t, redis_server& server, redis_client& admin,
                                      bool unfair) {
    program holder(t.edgelock("run", {"--name", "line", "--", "sleep", "1"}), CliRun::env());
    t.wait_for_holder("line");
    std::vector<std::unique_ptr<program>> waiters;
    for (int i = 1; i <= 4; ++i) {
        std::vector<std::string> args = {"--name", "line", "--wait", "30s"};
        if (unfair) args.push_back("--unfair");
        for (const std::string& word :
             {std::string("--"), std::string("redis-cli"), std::string("-p"),
              std::to_string(server.port()), std::string("RPUSH"), std::string("order"),
              std::to_string(i)}) {
            args.push_back(word);
        }
        waiters.push_back(std::make_unique<program>(t.edgelock("run", args), CliRun::env()));
        // In line: the holder (at the head until its release) and i waiters.
        eventually(
            [&] {
                return !unfair && admin.command({"ZCARD", "{line}:queue"}).integer == i + 1;
            },
            150ms);
    }
    EXPECT_EQ(holder.wait().exit_code, 0);
    for (auto& w : waiters) EXPECT_EQ(w->wait().exit_code, 0);
    std::vector<std::string> order;
    for (const auto& e : admin.command({"LRANGE", "order", "0", "-1"}).elements)
        order.push_back(e.text);
    admin.command({"DEL", "order"});
    return order;
}

// With one Redis, `run --wait` waits in line: the waiters run in arrival order. Polling
// (--unfair) runs them in whatever order their backoff allows, which shows the check can fail
// (it is expected to, not required to: four pollers may happen to win in order).
TEST_F(CliRun, WaitersRunInArrivalOrderUnlessUnfair) {
    const std::vector<std::string> arrival = {"1", "2", "3", "4"};
    EXPECT_EQ(waiter_order(*this, server, admin, false), arrival);
    const std::vector<std::string> polled = waiter_order(*this, server, admin, true);
    std::vector<std::string> sorted = polled;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, arrival) << "every poller ran once";
    std::string shown;
    for (const std::string& id : polled) shown += " " + id;
    std::printf("--unfair waiters ran in the order%s%s\n", shown.c_str(),
                polled == arrival ? " (arrival order, by chance)" : "");
}

// "x" and "{x}" are different locks with different lines: a waiter in the line of "{x}"
// (held) must not keep anyone from the free lock "x".
TEST_F(CliRun, ANameAndItsHashTagFormWaitInLinesOfTheirOwn) {
    program holder(edgelock("run", {"--name", "{x}", "--", "sleep", "8"}), env());
    wait_for_holder("{x}");
    program waiter(edgelock("run", {"--name", "{x}", "--wait", "30s", "--", "true"}), env());
    const auto queued = [&] {  // a token other than the holder's stands in a line
        const std::string holder_token = admin.get("{x}");
        for (const auto& key : admin.command({"KEYS", "*:queue"}).elements) {
            for (const auto& member : admin.command({"ZRANGE", key.text, "0", "-1"}).elements) {
                if (member.text != holder_token) return true;
            }
        }
        return false;
    };
    ASSERT_TRUE(eventually(queued, 10s)) << "the waiter for {x} never stood in line";
    const program_result r =
        run_program(edgelock("run", {"--name", "x", "--wait", "4s", "--", "echo", "ran"}), env());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "ran\n");
    EXPECT_TRUE(key_exists("{x}")) << "taken while {x} was still held";
}

// Waiters that arrive while the restart guard keeps a fresh Redis out still stand in line in
// arrival order (the guard delays the take, not the place), and are served in that order.
TEST(CliRestartGuard, WaitersArrivingDuringTheGuardAreServedInArrivalOrder) {
    redis_server fresh({}, edgelock::testing::persistence::volatile_);
    redis_client admin(fresh.port());
    std::vector<std::unique_ptr<program>> waiters;
    for (int i = 1; i <= 4; ++i) {
        waiters.push_back(std::make_unique<program>(std::vector<std::string>{
            EDGELOCK_CLI, "run", "--name", "line", "--ttl", "3s", "--wait", "30s", "--redis",
            fresh.url(), "--", "redis-cli", "-p", std::to_string(fresh.port()), "RPUSH", "order",
            std::to_string(i)}));
        EXPECT_TRUE(eventually(
            [&] {
                return admin.command({"ZCARD", "{line}:queue"}).integer == i;
            },
            2s))
            << "waiter " << i << " did not join the line during the guard";
    }
    // A release may hand the key to the head meanwhile (a waiter's leaving cleanup does), but
    // the head holds it only once the guard ends: no CMD runs before.
    EXPECT_EQ(admin.command({"LLEN", "order"}).integer, 0) << "nobody held it during the guard";
    for (auto& w : waiters) EXPECT_EQ(w->wait().exit_code, 0);
    std::vector<std::string> order;
    for (const auto& e : admin.command({"LRANGE", "order", "0", "-1"}).elements)
        order.push_back(e.text);
    EXPECT_EQ(order, (std::vector<std::string>{"1", "2", "3", "4"}));
}

TEST_F(CliRun, ProgressOnATerminalOnly) {
    program holder(edgelock("run", {"--name", "tty", "--", "sleep", "2"}), env());
    wait_for_holder("tty");
    program_options on_terminal = env();
    on_terminal.stderr_on_terminal = true;
    const program_result r =
        run_program(edgelock("run", {"--name", "tty", "--wait", "20s", "--", "true"}), on_terminal);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("waiting for lock \"tty\": 1"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(" / 20s"), std::string::npos) << r.err;
    EXPECT_EQ(holder.wait().exit_code, 0);
}

TEST_F(CliRun, KeyDeletedBehindItsBackSignalsCmdAndExits80) {
    program run(edgelock("run", {"--name", "stolen", "--ttl", "900ms", "--", "sh", "-c",
                                 trapping_cmd(report_term)}),
                env());
    wait_for_cmd();
    admin.command({"DEL", "stolen"});
    const program_result r = run.wait();
    EXPECT_EQ(r.exit_code, 80);
    EXPECT_EQ(r.out, "got TERM\n");
    expect_one_line(
        r,
        "lost lock \"stolen\" while CMD ran (the key no longer holds our token); sending SIGTERM");
}

TEST_F(CliRun, CmdIgnoringTheSignalIsKilledAfterTheGrace) {
    program run(edgelock("run", {"--name", "stubborn", "--ttl", "900ms", "--kill-after", "300ms",
                                 "--", "sh", "-c", trapping_cmd("trap '' TERM")}),
                env());
    wait_for_cmd();
    admin.command({"DEL", "stubborn"});
    const program_result r = run.wait();
    EXPECT_FALSE(r.timed_out) << "SIGKILL must follow the ignored SIGTERM";
    EXPECT_EQ(r.exit_code, 80);
    expect_one_line(r, "lost lock");
}

TEST_F(CliRun, OnLostSignalIsConfigurable) {
    program run(edgelock("run", {"--name", "usr1", "--ttl", "900ms", "--on-lost", "USR1", "--",
                                 "sh", "-c", trapping_cmd("trap 'echo got USR1; exit 4' USR1")}),
                env());
    wait_for_cmd();
    admin.command({"DEL", "usr1"});
    const program_result r = run.wait();
    EXPECT_EQ(r.exit_code, 80);
    EXPECT_EQ(r.out, "got USR1\n");
    expect_one_line(r, "sending SIGUSR1");
}

TEST_F(CliRun, FrozenRedisLosesTheLockBeforeTheLeaseEnds) {
    program run(edgelock("run", {"--name", "frozen", "--ttl", "1500ms", "--redis-timeout", "300ms",
                                 "--", "sh", "-c", trapping_cmd(report_term)}),
                env());
    wait_for_cmd();
    server.freeze();
    const program_result r = run.wait();
    server.thaw();
    EXPECT_EQ(r.exit_code, 80);
    EXPECT_EQ(r.out, "got TERM\n");
    expect_one_line(r, "renewal did not reach Redis before the lease ended");
}

TEST_F(CliRun, SigtermToEdgelockReachesCmdAndTheLockIsReleased) {
    program run(edgelock("run", {"--name", "stop", "--", "sh", "-c", trapping_cmd(report_term)}),
                env());
    wait_for_cmd();  // a signal while edgelock still acquires ends it, as any program
    ::kill(run.pid(), SIGTERM);
    const program_result r = run.wait();
    EXPECT_EQ(r.exit_code, 3) << "CMD's own status after the forwarded signal";
    EXPECT_EQ(r.out, "got TERM\n");
    EXPECT_FALSE(key_exists("stop"));
}

TEST_F(CliRun, CmdThatCannotStartReleasesTheLock) {
    if (std::string(EDGELOCK_CLI) != EDGELOCK_CLI_FILE) {
        GTEST_SKIP()
            << "qemu-user runs posix_spawn's child as a plain fork: exec errors become its exit "
               "127";
    }
    program_result r =
        run_program(edgelock("run", {"--name", "nocmd", "--", "/no/such/program"}), env());
    EXPECT_EQ(r.exit_code, 127);
    expect_one_line(r, "cannot run /no/such/program");
    EXPECT_FALSE(key_exists("nocmd"));

    r = run_program(edgelock("run", {"--name", "nocmd", "--", "/etc/hostname"}), env());
    EXPECT_EQ(r.exit_code, 126);
    expect_one_line(r, "cannot run /etc/hostname");
    EXPECT_FALSE(key_exists("nocmd"));
}

TEST_F(CliRun, StatusAndOperatorRelease) {
    program_result status = run_program(edgelock("status", {"--name", "ops"}), env());
    EXPECT_EQ(status.exit_code, 1) << "free";
    EXPECT_NE(status.out.find("holder   none"), std::string::npos) << status.out;

    program holder(edgelock("run", {"--name", "ops", "--ttl", "1500ms", "--", "sh", "-c",
                                    trapping_cmd(report_term)}),
                   env());
    wait_for_cmd();
    const std::string token = admin.get("ops");
    status = run_program(edgelock("status", {"--name", "ops"}), env());
    EXPECT_EQ(status.exit_code, 0) << status.err;
    EXPECT_NE(status.out.find("holder   " + token), std::string::npos) << status.out;
    // A new counter starts from the server's clock in microseconds (scripts.hpp), plus one.
    EXPECT_NE(status.out.find("fence    " + admin.get("{ops}:fence") + "\n"), std::string::npos)
        << status.out;
    EXPECT_NE(status.out.find(" left"), std::string::npos) << status.out;

    program_result release =
        run_program(edgelock("release", {"--name", "ops", "--token", "not-the-token"}), env());
    EXPECT_EQ(release.exit_code, 1);
    EXPECT_NE(release.out.find("does not hold"), std::string::npos) << release.out;
    EXPECT_TRUE(key_exists("ops")) << "a wrong token deletes nothing";

    release = run_program(edgelock("release", {"--name", "ops", "--token", token}), env());
    EXPECT_EQ(release.exit_code, 0) << release.err;
    EXPECT_NE(release.out.find("released lock \"ops\""), std::string::npos) << release.out;

    const program_result r = holder.wait();
    EXPECT_EQ(r.exit_code, 80) << "the holder learns of it at its next renewal";
    EXPECT_EQ(r.out, "got TERM\n");
}

// A name, token or CMD holding a newline is echoed escaped: every message stays one line.
TEST_F(CliRun, EchoedInputStaysOnOneLine) {
    const program_result status = run_program(edgelock("status", {"--name", "a\nb"}), env());
    EXPECT_EQ(status.exit_code, 1) << status.err;
    EXPECT_EQ(status.out.rfind("lock     \"a\\nb\"\n", 0), 0u) << status.out;

    const program_result release =
        run_program(edgelock("release", {"--name", "a\nb", "--token", "t\r1"}), env());
    EXPECT_EQ(release.exit_code, 1) << release.err;
    EXPECT_EQ(release.out, "not released: token \"t\\r1\" does not hold lock \"a\\nb\"\n");

    if (std::string(EDGELOCK_CLI) ==
        EDGELOCK_CLI_FILE) {  // qemu-user: see CmdThatCannotStartReleasesTheLock
        const program_result r =
            run_program(edgelock("run", {"--name", "a\nb", "--", "/no/such\nprogram"}), env());
        EXPECT_EQ(r.exit_code, 127);
        expect_one_line(r, "cannot run \"/no/such\\nprogram\"");
    }
}

TEST_F(CliRun, EnvironmentNamesTheServerAndFlagsWin) {
    program_options o = env();
    o.env.push_back("EDGELOCK_REDIS=" + server.url());
    program_result r = run_program({EDGELOCK_CLI, "run", "--name", "env", "--", "echo", "ok"}, o);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "ok\n");

    const edgelock::testing::refused_port refused;
    o.env.back() = "EDGELOCK_REDIS=" + refused.url();
    r = run_program(
        {EDGELOCK_CLI, "run", "--name", "env", "--redis", server.url(), "--", "echo", "ok"}, o);
    EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST(CliRedlock, ThreeMastersOneDown) {
    edgelock::testing::redis_masters masters(3);
    std::vector<std::string> args = {EDGELOCK_CLI, "run", "--name", "red"};
    for (const std::string& url : masters.urls()) args.insert(args.end(), {"--redis", url});
    std::vector<std::string> status_args = args;
    status_args[1] = "status";

    std::vector<std::string> run_args = args;
    run_args.insert(run_args.end(), {"--", "sh", "-c", "echo $EDGELOCK_FENCE"});
    program_result r = run_program(run_args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const long long first_fence = std::stoll("0" + r.out);
    EXPECT_GT(first_fence, 0) << r.out;

    masters[2].stop();
    r = run_program(run_args);
    EXPECT_EQ(r.exit_code, 0) << "a quorum of 2 of 3 suffices: " << r.err;
    EXPECT_GT(std::stoll("0" + r.out), first_fence) << r.out;
    const program_result status = run_program(status_args);
    EXPECT_EQ(status.exit_code, 1) << "free, read from the 2 that answer";
    EXPECT_NE(status.out.find("error    connection refused"), std::string::npos) << status.out;

    masters[1].stop();
    r = run_program(run_args);
    EXPECT_EQ(r.exit_code, 69);
    expect_one_line(r, "too few Redis instances answered");
}

// A replica among Redlock's instances leaves a quorum possible: an outage of another instance
// is ridden out within --wait as any outage is. Seen failing when every not_master stopped the
// retries: exit 69 at once.
TEST(CliReplica, ARedlockWithOneReplicaRidesOutAnotherInstancesOutage) {
    edgelock::testing::redis_masters masters(2);
    redis_server replica({"--replicaof", "127.0.0.1", std::to_string(masters[1].port())});
    masters[0].stop();
    program taker({EDGELOCK_CLI, "run", "--name", "r", "--redis", masters[0].url(), "--redis",
                   masters[1].url(), "--redis", replica.url(), "--wait", "20s", "--", "echo",
                   "ran"},
                  CliRun::env());
    redis_client live(masters[1].port());
    ASSERT_TRUE(eventually(
        [&] { return live.info_field("commandstats", "cmdstat_evalsha").size() > 0; }, 10s))
        << "no attempt reached the live master";
    masters[0].start();
    const program_result r = taker.wait();
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "ran\n");
}

// Describing the holder (the owner key on every instance) takes up to --redis-timeout per
// instance, here 3 s on a hung one, while the helper renews: a lock lost meanwhile (its keys
// deleted on two of three instances) must not start CMD, nor make hold print its lines. Seen
// failing before: CMD ran, and hold printed a hold, after the loss was known.
TEST(CliRunLost, ALockLostWhileItsHolderIsDescribedNeverStartsCmdNorPrintsAHold) {
    edgelock::testing::redis_masters masters(3);
    masters[2].freeze();
    const std::string marker = (std::filesystem::temp_directory_path() /
                                ("edgelock-lost-before-" + std::to_string(::getpid())))
                                   .string();
    for (const bool run : {true, false}) {
        const std::string name = run ? "lost-before-run" : "lost-before-hold";
        std::vector<std::string> args = {
            EDGELOCK_CLI, run ? "run" : "hold", "--name", name, "--ttl",
            "1s",         "--redis-timeout",    "3s"};
        for (const std::string& url : masters.urls()) args.insert(args.end(), {"--redis", url});
        if (run) args.insert(args.end(), {"--", "touch", marker});
        program taker(args, CliRun::env());
        redis_client second(masters[1].port());
        ASSERT_TRUE(eventually([&] { return second.exists("{" + name + "}:owner"); }, 10s))
            << "the holder was not described on the second instance";
        redis_client(masters[0].port()).command({"DEL", name});
        second.command({"DEL", name});
        const program_result r = taker.wait();
        EXPECT_EQ(r.exit_code, 80) << r.err;
        EXPECT_EQ(r.out, "") << "a hold printed after its loss";
        EXPECT_FALSE(std::filesystem::exists(marker)) << "CMD started after the loss";
        expect_one_line(r, "edgelock: lost lock \"" + name + "\" before ");
        std::filesystem::remove(marker);
    }
    masters[2].thaw();
}

// A replica named by --redis can never hold the lock: the cause is said at once, with its
// master, and not as the restart guard's wait (a fresh replica without AOF). Seen failing
// before: exit 81, "counts only in 30s".
TEST(CliReplica, AReplicaNamedByRedisIsSaidToBeOneAtOnce) {
    redis_server master;
    redis_server replica({"--replicaof", "127.0.0.1", std::to_string(master.port())},
                         edgelock::testing::persistence::volatile_);
    // --wait 1h: a replica named directly stays one, so it is no outage to wait out (the
    // program would be killed at its 30 s timeout).
    const program_result r = run_program({EDGELOCK_CLI, "run", "--name", "r", "--redis",
                                          replica.url(), "--wait", "1h", "--", "echo", "ran"});
    EXPECT_FALSE(r.timed_out) << "it waited for a replica to become a master";
    EXPECT_EQ(r.exit_code, 69) << r.err;
    EXPECT_EQ(r.out, "");
    expect_one_line(
        r, "edgelock: cannot acquire lock \"r\": 127.0.0.1:" + std::to_string(replica.port()) +
               " is a replica (of 127.0.0.1:" + std::to_string(master.port()) +
               "); point --redis at the master");
}

// A Redis started without AOF appendfsync always counts only a TTL (plus drift) after its
// start: --wait 0 fails at once and says why and for how long, a wait that reaches it says it
// waits and then runs, and --restart-guard off takes the lock at once.
TEST(CliRestartGuard, AFreshRedisWithoutAofIsWaitedOutVisibly) {
    redis_server fresh({}, edgelock::testing::persistence::volatile_);
    const auto run_args = [&](std::vector<std::string> flags) {
        std::vector<std::string> args = {EDGELOCK_CLI, "run", "--name",  "guarded",
                                         "--ttl",      "2s",  "--redis", fresh.url()};
        args.insert(args.end(), flags.begin(), flags.end());
        args.insert(args.end(), {"--", "echo", "ran"});
        return args;
    };
    const program_result refused = run_program(run_args({"--wait", "0"}));
    EXPECT_EQ(refused.exit_code, 81) << "the guard's own code: the node is reachable";
    expect_one_line(refused, "counts only in");
    EXPECT_NE(refused.err.find("restart guard"), std::string::npos) << refused.err;
    // A first start: nothing told this client of a process before it (lock.hpp, "Restarts").
    const std::string node = "Redis node 127.0.0.1:" + std::to_string(fresh.port()) + " started ";
    EXPECT_NE(refused.err.find(node), std::string::npos) << refused.err;
    EXPECT_NE(refused.err.find(" ago without AOF"), std::string::npos) << refused.err;
    EXPECT_EQ(refused.err.find("restarted"), std::string::npos) << refused.err;
    EXPECT_EQ(refused.out, "");

    const program_result waited = run_program(run_args({"--wait", "10s"}));
    EXPECT_EQ(waited.exit_code, 0) << waited.err;
    EXPECT_EQ(waited.out, "ran\n");
    expect_one_line(waited, "edgelock: waiting ");
    EXPECT_NE(waited.err.find("--restart-guard off skips the wait, for a test server"),
              std::string::npos)
        << "how to skip it: " << waited.err;
    EXPECT_NE(waited.err.find(node), std::string::npos) << waited.err;
    EXPECT_EQ(waited.err.find("restarted"), std::string::npos) << waited.err;

    redis_server other({}, edgelock::testing::persistence::volatile_);
    std::vector<std::string> off = {
        EDGELOCK_CLI, "run",     "--name",    "unguarded", "--wait", "0",  "--restart-guard",
        "off",        "--redis", other.url(), "--",        "echo",   "ran"};
    const program_result unguarded = run_program(off);
    EXPECT_EQ(unguarded.exit_code, 0) << unguarded.err;
    EXPECT_EQ(unguarded.err, "");

    off[7] = "maybe";
    const program_result bad = run_program(off);
    EXPECT_EQ(bad.exit_code, 64);
    expect_one_line(bad, "bad --restart-guard");
}

// A Redis that may evict keys is named on stderr, and the lock is still taken.
TEST(CliEviction, ANodeThatMayEvictIsWarnedAbout) {
    redis_server evicting({"--maxmemory", "100mb", "--maxmemory-policy", "volatile-lru"});
    const program_result r = run_program(
        {EDGELOCK_CLI, "run", "--name", "warned", "--redis", evicting.url(), "--", "echo", "ran"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "ran\n");
    EXPECT_EQ(
        r.err,
        "edgelock: warning: 127.0.0.1:" + std::to_string(evicting.port()) +
            ": maxmemory 104857600 bytes with maxmemory-policy volatile-lru may evict lock keys, "
            "fence counters and waiting lines; set maxmemory-policy noeviction\n");
}

TEST(CliSentinel, FindsTheMasterThroughSentinels) {
    edgelock::testing::sentinel_topology topology;
    std::vector<std::string> where;
    for (const std::string& url : topology.sentinel_urls())
        where.insert(where.end(), {"--sentinel", url});
    where.insert(where.end(), {"--master", edgelock::testing::sentinel_topology::master_name});

    std::vector<std::string> run_args = {EDGELOCK_CLI, "run", "--name", "sen"};
    run_args.insert(run_args.end(), where.begin(), where.end());
    run_args.insert(run_args.end(), {"--", "sh", "-c", "echo $EDGELOCK_FENCE"});
    const program_result r = run_program(run_args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const std::string fence = r.out.substr(0, r.out.find('\n'));
    EXPECT_GT(std::stoll("0" + fence), 0) << r.out;

    std::vector<std::string> status_args = {EDGELOCK_CLI, "status", "--name", "sen"};
    status_args.insert(status_args.end(), where.begin(), where.end());
    const program_result status = run_program(status_args);
    EXPECT_EQ(status.exit_code, 1) << status.err;
    EXPECT_NE(status.out.find("instance 127.0.0.1:" + std::to_string(topology.master_port())),
              std::string::npos)
        << status.out;
    EXPECT_NE(status.out.find("fence    " + fence + "\n"), std::string::npos) << status.out;
}

// A Redis that refuses us (no password, or a wrong one) is exit 76, before CMD runs; the
// message says which of the two it was.
TEST(CliRefused, AMissingOrWrongPasswordIsExit76AndSaysWhich) {
    redis_server server({"--requirepass", "secret"});
    const std::string port = std::to_string(server.port());
    const std::pair<std::string, std::string> cases[] = {
        {"redis://127.0.0.1:" + port,
         "authentication required: the server wants a password and none was given"},
        {"redis://:wrong@127.0.0.1:" + port, "authentication refused: wrong password or user"},
    };
    for (const auto& [url, message] : cases) {
        SCOPED_TRACE(url);
        const program_result r = run_program(
            {EDGELOCK_CLI, "run", "--name", "refused", "--redis", url, "--", "echo", "ran"});
        EXPECT_EQ(r.exit_code, 76) << r.err;
        EXPECT_EQ(r.out, "");
        expect_one_line(r, message);
    }
}

// An error reply to the lock's own request: the message carries Redis's text (here an ACL
// that lets the default user run scripts but no write command in them), not only that there
// was an error.
TEST(CliRefused, AnErrorReplyIsShownWithTheServersText) {
    redis_server server({"--user", "default", "on", "nopass", "~*", "&*", "+@all", "-@write"});
    const program_result r = run_program({EDGELOCK_CLI, "run", "--name", "oom", "--wait", "0",
                                          "--redis", server.url(), "--", "echo", "ran"});
    EXPECT_EQ(r.exit_code, 76) << r.err;
    EXPECT_EQ(r.out, "");
    expect_one_line(
        r,
        "Redis answered with an error: ERR The user executing the script can't run this command");
}

// A server that takes the connection and never answers is up but silent: exit 69 as any
// outage, with a message that does not send the operator after the network.
TEST(CliUnavailable, AServerThatConnectsButNeverAnswersSaysSo) {
    edgelock::testing::scripted_server silent(
        [](const std::vector<std::string>&) { return edgelock::testing::scripted_reply{}; });
    const program_result r =
        run_program({EDGELOCK_CLI, "run", "--name", "silent", "--wait", "0", "--redis-timeout",
                     "300ms", "--redis", silent.url(), "--", "echo", "ran"});
    EXPECT_EQ(r.exit_code, 69) << r.err;
    EXPECT_EQ(r.out, "");
    expect_one_line(r, "connected, but the server did not answer within the connect timeout");
    EXPECT_GT(silent.commands_received(), 0u) << "the connection was up";
}

// --sentinel takes a comma list as EDGELOCK_SENTINEL does, or the flag repeated: both reach
// the master (a list was once taken as one unreachable address).
TEST(CliSentinel, ACommaListOfSentinelsIsTheSameAsTheFlagRepeated) {
    edgelock::testing::sentinel_topology topology;
    std::string list;
    std::vector<std::string> repeated;
    for (const std::string& url : topology.sentinel_urls()) {
        list += (list.empty() ? "" : ",") + url;
        repeated.insert(repeated.end(), {"--sentinel", url});
    }
    for (std::vector<std::string> where :
         {std::vector<std::string>{"--sentinel", list}, repeated}) {
        SCOPED_TRACE(where.size());
        std::vector<std::string> args = {
            EDGELOCK_CLI, "run",      "--name",
            "listed",     "--master", edgelock::testing::sentinel_topology::master_name};
        args.insert(args.end(), where.begin(), where.end());
        args.insert(args.end(), {"--", "echo", "ran"});
        const program_result r = run_program(args);
        EXPECT_EQ(r.exit_code, 0) << r.err;
        EXPECT_EQ(r.out, "ran\n");
    }
}

// --- riding out outages within --wait, leaving the line on a signal, hold, flock's flags ----

program_options plain_env() {
    program_options o;
    o.env = {"EDGELOCK_REDIS",
             "EDGELOCK_SENTINEL",
             "EDGELOCK_MASTER",
             "EDGELOCK_FENCE",
             "EDGELOCK_PASSWORD",
             "EDGELOCK_WAIT_REPLICAS",
             "EDGELOCK_WAIT_REPLICAS_TIMEOUT"};
    o.timeout = 60s;
    return o;
}

// Seen failing before --wait rode out outages: exit 69 at once, "connection refused".
TEST(CliOutage, ARunStartedWhileRedisIsDownGetsTheLockOnceItStarts) {
    redis_server server;
    server.stop();
    program run({EDGELOCK_CLI, "run", "--name", "late", "--redis", server.url(), "--wait", "30s",
                 "--", "echo", "ran"},
                plain_env());
    server.start();
    const program_result r = run.wait();
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "ran\n");
    EXPECT_TRUE(r.err.empty()) << "nothing on a pipe: " << r.err;
}

// The verdict after a wait that ran out is the last cause's: the code and message an
// immediate failure has (the test above shows the retrying).
TEST(CliOutage, AWaitThatRunsOutOnADeadServerExits69WithTheLastCause) {
    const edgelock::testing::refused_port refused;
    const std::string url = refused.url();
    const program_result r = run_program({EDGELOCK_CLI, "run", "--name", "dead", "--redis", url,
                                          "--wait", "1500ms", "-v", "--", "true"},
                                         plain_env());
    EXPECT_EQ(r.exit_code, 69) << r.err;
    const std::vector<std::string> lines = r.err_lines();
    ASSERT_GE(lines.size(), 2u) << "the first attempt's failure (-v), and the verdict: " << r.err;
    EXPECT_NE(std::find(lines.begin(), lines.end(),
                        "edgelock: attempt failed: " + url.substr(8) + ": connection refused"),
              lines.end())
        << r.err;
    EXPECT_EQ(lines.back(),
              "edgelock: cannot acquire lock \"dead\": " + url.substr(8) + ": connection refused");
    const program_result at_once = run_program(
        {EDGELOCK_CLI, "run", "--name", "dead", "--redis", url, "-n", "-v", "--", "true"},
        plain_env());
    EXPECT_EQ(at_once.exit_code, 69);
    const std::vector<std::string> once = at_once.err_lines();
    const auto attempt_line = [](const std::string& l) {
        return l.rfind("edgelock: attempt", 0) == 0;
    };
    EXPECT_EQ(std::count_if(once.begin(), once.end(), attempt_line), 1)
        << "--wait 0 makes one attempt: " << at_once.err;
}

TEST(CliOutage, ProgressSaysWhyOnATerminal) {
    const edgelock::testing::refused_port refused;
    const std::string url = refused.url();
    program_options o = plain_env();
    o.stderr_on_terminal = true;
    const program_result r = run_program(
        {EDGELOCK_CLI, "run", "--name", "dead", "--redis", url, "--wait", "2s", "--", "true"}, o);
    EXPECT_EQ(r.exit_code, 69);
    EXPECT_NE(r.err.find("edgelock: Redis " + url.substr(8) +
                         " unreachable (connection refused), retrying: "),
              std::string::npos)
        << r.err;
}

// Seen failing before the waiter left the line on SIGTERM: B exited 79 (A's entry, 26 s at
// --ttl 2m, kept B behind it for B's whole 10 s wait).
TEST_F(CliRun, AWaiterEndedBySigtermLeavesTheLine) {
    const std::string release_file = marker.string() + "-release";
    program holder(edgelock("run", {"--name", "q", "--ttl", "2m", "--", "sh", "-c",
                                    "while [ ! -e " + release_file + " ]; do sleep 0.05; done"}),
                   env());
    wait_for_holder("q");
    const auto in_line = [&](long long n) {
        return eventually(
            [&] {
                return admin.command({"ZCARD", "{q}:queue"}).integer == n + 1;
            },
            10s);
    };
    program a(edgelock("run", {"--name", "q", "--ttl", "2m", "--wait", "1m", "--", "echo", "A"}),
              env());
    ASSERT_TRUE(in_line(1));
    program b(edgelock("run", {"--name", "q", "--ttl", "2m", "--wait", "10s", "--", "echo", "B"}),
              env());
    ASSERT_TRUE(in_line(2));
    ::kill(a.pid(), SIGTERM);
    const program_result ra = a.wait();
    EXPECT_EQ(ra.exit_code, 128 + SIGTERM) << "ended by the signal: " << ra.err;
    EXPECT_TRUE(ra.out.empty());
    EXPECT_TRUE(in_line(1)) << "A left the line";
    std::ofstream(release_file).put('x');
    EXPECT_EQ(holder.wait().exit_code, 0);
    const program_result rb = b.wait();
    std::filesystem::remove(release_file);
    EXPECT_EQ(rb.exit_code, 0) << rb.err;
    EXPECT_EQ(rb.out, "B\n");
}

TEST_F(CliRun, HoldPrintsTheLockAndReleasesOnSigterm) {
    program hold(edgelock("hold", {"--name", "held", "--ttl", "3s"}), env());
    wait_for_holder("held");
    const std::string token = admin.get("held");
    const program_result busy =
        run_program(edgelock("run", {"--name", "held", "-n", "-E", "3", "true"}), env());
    EXPECT_EQ(busy.exit_code, 3) << "-E replaces 75: " << busy.err;
    ::kill(hold.pid(), SIGTERM);
    const program_result r = hold.wait();
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "name=held\ntoken=" + token + "\nfence=" + admin.get("{held}:fence") + "\n");
    EXPECT_FALSE(key_exists("held"));
    const program_result timed_out = run_program(
        edgelock("run", {"--name", "held", "-w", "1s", "-E", "4", "-c", "echo $EDGELOCK_FENCE"}),
        env());
    EXPECT_EQ(timed_out.exit_code, 0) << "free again: " << timed_out.err;
    EXPECT_GT(std::stoll("0" + timed_out.out), 0) << "-c runs the string with /bin/sh -c";
}

TEST_F(CliRun, HoldExits80WhenTheLockIsLost) {
    program hold(edgelock("hold", {"--name", "gone", "--ttl", "3s"}), env());
    wait_for_holder("gone");
    admin.command({"DEL", "gone"});
    const program_result r = hold.wait();
    EXPECT_EQ(r.exit_code, 80);
    expect_one_line(r, "lost lock \"gone\" (the key no longer holds our token)");
}

// Seen failing before -v followed the client's I/O: it printed only failed attempts within a
// wait, so a hold showed nothing until the loss. Renewals are watched from outside: the key's
// PTTL falls below 700 ms, then rises above 800 ms again (a renewal reset it to 900 ms).
TEST_F(CliRun, VerboseShowsConnectionsAttemptsRenewalsAndTheLoss) {
    program hold(edgelock("hold", {"--name", "told", "--ttl", "900ms", "-v"}), env());
    wait_for_holder("told");
    for (int renewal = 0; renewal < 2; ++renewal) {
        ASSERT_TRUE(eventually([&] { return admin.command({"PTTL", "told"}).integer < 700; }, 10s));
        ASSERT_TRUE(eventually(
            [&] {
                return admin.command({"PTTL", "told"}).integer > 800;
            },
            10s))
            << "renewal " << renewal;
    }
    admin.command({"DEL", "told"});
    const program_result r = hold.wait();
    EXPECT_EQ(r.exit_code, 80) << r.err;
    const std::string where = "127.0.0.1:" + std::to_string(server.port());
    const std::vector<std::string> lines = r.err_lines();
    const auto count = [&](const std::string& start) {
        return std::count_if(lines.begin(), lines.end(),
                             [&](const std::string& l) { return l.rfind(start, 0) == 0; });
    };
    EXPECT_EQ(count("edgelock: connected to " + where), 1) << r.err;
    EXPECT_EQ(count("edgelock: acquired lock \"told\" (valid for "), 1) << r.err;
    EXPECT_GE(count("edgelock: renewed lock \"told\": valid for "), 2) << r.err;
    EXPECT_EQ(count("edgelock: lock \"told\" lost: the key no longer holds our token"), 1) << r.err;
    EXPECT_EQ(lines.back(), "edgelock: lost lock \"told\" (the key no longer holds our token)");
}

// Marks this process's sockets close-on-exec, so a program a test starts holds none of the
// test's Redis connections open.
void keep_sockets_from_children() {
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
        std::error_code ec;
        const std::string target = std::filesystem::read_symlink(entry.path(), ec).string();
        if (ec || target.rfind("socket:", 0) != 0) continue;
        const int fd = std::stoi(entry.path().filename().string());
        ::fcntl(fd, F_SETFD, ::fcntl(fd, F_GETFD) | FD_CLOEXEC);
    }
}

// Seen failing before a full server counted as an outage: exit 76 at once, "Redis answered
// with an error". Redis at maxclients refuses each new connection; the run retries within
// --wait and takes the lock once the one connection there (the admin's) closes. The admin
// sees the run's refusals in rejected_connections before it leaves.
TEST(CliOutage, AFullServerIsRiddenOutWithinTheWait) {
    redis_server server({"--maxclients", "1"});
    std::unique_ptr<redis_client> admin;
    ASSERT_TRUE(eventually(
        [&] {
            try {
                auto candidate = std::make_unique<redis_client>(server.port());
                if (candidate->command({"PING"}).is_error()) return false;
                admin = std::move(candidate);
                return true;
            } catch (const std::exception&) {
                return false;
            }
        },
        10s))
        << "the start-up probe's slot never freed";
    // The run must not inherit the admin's socket: its copy would keep the slot taken.
    keep_sockets_from_children();
    const auto rejected = [&] {
        return std::stoll("0" + admin->info_field("stats", "rejected_connections"));
    };
    const long long before = rejected();
    program run({EDGELOCK_CLI, "run", "--name", "full", "--redis", server.url(), "--wait", "5s",
                 "-v", "--", "echo", "ran"},
                plain_env());
    ASSERT_TRUE(eventually([&] { return rejected() > before; }, 10s)) << "the run never tried";
    admin.reset();
    const program_result r = run.wait();
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "ran\n");
    EXPECT_NE(r.err.find("Redis refused the connection: max number of clients reached"),
              std::string::npos)
        << r.err;

    redis_client holder(server.port());
    ASSERT_FALSE(holder.command({"PING"}).is_error());
    const program_result at_once = run_program(
        {EDGELOCK_CLI, "run", "--name", "full", "--redis", server.url(), "-n", "--", "true"},
        plain_env());
    EXPECT_EQ(at_once.exit_code, 69) << at_once.err;
    expect_one_line(at_once, "127.0.0.1:" + std::to_string(server.port()) +
                                 ": Redis refused the connection: max number of clients reached");
}

// Seen failing before: "too few Redis instances answered", for a single Redis that was only
// slow (its handshake paused past the attempt, which lasts a tenth of a 1 s TTL). One Redis is
// named, with what it did.
TEST_F(CliRun, ASingleRedisThatAnswersTooLateIsNamed) {
    admin.command({"CLIENT", "PAUSE", "1500", "ALL"});
    const program_result r =
        run_program(edgelock("run", {"--name", "late", "--ttl", "1s", "--wait", "0",
                                     "--redis-timeout", "5s", "--", "echo", "ran"}),
                    env());
    EXPECT_EQ(r.exit_code, 69) << r.err;
    EXPECT_EQ(r.out, "");
    expect_one_line(r, "edgelock: cannot acquire lock \"late\": 127.0.0.1:" +
                           std::to_string(server.port()) + ": no reply before the attempt ended");
    EXPECT_EQ(r.err.find("too few Redis instances"), std::string::npos) << r.err;
}

TEST_F(CliRun, AConflictExitCodeAlsoReplacesTheWaitTimeout) {
    program holder(edgelock("run", {"--name", "e", "--", "sleep", "3"}), env());
    wait_for_holder("e");
    const program_result r =
        run_program(edgelock("run", {"--name", "e", "-w", "500ms", "-E", "0", "true"}), env());
    EXPECT_EQ(r.exit_code, 0);
    expect_one_line(r, "gave up waiting for lock \"e\" after 500ms");
    EXPECT_EQ(holder.wait().exit_code, 0);
}

TEST(CliPassword, FromAFileOnlyItsOwnerMayReadOrTheEnvironment) {
    redis_server server({"--requirepass", "s3cret"});
    const std::string file = (std::filesystem::temp_directory_path() /
                              ("edgelock-password-" + std::to_string(::getpid())))
                                 .string();
    std::ofstream(file) << "s3cret\n";
    ::chmod(file.c_str(), 0600);
    const std::vector<std::string> run = {
        EDGELOCK_CLI,      "run", "--name", "pw",   "--redis", server.url(),
        "--password-file", file,  "--",     "echo", "ok"};
    program_result r = run_program(run, plain_env());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "ok\n");
    ::chmod(file.c_str(), 0644);
    r = run_program(run, plain_env());
    EXPECT_EQ(r.exit_code, 64);
    expect_one_line(r,
                    "cannot use --password-file " + file + ": every user may read it (chmod o-r)");
    std::filesystem::remove(file);

    program_options o = plain_env();
    o.env.push_back("EDGELOCK_PASSWORD=s3cret");
    r = run_program({EDGELOCK_CLI, "status", "--name", "pw", "--redis", server.url()}, o);
    EXPECT_EQ(r.exit_code, 1) << "free, read with the password: " << r.err;
    r = run_program({EDGELOCK_CLI, "status", "--name", "pw", "--redis", server.url()}, plain_env());
    EXPECT_EQ(r.exit_code, 76) << "without it, AUTH is refused: " << r.err;
}

std::vector<std::string> sentinel_run(edgelock::testing::sentinel_topology& topology,
                                      std::vector<std::string> args) {
    std::vector<std::string> argv = {EDGELOCK_CLI, "run"};
    for (const std::string& url : topology.sentinel_urls())
        argv.insert(argv.end(), {"--sentinel", url});
    argv.insert(argv.end(), {"--master", edgelock::testing::sentinel_topology::master_name});
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
}

TEST(CliSentinel, WaitReplicasHoldsWithOneReplicaAndFailsWithTwo) {
    edgelock::testing::sentinel_topology topology;
    program_result r = run_program(
        sentinel_run(topology, {"--name", "w", "--wait-replicas", "1", "--", "echo", "ran"}),
        plain_env());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "ran\n");
    r = run_program(
        sentinel_run(topology, {"--name", "w", "--wait-replicas", "2", "-n", "--", "echo", "ran"}),
        plain_env());
    EXPECT_EQ(r.exit_code, 69) << r.err;
    EXPECT_TRUE(r.out.empty());
    expect_one_line(
        r,
        "cannot acquire lock \"w\": master \"mymaster\" via Sentinel: too few replicas confirmed "
        "the lock");
}

// A waiter already waiting on a held lock rides out a failover inside the client's wait (this
// passed before --wait rode out outages too); the next test starts one during the failover.
TEST(CliSentinel, AWaiterRidesOutAFailoverAndGetsTheLock) {
    edgelock::testing::sentinel_topology topology;
    const std::uint16_t old_port = topology.master_port();
    program holder(sentinel_run(topology, {"--name", "f", "--", "sleep", "2"}), plain_env());
    redis_client primary(old_port);
    ASSERT_TRUE(eventually([&] { return primary.exists("f"); }, 10s));
    program waiter(sentinel_run(topology, {"--name", "f", "--wait", "40s", "--", "echo", "got it"}),
                   plain_env());
    ASSERT_TRUE(eventually(
        [&] {
            return primary.command({"ZCARD", "{f}:queue"}).integer == 2;
        },
        10s));
    redis_client sentinel(topology.sentinel(0).port());
    sentinel.command({"SENTINEL", "FAILOVER", edgelock::testing::sentinel_topology::master_name});
    topology.wait_for_failover(old_port);
    holder.wait();
    const program_result r = waiter.wait();
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "got it\n");
}

// Seen failing before --wait rode out outages: exit 69 at once, "no sentinel named a reachable
// master", as the primary was down and no replica promoted yet.
TEST(CliSentinel, ARunStartedWhileThePrimaryIsDownGetsTheLockAfterTheFailover) {
    edgelock::testing::sentinel_topology topology;
    const std::uint16_t old_port = topology.master_port();
    topology.server_on(old_port).stop();
    program waiter(sentinel_run(topology, {"--name", "d", "--wait", "40s", "--", "echo", "got it"}),
                   plain_env());
    topology.wait_for_failover(old_port);
    const program_result r = waiter.wait();
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "got it\n");
}

}  // namespace
