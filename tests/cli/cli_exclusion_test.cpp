// SPDX-License-Identifier: Apache-2.0
// The CLI's one promise as a property: `edgelock run` starts CMD, and `edgelock hold` prints a
// hold, only while it holds the lock, whatever the flags. RapidCheck draws the flags of `run`
// and `hold` (-n, -w, --wait, -E N with 0 among them, -c, --unfair, --ttl, --fence-env,
// --on-lost, --kill-after, --restart-guard, --redis-timeout, --metrics-file, --wait-replicas,
// -v, one or three --redis; fence tokens are always on) against a lock that another owner
// holds on real redis-server processes, and checks that CMD never starts (its marker file
// never appears), that `hold` prints nothing on stdout, that the exit code is -E's (or 75 / 79
// without it), and that the other owner's key is untouched.
//
// Runs: RC_PARAMS (default below: a fixed seed, 100 cases, each a few hundred milliseconds).
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "edgelock/testing/redis_client.hpp"
#include "edgelock/testing/redis_process.hpp"
#include "program_run.hpp"

namespace {

using namespace std::chrono_literals;
using edgelock::cli_tests::program_options;
using edgelock::cli_tests::program_result;
using edgelock::cli_tests::run_program;
using edgelock::testing::redis_client;
using edgelock::testing::redis_masters;

// Runs before RapidCheck reads its configuration (on the first property).
const bool rc_params_set = [] {
    setenv("RC_PARAMS", "max_success=100 seed=20261129", 0);
    return true;
}();

constexpr const char* other_owner_token = "another-owner-0123456789abcdef";
constexpr int busy_exit_code = 75;
constexpr int wait_timeout_exit_code = 79;

// Three independent masters for the whole property: the first alone is the single-Redis
// deployment, all three are Redlock-3. Each case holds its own lock name on all three.
redis_masters& masters() {
    static redis_masters servers(3);
    return servers;
}

struct drawn_flags {
    std::vector<std::string> args;  // after the command's name, before CMD
    bool shell_form = false;        // run -c 'touch MARKER' instead of -- touch MARKER
    std::int64_t wait_ms = 0;       // as the flags set it (none drawn: the default, 10 s)
    int conflict_exit_code = -1;    // -E, or -1
};

// --wait is drawn short (0, 100 ms or 300 ms) or as -n: a case takes at most its wait.
rc::Gen<drawn_flags> flags_of(bool run) {
    return rc::gen::exec([run] {
        drawn_flags d;
        const int wait_form = *rc::gen::inRange(0, 3);  // -n, -w D, --wait D
        d.wait_ms = wait_form == 0 ? 0 : *rc::gen::element<std::int64_t>(0, 100, 300);
        if (wait_form == 0) d.args.push_back("-n");
        if (wait_form > 0) {
            d.args.push_back(wait_form == 1 ? "-w" : "--wait");
            d.args.push_back(std::to_string(d.wait_ms) + "ms");
        }
        if (*rc::gen::arbitrary<bool>()) {
            d.conflict_exit_code = *rc::gen::element(0, 0, 1, 3, 75, 79, 255);
            d.args.push_back(*rc::gen::element<std::string>("-E", "--conflict-exit-code"));
            d.args.push_back(std::to_string(d.conflict_exit_code));
        }
        if (*rc::gen::arbitrary<bool>()) d.args.push_back("--unfair");
        if (*rc::gen::arbitrary<bool>()) {
            d.args.push_back("--ttl");
            d.args.push_back(*rc::gen::element<std::string>("1s", "5s", "30s"));
        }
        if (run && *rc::gen::arbitrary<bool>()) {
            d.args.push_back("--fence-env");
            d.args.push_back("MY_FENCE");
        }
        if (run && *rc::gen::arbitrary<bool>()) {
            d.args.insert(d.args.end(), {"--on-lost", "KILL", "--kill-after", "1s"});
        }
        if (*rc::gen::arbitrary<bool>()) {
            d.args.push_back("--restart-guard");
            d.args.push_back(*rc::gen::element<std::string>("on", "off"));
        }
        if (*rc::gen::arbitrary<bool>()) {
            d.args.push_back("--redis-timeout");
            d.args.push_back(*rc::gen::element<std::string>("2s", "5s"));
        }
        if (*rc::gen::arbitrary<bool>()) {
            d.args.push_back("--metrics-file");
            d.args.push_back(std::filesystem::temp_directory_path() /
                             ("edgelock-exclusion-" + std::to_string(::getpid()) + ".prom"));
        }
        if (*rc::gen::arbitrary<bool>()) {
            d.args.push_back("--wait-replicas");
            d.args.push_back("1");
        }
        if (*rc::gen::arbitrary<bool>()) d.args.push_back("-v");
        d.shell_form = run && *rc::gen::arbitrary<bool>();
        return d;
    });
}

// What RapidCheck prints of a failing case's flags.
void showValue(const drawn_flags& d, std::ostream& os) {
    for (const std::string& arg : d.args) os << arg << ' ';
    os << (d.shell_form ? "-c CMD" : "-- CMD");
}

int expected_exit_code(const drawn_flags& d) {
    if (d.conflict_exit_code >= 0) return d.conflict_exit_code;
    return d.wait_ms == 0 ? busy_exit_code : wait_timeout_exit_code;
}

std::vector<std::string> command_line(bool run, const std::string& name,
                                      const std::vector<std::string>& urls, const drawn_flags& d,
                                      const std::string& marker) {
    std::vector<std::string> argv = {EDGELOCK_CLI, run ? "run" : "hold", "--name", name};
    for (const std::string& url : urls) {
        argv.push_back("--redis");
        argv.push_back(url);
    }
    argv.insert(argv.end(), d.args.begin(), d.args.end());
    if (!run) return argv;
    if (d.shell_form) {
        argv.insert(argv.end(), {"-c", "touch '" + marker + "'"});
    } else {
        argv.insert(argv.end(), {"--", "touch", marker});
    }
    return argv;
}

std::string shown(const std::vector<std::string>& argv) {
    std::string text;
    for (const std::string& arg : argv) text += (text.empty() ? "" : " ") + arg;
    return text;
}

RC_GTEST_PROP(cli_exclusion, a_command_runs_and_a_hold_prints_only_while_the_lock_is_held, ()) {
    static std::atomic<int> cases{0};
    const bool run = *rc::gen::arbitrary<bool>();
    const bool redlock = *rc::gen::arbitrary<bool>();
    const drawn_flags d = *flags_of(run);
    const std::string name = "held-elsewhere-" + std::to_string(++cases);
    const std::filesystem::path marker =
        std::filesystem::temp_directory_path() /
        ("edgelock-exclusion-" + std::to_string(::getpid()) + "-" + std::to_string(cases.load()));

    redis_masters& servers = masters();
    const std::size_t instances = redlock ? servers.size() : 1;
    std::vector<std::string> urls;
    for (std::size_t i = 0; i < instances; ++i) {
        urls.push_back(servers[i].url());
        redis_client(servers[i].port()).command({"SET", name, other_owner_token, "PX", "60000"});
    }

    const std::vector<std::string> argv = command_line(run, name, urls, d, marker.string());
    program_options env;
    env.env = {"EDGELOCK_REDIS", "EDGELOCK_SENTINEL",      "EDGELOCK_CLUSTER", "EDGELOCK_MASTER",
               "EDGELOCK_FENCE", "EDGELOCK_WAIT_REPLICAS", "EDGELOCK_PASSWORD"};
    env.timeout = 10s;  // far beyond the longest wait drawn
    const program_result r = run_program(argv, env);
    RC_TAG(run ? "run" : "hold", redlock ? "redlock-3" : "single");

    const bool cmd_started = std::filesystem::exists(marker);
    std::filesystem::remove(marker);
    RC_LOG() << shown(argv) << "\nexit " << r.exit_code << (r.timed_out ? " (killed at 10 s)" : "")
             << "\nstdout: " << r.out << "\nstderr: " << r.err << "\n";
    RC_ASSERT_FALSE(r.timed_out);
    RC_ASSERT_FALSE(cmd_started);
    RC_ASSERT(r.out.empty());
    RC_ASSERT(r.exit_code == expected_exit_code(d));
    for (std::size_t i = 0; i < instances; ++i)
        RC_ASSERT(redis_client(servers[i].port()).get(name) == std::string(other_owner_token));
}

}  // namespace
