// SPDX-License-Identifier: Apache-2.0
// The claim check's two rules, as the simulated Redis judges each client connection
// (sim/include/edgelock/sim/checker.hpp, "claim"): a WAIT confirms only what its own
// connection wrote since its last WAIT, and a replica runs a write only for a connection that
// asked it ROLE.
#include <gtest/gtest.h>

#include <string>

#include "edgelock/sim/redis_model.hpp"
#include "model_node.hpp"

namespace {

using namespace edgelock::sim;
using fixtures::command;

const std::string token_a(32, 'a');

struct claim_fixture : fixtures::model_node {
    redis_node replica{1, persistence::none, 0};
    std::size_t faults = 0;  // claim faults over every send so far

    void SetUp() override { replica.follow(node, now_us); }
    std::string send_to(redis_node& to, std::initializer_list<std::string> args) {
        out.clear();
        to.receive(0, epoch, command(args), wall_ms, now_us, out);
        faults += out.claim_faults.size();
        return out.replies.empty() ? std::string() : out.replies.front().bytes;
    }
    std::string claim(redis_node& on) {
        return send_to(on, {"SET", "lock", token_a, "NX", "PX", "1000", "GET"});
    }
};

TEST_F(claim_fixture, a_wait_after_the_connections_own_claim_is_no_fault) {
    claim(node);
    send_to(node, {"WAIT", "0", "50"});
    EXPECT_EQ(faults, 0u);
}

TEST_F(claim_fixture, a_wait_on_a_new_connection_is_a_fault_whatever_the_last_one_wrote) {
    claim(node);
    ++epoch;  // the claim's connection ended; its WAIT goes on the next one
    send_to(node, {"PING"});
    send_to(node, {"WAIT", "0", "50"});
    ASSERT_EQ(faults, 1u);
    EXPECT_NE(out.claim_faults.front().find("c0 sent node 0 a WAIT on a connection that wrote "
                                            "nothing"),
              std::string::npos)
        << out.claim_faults.front();
}

TEST_F(claim_fixture, a_second_wait_needs_a_write_of_its_own) {
    claim(node);
    send_to(node, {"WAIT", "0", "50"});
    send_to(node, {"WAIT", "0", "50"});
    EXPECT_EQ(faults, 1u) << "the first WAIT confirmed the claim; the second confirms nothing";
}

TEST_F(claim_fixture, a_closed_connections_late_wait_is_judged_as_what_it_follows) {
    claim(node);
    node.drop_connection(0);  // the client closed it; its WAIT was on the way
    send_to(node, {"WAIT", "0", "50"});
    EXPECT_EQ(faults, 0u);
}

TEST_F(claim_fixture, a_writable_replica_that_runs_a_write_without_role_asked_is_a_fault) {
    replica.take_writes_as_replica();
    EXPECT_EQ(claim(replica), "$-1\r\n") << "the replica took the lock for itself";
    ASSERT_EQ(faults, 1u);
    EXPECT_EQ(out.claim_faults.front(), "c0 wrote lock on node 1, a replica it never asked ROLE");
    send_to(replica, {"PEXPIRE", "lock", "1000"});
    EXPECT_EQ(faults, 2u) << "a renewal there is judged as a claim is";
}

TEST_F(claim_fixture, a_grant_behind_a_role_question_is_no_fault) {
    replica.take_writes_as_replica();
    send_to(replica, {"ROLE"});
    claim(replica);  // pipelined behind the handshake: the client drops its answer
    claim(node);     // a master needs no question
    EXPECT_EQ(faults, 0u);
}

}  // namespace
