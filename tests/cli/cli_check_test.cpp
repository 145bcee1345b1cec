// SPDX-License-Identifier: Apache-2.0
// `edgelock check` against real redis-server and redis-sentinel processes: per-node facts, the
// simulator's verdict lines for the deployment's matrix row, advice, --json and exit codes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "edgelock/testing/redis6_front.hpp"
#include "edgelock/testing/redis_process.hpp"
#include "edgelock/testing/refused_port.hpp"
#include "program_run.hpp"

namespace {

using edgelock::cli_tests::first_line;
using edgelock::cli_tests::lines_starting;
using edgelock::cli_tests::program_options;
using edgelock::cli_tests::program_result;
using edgelock::cli_tests::run_program;
using edgelock::testing::redis_masters;
using edgelock::testing::redis_server;

// `check` runs the simulator's matrix for its row: a few seconds natively, but far longer
// when both run emulated (qemu-arm on a loaded machine passed 30 s). The bound only ends a
// hung run; nothing here is about speed.
program_options check_options() {
    program_options o;
    o.timeout = std::chrono::minutes(3);
    return o;
}

TEST(CliCheck, ASingleDurableNodeHasTheFencedGuardedRowsLimitsAndNothingWorse) {
    redis_server server;  // AOF, appendfsync always
    const program_result r =
        run_program({EDGELOCK_CLI, "check", "--redis", server.url()}, check_options());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err, "");
    EXPECT_EQ(first_line(r.out, "matrix row").substr(0, 39),
              "matrix row   single+fencing+guard+fair ");
    EXPECT_EQ(first_line(r.out, "node "),
              "node         127.0.0.1:" + std::to_string(server.port()));
    EXPECT_EQ(first_line(r.out, "role "), "role         master");
    EXPECT_EQ(first_line(r.out, "persistence"), "persistence  AOF, appendfsync always");
    EXPECT_EQ(first_line(r.out, "eviction"), "eviction     no memory limit");
    // The verdicts are the simulator's for this row (README.md's grid).
    EXPECT_EQ(first_line(r.out, "survives"), "survives     S2 S3 S5 S6 S8 S9 S11");
    EXPECT_EQ(first_line(r.out, "fails"), "fails        S1:O S4:OH S7:OH");
    EXPECT_EQ(first_line(r.out, "not exposed"), "not exposed  S10: no node may evict keys");
    EXPECT_TRUE(lines_starting(r.out, "advice").empty()) << r.out;
    // The letters and scenarios of `fails` in words, and a verdict that reads with them.
    EXPECT_EQ(first_line(r.out, "legend"),
              "legend       O two clients held the lock at once; H held() said yes after Redis "
              "lost the key");
    EXPECT_EQ(first_line(r.out, "scenarios"),
              "scenarios    S1 a holder pauses past its lease; S4 a Redis clock jumps forward; "
              "S7 a client clock runs slow");
    EXPECT_EQ(first_line(r.out, "verdict"),
              "verdict      safe against S2 S3 S5 S6 S8 S9 S11; not safe against S1 S4 S7; "
              "protect with storage that refuses a stale fence token for S1 S4 S7");
}

TEST(CliCheck, WithoutFencingTheVerdictAsksForIt) {
    redis_server server;
    const program_result r = run_program(
        {EDGELOCK_CLI, "check", "--redis", server.url(), "--fencing", "off"}, check_options());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(first_line(r.out, "matrix row").substr(0, 31), "matrix row   single+guard+fair ");
    EXPECT_EQ(
        first_line(r.out, "verdict"),
        "verdict      safe against S3 S5 S6 S8 S9 S11; not safe against S1 S2 S4 S7; "
        "protect with fencing (--fencing on) and storage that checks the token for S1 S2 S4 S7");
}

