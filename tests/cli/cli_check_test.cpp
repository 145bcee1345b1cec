// `edgelock check` against real redis-server and redis-sentinel processes: per-node facts, the
// simulator's verdict lines for the deployment's matrix row, advice, --json and exit codes.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "edgelock/testing/redis_process.hpp"
#include "program_run.hpp"

namespace {

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

// The lines of `out` that start with `prefix`.
std::vector<std::string> lines_starting(const std::string& out, const std::string& prefix) {
    std::vector<std::string> found;
    std::size_t start = 0;
    while (start < out.size()) {
        const std::size_t end = std::min(out.find('\n', start), out.size());
        const std::string line = out.substr(start, end - start);
        if (line.rfind(prefix, 0) == 0) found.push_back(line);
        start = end + 1;
    }
    return found;
}

TEST(CliCheck, ASingleDurableNodeHasTheFencedGuardedRowsLimitsAndNothingWorse) {
    redis_server server;  // AOF, appendfsync always
    const program_result r =
        run_program({EDGELOCK_CLI, "check", "--redis", server.url()}, check_options());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err, "");
    EXPECT_EQ(lines_starting(r.out, "matrix row")[0].substr(0, 33), "matrix row   single+fencing+guard");
    EXPECT_EQ(lines_starting(r.out, "node ")[0], "node         127.0.0.1:" + std::to_string(server.port()));
    EXPECT_EQ(lines_starting(r.out, "role ")[0], "role         master");
    EXPECT_EQ(lines_starting(r.out, "persistence")[0], "persistence  AOF, appendfsync always");
    EXPECT_EQ(lines_starting(r.out, "eviction")[0], "eviction     no memory limit");
    // The verdicts are the simulator's for this row (README.md's grid).
    EXPECT_EQ(lines_starting(r.out, "survives")[0], "survives     S2 S3 S5 S6 S8 S9 S11");
    EXPECT_EQ(lines_starting(r.out, "fails")[0], "fails        S1:O S4:OH S7:OH");
    EXPECT_EQ(lines_starting(r.out, "not exposed")[0], "not exposed  S10: no node may evict keys");
    EXPECT_TRUE(lines_starting(r.out, "advice").empty()) << r.out;
    EXPECT_EQ(lines_starting(r.out, "verdict")[0].substr(0, 15), "verdict      ok");
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
    for (std::size_t at = r.out.find("\"address\""); at != std::string::npos; at = r.out.find("\"address\"", at + 1)) ++nodes;
    EXPECT_EQ(nodes, 5u) << r.out;
    EXPECT_NE(r.out.find("\"row\":\"redlock-5+fencing+guard\""), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("\"survives\":[\"S2\",\"S3\",\"S5\",\"S6\",\"S8\",\"S9\",\"S11\"]"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("\"fails\":[\"S1:O\",\"S4:OH\",\"S7:OH\",\"S10:OH\"],\"not_exposed\":[]"), std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("\"advice\":[\"127.0.0.1:" + std::to_string(evicting.port()) +
                         ": set maxmemory-policy noeviction\"]"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("\"verdict\":\"worse\""), std::string::npos) << r.out;
}

TEST(CliCheck, SentinelWithoutWaitGetsTheSentinelRowAndAdviceToUseWait) {
    edgelock::testing::sentinel_topology topology;
    std::vector<std::string> args = {EDGELOCK_CLI, "check", "--master",
                                     edgelock::testing::sentinel_topology::master_name};
    for (const std::string& url : topology.sentinel_urls()) args.insert(args.end(), {"--sentinel", url});
    program_result r = run_program(args, check_options());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(lines_starting(r.out, "fails")[0], "fails        S1:OS S2:S S4:OSH S5:OSH S6:OSH S7:OH S9:OSH");
    EXPECT_EQ(lines_starting(r.out, "replication")[0].substr(0, 26), "replication  1 replica(s),");
    EXPECT_EQ(lines_starting(r.out, "advice").back(),
              "advice       use WAIT (replicas_to_wait 1): a failover loses keys without it");

    args.insert(args.end(), {"--wait-replicas", "1"});
    r = run_program(args, check_options());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(lines_starting(r.out, "fails")[0], "fails        S1:OS S2:S S4:OSH S7:OH S9:OSH");
}

TEST(CliCheck, AnUnreachableNodeIsAnError) {
    const program_result r = run_program(
        {EDGELOCK_CLI, "check", "--redis", "redis://127.0.0.1:" + std::to_string(edgelock::testing::free_port())});
    EXPECT_EQ(r.exit_code, 69);
    EXPECT_EQ(r.err.rfind("edgelock: cannot check 127.0.0.1:", 0), 0u) << r.err;
    EXPECT_EQ(r.out, "");
}

}  // namespace
