// SPDX-License-Identifier: Apache-2.0
// `edgelock status` and `edgelock list` against a real redis-server: the holder an `edgelock
// run` describes in the owner key, the waiters in line, --json, and list's bounded SCAN; each
// exit code docs/CLI.md gives them.
#include <gtest/gtest.h>

#include <unistd.h>

#include <array>
#include <chrono>
#include <string>
#include <vector>

#include "edgelock/testing/redis_client.hpp"
#include "edgelock/testing/redis_process.hpp"
#include "edgelock/testing/refused_port.hpp"
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

class CliStatus : public ::testing::Test {
public:
    std::vector<std::string> edgelock(const std::string& command, std::vector<std::string> args) {
        args.insert(args.begin(), {EDGELOCK_CLI, command, "--redis", server.url()});
        return args;
    }
    static program_options env() {
        program_options o;
        o.env = {"EDGELOCK_REDIS", "EDGELOCK_SENTINEL", "EDGELOCK_MASTER"};
        o.timeout = 30s;
        return o;
    }
    bool contains(const std::string& text, const std::string& part) {
        return text.find(part) != std::string::npos;
    }

    redis_server server;
    redis_client admin{server.port()};
};

// A hold is described too, as `edgelock hold`, and on every Redlock instance that holds its
// token. Seen failing before: `command ""`, and no description where an instance's fence
// counter differed from the token the quorum granted.
TEST(CliStatusRedlock, AHoldIsDescribedOnEveryInstanceThatHoldsItsToken) {
    edgelock::testing::redis_masters masters(3);
    std::vector<std::string> where;
    for (const std::string& url : masters.urls()) where.insert(where.end(), {"--redis", url});
    std::vector<std::string> hold = {EDGELOCK_CLI, "hold", "--name", "rl", "--ttl", "30s"};
    hold.insert(hold.end(), where.begin(), where.end());
    program holder(hold, CliStatus::env());
    const auto described = [&](std::size_t i) {
        return redis_client(masters[i].port()).exists("{rl}:owner");
    };
    for (std::size_t i = 0; i < masters.size(); ++i) {
        // The third instance's acquire may land after the quorum's: wait for its key first.
        ASSERT_TRUE(eventually([&] { return redis_client(masters[i].port()).exists("rl"); }, 10s));
    }
    ASSERT_TRUE(eventually([&] { return described(0) && described(1) && described(2); }, 10s))
        << "an instance holding the token has no description";
    std::vector<std::string> status = {EDGELOCK_CLI, "status", "--name", "rl"};
    status.insert(status.end(), where.begin(), where.end());
    const program_result r = run_program(status, CliStatus::env());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::size_t shown = 0;
    for (std::size_t at = r.out.find("command  edgelock hold\n"); at != std::string::npos;
         at = r.out.find("command  edgelock hold\n", at + 1))
        ++shown;
    EXPECT_EQ(shown, 3u) << r.out;
}

TEST_F(CliStatus, ShowsTheHolderARunDescribesAndTheWaitersInLine) {
    program holder(
        edgelock("run", {"--name", "ops", "--restart-guard", "off", "--", "sleep", "30"}), env());
    ASSERT_TRUE(eventually([&] { return admin.exists("{ops}:owner"); }, 10s))
        << "run wrote no owner key";
    const std::string token = admin.get("ops");
    program waiter(
        edgelock("run", {"--name", "ops", "--restart-guard", "off", "--wait", "30s", "--", "true"}),
        env());
    // The waiter's first attempt (one try, then the wait) may leave the line and come back
    // under a new token: run status until the line's second entry is the waiter it shows.
    std::string waiter_token;
    const auto shows_the_waiter = [&](const std::vector<std::string>& args, program_result& r,
                                      const std::string& shown_as) {
        r = run_program(edgelock("status", args), env());
        const auto line = admin.command({"ZRANGE", "{ops}:queue", "0", "-1"}).elements;
        if (line.size() != 2) return false;
        waiter_token = line[1].text;
        return contains(r.out, shown_as + waiter_token);
    };
    program_result r;
    ASSERT_TRUE(eventually(
        [&] {
            return shows_the_waiter({"--name", "ops"}, r, "waiters  1\n  1      ");
        },
        10s))
        << "the holder at the head is no waiter: " << r.out;
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(contains(r.out, "holder   " + token + "\n")) << r.out;
    std::array<char, 256> host{};
    ::gethostname(host.data(), host.size() - 1);
    EXPECT_TRUE(contains(r.out, "host     " + std::string(host.data()) + "\n")) << r.out;
    EXPECT_TRUE(contains(r.out, "pid      " + std::to_string(holder.pid()) + "\n")) << r.out;
    EXPECT_TRUE(contains(r.out, "command  \"sleep 30\"\n") ||
                contains(r.out, "command  sleep 30\n"))
        << r.out;
    EXPECT_TRUE(contains(r.out, " ago)\n")) << r.out;

    program_result json;
    ASSERT_TRUE(eventually(
        [&] {
            return shows_the_waiter({"--name", "ops", "--json"}, json,
                                    "\"waiters\":[{\"position\":1,\"token\":\"");
        },
        10s))
        << json.out;
    EXPECT_EQ(json.exit_code, 0) << json.err;
    EXPECT_EQ(json.out.rfind("{\"lock\":\"ops\",\"held\":true,\"instances\":[{", 0), 0u)
        << json.out;
    EXPECT_TRUE(contains(json.out, "\"token\":\"" + token + "\"")) << json.out;
    EXPECT_TRUE(contains(json.out, "\"pid\":" + std::to_string(holder.pid()) + ",")) << json.out;
    EXPECT_EQ(json.out.back(), '\n');
    EXPECT_EQ(json.out.find('\n'), json.out.size() - 1) << "one line";
}

