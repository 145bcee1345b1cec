// SPDX-License-Identifier: Apache-2.0
// The sentinel model: it answers the session's master query (as the real session writes and
// checks it) with the master it believes in, and follows a failover when told.
#include "edgelock/sim/sentinel_model.hpp"

#include <gtest/gtest.h>

#include <array>
#include <string>

#include "edgelock/resp_reader.hpp"
#include "edgelock/session/handshake.hpp"
#include "edgelock/sim/addresses.hpp"

namespace {

using namespace edgelock::sim;
using namespace edgelock::session;

// What a connection asks a sentinel, exactly as the session writes it.
std::string master_query(std::string_view name) {
    node_address sentinel = address_of_sentinel(0);
    handshake_request request;
    request.kind = connection_kind::sentinel;
    request.to = &sentinel;
    request.master_name = name;
    char buffer[512];
    const handshake_write written = write_handshake(request, buffer, sizeof buffer);
    EXPECT_EQ(written.code, edgelock::errc::ok);
    EXPECT_EQ(written.plan.count, 1u);
    return std::string(buffer, written.size);
}

// The session's verdict on a sentinel's answer, and the master it names.
edgelock::failure named(const std::string& reply, node_address& master) {
    std::array<edgelock::reply_node, 8> nodes{};
    const edgelock::parse_result parsed =
        edgelock::parse_reply(reply.data(), reply.size(), nodes.data(), nodes.size());
    EXPECT_EQ(parsed.code, edgelock::errc::ok) << reply;
    EXPECT_EQ(parsed.consumed, reply.size());
    return check_handshake_reply(handshake_step::master_query, nodes.data(), parsed.nodes, master);
}

TEST(sentinel_model, names_the_master_it_believes_in_and_follows_a_failover) {
    sentinel_node s(0, monitored_master_name, 0);
    node_address master;
    EXPECT_FALSE(named(s.answer(master_query(monitored_master_name)), master));
    EXPECT_TRUE(master.same_node(address_of_node(0)));
    s.believe(2);
    EXPECT_FALSE(named(s.answer(master_query(monitored_master_name)), master));
    EXPECT_TRUE(master.same_node(address_of_node(2))) << "after a promotion, the new master";
    EXPECT_EQ(s.believed_master(), 2u);
}

// News of failovers can arrive out of order: a later one is never undone by an earlier one.
TEST(sentinel_model, news_of_an_older_failover_changes_nothing) {
    sentinel_node s(0, monitored_master_name, 0);
    s.learn(2, 2);
    s.learn(1, 1);
    EXPECT_EQ(s.believed_master(), 2u);
    s.learn(1, 3);
    EXPECT_EQ(s.believed_master(), 1u);
}

TEST(sentinel_model, a_name_it_does_not_monitor_is_no_master) {
    sentinel_node s(1, monitored_master_name, 0);
    EXPECT_EQ(s.answer(master_query("other")), "*-1\r\n");
    node_address master;
    EXPECT_EQ(named(s.answer(master_query("other")), master),
              edgelock::failure::of(edgelock::transport_errc::no_master));
}

TEST(sentinel_model, answers_ping_and_refuses_data_commands) {
    sentinel_node s(2, monitored_master_name, 0);
    EXPECT_EQ(s.answer("*1\r\n$4\r\nPING\r\n"), "+PONG\r\n");
    EXPECT_EQ(s.answer("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n").substr(0, 4), "-ERR");
    EXPECT_EQ(s.answer("garbage").substr(0, 4), "-ERR");
}

}  // namespace
