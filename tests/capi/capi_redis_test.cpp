// SPDX-License-Identifier: Apache-2.0
// The C API serving two languages against a real redis-server: examples/c/lock_demo.c and
// examples/python/lock_demo.py (ctypes over libedgelock-c.so) each show that two processes
// exclude each other, that the fence token grows from one hold to the next, and that the
// lost callback fires when the key is deleted under a holder, and that a failure is told in
// words: the OS error's text for a refused connection, the part of a bad URL that is wrong;
// examples/c/quickstart.c, the README's C example, takes the lock once and says why it could
// not.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <ostream>
#include <string>
#include <thread>
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

constexpr auto key_wait = std::chrono::seconds(20);
constexpr int exit_busy = 3;

struct demo {
    const char* language;
    std::vector<std::string> command;  // the program, before URL NAME MODE
    std::vector<std::string> env;
};

void PrintTo(const demo& d, std::ostream* os) { *os << d.language; }

std::vector<demo> demos() {
    std::vector<demo> all{{"c", {LOCK_DEMO_C}, {}}};
#ifdef PYTHON
    std::vector<std::string> env{std::string("EDGELOCK_C_LIBRARY=") + EDGELOCK_C_LIBRARY};
#ifdef ASAN_RUNTIME
    env.push_back(std::string("LD_PRELOAD=") + ASAN_RUNTIME);
    env.push_back("ASAN_OPTIONS=detect_leaks=0");
#endif
    all.push_back({"python", {PYTHON, LOCK_DEMO_PY}, env});
#endif
    return all;
}

