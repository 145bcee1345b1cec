// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

#include "edgelock/limits.hpp"
#include "edgelock/scripts.hpp"
#include "edgelock/session/handshake.hpp"

namespace {

using namespace edgelock;
using namespace edgelock::session;

node_address address(const std::string& url) {
    node_address a;
    EXPECT_EQ(parse_node_url(url, a).code, errc::ok);
    return a;
}

// The nodes' text views point into `resp`, which must outlive them.
std::vector<reply_node> parsed(const std::string& resp) {
    std::vector<reply_node> nodes(nodes_max);
    const parse_result r = parse_reply(resp.data(), resp.size(), nodes.data(), nodes.size());
    EXPECT_EQ(r.code, errc::ok) << resp;
    nodes.resize(r.nodes);
    return nodes;
}

failure check(handshake_step step, const std::string& resp, node_address& master) {
    const std::vector<reply_node> nodes = parsed(resp);
    return check_handshake_reply(step, nodes.data(), nodes.size(), master);
}

TEST(handshake, a_server_plan_follows_the_address) {
    std::array<char, 8192> out{};
    const node_address plain = address("h:1");
    handshake_request r;
    r.to = &plain;
    handshake_write w = write_handshake(r, out.data(), out.size());
    ASSERT_EQ(w.code, errc::ok);
    ASSERT_EQ(w.plan.count, 5);
    EXPECT_EQ(w.plan.steps[0], handshake_step::ping);
    for (int i = 1; i < 5; ++i) EXPECT_EQ(w.plan.steps[i], handshake_step::script_load);
    const std::string bytes(out.data(), w.size);
    for (const script* s : {&acquire_script, &raise_script, &renew_script, &release_script}) {
        EXPECT_NE(bytes.find(std::string(s->text)), std::string::npos);
    }

    const node_address full = address("redis://u:p@h:1/4");
    r.to = &full;
    r.check_role = true;
    w = write_handshake(r, out.data(), out.size());
    ASSERT_EQ(w.plan.count, 8) << "AUTH, SELECT, PING, ROLE and the four scripts";
    EXPECT_EQ(w.plan.steps[0], handshake_step::auth);
    EXPECT_EQ(w.plan.steps[1], handshake_step::select);
    EXPECT_EQ(w.plan.steps[3], handshake_step::role);

    r.read_node = true;
    w = write_handshake(r, out.data(), out.size());
    ASSERT_EQ(w.plan.count, 10) << "and INFO and CONFIG GET: handshake_steps_max";
    EXPECT_EQ(w.plan.steps[4], handshake_step::node_info);
    EXPECT_EQ(w.plan.steps[5], handshake_step::fsync_policy);
    const std::string with_info(out.data(), w.size);
    // INFO alone, with its default sections: every Redis answers it (several sections in one
    // INFO are a syntax error before 7.0).
    EXPECT_NE(with_info.find("*1\r\n$4\r\nINFO\r\n*3\r\n$6\r\nCONFIG"), std::string::npos);
    EXPECT_NE(with_info.find("$6\r\nCONFIG\r\n$3\r\nGET\r\n$11\r\nappendfsync"), std::string::npos);
}

TEST(handshake, a_refused_info_ends_the_connection_and_a_refused_config_get_does_not) {
    node_address master;
    EXPECT_EQ(check(handshake_step::node_info,
                    "-NOPERM this user has no permissions to run the 'info' command\r\n", master),
              failure::of(transport_errc::node_info_refused));
    EXPECT_EQ(check(handshake_step::node_info, ":1\r\n", master),
              failure::of(errc::unexpected_reply));
    EXPECT_FALSE(check(handshake_step::node_info, "$13\r\nuptime:1\r\nx:y\r\n", master));
    EXPECT_FALSE(check(handshake_step::fsync_policy, "-NOPERM no config\r\n", master));
}

TEST(handshake, a_buffer_too_small_writes_nothing_usable) {
    std::array<char, 32> tiny{};
    const node_address plain = address("h:1");
    handshake_request r;
    r.to = &plain;
    const handshake_write w = write_handshake(r, tiny.data(), tiny.size());
    EXPECT_EQ(w.code, errc::buffer_too_small);
    EXPECT_EQ(w.size, 0u);
}

TEST(handshake, sentinel_and_watch_connections_ask_only_their_question) {
    std::array<char, 1024> out{};
    const node_address sentinel = address("redis://:spw@s:26379");
    handshake_request r;
    r.to = &sentinel;
    r.kind = connection_kind::sentinel;
    r.master_name = "mymaster";
    handshake_write w = write_handshake(r, out.data(), out.size());
    ASSERT_EQ(w.plan.count, 2);
    EXPECT_EQ(w.plan.steps[1], handshake_step::master_query);
    r.kind = connection_kind::watch;
    w = write_handshake(r, out.data(), out.size());
    ASSERT_EQ(w.plan.count, 2);
    EXPECT_EQ(w.plan.steps[1], handshake_step::subscribe);
    EXPECT_NE(std::string(out.data(), w.size).find("+switch-master"), std::string::npos);
}

TEST(handshake, replies_are_checked_step_by_step) {
    node_address master = address("redis://app:pw@unused/2");
    EXPECT_FALSE(check(handshake_step::auth, "+OK\r\n", master));
    EXPECT_EQ(check(handshake_step::auth, "-WRONGPASS x\r\n", master),
              failure::of(transport_errc::auth_failed));
    EXPECT_EQ(check(handshake_step::select, "-ERR DB index is out of range\r\n", master),
              failure::of(transport_errc::select_failed));
    EXPECT_EQ(check(handshake_step::ping, "-LOADING x\r\n", master),
              failure::of(transport_errc::loading));
    // No password sent (NOAUTH) and a wrong one (WRONGPASS) are told apart.
    EXPECT_EQ(check(handshake_step::ping, "-NOAUTH Authentication required.\r\n", master),
              failure::of(transport_errc::auth_required));
    EXPECT_EQ(check(handshake_step::ping, "-WRONGPASS invalid username-password pair\r\n", master),
              failure::of(transport_errc::auth_failed));
    EXPECT_EQ(check(handshake_step::ping, "-ERR x\r\n", master), failure::of(errc::error_reply));
    EXPECT_FALSE(check(handshake_step::script_load, "-NOPERM x\r\n", master)) << "best effort";
    EXPECT_FALSE(check(handshake_step::role, "*3\r\n$6\r\nmaster\r\n:0\r\n*0\r\n", master));
    EXPECT_EQ(check(handshake_step::role,
                    "*5\r\n$5\r\nslave\r\n$1\r\nm\r\n:1\r\n$9\r\nconnected\r\n:0\r\n", master),
              failure::of(transport_errc::not_master));
    EXPECT_EQ(check(handshake_step::role, "-ERR unknown command 'ROLE'\r\n", master),
              failure::of(transport_errc::not_master));
    EXPECT_EQ(check(handshake_step::subscribe, "+OK\r\n", master),
              failure::of(errc::unexpected_reply));
}

// A full server answers whatever came first (AUTH, SELECT, PING, the sentinel query) with its
// refusal of the connection: that is neither a wrong password nor a refused database.
TEST(handshake, a_full_server_refuses_the_connection_at_any_step) {
    node_address master = address("redis://app:pw@unused/2");
    const std::string full = "-ERR max number of clients reached\r\n";
    for (const handshake_step step :
         {handshake_step::auth, handshake_step::select, handshake_step::ping,
          handshake_step::master_query, handshake_step::subscribe, handshake_step::node_info}) {
        EXPECT_EQ(check(step, full, master), failure::of(transport_errc::max_clients))
            << static_cast<int>(step);
    }
}

TEST(handshake, the_master_a_sentinel_names_keeps_the_configured_credentials) {
    node_address master = address("redis://app:pw@unused/2");
    EXPECT_FALSE(
        check(handshake_step::master_query, "*2\r\n$8\r\n10.0.0.9\r\n$4\r\n6380\r\n", master));
    EXPECT_EQ(master.host.view(), "10.0.0.9");
    EXPECT_EQ(master.port, 6380);
    EXPECT_EQ(master.user.view(), "app");
    EXPECT_EQ(master.db, 2);
    for (const char* bad : {"*-1\r\n", "*2\r\n$1\r\nh\r\n$1\r\n0\r\n",
                            "*2\r\n$1\r\nh\r\n$6\r\n65536x\r\n", "*2\r\n$0\r\n\r\n$4\r\n6380\r\n",
                            "*1\r\n$1\r\nh\r\n", "-ERR x\r\n", "*2\r\n:1\r\n$4\r\n6380\r\n"}) {
        node_address kept = master;
        EXPECT_EQ(check(handshake_step::master_query, bad, kept),
                  failure::of(transport_errc::no_master))
            << bad;
        EXPECT_TRUE(kept.same_node(master)) << "a refused answer changes nothing";
    }
}

TEST(handshake, switch_master_messages_name_the_new_master_of_ours_only) {
    node_address master = address("redis://app:pw@old:1");
    const auto message = [](const std::string& payload) {
        return "*3\r\n$7\r\nmessage\r\n$14\r\n+switch-master\r\n$" +
               std::to_string(payload.size()) + "\r\n" + payload + "\r\n";
    };
    const std::string ours =
        message("mymaster 10.0.0.1 6379 10.0.0.2 6380");  // the nodes view into it
    std::vector<reply_node> n = parsed(ours);
    node_address old;
    ASSERT_TRUE(parse_switch_master(n.data(), n.size(), "mymaster", master, &old));
    EXPECT_EQ(master.host.view(), "10.0.0.2");
    EXPECT_EQ(master.port, 6380);
    EXPECT_EQ(master.user.view(), "app");
    EXPECT_EQ(old.host.view(), "10.0.0.1") << "the master it replaced";
    EXPECT_EQ(old.port, 6379);
    for (const std::string& other :
         {message("other 1 1 2 2"), message("mymaster 1 1 2"), message("mymaster 1 1 2 2 extra"),
          message("mymaster 1 1 2 0"), message("mymaster 1 0 2 2")}) {
        n = parsed(other);
        EXPECT_FALSE(parse_switch_master(n.data(), n.size(), "mymaster", master)) << other;
    }
    EXPECT_EQ(master.host.view(), "10.0.0.2") << "unchanged by what was refused";
}

}  // namespace
