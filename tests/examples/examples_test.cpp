// SPDX-License-Identifier: Apache-2.0
// Every example against a real redis-server: it must print its summary line and succeed, and
// the variants that drop the lock or the fencing must fail, which shows each check can fail.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "edgelock/testing/redis_client.hpp"
#include "edgelock/testing/redis_process.hpp"
#include "program_run.hpp"

namespace {

using edgelock::cli_tests::program_result;
using edgelock::cli_tests::run_program;

class Examples : public ::testing::Test {
protected:
    program_result run(const char* example, std::vector<std::string> args = {}) {
        args.insert(args.begin(), {example, server.url()});
        return run_program(args);
    }
    edgelock::testing::redis_server server;
};

// The last line of stdout, the summary each example prints.
std::string summary(const program_result& r) {
    std::string out = r.out;
    while (!out.empty() && out.back() == '\n') out.pop_back();
    return out.substr(out.rfind('\n') + 1);
}

TEST_F(Examples, QuickstartTakesTheLockWithAFenceToken) {
    const program_result r = run(EXAMPLE_QUICKSTART);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    edgelock::testing::redis_client redis(server.port());
    EXPECT_EQ(r.out,
              "holding reports:daily, fence token " + redis.get("{reports:daily}:fence") + "\n");
}

TEST_F(Examples, OrderGrabOneWinnerAndTheLateWriteRefused) {
    const program_result r = run(EXAMPLE_ORDER_GRAB);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_EQ(
        summary(r),
        "order_grab: OK: 1 of 8 drivers won the order; the paused driver's late write was refused")
        << r.out;
}

TEST_F(Examples, OrderGrabWithoutTheLockHasManyWinners) {
    const program_result r = run(EXAMPLE_ORDER_GRAB, {"--no-lock"});
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_EQ(summary(r).rfind("order_grab: FAILED: ", 0), 0u) << r.out;
    EXPECT_EQ(summary(r).find("FAILED: 1 of 8"), std::string::npos)
        << "more than one winner: " << r.out;
}

TEST_F(Examples, OrderGrabWithoutFencingAcceptsTheLateWrite) {
    const program_result r = run(EXAMPLE_ORDER_GRAB, {"--no-fencing"});
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_NE(summary(r).find("late write was NOT refused"), std::string::npos) << r.out;
}

// A fenced semaphore's store keeps the highest token per permit: the live holders of both
// permits write, the paused one whose permit passed on is refused. One highest token for all
// permits refuses a live holder; no fencing lets the stale one in.
TEST_F(Examples, UplinkStoreRefusesTheStaleHolderOfAPermitAndNoLiveOne) {
    const program_result r = run(EXAMPLE_UPLINK_STORE);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_EQ(summary(r),
              "uplink_store: OK: the live holders' writes were accepted; the paused holder's late "
              "write was refused")
        << r.out;
    const program_result one = run(EXAMPLE_UPLINK_STORE, {"--one-highest"});
    EXPECT_EQ(one.exit_code, 1) << one.out << one.err;
    EXPECT_NE(summary(one).find("writes were NOT all accepted"), std::string::npos) << one.out;
    const program_result trusting = run(EXAMPLE_UPLINK_STORE, {"--no-fencing"});
    EXPECT_EQ(trusting.exit_code, 1) << trusting.out << trusting.err;
    EXPECT_NE(summary(trusting).find("late write was NOT refused"), std::string::npos)
        << trusting.out;
}

TEST_F(Examples, InventoryNeverOversells) {
    const program_result r = run(EXAMPLE_INVENTORY);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_EQ(
        summary(r),
        "inventory: OK: 10 in stock, 24 orders from 4 shops: 10 sold, 0 left, 14 out of stock")
        << r.out;
}

TEST_F(Examples, InventoryWithoutTheLockOversells) {
    const program_result r = run(EXAMPLE_INVENTORY, {"--no-lock"});
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_EQ(summary(r).rfind("inventory (no lock): FAILED: ", 0), 0u) << r.out;
    EXPECT_NE(summary(r).find("OVERSOLD"), std::string::npos) << r.out;
}

TEST_F(Examples, GatewayJobRunsOnOneGatewayAndAbortsOnLoss) {
    const program_result r = run(EXAMPLE_GATEWAY_JOB);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_EQ(summary(r).rfind("gateway_job: OK: 5 jobs committed", 0), 0u) << r.out;
    EXPECT_NE(summary(r).find("1 aborted by the lost handler: "), std::string::npos) << r.out;
    EXPECT_NE(summary(r).find("(token_gone)"), std::string::npos) << r.out;
}

TEST_F(Examples, GatewayJobIgnoringTheLossFails) {
    const program_result r = run(EXAMPLE_GATEWAY_JOB, {"--ignore-lost"});
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_EQ(summary(r).rfind("gateway_job: FAILED: ", 0), 0u) << r.out;
    EXPECT_NE(r.out.find("carries on regardless"), std::string::npos) << r.out;
}

}  // namespace