class CapiDemo : public ::testing::TestWithParam<demo> {
protected:
    std::vector<std::string> argv(const std::string& name, std::vector<std::string> mode) const {
        return argv_at(server.url(), name, std::move(mode));
    }
    std::vector<std::string> argv_at(const std::string& url, const std::string& name,
                                     std::vector<std::string> mode) const {
        std::vector<std::string> args = GetParam().command;
        args.push_back(url);
        args.push_back(name);
        args.insert(args.end(), mode.begin(), mode.end());
        return args;
    }
    program_options options() const {
        program_options o;
        o.env = GetParam().env;
        return o;
    }
    // Polls until the lock key exists: the holder has acquired (no sleep as a guess).
    ::testing::AssertionResult key_appears(const std::string& key) {
        edgelock::testing::redis_client redis(server.port());
        const auto deadline = std::chrono::steady_clock::now() + key_wait;
        while (!redis.exists(key)) {
            if (std::chrono::steady_clock::now() > deadline) {
                return ::testing::AssertionFailure() << key << " never appeared";
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        return ::testing::AssertionSuccess();
    }
    edgelock::testing::redis_server server;
};

long long fence_in(const std::string& out) {
    const std::string marker = "acquired fence ";
    const auto at = out.find(marker);
    return at == std::string::npos ? -1 : std::stoll(out.substr(at + marker.size()));
}

TEST_P(CapiDemo, TwoProcessesExcludeEachOtherAndTheFenceGrows) {
    const std::string stop_file = server.dir() + "/stop-" + GetParam().language;
    program holder(argv("orders:42", {"hold", stop_file}), options());
    ASSERT_TRUE(key_appears("orders:42"));

    const program_result refused = run_program(argv("orders:42", {"try"}), options());
    EXPECT_EQ(refused.exit_code, exit_busy) << refused.out << refused.err;
    EXPECT_EQ(refused.out,
              "busy\nmetrics: acquired 0, busy 1, token_gone 0, released 0, expired 0\n");

    std::ofstream(stop_file).put('\n');
    const program_result first = holder.wait();
    EXPECT_EQ(first.exit_code, 0) << first.out << first.err;
    EXPECT_EQ(first.out, "acquired fence " + std::to_string(fence_in(first.out)) +
                             "\nreleased\n"
                             "metrics: acquired 1, busy 0, token_gone 0, released 1, expired 0\n");

    const program_result second = run_program(argv("orders:42", {"try"}), options());
    EXPECT_EQ(second.exit_code, 0) << second.out << second.err;
    EXPECT_GT(fence_in(first.out), 0) << first.out;
    EXPECT_GT(fence_in(second.out), fence_in(first.out)) << first.out << second.out;
}

TEST_P(CapiDemo, TheLostCallbackFiresWhenTheKeyIsDeleted) {
    program holder(argv("jobs:nightly", {"lost"}), options());
    ASSERT_TRUE(key_appears("jobs:nightly"));
    edgelock::testing::redis_client redis(server.port());
    redis.command({"DEL", "jobs:nightly"});
    const program_result r = holder.wait();
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("lost: token_gone\n"
                         "metrics: acquired 1, busy 0, token_gone 1, released 0, expired 1\n"),
              std::string::npos)
        << r.out << r.err;
}

TEST_P(CapiDemo, ARefusedConnectionIsToldByItsOsText) {
    const edgelock::testing::refused_port nobody;
    const program_result r = run_program(argv_at(nobody.url(), "orders:42", {"try"}), options());
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_EQ(r.err, "lock_demo: try_acquire: connection refused\n");
}

TEST_P(CapiDemo, ABadAddressNamesThePartThatIsWrong) {
    const program_result r =
        run_program(argv_at("redis://:secret@127.0.0.1:0", "orders:42", {"try"}), options());
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_EQ(r.err,
              "lock_demo: open: bad instances[0] address \"redis://***@127.0.0.1:0\": "
              "bad port\n");
}

INSTANTIATE_TEST_SUITE_P(Languages, CapiDemo, ::testing::ValuesIn(demos()),
                         [](const ::testing::TestParamInfo<demo>& info) {
                             return std::string(info.param.language);
                         });

TEST(CapiQuickstart, TakesTheLockWithAFenceToken) {
    edgelock::testing::redis_server server;
    const program_result r = run_program({QUICKSTART_C, server.url()});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    edgelock::testing::redis_client redis(server.port());
    EXPECT_EQ(r.out,
              "holding reports:daily, fence token " + redis.get("{reports:daily}:fence") + "\n");
}

// The semaphore example: two of its processes download at once, each with a lease of its own
// in the name's set; a third finds both permits taken, and gets one once a download ended.
TEST(CapiUplink, TwoDownloadAtOnceAndAThirdWaitsForAPermit) {
    edgelock::testing::redis_server server;
    edgelock::testing::redis_client redis(server.port());
    program first({UPLINK_C, server.url(), "0", "1500"});
    program second({UPLINK_C, server.url(), "0", "1500"});
    const auto leases = [&] {
        return redis.command({"ZRANGEBYSCORE", "uplink:site-7", "0", "+inf"}).elements.size();
    };
    for (int i = 0; i < 100 && leases() < 2; ++i) std::this_thread::sleep_for(20ms);
    ASSERT_EQ(leases(), 2u) << "both holders have a lease of their own";
    const program_result third = run_program({UPLINK_C, server.url(), "0"});
    EXPECT_EQ(third.exit_code, 75) << third.err;
    EXPECT_EQ(third.out, "both permits of uplink:site-7 are taken\n");
    const program_result patient = run_program({UPLINK_C, server.url(), "5000"});
    EXPECT_EQ(patient.exit_code, 0) << patient.err;
    EXPECT_EQ(patient.out, "holding one of the 2 permits of uplink:site-7\n");
    for (program* p : {&first, &second}) {
        const program_result r = p->wait();
        EXPECT_EQ(r.exit_code, 0) << r.err;
        EXPECT_EQ(r.out, "holding one of the 2 permits of uplink:site-7\n");
    }
    EXPECT_FALSE(redis.exists("uplink:site-7")) << "every lease released, the set gone";
}

// A lock's name is no semaphore's: the example refuses it at once, with the reason.
TEST(CapiUplink, RefusesANameHeldAsALock) {
    edgelock::testing::redis_server server;
    edgelock::testing::redis_client redis(server.port());
    redis.set("uplink:site-7", std::string(32, 'a'));
    const program_result r = run_program({UPLINK_C, server.url(), "5000"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_LT(r.elapsed.count(), 3000) << "no retry mends it";
    EXPECT_EQ(r.err, "uplink: wrong_kind\n");
}

TEST(CapiQuickstart, SaysWhyItCouldNotTakeTheLock) {
    const edgelock::testing::refused_port nobody;
    const program_result refused = run_program({QUICKSTART_C, nobody.url()});
    EXPECT_EQ(refused.exit_code, 1);
    EXPECT_EQ(refused.err, "lock: connection refused\n");
    const program_result bad = run_program({QUICKSTART_C, "redis://127.0.0.1:6379/x"});
    EXPECT_EQ(bad.exit_code, 1);
    EXPECT_EQ(bad.err,
              "lock: bad instances[0] address \"redis://127.0.0.1:6379/x\": bad database "
              "number\n");
}

}  // namespace