// A semaphore (--permits 3) is judged on its own row, fenced as `edgelock run` fences it:
// the overlap letter speaks of permits, and the protection of a token per permit.
TEST(CliCheck, ASemaphoreIsJudgedOnItsOwnRow) {
    redis_server server;
    const program_result r = run_program(
        {EDGELOCK_CLI, "check", "--redis", server.url(), "--permits", "3"}, check_options());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(first_line(r.out, "matrix row").substr(0, 49),
              "matrix row   single+fencing+guard+fair+permits-3 ");
    EXPECT_NE(first_line(r.out, "legend")
                  .find("O more clients held a permit at once than there are permits"),
              std::string::npos)
        << r.out;
    EXPECT_NE(first_line(r.out, "verdict")
                  .find("protect with storage that refuses a stale fence token of its permit"),
              std::string::npos)
        << r.out;
    const program_result unfenced = run_program(
        {EDGELOCK_CLI, "check", "--redis", server.url(), "--permits", "3", "--fencing", "off"},
        check_options());
    EXPECT_EQ(first_line(unfenced.out, "matrix row").substr(0, 41),
              "matrix row   single+guard+fair+permits-3 ");
    EXPECT_NE(first_line(unfenced.out, "verdict")
                  .find("fencing (--fencing on) and storage that checks the token per permit"),
              std::string::npos)
        << unfenced.out;
}

