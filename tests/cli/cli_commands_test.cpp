// SPDX-License-Identifier: Apache-2.0
// The edgelock binary without Redis: help, bad input, unreachable servers, sim forwarding.
// Every failure must be one line on stderr with its own exit code, and nothing may hang.
#include <gtest/gtest.h>

#include <sys/socket.h>
#include <netinet/in.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "edgelock/testing/redis_process.hpp"
#include "edgelock/testing/refused_port.hpp"
#include "program_run.hpp"

namespace {

using edgelock::cli_tests::program_options;
using edgelock::cli_tests::program_result;
using edgelock::cli_tests::run_program;

std::vector<std::string> edgelock(std::vector<std::string> args) {
    args.insert(args.begin(), EDGELOCK_CLI);
    return args;
}

// No EDGELOCK_* from the caller's shell.
program_options clean_env() {
    program_options o;
    o.env = {"EDGELOCK_REDIS", "EDGELOCK_SENTINEL", "EDGELOCK_CLUSTER", "EDGELOCK_MASTER",
             "EDGELOCK_SIM"};
    o.timeout = std::chrono::seconds(20);
    return o;
}

void expect_one_line_failure(const program_result& r, int code, const std::string& fragment) {
    EXPECT_FALSE(r.timed_out);
    EXPECT_EQ(r.exit_code, code) << r.err;
    ASSERT_EQ(r.err_lines().size(), 1u) << r.err;
    EXPECT_EQ(r.err.rfind("edgelock: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(fragment), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST(CliHelp, EveryCommandHasHelpWithExitCodes) {
    for (const std::vector<std::string>& args :
         std::vector<std::vector<std::string>>{{"--help"},
                                               {"help"},
                                               {"run", "--help"},
                                               {"status", "--help"},
                                               {"release", "--help"},
                                               {"sim", "--help"},
                                               {"help", "run"}}) {
        const program_result r = run_program(edgelock(args), clean_env());
        EXPECT_EQ(r.exit_code, 0) << args[0];
        EXPECT_NE(r.out.find("usage"), std::string::npos) << args[0];
        EXPECT_TRUE(r.err.empty()) << r.err;
    }
    const program_result overview = run_program(edgelock({"--help"}), clean_env());
    EXPECT_NE(overview.out.find("Exit codes"), std::string::npos);
    EXPECT_NE(overview.out.find("EDGELOCK_REDIS"), std::string::npos);
    const program_result version = run_program(edgelock({"--version"}), clean_env());
    EXPECT_EQ(version.exit_code, 0);
    EXPECT_EQ(version.out.rfind("edgelock ", 0), 0u);
}

TEST(CliBadInput, OneLineAndExit64) {
    struct bad {
        std::vector<std::string> args;
        std::string fragment;
    };
    const std::vector<bad> cases = {
        {{}, "missing command"},
        {{"frobnicate"}, "unknown command"},
        {{"run", "--name", "n", "--frob", "--", "true"}, "unknown flag --frob"},
        {{"run", "--name", "n", "--ttl", "30", "--", "true"}, "bad duration \"30\" for --ttl"},
        {{"run", "--name", "n", "--wait", "1.5s", "--", "true"},
         "bad duration \"1.5s\" for --wait"},
        {{"run", "--name", "n", "--redis", "redis://host:70000", "--", "true"},
         "bad --redis address"},
        {{"run", "--name", "n", "--redis", "localhost:6379", "--redis", "other:6379", "--", "true"},
         "odd number"},
        {{"run", "--name", "n"}, "missing CMD"},
        {{"run", "--name", "n", "--"}, "missing CMD"},
        {{"run", "--", "true"}, "missing --name"},
        {{"status"}, "missing --name"},
        {{"release", "--name", "n"}, "missing --token"},
        {{"run", "--name", "n", "--ttl", "3ms", "--", "true"}, "--ttl must be between 100ms"},
        {{"run", "--name", "n", "--redis", "127.0.0.1:7001", "--redis", "127.0.0.1:7001", "--redis",
          "127.0.0.1:7001", "--", "true"},
         "--redis names \"127.0.0.1:7001\" twice"},
        {{"run", "--name", "{n}:fence", "--", "true"}, "is the fence key of lock"},
    };
    for (const bad& c : cases) {
        SCOPED_TRACE(c.fragment);
        expect_one_line_failure(run_program(edgelock(c.args), clean_env()), 64, c.fragment);
    }
    program_options env = clean_env();
    env.env.push_back("EDGELOCK_REDIS=redis://a:1,nonsense://b");
    expect_one_line_failure(run_program(edgelock({"status", "--name", "n"}), env), 64,
                            "EDGELOCK_REDIS");
    for (const char* variable : {"EDGELOCK_REDIS=", "EDGELOCK_SENTINEL=", "EDGELOCK_CLUSTER="}) {
        program_options empty = clean_env();
        empty.env.push_back(variable);
        SCOPED_TRACE(variable);
        expect_one_line_failure(run_program(edgelock({"run", "--name", "n", "--", "true"}), empty),
                                64, "is set but names no address");
    }
}

TEST(CliUnreachable, RefusedFailsAtOnceWithOneLine) {
    const edgelock::testing::refused_port refused;
    const std::string nobody = refused.url();
    for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
             {"run", "--name", "n", "--wait", "0", "--redis", nobody, "--", "true"},
             {"status", "--name", "n", "--redis", nobody},
             {"release", "--name", "n", "--token", "t", "--redis", nobody}}) {
        SCOPED_TRACE(args[0]);
        const program_result r = run_program(edgelock(args), clean_env());
        expect_one_line_failure(r, 69, "connection refused");
        EXPECT_LT(r.elapsed, std::chrono::seconds(5))
            << "--wait 0 does not retry an unreachable server";
    }
}

// Names, addresses and master names reach the messages of a failed run, status or release
// escaped: still one line.
TEST(CliUnreachable, EchoedInputStaysOnOneLine) {
    const edgelock::testing::refused_port refused;
    const std::string nobody = refused.url();
    struct echoed {
        std::vector<std::string> args;
        std::string fragment;
    };
    const std::vector<echoed> cases = {
        {{"run", "--name", "a\nb", "-n", "--redis", nobody, "--", "true"},
         "cannot acquire lock \"a\\nb\""},
        {{"status", "--name", "a\nb", "--redis", nobody}, "cannot read lock \"a\\nb\""},
        {{"release", "--name", "a\rb", "--token", "t", "--redis", nobody},
         "cannot release lock \"a\\rb\""},
        {{"run", "--name", "n", "-n", "--redis", "no-such\x01host.invalid:1", "--", "true"},
         "no-such\\x01host.invalid:1"},
        {{"run", "--name", "n", "-n", "--sentinel", nobody, "--master", "m\ny", "--", "true"},
         "master \"m\\ny\""},
        {{"status", "--name", "n", "--sentinel", nobody, "--master", "m\ny"}, "master \"m\\ny\""},
    };
    for (const echoed& c : cases) {
        SCOPED_TRACE(c.fragment);
        expect_one_line_failure(run_program(edgelock(c.args), clean_env()), 69, c.fragment);
    }
}

// A server that accepts TCP connections and never answers: an attempt is bounded by
// --redis-timeout, not by the ttl; a run retries within --wait, and no longer.
TEST(CliUnreachable, SilentServerIsBoundedByTheTimeout) {
    const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(listener, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    ASSERT_EQ(::listen(listener, 16), 0);
    socklen_t size = sizeof address;
    ASSERT_EQ(::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &size), 0);
    const std::string silent = "redis://127.0.0.1:" + std::to_string(ntohs(address.sin_port));

    for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
             {"run", "--name", "n", "--wait", "0", "--redis-timeout", "300ms", "--redis", silent,
              "--", "true"},
             {"run", "--name", "n", "--wait", "2s", "--redis-timeout", "300ms", "--redis", silent,
              "--", "true"},
             {"status", "--name", "n", "--redis-timeout", "300ms", "--redis", silent}}) {
        SCOPED_TRACE(args[0]);
        const program_result r = run_program(edgelock(args), clean_env());
        // The kernel took the connection: what timed out is the server's answer.
        expect_one_line_failure(r, 69, "connected, but the server did not answer");
        EXPECT_LT(r.elapsed, std::chrono::seconds(10));
    }
    ::close(listener);
}

