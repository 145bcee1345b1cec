// SPDX-License-Identifier: Apache-2.0
// `edgelock run` and `hold` with --metrics-file against a real redis-server (tests/support):
// the file each writes, read back by the strict reader (exposition_check.hpp) and by promtool
// when the build found it, after a run, a busy lock, a loss, and while a hold lasts.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "edgelock/testing/redis_client.hpp"
#include "edgelock/testing/redis_process.hpp"
#include "exposition_check.hpp"
#include "program_run.hpp"

namespace {

using namespace std::chrono_literals;
using edgelock::cli_tests::exposition;
using edgelock::cli_tests::program;
using edgelock::cli_tests::program_options;
using edgelock::cli_tests::program_result;
using edgelock::cli_tests::run_program;
using edgelock::testing::eventually;
using edgelock::testing::redis_client;
using edgelock::testing::redis_server;

class CliMetrics : public ::testing::Test {
public:
    void SetUp() override {
        dir = std::filesystem::temp_directory_path() /
              ("edgelock-metrics-run-" + std::to_string(::getpid()) + "-" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name());
        std::filesystem::create_directories(dir);
        file = (dir / "lock.prom").string();
    }
    void TearDown() override { std::filesystem::remove_all(dir); }

    std::vector<std::string> edgelock(const std::string& command, std::vector<std::string> args) {
        args.insert(args.begin(),
                    {EDGELOCK_CLI, command, "--redis", server.url(), "--metrics-file", file});
        return args;
    }
    static program_options env() {
        program_options o;
        o.env = {"EDGELOCK_REDIS", "EDGELOCK_SENTINEL", "EDGELOCK_MASTER", "EDGELOCK_FENCE"};
        o.timeout = 30s;
        return o;
    }
    std::string text() const {
        std::ifstream in(file);
        std::ostringstream read;
        read << in.rdbuf();
        return read.str();
    }
    // The file as both readers take it; a sample's value by its series, labels sorted by name.
    exposition metrics() {
        const std::string now = text();
        exposition parsed;
        EXPECT_EQ(edgelock::cli_tests::check_exposition(now, parsed), "") << now;
        std::string output;
        const int promtool = edgelock::cli_tests::promtool_check(dir.string(), now, output);
        EXPECT_TRUE(promtool <= 0) << "promtool refused it: " << output << now;
        return parsed;
    }
    double sample(const exposition& m, const std::string& name, const std::string& labels = "") {
        const std::string own = "lock=\"" + lock + "\"";
        const std::string sorted = labels.empty() ? own
                                   : labels < own ? labels + "," + own
                                                  : own + "," + labels;
        const std::string key = name + "{" + sorted + "}";
        const auto found = m.samples.find(key);
        EXPECT_NE(found, m.samples.end()) << key;
        return found == m.samples.end() ? -1 : found->second;
    }
    // Only the metrics file: no temporary file left beside it.
    void expect_alone() {
        std::size_t files = 0;
        for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir)) ++files;
        EXPECT_EQ(files, 1u);
    }

    const std::string lock = "metered";
    std::filesystem::path dir;
    std::string file;
    redis_server server;
    redis_client admin{server.port()};
};

TEST_F(CliMetrics, ARunCountsItsAcquireAndRelease) {
    const program_result r = run_program(edgelock("run", {"--name", lock, "--", "true"}), env());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const exposition m = metrics();
    EXPECT_EQ(sample(m, "edgelock_acquires_total", "outcome=\"acquired\""), 1);
    EXPECT_EQ(sample(m, "edgelock_acquires_total", "outcome=\"busy\""), 0);
    EXPECT_EQ(sample(m, "edgelock_releases_total", "outcome=\"released\""), 1);
    EXPECT_EQ(sample(m, "edgelock_acquire_latency_seconds_count"), 1);
    EXPECT_EQ(sample(m, "edgelock_held"), 0) << "the last write comes after the release";
    EXPECT_GT(sample(m, "edgelock_fence"), 0);
    EXPECT_GE(sample(m, "edgelock_connects_total"), 1);
    expect_alone();
}

TEST_F(CliMetrics, ABusyLockIsWrittenToo) {
    admin.command({"SET", lock, "0123456789abcdef0123456789abcdef", "PX", "30000"});
    const program_result r =
        run_program(edgelock("run", {"--name", lock, "-n", "--", "true"}), env());
    ASSERT_EQ(r.exit_code, 75) << r.err;
    const exposition m = metrics();
    EXPECT_EQ(sample(m, "edgelock_acquires_total", "outcome=\"busy\""), 1);
    EXPECT_EQ(sample(m, "edgelock_acquires_total", "outcome=\"acquired\""), 0);
    EXPECT_EQ(sample(m, "edgelock_held"), 0);
    expect_alone();
}

