// SPDX-License-Identifier: Apache-2.0
// Eight processes increment one Redis counter with GET then SET: under the lock no update is
// lost; without it the same workload loses some (which shows the check can fail).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "edgelock/testing/child_process.hpp"
#include "edgelock/testing/redis_client.hpp"
#include "edgelock/testing/redis_process.hpp"

namespace {

using edgelock::testing::child_process;
using edgelock::testing::redis_client;
using edgelock::testing::redis_server;

constexpr int workers = 8;
constexpr int increments_total = 1000;

// Runs the workload and returns the final counter.
long long run_workload(bool locked) {
    redis_server server;
    std::vector<std::unique_ptr<child_process>> processes;
    for (int w = 0; w < workers; ++w) {
        edgelock::testing::spawn_options options;
        options.pipe_stdio = true;
        processes.push_back(std::make_unique<child_process>(
            std::vector<std::string>{EDGELOCK_LOCK_WORKER, "increment", server.url(),
                                     "counter-lock", std::to_string(increments_total / workers),
                                     locked ? "1" : "0"},
            options));
    }
    for (auto& p : processes) {
        const auto line = p->read_line(std::chrono::seconds(90));
        EXPECT_EQ(line.value_or("(no output)"), "done");
        const auto status = p->wait_exit(std::chrono::seconds(10));
        EXPECT_TRUE(status && WIFEXITED(*status) && WEXITSTATUS(*status) == 0);
    }
    redis_client client(server.port());
    EXPECT_FALSE(client.exists("counter-lock")) << "every worker released";
    return std::stoll(client.get("counter"));
}

TEST(mutual_exclusion, eight_processes_make_exactly_1000_increments_under_the_lock) {
    EXPECT_EQ(run_workload(true), increments_total);
}

TEST(mutual_exclusion, without_the_lock_the_same_workload_loses_updates) {
    EXPECT_LT(run_workload(false), increments_total);
}

}  // namespace