// Under an emulator (a cross build) EDGELOCK_CLI runs a copy of edgelock under qemu-user,
// next to a script that starts edgelock-sim under qemu too (cmake/runnable.cmake).
bool emulated() { return std::string(EDGELOCK_CLI) != EDGELOCK_CLI_FILE; }

// The OS refusing a resource edgelock needs (here: file descriptors, so no pipe for its
// signal handling) is an internal error, exit 70, said on one line.
TEST(CliInternal, AResourceTheOsRefusesIsExit70) {
    if (emulated()) GTEST_SKIP() << "the emulator itself needs more descriptors than the limit";
    const program_result r = run_program(
        {"/bin/sh", "-c",
         "for fd in 3 4 5 6 7 8 9; do eval \"exec $fd>&-\"; done; ulimit -n 4; exec \"$0\" \"$@\"",
         EDGELOCK_CLI, "run", "--name", "x", "--redis", "redis://127.0.0.1:1", "--", "true"});
    EXPECT_EQ(r.exit_code, 70) << r.err;
    ASSERT_EQ(r.err_lines().size(), 1u) << r.err;
    EXPECT_EQ(r.err.rfind("edgelock: cannot create a pipe: ", 0), 0u) << r.err;
}

TEST(CliSim, ForwardsArgumentsAndExitStatus) {
    const program_result matrix =
        run_program(edgelock({"sim", "run", "--scenario", "S3", "--config", "single", "--seed", "1",
                              "--quiet"}),
                    clean_env());
    EXPECT_EQ(matrix.exit_code, 0) << matrix.err;
    EXPECT_NE(matrix.out.find("trace hash"), std::string::npos) << matrix.out;

    const program_result unsafe =
        run_program(edgelock({"sim", "run", "--scenario", "S1", "--config", "single", "--seed", "1",
                              "--quiet"}),
                    clean_env());
    EXPECT_EQ(unsafe.exit_code, 1) << "a violated check is the simulator's exit 1, passed through";
    EXPECT_NE(unsafe.out.find("overlap=VIOLATED"), std::string::npos) << unsafe.out;
}