TEST_F(CliMetrics, ALossIsCountedByItsCause) {
    program run(edgelock("run", {"--name", lock, "--ttl", "900ms", "--", "sleep", "30"}), env());
    ASSERT_TRUE(eventually([&] { return admin.exists(lock); }, 10s));
    admin.command({"DEL", lock});
    const program_result r = run.wait();
    ASSERT_EQ(r.exit_code, 80) << r.err;
    const exposition m = metrics();
    EXPECT_EQ(sample(m, "edgelock_losses_total", "cause=\"token_gone\""), 1);
    EXPECT_EQ(sample(m, "edgelock_held"), 0);
}

// The file follows the hold (written on the events, not only at exit), and SIGTERM's exit
// writes it once more.
TEST_F(CliMetrics, AHoldIsShownWhileItLastsAndAfterItsSignal) {
    program hold(edgelock("hold", {"--name", lock, "--ttl", "900ms"}), env());
    ASSERT_TRUE(eventually(
        [&] {
            return text().find("edgelock_renewals_total{lock=\"metered\"} 1\n") !=
                   std::string::npos;
        },
        10s))
        << text();
    EXPECT_EQ(sample(metrics(), "edgelock_held"), 1);
    ::kill(hold.pid(), SIGTERM);
    const program_result r = hold.wait();
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const exposition m = metrics();
    EXPECT_EQ(sample(m, "edgelock_held"), 0);
    EXPECT_EQ(sample(m, "edgelock_releases_total", "outcome=\"released\""), 1);
    EXPECT_GE(sample(m, "edgelock_renewals_total"), 1);
}

// A waiter ended by SIGTERM (it leaves the line, then dies of the signal) writes its cancelled
// acquire on the way out.
TEST_F(CliMetrics, ASignalDuringTheWaitIsWritten) {
    admin.command({"SET", lock, "0123456789abcdef0123456789abcdef", "PX", "30000"});
    program run(edgelock("run", {"--name", lock, "--wait", "20s", "--", "true"}), env());
    ASSERT_TRUE(eventually(
        [&] { return text().find("lock=\"metered\",outcome=\"busy\"} 1\n") != std::string::npos; },
        10s))
        << "the first attempt, busy, is written while the wait goes on: " << text();
    ::kill(run.pid(), SIGTERM);
    const program_result r = run.wait();
    ASSERT_EQ(r.exit_code, 128 + SIGTERM) << r.err;
    const exposition m = metrics();
    EXPECT_EQ(sample(m, "edgelock_acquires_total", "outcome=\"cancelled\""), 1);
    EXPECT_EQ(sample(m, "edgelock_acquires_total", "outcome=\"acquired\""), 0);
    EXPECT_EQ(sample(m, "edgelock_held"), 0);
}

// A write that fails once the run is under way (here CMD removes the directory) is one line on
// stderr, however many writes fail, and CMD's status stays the exit code. Which step fails (the
// temporary file's write or its rename) depends on when the removal lands; a write that lands
// while rm walks the directory can make one rm fail, so CMD removes until the directory is gone.
TEST_F(CliMetrics, AFailedWriteIsOneLineAndTheRunGoesOn) {
    const std::filesystem::path sub = dir / "sub";
    std::filesystem::create_directories(sub);
    file = (sub / "lock.prom").string();
    const std::string remove_then_exit_3 =
        "until rm -rf \"$1\" 2>/dev/null; do sleep 0.01; done; exit 3";
    const program_result r = run_program(
        edgelock("run", {"--name", lock, "--", "sh", "-c", remove_then_exit_3, "sh", sub.string()}),
        env());
    EXPECT_EQ(r.exit_code, 3) << r.err;
    ASSERT_EQ(r.err_lines().size(), 1u) << r.err;
    EXPECT_NE(r.err.find("edgelock: --metrics-file: cannot "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("the command goes on"), std::string::npos) << r.err;
    EXPECT_FALSE(admin.exists(lock)) << "released as usual";
}

TEST_F(CliMetrics, AMissingDirectoryIsAUsageError) {
    file = (dir / "missing" / "lock.prom").string();
    const program_result r = run_program(edgelock("run", {"--name", lock, "--", "true"}), env());
    EXPECT_EQ(r.exit_code, 64);
    ASSERT_EQ(r.err_lines().size(), 1u) << r.err;
    EXPECT_NE(r.err.find("bad --metrics-file"), std::string::npos) << r.err;
    EXPECT_FALSE(admin.exists(lock)) << "refused before the lock was taken";
}

}  // namespace
