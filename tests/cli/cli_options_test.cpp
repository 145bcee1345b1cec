// SPDX-License-Identifier: Apache-2.0
// The edgelock command line, parsed without running anything: every rule of options.hpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <string>
#include <vector>

#include "edgelock/limits.hpp"
#include "edgelock/lock.hpp"
#include "edgelock/session/limits.hpp"
#include "exit_codes.hpp"
#include "help.hpp"
#include "options.hpp"

namespace {

using namespace edgelock::cli;

parse_result parse(std::vector<std::string> args, environment env = {}) {
    return parse_command_line(args, env);
}

void expect_usage_error(const std::vector<std::string>& args, const std::string& fragment,
                        environment env = {}) {
    const parse_result r = parse(args, env);
    EXPECT_EQ(r.exit_code, exit_usage) << fragment;
    EXPECT_NE(r.error.find(fragment), std::string::npos) << "error: " << r.error;
    for (char c : r.error) {
        const auto byte = static_cast<unsigned char>(c);
        EXPECT_TRUE(byte >= 0x20 && byte != 0x7f) << "one line without control bytes: " << r.error;
    }
}

TEST(Duration, AcceptsTheDocumentedUnits) {
    std::int64_t ms = -1;
    ASSERT_TRUE(parse_duration("500ms", ms));
    EXPECT_EQ(ms, 500);
    ASSERT_TRUE(parse_duration("30s", ms));
    EXPECT_EQ(ms, 30'000);
    ASSERT_TRUE(parse_duration("2m", ms));
    EXPECT_EQ(ms, 120'000);
    ASSERT_TRUE(parse_duration("1h", ms));
    EXPECT_EQ(ms, 3'600'000);
    ASSERT_TRUE(parse_duration("0", ms));
    EXPECT_EQ(ms, 0);
    ASSERT_TRUE(parse_duration("24h", ms));
    EXPECT_EQ(ms, duration_ms_max);
}

TEST(Duration, RefusesEverythingElse) {
    std::int64_t ms = 0;
    for (const char* bad : {"", "10", "s", "-1s", "1.5s", "10 s", "10sec", "3d", "25h",
                            "99999999999999999999s", "1ms2", "0x10s"}) {
        EXPECT_FALSE(parse_duration(bad, ms)) << bad;
    }
}

TEST(Duration, UnboundedParsesPastADayButNotPastInt64) {
    std::int64_t ms = 0;
    ASSERT_TRUE(parse_duration_unbounded("25h", ms));
    EXPECT_EQ(ms, 25 * 3'600'000LL);
    EXPECT_FALSE(parse_duration("25h", ms));
    for (const char* bad : {"", "10", "1.5s", "99999999999999999999s", "9223372036854775807h"}) {
        EXPECT_FALSE(parse_duration_unbounded(bad, ms)) << bad;
    }
}

TEST(Duration, FormatsShortestExactForm) {
    EXPECT_EQ(format_duration(0), "0ms");
    EXPECT_EQ(format_duration(250), "250ms");
    EXPECT_EQ(format_duration(1'000), "1s");
    EXPECT_EQ(format_duration(1'500), "1.5s");
    EXPECT_EQ(format_duration(29'874), "29.874s");
    EXPECT_EQ(format_duration(10'050), "10.05s");
    EXPECT_EQ(format_duration(120'000), "2m");
    EXPECT_EQ(format_duration(7'200'000), "2h");
}

TEST(Signal, NamesAndNumbers) {
    int s = 0;
    ASSERT_TRUE(parse_signal("TERM", s));
    EXPECT_EQ(s, SIGTERM);
    ASSERT_TRUE(parse_signal("SIGINT", s));
    EXPECT_EQ(s, SIGINT);
    ASSERT_TRUE(parse_signal("9", s));
    EXPECT_EQ(s, 9);
    for (const char* bad : {"", "TERMINATE", "0", "65", "-1", "SIG"})
        EXPECT_FALSE(parse_signal(bad, s)) << bad;
    ASSERT_TRUE(parse_signal("64", s));
    EXPECT_EQ(s, 64);
    ASSERT_TRUE(parse_signal("SIG09", s)) << "two digits, a leading zero";
    EXPECT_EQ(s, 9);
    for (const char* bad : {"+1", " 9", "9 ", "9x", "100", "-0", "00", "SIG+9"}) {
        EXPECT_FALSE(parse_signal(bad, s)) << bad;
    }
    EXPECT_EQ(signal_name(SIGTERM), "SIGTERM");
    EXPECT_EQ(signal_name(40), "signal 40");
}

TEST(SplitList, CommasAndSpaces) {
    EXPECT_EQ(split_list("a,b c\td,,"), (std::vector<std::string>{"a", "b", "c", "d"}));
    EXPECT_TRUE(split_list("  ").empty());
}

TEST(Run, Defaults) {
    const parse_result r = parse({"run", "--name", "job", "--", "echo", "hi"});
    ASSERT_EQ(r.exit_code, 0) << r.error;
    const options& o = r.parsed;
    EXPECT_EQ(o.command, command::run);
    EXPECT_EQ(o.name, "job");
    EXPECT_EQ(o.ttl_ms, 30'000);
    EXPECT_EQ(o.wait_ms, 10'000);
    EXPECT_EQ(o.fence_env, "EDGELOCK_FENCE");
    EXPECT_EQ(o.lost_signal, SIGTERM);
    EXPECT_EQ(o.kill_after_ms, 10'000);
    EXPECT_EQ(o.redis_urls, (std::vector<std::string>{"redis://127.0.0.1:6379"}));
    EXPECT_EQ(o.program, (std::vector<std::string>{"echo", "hi"}));
}

TEST(Run, EveryFlagAndBothValueForms) {
    const parse_result r =
        parse({"run",         "--name=job", "--ttl", "5s",           "--wait=0",  "--redis",
               "redis://a:1", "--redis",    "b:2",   "--redis",      "redis://c", "--fence-env",
               "TOKEN",       "--on-lost",  "INT",   "--kill-after", "500ms",     "--redis-timeout",
               "250ms",       "--",         "cmd",   "--ttl"});
    ASSERT_EQ(r.exit_code, 0) << r.error;
    const options& o = r.parsed;
    EXPECT_EQ(o.ttl_ms, 5'000);
    EXPECT_EQ(o.wait_ms, 0);
    EXPECT_EQ(o.redis_urls.size(), 3u);
    EXPECT_EQ(o.fence_env, "TOKEN");
    EXPECT_EQ(o.lost_signal, SIGINT);
    EXPECT_EQ(o.kill_after_ms, 500);
    EXPECT_EQ(o.redis_timeout_ms, 250);
    EXPECT_EQ(o.program, (std::vector<std::string>{"cmd", "--ttl"})) << "flags after CMD are CMD's";
}

TEST(Run, CommandStartsAtFirstArgumentWithoutDoubleDash) {
    const parse_result r = parse({"run", "--name", "job", "make", "-j2"});
    ASSERT_EQ(r.exit_code, 0) << r.error;
    EXPECT_EQ(r.parsed.program, (std::vector<std::string>{"make", "-j2"}));
}

TEST(Run, Sentinel) {
    const parse_result r =
        parse({"run", "--name", "job", "--sentinel", "10.0.0.1:26379", "--sentinel",
               "10.0.0.2:26379", "--master", "mymaster", "--", "true"});
    ASSERT_EQ(r.exit_code, 0) << r.error;
    EXPECT_EQ(r.parsed.sentinel_urls.size(), 2u);
    EXPECT_TRUE(r.parsed.redis_urls.empty());
    EXPECT_EQ(r.parsed.master_name, "mymaster");
}

TEST(Run, WaitsInLineWithOneInstanceUnlessUnfair) {
    const parse_result one = parse({"run", "--name", "x", "--", "true"});
    ASSERT_EQ(one.exit_code, 0) << one.error;
    EXPECT_TRUE(run_lock_config(one.parsed).fair);
    const parse_result sentinel =
        parse({"run", "--name", "x", "--sentinel", "10.0.0.1:26379", "--master", "m", "true"});
    ASSERT_EQ(sentinel.exit_code, 0) << sentinel.error;
    EXPECT_TRUE(run_lock_config(sentinel.parsed).fair);
    const parse_result unfair = parse({"run", "--name", "x", "--unfair", "--", "true"});
    ASSERT_EQ(unfair.exit_code, 0) << unfair.error;
    EXPECT_FALSE(run_lock_config(unfair.parsed).fair);
    const parse_result redlock = parse({"run", "--name", "x", "--redis", "redis://a", "--redis",
                                        "redis://b", "--redis", "redis://c", "--", "true"});
    ASSERT_EQ(redlock.exit_code, 0) << redlock.error;
    EXPECT_FALSE(run_lock_config(redlock.parsed).fair) << "Redlock cannot keep a line";
    expect_usage_error({"status", "--name", "x", "--unfair"}, "--unfair");
    EXPECT_NE(help_text("run").find("--unfair"), std::string::npos);
}

// --permits N: a semaphore of N holders for run, hold and check, fenced as the lock is; 1 is
// the lock. Redlock, and counts outside 1..permits_max, are refused in one line.
TEST(Run, PermitsMakeAFencedSemaphore) {
    const parse_result lock = parse({"run", "--name", "x", "--", "true"});
    ASSERT_EQ(lock.exit_code, 0) << lock.error;
    EXPECT_EQ(run_lock_config(lock.parsed).permits, 1);
    const parse_result three = parse({"run", "--name", "x", "--permits", "3", "--", "true"});
    ASSERT_EQ(three.exit_code, 0) << three.error;
    EXPECT_EQ(run_lock_config(three.parsed).permits, 3);
    EXPECT_TRUE(run_lock_config(three.parsed).fencing);
    EXPECT_TRUE(run_lock_config(three.parsed).fair);
    const parse_result hold = parse({"hold", "--name", "x", "--permits=1000"});
    ASSERT_EQ(hold.exit_code, 0) << hold.error;
    EXPECT_EQ(hold.parsed.permits, 1000);
    const parse_result check = parse({"check", "--permits", "2", "--fencing", "off"});
    ASSERT_EQ(check.exit_code, 0) << check.error;
    EXPECT_EQ(check.parsed.permits, 2);
    EXPECT_FALSE(check.parsed.fencing);
    for (const char* bad : {"0", "1001", "-1", "3x", "", " 3"}) {
        expect_usage_error({"hold", "--name", "x", "--permits", bad}, "bad --permits");
    }
    expect_usage_error({"run", "--name", "x", "--permits", "3", "--redis", "redis://a", "--redis",
                        "redis://b", "--redis", "redis://c", "--", "true"},
                       "Redlock's majorities do not bound the holders");
    expect_usage_error({"status", "--name", "x", "--permits", "3"}, "unknown flag");
    expect_usage_error(
        {"run", "--name", "x", "--permits", "3", "--fence-env", "EDGELOCK_PERMIT", "--", "true"},
        "is where a semaphore's CMD gets its permit");
    EXPECT_NE(help_text("run").find("--permits"), std::string::npos);
    EXPECT_NE(help_text("hold").find("--permits"), std::string::npos);
    EXPECT_NE(help_text("check").find("--permits"), std::string::npos);
}

TEST(Run, MetricsFileForRunAndHoldOnly) {
    EXPECT_EQ(
        parse({"run", "--name", "x", "--metrics-file", "/m/x.prom", "true"}).parsed.metrics_file,
        "/m/x.prom");
    EXPECT_EQ(parse({"hold", "--name", "x", "--metrics-file=x.prom"}).parsed.metrics_file,
              "x.prom");
    EXPECT_TRUE(parse({"run", "--name", "x", "true"}).parsed.metrics_file.empty());
    expect_usage_error({"run", "--name", "x", "--metrics-file=", "true"},
                       "--metrics-file needs a file");
    expect_usage_error({"status", "--name", "x", "--metrics-file", "x.prom"}, "unknown flag");
}

TEST(Environment, SuppliesServersWhenNoFlagDoes) {
    environment env;
    env.redis = "redis://a:1, redis://b:2 redis://c:3";
    parse_result r = parse({"status", "--name", "n"}, env);
    ASSERT_EQ(r.exit_code, 0) << r.error;
    EXPECT_EQ(r.parsed.redis_urls,
              (std::vector<std::string>{"redis://a:1", "redis://b:2", "redis://c:3"}));

    r = parse({"status", "--name", "n", "--redis", "redis://d:4"}, env);
    ASSERT_EQ(r.exit_code, 0) << r.error;
    EXPECT_EQ(r.parsed.redis_urls, (std::vector<std::string>{"redis://d:4"})) << "flags win";

    environment sentinel;
    sentinel.sentinel = "s1:26379,s2:26379";
    sentinel.master = "m";
    r = parse({"status", "--name", "n"}, sentinel);
    ASSERT_EQ(r.exit_code, 0) << r.error;
    EXPECT_EQ(r.parsed.sentinel_urls.size(), 2u);
    EXPECT_EQ(r.parsed.master_name, "m");
}

// A deployment variable set to nothing is a mistake (a template not filled in), not "unset":
// seen failing before, when it fell back to 127.0.0.1:6379.
TEST(Environment, AVariableSetToNoAddressIsRefused) {
    for (const char* value : {"", " ", ", ,"}) {
        environment redis;
        redis.redis = value;
        expect_usage_error({"run", "--name", "n", "--", "true"},
                           "EDGELOCK_REDIS is set but names no address", redis);
        environment sentinel;
        sentinel.sentinel = value;
        sentinel.master = "m";
        expect_usage_error({"status", "--name", "n"},
                           "EDGELOCK_SENTINEL is set but names no address", sentinel);
        environment cluster;
        cluster.cluster = value;
        expect_usage_error({"hold", "--name", "n"}, "EDGELOCK_CLUSTER is set but names no address",
                           cluster);
        const parse_result flags_win = parse({"status", "--name", "n", "--redis", "a:1"}, redis);
        EXPECT_EQ(flags_win.exit_code, 0) << flags_win.error;
    }
    const parse_result unset = parse({"status", "--name", "n"}, environment{});
    ASSERT_EQ(unset.exit_code, 0) << unset.error;
    EXPECT_EQ(unset.parsed.redis_urls, (std::vector<std::string>{"redis://127.0.0.1:6379"}));
}

// One server named twice would be two votes of Redlock's quorum (seen failing before: three
// --redis of one address ran as Redlock-3). Credentials and database do not make it another.
TEST(Deployment, AnAddressGivenTwiceIsRefused) {
    expect_usage_error(
        {"run", "--name", "n", "--redis", "127.0.0.1:7001", "--redis", "127.0.0.1:7001", "--redis",
         "127.0.0.1:7001", "--", "true"},
        "--redis names \"127.0.0.1:7001\" twice: each address must be a different server");
    expect_usage_error({"run", "--name", "n", "--redis", "redis://:pw@h:1/2", "--redis", "h:2",
                        "--redis", "redis://h:1", "--", "true"},
                       "--redis names \"redis://h:1\" twice");
    environment env;
    env.redis = "a:1,b:1,a:1";
    expect_usage_error({"status", "--name", "n"}, "EDGELOCK_REDIS names \"a:1\" twice", env);
    expect_usage_error(
        {"status", "--name", "n", "--sentinel", "s:1", "--sentinel", "s:1", "--master", "m"},
        "--sentinel names \"s:1\" twice");
    expect_usage_error({"list", "--cluster", "c:1", "--cluster", "redis://c:1"},
                       "--cluster names \"redis://c:1\" twice");
    const parse_result distinct = parse(
        {"run", "--name", "n", "--redis", "h:1", "--redis", "h:2", "--redis", "g:1", "--", "true"});
    EXPECT_EQ(distinct.exit_code, 0) << distinct.error;
}

TEST(Ttl, BelowTheFloorSaysWhy) {
    expect_usage_error({"run", "--name", "n", "--ttl", "4ms", "--", "true"},
                       "--ttl must be between 100ms and 24h (got 4ms): a shorter lease leaves "
                       "each attempt under 10ms (ttl/10) to hear Redis");
    expect_usage_error({"hold", "--name", "n", "--ttl", "99ms"}, "(got 99ms)");
    EXPECT_EQ(parse({"hold", "--name", "n", "--ttl", "100ms"}).exit_code, 0);
}

TEST(Release, NeedsToken) {
    const parse_result r = parse({"release", "--name", "n", "--token", "abc"});
    ASSERT_EQ(r.exit_code, 0) << r.error;
    EXPECT_EQ(r.parsed.command, command::release);
    EXPECT_EQ(r.parsed.token, "abc");
    expect_usage_error({"release", "--name", "n"}, "missing --token");
}

TEST(Help, EverywhereAndBeforeOtherChecks) {
    for (const std::vector<std::string>& args :
         std::vector<std::vector<std::string>>{{"--help"},
                                               {"-h"},
                                               {"help"},
                                               {"help", "run"},
                                               {"run", "--help"},
                                               {"run", "--name", "x", "-h"},
                                               {"status", "--help"},
                                               {"release", "--help"},
                                               {"sim", "--help"}}) {
        const parse_result r = parse(args);
        EXPECT_EQ(r.exit_code, 0) << args[0];
        EXPECT_EQ(r.parsed.command, command::help) << args[0];
    }
    EXPECT_EQ(parse({"run", "--help"}).parsed.help_topic, "run");
    EXPECT_EQ(parse({"help", "status"}).parsed.help_topic, "status");
    EXPECT_EQ(parse({"--version"}).parsed.command, command::version);
}

TEST(Help, EveryTopicHasText) {
    for (const char* topic : {"", "run", "status", "release", "sim"}) {
        EXPECT_NE(help_text(topic).find("usage"), std::string_view::npos) << topic;
    }
    for (const char* code : {"64", "69", "75", "79", "80", "126", "127"}) {
        EXPECT_NE(exit_code_table().find(std::string("  ") + code), std::string_view::npos) << code;
    }
}

TEST(Sim, ForwardsEverything) {
    const parse_result r = parse({"sim", "run", "--scenario", "S1", "--bogus"});
    ASSERT_EQ(r.exit_code, 0) << r.error;
    EXPECT_EQ(r.parsed.command, command::sim);
    EXPECT_EQ(r.parsed.program, (std::vector<std::string>{"run", "--scenario", "S1", "--bogus"}));
}

// The smallest TTL run accepts: 100 ms (options.hpp, ttl_ms_min: an attempt has a tenth of it
// to hear Redis), or the smallest lock::configure accepts with its documented defaults
// (lock.hpp) if that is more: the drift ttl/100 + 2 ms below the ttl, the renewal interval
// ttl/3 above 0 and below ttl - drift, the attempt timeout max(ttl/10, 1) at most the ttl.
// Derived here from those rules alone.
std::int64_t documented_ttl_ms_min() {
    constexpr std::int64_t search_ms_max = 1'000;
    for (std::int64_t ttl = 100; ttl <= search_ms_max; ++ttl) {
        const std::int64_t drift = ttl / 100 + 2;
        const std::int64_t renew = ttl / 3;
        const std::int64_t attempt = std::max<std::int64_t>(ttl / 10, 1);
        if (drift < ttl && renew > 0 && renew < ttl - drift && attempt <= ttl) return ttl;
    }
    ADD_FAILURE() << "no TTL up to 1s satisfies the lock's rules";
    return 0;
}

std::string ttl_range() { return format_duration(documented_ttl_ms_min()) + " and 24h"; }

TEST(Ttl, TooShortForTheLockIsAUsageErrorNamingTheRange) {
    const std::int64_t ttl_ms_min = documented_ttl_ms_min();
    ASSERT_GT(ttl_ms_min, 1);
    for (std::int64_t ttl = 0; ttl < ttl_ms_min; ++ttl) {
        const std::string value = std::to_string(ttl) + "ms";
        expect_usage_error({"run", "--name", "n", "--ttl", value, "--", "true"},
                           "--ttl must be between " + ttl_range() + " (got " + value + ")");
    }
    for (const std::string& ok : {format_duration(ttl_ms_min), std::string("24h")}) {
        const parse_result r = parse({"run", "--name", "n", "--ttl", ok, "--", "true"});
        EXPECT_EQ(r.exit_code, 0) << ok << ": " << r.error;
    }
    expect_usage_error({"run", "--name", "n", "--ttl", "25h", "--", "true"},
                       "--ttl must be between " + ttl_range() + " (got 25h)");
}

// Whatever the deployment, the parser accepts exactly the TTLs the lock accepts from
// ttl_ms_min up: a TTL never passes the command line only to fail once edgelock runs.
TEST(Ttl, ParserAndLockAgreeOnEveryTtl) {
    std::vector<std::int64_t> ttls;
    for (std::int64_t ttl = 1; ttl <= 2'000; ++ttl) ttls.push_back(ttl);
    for (std::int64_t ttl : {std::int64_t{9'999}, std::int64_t{30'000}, edgelock::ttl_ms_max - 1,
                             edgelock::ttl_ms_max}) {
        ttls.push_back(ttl);
    }
    for (const std::vector<std::string>& servers : std::vector<std::vector<std::string>>{
             {"--redis", "a:1"},
             {"--redis", "a:1", "--redis", "b:1", "--redis", "c:1"},
             {"--sentinel", "s:1", "--master", "m"}}) {
        const std::uint8_t instances =
            servers[0] == "--redis" ? static_cast<std::uint8_t>(servers.size() / 2) : 1;
        for (std::int64_t ttl : ttls) {
            edgelock::lock_config config;
            config.name = "n";
            config.ttl_ms = ttl;
            config.instances = instances;
            config.fencing = true;
            edgelock::lock scratch;
            const bool lock_accepts =
                scratch.configure(config) == edgelock::errc::ok && ttl >= edgelock::cli::ttl_ms_min;
            std::vector<std::string> args = {"run", "--name", "n", "--ttl",
                                             std::to_string(ttl) + "ms"};
            args.insert(args.end(), servers.begin(), servers.end());
            args.insert(args.end(), {"--", "true"});
            const parse_result r = parse(args);
            ASSERT_EQ(r.exit_code == 0, lock_accepts)
                << ttl << "ms over " << servers[0] << ": " << r.error;
        }
    }
}

TEST(Name, AnotherLocksFenceKeyIsAUsageError) {
    expect_usage_error({"run", "--name", "{x}:fence", "--", "true"},
                       "--name \"{x}:fence\" is the fence key of lock \"{x}\"");
    expect_usage_error({"run", "--name", "job{7}:fence", "--", "true"},
                       "fence key of lock \"job{7}\"");
    expect_usage_error({"run", "--name", "job{7}:qttl", "--", "true"},
                       "has the form of a lock's queue key");
    // A line or owner key names its lock after its first tag (keys.hpp): {x}'s is {BJN@}{x}.
    expect_usage_error({"run", "--name", "{x}:owner", "--", "true"}, "owner key of lock \"x\"");
    expect_usage_error({"run", "--name", "{BJN@}{x}:queue", "--", "true"},
                       "queue key of lock \"{x}\"");
    for (const char* fine : {"db:fence", "{}:fence", "x:fence:y"}) {
        const parse_result r = parse({"run", "--name", fine, "--", "true"});
        EXPECT_EQ(r.exit_code, 0) << fine << ": " << r.error;
    }
}

TEST(Durations, OutOfRangeNamesTheRange) {
    expect_usage_error({"run", "--name", "n", "--wait", "25h", "--", "true"},
                       "--wait must be between 0ms and 24h (got 25h)");
    expect_usage_error({"run", "--name", "n", "--kill-after", "1441m", "--", "true"},
                       "--kill-after must be between 0ms and 24h (got 1441m)");
    expect_usage_error({"run", "--name", "n", "--redis-timeout", "0", "--", "true"},
                       "--redis-timeout must be between 1ms and 1m (got 0ms)");
    expect_usage_error({"status", "--name", "n", "--redis-timeout", "61s"},
                       "--redis-timeout must be between 1ms and 1m (got 61s)");
    for (const char* edge : {"0", "24h"}) {
        const parse_result r =
            parse({"run", "--name", "n", "--wait", edge, "--kill-after", edge, "--", "true"});
        EXPECT_EQ(r.exit_code, 0) << edge << ": " << r.error;
    }
    const parse_result r = parse({"run", "--name", "n", "--redis-timeout", "1m", "--", "true"});
    EXPECT_EQ(r.exit_code, 0) << r.error;
}

TEST(Help, StatesTheAcceptedTtlRange) {
    const std::string range = format_duration(documented_ttl_ms_min()) + "..24h";
    EXPECT_NE(help_text("run").find(range), std::string_view::npos)
        << "run help should say " << range;
}

TEST(BadInput, OneLineNamingTheProblem) {
    expect_usage_error({}, "missing command");
    expect_usage_error({"lock"}, "unknown command \"lock\"");
    expect_usage_error({"--bogus"}, "unknown flag --bogus");
    expect_usage_error({"help", "nothing"}, "no help for");
    expect_usage_error({"run", "--name", "n", "--bogus", "--", "true"}, "unknown flag --bogus");
    expect_usage_error({"run", "--name", "n", "--token", "t", "--", "true"},
                       "unknown flag --token");
    expect_usage_error({"status", "--name", "n", "--ttl", "1s"}, "unknown flag --ttl");
    expect_usage_error({"run", "--name", "n", "--ttl", "10", "--", "true"},
                       "bad duration \"10\" for --ttl");
    expect_usage_error({"run", "--name", "n", "--wait", "soon", "--", "true"},
                       "bad duration \"soon\" for --wait");
    expect_usage_error({"run", "--name", "n", "--ttl", "0", "--", "true"}, "--ttl must be between");
    expect_usage_error({"run", "--name", "n", "--redis-timeout", "0", "--", "true"},
                       "--redis-timeout");
    expect_usage_error({"run", "--name", "n", "--ttl"}, "--ttl needs a value");
    expect_usage_error({"run", "--name", "n", "--help=yes"}, "takes no value");
    expect_usage_error({"run", "--name", "n"}, "missing CMD");
    expect_usage_error({"run", "--name", "n", "--"}, "missing CMD");
    expect_usage_error({"run", "--", "true"}, "missing --name");
    expect_usage_error({"run", "--name", std::string(129, 'x'), "--", "true"},
                       "longer than 128 bytes");
    expect_usage_error({"run", "--name", "n", "--redis", "http://x", "--", "true"},
                       "bad --redis address \"http://x\"");
    expect_usage_error({"run", "--name", "n", "--redis", "redis://h:0", "--", "true"}, "bad port");
    expect_usage_error({"run", "--name", "n", "--redis", "a:1", "--redis", "b:2", "--", "true"},
                       "odd number");
    expect_usage_error({"run", "--name", "n", "--sentinel", "s:1", "--", "true"},
                       "--sentinel needs --master");
    expect_usage_error({"run", "--name", "n", "--master", "m", "--redis", "a:1", "--", "true"},
                       "--master needs --sentinel");
    expect_usage_error({"run", "--name", "n", "--redis", "a:1", "--sentinel", "s:1", "--master",
                        "m", "--", "true"},
                       "either --redis or --sentinel");
    expect_usage_error({"run", "--name", "n", "--fence-env", "1X", "--", "true"},
                       "bad --fence-env");
    expect_usage_error({"run", "--name", "n", "--on-lost", "NICE", "--", "true"},
                       "bad --on-lost signal");
    expect_usage_error({"status", "--name", "n", "extra"}, "unexpected argument \"extra\"");
    environment env;
    env.redis = "redis://ok:1,ftp://bad";
    expect_usage_error({"status", "--name", "n"}, "bad EDGELOCK_REDIS address \"ftp://bad\"", env);
}

// A mistyped address must not print its password: logs keep what commands print.
TEST(BadInput, AddressesAreShownWithoutCredentials) {
    const auto refused = [](const std::vector<std::string>& args, environment env = {}) {
        const parse_result r = parse(args, env);
        EXPECT_EQ(r.exit_code, exit_usage);
        EXPECT_EQ(r.error.find("s3cret"), std::string::npos) << r.error;
        return r.error;
    };
    EXPECT_NE(refused({"run", "--name", "n", "--redis", "redis://u:s3cret@h:99999", "--", "true"})
                  .find("\"redis://***@h:99999\": bad port"),
              std::string::npos);
    EXPECT_NE(refused({"status", "--name", "n", "--redis", ":s3cret@h:0"}).find("\"***@h:0\""),
              std::string::npos);
    EXPECT_NE(
        refused({"status", "--name", "n", "--sentinel", "redis://s3cret@s@x:0", "--master", "m"})
            .find("\"redis://***@x:0\""),
        std::string::npos)
        << "up to the last '@', as the parser reads it";
    environment env;
    env.redis = "redis://u:s3cret@h:0";
    EXPECT_NE(
        refused({"status", "--name", "n"}, env).find("EDGELOCK_REDIS address \"redis://***@h:0\""),
        std::string::npos);
}

// Whatever an argument holds, the message stays one line: the argument is quoted with its
// control bytes, and bytes that are not UTF-8, escaped.
TEST(BadInput, EchoedArgumentsAreEscaped) {
    expect_usage_error({"lo\x01"
                        "ck"},
                       "unknown command \"lo\\x01ck\"");
    expect_usage_error({"a\"b\\c"}, "unknown command \"a\\\"b\\\\c\"");
    expect_usage_error({"--x\ny"}, "unknown flag \"--x\\ny\" before the command");
    expect_usage_error({"help", "ru\nn"}, "no help for \"ru\\nn\"");
    expect_usage_error({"run", "--name", "n", "--bo\ngus", "--", "true"},
                       "unknown flag \"--bo\\ngus\" (see");
    expect_usage_error({"run", "--name", "n", "--ttl\r=5s", "--", "true"},
                       "unknown flag \"--ttl\\r\" (see");
    expect_usage_error({"run", "--name", "n", "--ttl", "1\ns", "--", "true"},
                       "bad duration \"1\\ns\" for --ttl");
    expect_usage_error({"run", "--name", "n", "--redis", "http://a\nb", "--", "true"},
                       "bad --redis address \"http://a\\nb\"");
    expect_usage_error({"run", "--name", "n", "--fence-env", "A\tB", "--", "true"},
                       "bad --fence-env \"A\\tB\"");
    expect_usage_error({"run", "--name", "n", "--on-lost", "TE\x7fRM", "--", "true"},
                       "bad --on-lost signal \"TE\\x7fRM\"");
    expect_usage_error({"status", "--name", "n", "ex\x1btra"},
                       "unexpected argument \"ex\\x1btra\"");
    expect_usage_error({"run", "--name", "{x\n}:fence", "--", "true"},
                       "--name \"{x\\n}:fence\" is the fence key of lock \"{x\\n}\"");
    environment env;
    env.redis = "ftp://a\rb";
    expect_usage_error({"status", "--name", "n"}, "bad EDGELOCK_REDIS address \"ftp://a\\rb\"",
                       env);
}

TEST(BadInput, Utf8PassesAndWhatIsNotTextIsEscaped) {
    expect_usage_error({"z\xc3\xbcrich"}, "unknown command \"z\xc3\xbcrich\"");  // ü, as typed
    expect_usage_error({"a\xff"
                        "b"},
                       "unknown command \"a\\xffb\"");            // not UTF-8
    expect_usage_error({"a\xc3"}, "unknown command \"a\\xc3\"");  // cut short
    expect_usage_error({"a\xc2\x85"
                        "b"},
                       "unknown command \"a\\xc2\\x85b\"");  // U+0085, a C1 newline
    expect_usage_error({"a\xe2\x80\xa8"
                        "b"},
                       "unknown command \"a\\xe2\\x80\\xa8b\"");  // U+2028 line separator
    expect_usage_error({"a\xc0\x8a"
                        "b"},
                       "unknown command \"a\\xc0\\x8ab\"");  // an overlong newline
}

}  // namespace

namespace {

TEST(Check, NeedsNoNameAndTakesTheClientSettings) {
    const parse_result r =
        parse({"check", "--fencing", "off", "--restart-guard", "off", "--wait-replicas", "1",
               "--json", "--sentinel", "10.0.0.1:26379", "--master", "m"});
    ASSERT_EQ(r.exit_code, 0) << r.error;
    EXPECT_EQ(r.parsed.command, command::check);
    EXPECT_FALSE(r.parsed.fencing);
    EXPECT_FALSE(r.parsed.restart_guard);
    EXPECT_EQ(r.parsed.replicas_to_wait, 1);
    EXPECT_TRUE(r.parsed.json);
    const parse_result defaults = parse({"check"});
    ASSERT_EQ(defaults.exit_code, 0) << defaults.error;
    EXPECT_TRUE(defaults.parsed.fencing);
    EXPECT_TRUE(defaults.parsed.restart_guard);
    EXPECT_FALSE(defaults.parsed.json);
    EXPECT_EQ(defaults.parsed.redis_urls, std::vector<std::string>{"redis://127.0.0.1:6379"});
}

TEST(Check, RefusesBadSettingsAndFlagsOfOtherCommands) {
    expect_usage_error({"check", "--fencing", "yes"}, "bad --fencing \"yes\" (use on or off)");
    expect_usage_error({"check", "--wait-replicas", "12"}, "bad --wait-replicas");
    expect_usage_error({"check", "--json=1"}, "--json takes no value");
    expect_usage_error({"check", "--token", "t"}, "unknown flag --token");
    expect_usage_error({"run", "--name", "n", "--json", "--", "true"}, "unknown flag --json");
}

}  // namespace

namespace {

TEST(Tls, FlagsFillTheOptionsForEveryLockCommand) {
    for (const char* command : {"status", "check"}) {
        std::vector<std::string> args = {command,
                                         "--redis",
                                         "rediss://cache.example:6380",
                                         "--tls-ca",
                                         "/etc/ca.pem",
                                         "--tls-ca-dir=/etc/ca.d",
                                         "--tls-cert",
                                         "c.pem",
                                         "--tls-key",
                                         "k.pem",
                                         "--tls-server-name",
                                         "redis.internal"};
        if (std::string(command) == "status") args.insert(args.end(), {"--name", "x"});
        const parse_result r = parse(args);
        ASSERT_EQ(r.exit_code, 0) << r.error;
        EXPECT_EQ(r.parsed.tls.ca_file, "/etc/ca.pem");
        EXPECT_EQ(r.parsed.tls.ca_dir, "/etc/ca.d");
        EXPECT_EQ(r.parsed.tls.cert_file, "c.pem");
        EXPECT_EQ(r.parsed.tls.key_file, "k.pem");
        EXPECT_EQ(r.parsed.tls.server_name, "redis.internal");
        EXPECT_FALSE(r.parsed.tls.insecure_skip_verification_for_tests_only)
            << "the CLI never skips verification";
    }
}

TEST(Tls, TheEnvironmentFillsWhatNoFlagSays) {
    environment env;
    env.sentinel = "rediss://s1:26379,rediss://s2:26379";
    env.master = "mymaster";
    env.tls.ca_file = "/env/ca.pem";
    env.tls.server_name = "from-env";
    const parse_result r = parse({"status", "--name", "x", "--tls-server-name", "from-flag"}, env);
    ASSERT_EQ(r.exit_code, 0) << r.error;
    EXPECT_EQ(r.parsed.tls.ca_file, "/env/ca.pem");
    EXPECT_EQ(r.parsed.tls.server_name, "from-flag") << "a flag wins over its variable";

    environment pair;
    pair.redis = "rediss://h";
    pair.tls.cert_file = "env.crt";
    pair.tls.key_file = "env.key";
    EXPECT_EQ(parse({"status", "--name", "x"}, pair).parsed.tls.cert_file, "env.crt");
    const parse_result mixed = parse({"status", "--name", "x", "--tls-cert", "flag.crt"}, pair);
    EXPECT_EQ(mixed.exit_code, exit_usage)
        << "a flag's certificate never takes the environment's key";

    environment unused;
    unused.tls.ca_file = "/env/ca.pem";
    EXPECT_EQ(parse({"status", "--name", "x"}, unused).exit_code, 0)
        << "a variable for other deployments is no error on a plain one";
}

TEST(Tls, MistakesAreUsageErrors) {
    expect_usage_error({"status", "--name", "x", "--tls-ca", "ca.pem"},
                       "apply to rediss:// addresses");
    expect_usage_error({"status", "--name", "x", "--redis", "rediss://h", "--tls-cert", "c.pem"},
                       "--tls-cert and --tls-key go together");
    expect_usage_error({"status", "--name", "x", "--redis", "rediss://h", "--tls-ca="},
                       "--tls-ca needs a value");
}

TEST(Tls, HelpNamesTheFlagsAndTheExitCode) {
    for (const char* text : {"--tls-ca FILE", "--tls-ca-dir DIR", "--tls-cert FILE --tls-key FILE",
                             "--tls-server-name", "EDGELOCK_TLS_CA", "rediss://"}) {
        EXPECT_NE(help_text("").find(text), std::string_view::npos) << text;
    }
    EXPECT_NE(exit_code_table().find("  77 "), std::string_view::npos);
}

}  // namespace

namespace {

TEST(Duration, UnitsCombineLargestFirst) {
    std::int64_t ms = 0;
    ASSERT_TRUE(parse_duration("1m30s", ms));
    EXPECT_EQ(ms, 90'000);
    ASSERT_TRUE(parse_duration("1h2m3s", ms));
    EXPECT_EQ(ms, 3'723'000);
    ASSERT_TRUE(parse_duration("1s500ms", ms));
    EXPECT_EQ(ms, 1'500);
    ASSERT_TRUE(parse_duration("500ms", ms));
    EXPECT_EQ(ms, 500);
    for (const char* bad :
         {"30s1m", "1s1s", "1m30", "m", "1.5s", "1m 30s", "-1m30s", "1m+30s", "1h-2m"}) {
        EXPECT_FALSE(parse_duration(bad, ms)) << bad;
    }
    expect_usage_error({"run", "--name", "n", "--wait", "1m30x", "--", "true"},
                       "bad duration \"1m30x\" for --wait (use 500ms, 30s, 2m, 1m30s)");
    const parse_result r = parse({"run", "--name", "n", "--wait", "1m30s", "--", "true"});
    ASSERT_EQ(r.exit_code, 0) << r.error;
    EXPECT_EQ(r.parsed.wait_ms, 90'000);
}

TEST(Run, FlockShortFlags) {
    const parse_result r =
        parse({"run", "--name", "n", "-w", "5s", "-E", "0", "-v", "-c", "echo $X"});
    ASSERT_EQ(r.exit_code, 0) << r.error;
    EXPECT_EQ(r.parsed.wait_ms, 5'000);
    EXPECT_EQ(r.parsed.conflict_exit_code, 0);
    EXPECT_TRUE(r.parsed.verbose);
    EXPECT_EQ(r.parsed.program, (std::vector<std::string>{"/bin/sh", "-c", "echo $X"}));
    const parse_result n =
        parse({"run", "--name", "n", "-n", "--conflict-exit-code=3", "--", "true"});
    ASSERT_EQ(n.exit_code, 0) << n.error;
    EXPECT_EQ(n.parsed.wait_ms, 0);
    EXPECT_EQ(n.parsed.conflict_exit_code, 3);
    EXPECT_EQ(parse({"run", "--name", "n", "true"}).parsed.conflict_exit_code,
              conflict_exit_code_unset);
    expect_usage_error({"run", "--name", "n", "-c", "echo", "--", "true"}, "either -c");
    expect_usage_error({"run", "--name", "n", "-E", "256", "true"},
                       "bad --conflict-exit-code \"256\" (an exit code, 0 to 255)");
    expect_usage_error({"run", "--name", "n", "-E", "x", "true"}, "bad --conflict-exit-code");
    expect_usage_error({"status", "--name", "n", "-n"}, "unknown flag -n");
    expect_usage_error({"hold", "--name", "n", "-c", "true"}, "unknown flag -c");
}

TEST(WaitReplicas, RunHoldAndCheckShareTheFlagsAndTheirVariables) {
    for (const char* c : {"run", "hold", "check"}) {
        std::vector<std::string> args = {
            c, "--name", "n", "--wait-replicas", "1", "--wait-replicas-timeout", "1s"};
        if (std::string(c) == "run") args.emplace_back("true");
        const parse_result r = parse(args);
        ASSERT_EQ(r.exit_code, 0) << c << ": " << r.error;
        EXPECT_EQ(r.parsed.replicas_to_wait, 1) << c;
        EXPECT_EQ(r.parsed.replica_wait_ms, 1'000) << c;
    }
    const parse_result r = parse({"run", "--name", "n", "--wait-replicas", "2", "true"});
    ASSERT_EQ(r.exit_code, 0) << r.error;
    EXPECT_EQ(run_lock_config(r.parsed).replicas_to_wait, 2);
    EXPECT_EQ(run_lock_config(r.parsed).replica_wait_ms, 0) << "the core's default";

    environment env;
    env.wait_replicas = "1";
    env.wait_replicas_timeout = "700ms";
    const parse_result from_env = parse({"hold", "--name", "n"}, env);
    ASSERT_EQ(from_env.exit_code, 0) << from_env.error;
    EXPECT_EQ(from_env.parsed.replicas_to_wait, 1);
    EXPECT_EQ(from_env.parsed.replica_wait_ms, 700);
    const parse_result flag_wins = parse({"hold", "--name", "n", "--wait-replicas", "2"}, env);
    EXPECT_EQ(flag_wins.parsed.replicas_to_wait, 2);
    env.wait_replicas = "x";
    expect_usage_error({"hold", "--name", "n"}, "EDGELOCK_WAIT_REPLICAS: bad --wait-replicas \"x\"",
                       env);
}

TEST(WaitReplicas, ATimeoutTheClientCannotWaitForNamesTheFlag) {
    expect_usage_error(
        {"run", "--name", "n", "--wait-replicas", "1", "--wait-replicas-timeout", "3s", "true"},
        "--wait-replicas-timeout 3s must be below the attempt timeout, --ttl/10 = 3s");
    expect_usage_error({"run", "--name", "n", "--ttl", "1m", "--wait-replicas", "1",
                        "--wait-replicas-timeout", "2s", "true"},
                       "--wait-replicas-timeout 2s must be below --redis-timeout 2s");
    expect_usage_error(
        {"run", "--name", "n", "--ttl", "1m", "--wait-replicas", "1", "--redis-timeout", "1s",
         "true"},
        "the WAIT timeout 3s (half of --ttl/10; set --wait-replicas-timeout) must be below "
        "--redis-timeout 1s");
    expect_usage_error({"run", "--name", "n", "--wait-replicas-timeout", "1s", "true"},
                       "--wait-replicas-timeout needs --wait-replicas N");
    expect_usage_error({"check", "--wait-replicas", "1", "--wait-replicas-timeout", "1m30"},
                       "bad duration");
}

TEST(Password, FillsEveryAddressWithoutCredentials) {
    EXPECT_EQ(with_password("redis://h:1", "pw"), "redis://:pw@h:1");
    EXPECT_EQ(with_password("h:1", "p@w:x"), "redis://:p@w:x@h:1");
    EXPECT_EQ(with_password("rediss://h:1/2", "pw"), "rediss://:pw@h:1/2");
    EXPECT_EQ(with_password("redis://u:other@h:1", "pw"), "redis://u:other@h:1")
        << "its own credentials win";
    EXPECT_EQ(with_password("redis://h:1", ""), "redis://h:1");

    environment env;
    env.password = "secret";
    const parse_result r = parse({"status", "--name", "n", "--redis", "redis://a:1", "--redis",
                                  "redis://u:x@b:2", "--redis", "c:3"},
                                 env);
    ASSERT_EQ(r.exit_code, 0) << r.error;
    EXPECT_EQ(r.parsed.redis_urls,
              (std::vector<std::string>{"redis://:secret@a:1", "redis://u:x@b:2",
                                        "redis://:secret@c:3"}));
    const parse_result by_default = parse({"hold", "--name", "n"}, env);
    EXPECT_EQ(by_default.parsed.redis_urls,
              std::vector<std::string>{"redis://:secret@127.0.0.1:6379"});
    const parse_result sentinel = parse({"check", "--sentinel", "s:1", "--master", "m"}, env);
    EXPECT_EQ(sentinel.parsed.sentinel_urls, std::vector<std::string>{"redis://:secret@s:1"});

    const parse_result file =
        parse({"run", "--name", "n", "--password-file", "/run/pw", "true"}, env);
    ASSERT_EQ(file.exit_code, 0) << file.error;
    EXPECT_EQ(file.parsed.password_file, "/run/pw");
    EXPECT_EQ(file.parsed.redis_urls, std::vector<std::string>{"redis://127.0.0.1:6379"})
        << "the flag wins over EDGELOCK_PASSWORD; main() reads the file";
}

TEST(Hold, TakesTheLockFlagsAndNoCommand) {
    const parse_result r =
        parse({"hold", "--name", "n", "--ttl", "2m", "-w", "1m30s", "--unfair", "-E", "9"});
    ASSERT_EQ(r.exit_code, 0) << r.error;
    EXPECT_EQ(r.parsed.command, command::hold);
    EXPECT_EQ(r.parsed.ttl_ms, 120'000);
    EXPECT_EQ(r.parsed.wait_ms, 90'000);
    EXPECT_FALSE(r.parsed.fair);
    EXPECT_EQ(r.parsed.conflict_exit_code, 9);
    expect_usage_error({"hold", "--name", "n", "true"}, "unexpected argument \"true\"");
    expect_usage_error({"hold"}, "missing --name");
    expect_usage_error({"hold", "--name", "n", "--on-lost", "INT"}, "unknown flag --on-lost");
    EXPECT_EQ(parse({"help", "hold"}).parsed.help_topic, "hold");
    EXPECT_NE(help_text("hold").find("token="), std::string::npos);
    EXPECT_NE(help_text("").find("edgelock hold"), std::string::npos);
}

}  // namespace

namespace {

TEST(Cluster, SeedsFromRepeatedFlagsOrLists) {
    const parse_result r = parse({"run", "--name", "job", "--cluster", "redis://a:7000,b:7001",
                                  "--cluster", "rediss://c:7002", "--", "true"});
    ASSERT_EQ(r.exit_code, 0) << r.error;
    EXPECT_EQ(r.parsed.cluster_urls,
              (std::vector<std::string>{"redis://a:7000", "b:7001", "rediss://c:7002"}));
    EXPECT_TRUE(r.parsed.redis_urls.empty()) << "no default instance beside a cluster";
    EXPECT_TRUE(r.parsed.sentinel_urls.empty());
    const edgelock::lock_config config = run_lock_config(r.parsed);
    EXPECT_EQ(config.instances, 1) << "a lock lives on its slot's master alone";
    EXPECT_TRUE(config.fair) << "one instance per lock keeps a line";
    const parse_result unfair = parse({"hold", "--name", "job", "--cluster", "a:7000", "--unfair"});
    ASSERT_EQ(unfair.exit_code, 0) << unfair.error;
    EXPECT_FALSE(run_lock_config(unfair.parsed).fair);
    for (const char* command : {"status", "release", "list", "check"}) {
        std::vector<std::string> args{command, "--cluster", "a:7000"};
        if (std::string(command) == "status" || std::string(command) == "release")
            args.insert(args.end(), {"--name", "n"});
        if (std::string(command) == "release") args.insert(args.end(), {"--token", "t"});
        const parse_result each = parse(args);
        EXPECT_EQ(each.exit_code, 0) << command << ": " << each.error;
        EXPECT_EQ(each.parsed.cluster_urls, std::vector<std::string>{"a:7000"}) << command;
    }
}

TEST(Cluster, SeedsFromTheEnvironmentWhenNoFlagNamesServers) {
    environment env;
    env.cluster = "redis://a:7000, redis://b:7001";
    env.master = "left-over";
    parse_result r = parse({"status", "--name", "n"}, env);
    ASSERT_EQ(r.exit_code, 0) << r.error;
    EXPECT_EQ(r.parsed.cluster_urls,
              (std::vector<std::string>{"redis://a:7000", "redis://b:7001"}));
    EXPECT_TRUE(r.parsed.redis_urls.empty());
    EXPECT_TRUE(r.parsed.master_name.empty()) << "EDGELOCK_MASTER is Sentinel's alone";
    r = parse({"status", "--name", "n", "--redis", "redis://d:4"}, env);
    ASSERT_EQ(r.exit_code, 0) << r.error;
    EXPECT_TRUE(r.parsed.cluster_urls.empty()) << "flags win";
    environment redis;
    redis.redis = "redis://d:4";
    r = parse({"status", "--name", "n", "--cluster", "a:7000"}, redis);
    ASSERT_EQ(r.exit_code, 0) << r.error;
    EXPECT_TRUE(r.parsed.redis_urls.empty()) << "flags win over EDGELOCK_REDIS";
    env.password = "secret";
    r = parse({"check"}, env);
    EXPECT_EQ(r.parsed.cluster_urls,
              (std::vector<std::string>{"redis://:secret@a:7000", "redis://:secret@b:7001"}));
}

TEST(Cluster, ExclusiveWithRedisAndSentinel) {
    expect_usage_error({"status", "--name", "n", "--redis", "a:1", "--cluster", "c:7000"},
                       "use either --redis or --cluster, not both");
    expect_usage_error(
        {"status", "--name", "n", "--cluster", "c:7000", "--sentinel", "s:1", "--master", "m"},
        "use either --sentinel or --cluster, not both");
    expect_usage_error({"status", "--name", "n", "--cluster", "c:7000", "--master", "m"},
                       "--master needs --sentinel");
    environment both;
    both.cluster = "c:7000";
    both.redis = "a:1";
    expect_usage_error({"status", "--name", "n"},
                       "EDGELOCK_CLUSTER and EDGELOCK_REDIS are both set: use one of them", both);
    both.redis.reset();
    both.sentinel = "s:1";
    both.master = "m";
    expect_usage_error({"status", "--name", "n"},
                       "EDGELOCK_CLUSTER and EDGELOCK_SENTINEL are both set: use one of them",
                       both);
}

TEST(Cluster, SeedsAreCheckedAndBounded) {
    expect_usage_error({"status", "--name", "n", "--cluster", "redis://a:7000/2"},
                       "bad --cluster address \"redis://a:7000/2\": a cluster has only database 0");
    EXPECT_EQ(parse({"status", "--name", "n", "--cluster", "redis://a:7000/0"}).exit_code, 0);
    expect_usage_error({"status", "--name", "n", "--cluster", "http://a"},
                       "bad --cluster address \"http://a\"");
    expect_usage_error({"status", "--name", "n", "--cluster", "redis://u:s3cret@h:0"},
                       "bad --cluster address \"redis://***@h:0\"");
    environment env;
    env.cluster = "a:1,b:2/3";
    expect_usage_error({"status", "--name", "n"}, "bad EDGELOCK_CLUSTER address \"b:2/3\"", env);
    std::vector<std::string> args{"status", "--name", "n"};
    std::string seeds;
    for (std::size_t i = 0; i < edgelock::session::cluster_seeds_max; ++i) {
        seeds += (i > 0 ? "," : "") + std::string("h:") + std::to_string(7000 + i);
    }
    args.insert(args.end(), {"--cluster", seeds});
    EXPECT_EQ(parse(args).exit_code, 0) << parse(args).error;
    args.insert(args.end(), {"--cluster", "h:7999"});
    expect_usage_error(args, "too many --cluster addresses (at most 9)");
}

}  // namespace