TEST(CliSim, HelpListsEveryScenarioAndUsageErrorsExit2) {
    if (emulated()) GTEST_SKIP() << "edgelock cannot exec edgelock-sim under qemu-user";
    const program_result help = run_program(edgelock({"sim", "--help"}), clean_env());
    EXPECT_EQ(help.exit_code, 0) << help.err;
    const program_result usage = run_program({EDGELOCK_SIM_FILE, "--help"}, clean_env());
    EXPECT_EQ(usage.exit_code, 0) << usage.err;
    EXPECT_NE(usage.out.find("S1..S11"), std::string::npos) << usage.out;
    EXPECT_NE(usage.out.find("2 a usage error"), std::string::npos) << usage.out;
    for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
             {"sim", "frobnicate"},
             {"sim", "matrix", "--config", "redlock-4"},
             {"sim", "run", "--scenario", "S12", "--config", "single"},
             {"sim", "matrix", "--runs"}}) {
        SCOPED_TRACE(args[1]);
        const program_result r = run_program(edgelock(args), clean_env());
        EXPECT_EQ(r.exit_code, 2) << r.err;
        EXPECT_NE(r.err.find("usage:"), std::string::npos) << r.err;
    }
}

// Redlock over 3 and 7 masters and Sentinel with fencing are simulated when named, and are
// in no row of the default matrix (the README's grid).
TEST(CliSim, OneOffConfigurationsRunByNameOnly) {
    if (emulated()) GTEST_SKIP() << "edgelock cannot exec edgelock-sim under qemu-user";
    for (const char* config :
         {"redlock-3+fencing+guard", "redlock-7", "sentinel+WAIT+fencing+guard"}) {
        SCOPED_TRACE(config);
        const program_result r = run_program(
            edgelock({"sim", "matrix", "--config", config, "--scenario", "S3", "--runs", "1"}),
            clean_env());
        EXPECT_EQ(r.exit_code, 0) << r.err;
        EXPECT_EQ(r.out.rfind(std::string("S3 ") + config + " runs=2 violating=0", 0), 0u) << r.out;
    }
    const program_result matrix =
        run_program(edgelock({"sim", "matrix", "--scenario", "S3", "--runs", "0"}), clean_env());
    EXPECT_EQ(matrix.exit_code, 0) << matrix.err;
    EXPECT_EQ(matrix.out.find("redlock-3"), std::string::npos) << matrix.out;
    EXPECT_NE(matrix.out.find("S3 sentinel+WAIT+guard+fair runs=1"), std::string::npos)
        << matrix.out;
}