TEST(CliCheck, ANodeThatMayEvictMakesRedlockWorseAndIsNamedInJson) {
    redis_masters masters(4);  // and one that may evict: five masters, Redlock's row
    redis_server evicting({"--maxmemory", "100mb", "--maxmemory-policy", "allkeys-lru"});
    std::vector<std::string> args = {EDGELOCK_CLI, "check", "--json"};
    for (std::size_t i = 0; i < 4; ++i) args.insert(args.end(), {"--redis", masters[i].url()});
    args.insert(args.end(), {"--redis", evicting.url()});
    const program_result r = run_program(args, check_options());
    EXPECT_EQ(r.exit_code, 78) << r.err;
    std::size_t nodes = 0;
    for (std::size_t at = r.out.find("\"address\""); at != std::string::npos;
         at = r.out.find("\"address\"", at + 1))
        ++nodes;
    EXPECT_EQ(nodes, 5u) << r.out;
    EXPECT_NE(r.out.find("\"row\":\"redlock-5+fencing+guard\""), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("\"survives\":[\"S2\",\"S3\",\"S5\",\"S6\",\"S8\",\"S9\",\"S11\"]"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("\"fails\":[\"S1:O\",\"S4:OH\",\"S7:OH\",\"S10:OH\"],\"not_exposed\":[]"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("\"advice\":[\"127.0.0.1:" + std::to_string(evicting.port()) +
                         ": set maxmemory-policy noeviction\"]"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("\"verdict\":\"worse\""), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("protect with storage that refuses a stale fence token for S1 S4 S7, "
                         "maxmemory-policy noeviction for S10\"}"),
              std::string::npos)
        << r.out;
}

// The row follows --fencing, --restart-guard and --wait-replicas with Sentinel too; where the
// deployment is not what the row models, the report says how.
TEST(CliCheck, SentinelRowFollowsFencingGuardAndWait) {
    edgelock::testing::sentinel_topology topology;
    std::vector<std::string> args = {EDGELOCK_CLI, "check", "--master",
                                     edgelock::testing::sentinel_topology::master_name};
    for (const std::string& url : topology.sentinel_urls())
        args.insert(args.end(), {"--sentinel", url});
    std::vector<std::string> plain = args;
    plain.insert(plain.end(), {"--fencing", "off", "--restart-guard", "off"});
    program_result r = run_program(plain, check_options());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(first_line(r.out, "matrix row").substr(0, 27), "matrix row   sentinel+fair ");
    EXPECT_EQ(first_line(r.out, "fails"),
              "fails        S1:OS S2:S S4:OSH S5:OSH S6:OSH S7:OH S9:OSH");
    EXPECT_EQ(first_line(r.out, "row differs"),
              "row differs  the row's master has 2 replicas behind 3 sentinels; this one has 1");
    EXPECT_EQ(first_line(r.out, "replication").substr(0, 26), "replication  1 replica(s),");
    const std::vector<std::string> advice = lines_starting(r.out, "advice");
    ASSERT_GE(advice.size(), 2u) << r.out;
    EXPECT_EQ(advice[advice.size() - 2],
              "advice       use WAIT (--wait-replicas 1): a failover loses keys without it");
    EXPECT_EQ(advice.back(),
              "advice       a failover can grant a lock twice, WAIT or not: enable fencing");
    EXPECT_NE(first_line(r.out, "verdict")
                  .find("fencing (--fencing on) and storage that checks the token for S1 S2 S4 "
                        "S6 S7"),
              std::string::npos)
        << r.out;

    r = run_program(args, check_options());  // run's defaults: fencing and the guard on, no WAIT
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(first_line(r.out, "matrix row").substr(0, 41),
              "matrix row   sentinel+fencing+guard+fair ");
    EXPECT_EQ(first_line(r.out, "fails"), "fails        S1:O S4:OH S6:OH S7:OH S9:OH");

    args.insert(args.end(), {"--wait-replicas", "2"});
    r = run_program(args, check_options());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(first_line(r.out, "matrix row").substr(0, 46),
              "matrix row   sentinel+WAIT+fencing+guard+fair ");
    EXPECT_EQ(first_line(r.out, "row differs"), "row differs  the row waits for 1 replica, not 2");
    EXPECT_EQ(first_line(r.out, "fails"), "fails        S1:O S4:OH S6:OH S7:OH S9:OH")
        << "WAIT does not survive Redis 7.0's failover: two holders, and held() may say yes "
           "after the key is lost";
}

// `run` refuses a replica (it is read-only): check says the node cannot hold locks, exit 69.
TEST(CliCheck, AReplicaCannotHoldLocks) {
    redis_server master;
    redis_server replica({"--replicaof", "127.0.0.1", std::to_string(master.port())});
    const program_result r =
        run_program({EDGELOCK_CLI, "check", "--redis", replica.url()}, check_options());
    EXPECT_EQ(r.exit_code, 69) << r.out;
    const std::string master_address = "127.0.0.1:" + std::to_string(master.port());
    const std::string replica_address = "127.0.0.1:" + std::to_string(replica.port());
    EXPECT_EQ(first_line(r.out, "role "), "role         slave: a read-only replica of " +
                                              master_address + ", it cannot hold locks");
    EXPECT_EQ(
        first_line(r.out, "verdict"),
        "verdict      cannot hold locks: 0 of 1 node(s) can hold locks, 1 needed: no quorum (" +
            replica_address + " is a replica of " + master_address + ")");
    EXPECT_TRUE(lines_starting(r.out, "survives").empty()) << r.out;
    EXPECT_EQ(
        r.err,
        "edgelock: the deployment cannot hold locks: 0 of 1 node(s) can hold locks, 1 needed: "
        "no quorum (" +
            replica_address + " is a replica of " + master_address + ")\n");
}

// A simulator named that cannot run is said, in one line, before anything is reported.
TEST(CliCheck, AnEdgelockSimThatCannotRunIsSaid) {
    redis_server server;
    program_options o = check_options();
    o.env.push_back("EDGELOCK_SIM=/nonexistent/edgelock-sim");
    const program_result r = run_program({EDGELOCK_CLI, "check", "--redis", server.url()}, o);
    EXPECT_EQ(r.exit_code, 127);
    EXPECT_EQ(r.err,
              "edgelock: cannot check the deployment: EDGELOCK_SIM names "
              "/nonexistent/edgelock-sim, which cannot be run: No such file or directory\n");
    EXPECT_TRUE(r.out.empty()) << r.out;
}

// Every node is reported, the one down with its error; with a quorum left the row is simulated.
TEST(CliCheck, ARedlockMasterDownIsReportedBesideTheOthers) {
    redis_masters masters(4);
    const edgelock::testing::refused_port refused;
    const std::string down = "127.0.0.1:" + std::to_string(refused.port());
    std::vector<std::string> args = {EDGELOCK_CLI, "check", "--redis", "redis://" + down};
    for (std::size_t i = 0; i < 4; ++i) args.insert(args.end(), {"--redis", masters[i].url()});
    const program_result r = run_program(args, check_options());
    EXPECT_EQ(r.exit_code, 69) << r.err;
    EXPECT_EQ(r.err, "edgelock: cannot check " + down + ": connection refused\n");
    EXPECT_EQ(lines_starting(r.out, "node ").size(), 5u) << r.out;
    EXPECT_EQ(first_line(r.out, "error"), "error        connection refused");
    EXPECT_EQ(lines_starting(r.out, "role ").size(), 4u) << r.out;
    EXPECT_EQ(first_line(r.out, "quorum"),
              "quorum       4 of 5 node(s) can hold locks, 3 needed: a quorum is left");
    EXPECT_EQ(first_line(r.out, "fails"), "fails        S1:O S4:OH S7:OH");
    EXPECT_EQ(first_line(r.out, "verdict")
                  .rfind("verdict      degraded, 4 of 5 nodes hold locks (" + down +
                             ": connection refused); safe against",
                         0),
              0u)
        << r.out;
}

TEST(CliCheck, RedlockWithoutAQuorumIsNotSimulated) {
    redis_masters masters(1);
    std::vector<std::string> args = {EDGELOCK_CLI, "check", "--redis", masters[0].url()};
    const edgelock::testing::refused_port refused[2];
    for (const auto& port : refused) args.insert(args.end(), {"--redis", port.url()});
    const program_result r = run_program(args, check_options());
    EXPECT_EQ(r.exit_code, 69) << r.err;
    EXPECT_EQ(r.err_lines().size(), 1u) << r.err;
    EXPECT_NE(r.err.find("(and 1 more node(s): see the report)"), std::string::npos) << r.err;
    EXPECT_EQ(
        first_line(r.out, "matrix row"),
        "matrix row   redlock-3+fencing+guard: not simulated, the deployment cannot hold locks");
    EXPECT_EQ(lines_starting(r.out, "error").size(), 2u) << r.out;
    EXPECT_EQ(first_line(r.out, "verdict")
                  .rfind("verdict      cannot hold locks: 1 of 3 node(s) can hold locks, 2 needed: "
                         "no quorum (",
                         0),
              0u)
        << r.out;
}

// Three masters are simulated as three (redlock-3), seven as seven, not as the matrix's five.
TEST(CliCheck, RedlockIsSimulatedWithTheMastersGiven) {
    redis_masters masters(3);
    std::vector<std::string> args = {EDGELOCK_CLI, "check"};
    for (std::size_t i = 0; i < 3; ++i) args.insert(args.end(), {"--redis", masters[i].url()});
    program_result r = run_program(args, check_options());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(first_line(r.out, "matrix row"),
              "matrix row   redlock-3+fencing+guard (edgelock-sim matrix --config "
              "redlock-3+fencing+guard "
              "--runs 50 --seed 1)");
    EXPECT_TRUE(lines_starting(r.out, "row differs").empty()) << r.out;
    EXPECT_EQ(first_line(r.out, "fails"), "fails        S1:O S4:OH S7:OH");

    args.insert(args.end(), {"--restart-guard", "off"});
    r = run_program(args, check_options());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(first_line(r.out, "matrix row").substr(0, 37),
              "matrix row   redlock-3+fencing (edgel");
}

// An edgelock-sim that does not know the deployment's row (one older than its one-off
// configurations) simulates the nearest matrix row, and the report says how it differs.
TEST(CliCheck, AnOlderSimulatorGetsTheNearestRowAndTheDifferenceIsSaid) {
    if (std::string(EDGELOCK_CLI) != EDGELOCK_CLI_FILE) GTEST_SKIP() << "runs a copy of the binary";
    const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                      ("edgelock-check-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    std::filesystem::copy_file(EDGELOCK_CLI_FILE, dir / "edgelock",
                               std::filesystem::copy_options::overwrite_existing);
    {
        // Past its refusal, the simulator the test command names (a faster build's), if any.
        const char* named = std::getenv("EDGELOCK_SIM");
        const std::string real = named != nullptr && *named != '\0' ? named : EDGELOCK_SIM_FILE;
        std::ofstream sim(dir / "edgelock-sim");
        sim << "#!/bin/sh\ncase \" $* \" in *\" redlock-3\"*) echo unknown >&2; exit 2;; esac\n"
            << "exec '" << real << "' \"$@\"\n";
    }
    std::filesystem::permissions(dir / "edgelock-sim", std::filesystem::perms::owner_all);
    redis_masters masters(3);
    std::vector<std::string> args = {(dir / "edgelock").string(), "check"};
    for (std::size_t i = 0; i < 3; ++i) args.insert(args.end(), {"--redis", masters[i].url()});
    program_options o = check_options();
    o.env.push_back("EDGELOCK_SIM");  // the simulator beside the copy, not one named
    const program_result r = run_program(args, o);
    std::filesystem::remove_all(dir);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(first_line(r.out, "matrix row").substr(0, 37),
              "matrix row   redlock-5+fencing+guard ");
    EXPECT_EQ(first_line(r.out, "row differs"),
              "row differs  simulated as redlock-5, not redlock-3");
}

// A Redis before 7.0 refuses INFO with several sections: check reads INFO whole.
TEST(CliCheck, ARedis6NodeIsRead) {
    redis_server server;
    edgelock::testing::redis6_front front(server.port());
    const program_result r =
        run_program({EDGELOCK_CLI, "check", "--redis", front.url()}, check_options());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(first_line(r.out, "persistence"), "persistence  AOF, appendfsync always");
    EXPECT_EQ(first_line(r.out, "role "), "role         master");
}

// How long the restart guard holds right now, for the --ttl given: not at all on a durable
// node, a TTL after its start on one without durable data.
TEST(CliCheck, SaysHowLongTheRestartGuardHolds) {
    redis_server durable;
    program_result r =
        run_program({EDGELOCK_CLI, "check", "--redis", durable.url()}, check_options());
    EXPECT_EQ(first_line(r.out, "guard").substr(0, 18), "guard        none:") << r.out;
    redis_server fresh({}, edgelock::testing::persistence::volatile_);
    r = run_program({EDGELOCK_CLI, "check", "--redis", fresh.url(), "--ttl", "1h"},
                    check_options());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const std::string guard = first_line(r.out, "guard");
    EXPECT_EQ(guard.rfind("guard        counts only in 36", 0), 0u) << guard;  // 1h + drift, in s
    EXPECT_NE(guard.find("for leases of 1h"), std::string::npos) << guard;
    r = run_program({EDGELOCK_CLI, "check", "--redis", fresh.url(), "--restart-guard", "off"},
                    check_options());
    EXPECT_EQ(first_line(r.out, "guard"), "guard        off (--restart-guard off)") << r.out;
}

TEST(CliCheck, AnUnreachableNodeIsAnError) {
    const edgelock::testing::refused_port refused;
    const program_result r =
        run_program({EDGELOCK_CLI, "check", "--redis", refused.url()}, check_options());
    EXPECT_EQ(r.exit_code, 69);
    EXPECT_EQ(r.err.rfind("edgelock: cannot check 127.0.0.1:", 0), 0u) << r.err;
    EXPECT_EQ(r.err_lines().size(), 1u) << r.err;
    EXPECT_EQ(first_line(r.out, "error"), "error        connection refused") << r.out;
}

}  // namespace