// A description names the token it describes: another holder of the key is shown without it.
TEST_F(CliStatus, ADescriptionOfAnotherTokenIsNotShown) {
    admin.command({"SET", "ops", std::string(32, 'b'), "PX", "30000"});
    admin.command({"HSET", "{ops}:owner", "token", std::string(32, 'a'), "host", "elsewhere", "pid",
                   "1", "command", "old", "since_ms", "1"});
    const program_result r = run_program(edgelock("status", {"--name", "ops"}), env());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_FALSE(contains(r.out, "elsewhere")) << r.out;
    EXPECT_TRUE(contains(r.out, "waiters  0\n")) << r.out;

    const program_result free =
        run_program(edgelock("status", {"--name", "gone", "--json"}), env());
    EXPECT_EQ(free.exit_code, 1);
    EXPECT_TRUE(contains(free.out, "\"held\":false")) << free.out;
    EXPECT_TRUE(contains(free.out, "\"token\":null")) << free.out;
}

TEST_F(CliStatus, ListShowsHeldLocksUnderAPrefixAndNothingElse) {
    program holder(
        edgelock("run", {"--name", "a:1", "--restart-guard", "off", "--", "sleep", "30"}), env());
    ASSERT_TRUE(eventually([&] { return admin.exists("{a:1}:owner"); }, 10s));
    admin.command(
        {"SET", "a:2", "0123456789abcdef0123456789abcdef", "PX", "60000"});  // another client's
    admin.set("a:plain", "hello");
    admin.set("a:UPPER", "0123456789ABCDEF0123456789ABCDEF");
    admin.command({"ZADD", "a:set", "1", "x"});
    admin.command({"SET", "b:1", "0123456789abcdef0123456789abcdef", "PX", "60000"});

    const program_result r = run_program(edgelock("list", {"--prefix", "a:"}), env());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(contains(r.out, "\na:1  ")) << r.out;
    EXPECT_TRUE(contains(r.out, " pid " + std::to_string(holder.pid()) + " \"sleep 30\"\n"))
        << r.out;
    EXPECT_TRUE(contains(r.out, "\na:2  ")) << r.out;
    for (const char* absent : {"a:plain", "a:UPPER", "a:set", "b:1", "fence", "owner", "stopped"}) {
        EXPECT_FALSE(contains(r.out, absent)) << absent << " in " << r.out;
    }
    const program_result all = run_program(edgelock("list", {}), env());
    EXPECT_EQ(all.exit_code, 0) << all.err;
    EXPECT_TRUE(contains(all.out, "\nb:1  ")) << all.out;

    const program_result none = run_program(edgelock("list", {"--prefix", "zz"}), env());
    EXPECT_EQ(none.exit_code, 1) << none.err;
    EXPECT_TRUE(contains(none.out, "no locks held")) << none.out;
}

TEST_F(CliStatus, ListStopsAtItsBoundAndSaysSo) {
    admin.command({"EVAL", "for i = 1, 10100 do redis.call('SET', 'x:' .. i, 'v') end", "0"});
    const program_result r = run_program(edgelock("list", {"--prefix", "x:"}), env());
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_TRUE(contains(r.out, "stopped after examining 10000 keys")) << r.out;
}

TEST_F(CliStatus, UnreachableRefusedAndBadInputExitCodes) {
    const edgelock::testing::refused_port refused;
    const std::string nobody = refused.url();
    for (const std::string command : {"status", "list"}) {
        SCOPED_TRACE(command);
        std::vector<std::string> args = {EDGELOCK_CLI, command, "--redis", nobody};
        if (command == "status") args.insert(args.end(), {"--name", "n"});
        program_result r = run_program(args, env());
        EXPECT_EQ(r.exit_code, 69) << r.err;
        EXPECT_EQ(r.err_lines().size(), 1u) << r.err;

        args[3] = server.url("wrong-password");
        r = run_program(args, env());
        EXPECT_EQ(r.exit_code, 76) << r.err;
        EXPECT_EQ(r.err_lines().size(), 1u) << r.err;
    }
    EXPECT_EQ(run_program({EDGELOCK_CLI, "list", "--name", "n"}, env()).exit_code, 64);
    EXPECT_EQ(
        run_program({EDGELOCK_CLI, "status", "--prefix", "n", "--name", "n"}, env()).exit_code, 64);
    EXPECT_EQ(
        run_program({EDGELOCK_CLI, "run", "--name", "{n}:owner", "--", "true"}, env()).exit_code,
        64);
}

}  // namespace