TEST(CliSim, MissingSimulatorIsExit127) {
    if (emulated()) GTEST_SKIP() << "runs a copy of the binary itself";
    // A copy of edgelock alone in a directory, with an empty PATH: nothing to forward to.
    const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                      ("edgelock-cli-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const std::filesystem::path copy = dir / "edgelock";
    std::filesystem::copy_file(EDGELOCK_CLI_FILE, copy,
                               std::filesystem::copy_options::overwrite_existing);
    program_options o = clean_env();
    o.env.push_back("PATH=" + dir.string() + "/nothing-here");
    const program_result r = run_program({copy.string(), "sim", "matrix"}, o);
    std::filesystem::remove_all(dir);
    expect_one_line_failure(r, 127, "edgelock-sim not found");
}

TEST(CliSim, EdgelockSimNamesTheSimulatorBeforeTheOneBesideIt) {
    const std::filesystem::path script = std::filesystem::temp_directory_path() /
                                         ("edgelock-sim-chosen-" + std::to_string(::getpid()));
    {
        std::ofstream out(script);
        out << "#!/bin/sh\necho \"chosen $*\"\nexit 3\n";
    }
    std::filesystem::permissions(script, std::filesystem::perms::owner_all);
    program_options o = clean_env();
    o.env.push_back("EDGELOCK_SIM=" + script.string());
    const program_result chosen = run_program(edgelock({"sim", "matrix", "--runs", "1"}), o);
    o.env.back() = "EDGELOCK_SIM=";  // empty: as if unset
    const program_result beside = run_program(
        edgelock({"sim", "matrix", "--runs", "0", "--scenario", "S1", "--config", "single"}), o);
    std::filesystem::remove(script);
    EXPECT_EQ(chosen.exit_code, 3) << chosen.err;
    EXPECT_EQ(chosen.out, "chosen matrix --runs 1\n");
    EXPECT_EQ(beside.exit_code, 0) << beside.err;
    EXPECT_EQ(beside.out.rfind("S1 single runs=1 ", 0), 0u) << beside.out;
}

TEST(CliSim, AnEdgelockSimThatCannotRunIsSaidInOneLine) {
    program_options o = clean_env();
    o.env.push_back("EDGELOCK_SIM=/nonexistent/edgelock-sim");
    expect_one_line_failure(run_program(edgelock({"sim", "matrix"}), o), 127,
                            "EDGELOCK_SIM names /nonexistent/edgelock-sim, which cannot be run: "
                            "No such file or directory");
}

}  // namespace
