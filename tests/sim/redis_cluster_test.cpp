// SPDX-License-Identifier: Apache-2.0
// The Redis model in cluster mode (redis_model.hpp, "Redis Cluster"): MOVED for a slot another
// node serves, ASK and TRYAGAIN while a slot migrates, ASKING for the next command only, and
// CLUSTER SLOTS in Redis 7.0's shape. tests/conformance/cluster_conformance_test.cpp holds the
// same answers to a real cluster.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "edgelock/keys.hpp"
#include "edgelock/scripts.hpp"
#include "model_node.hpp"

namespace {

using namespace edgelock::sim;
using fixtures::command;

// "foo" is in slot 12182, "{foo}:fence" too.
constexpr std::uint16_t foo_slot = 12182;

std::vector<cluster_member> three_members() {
    return {{"127.0.0.1", 7101, std::string(40, 'a')},
            {"127.0.0.1", 7102, std::string(40, 'b')},
            {"127.0.0.1", 7103, std::string(40, 'c')},
            {"127.0.0.1", 7104, std::string(40, 'd')}};
}

struct cluster_node : fixtures::model_node {
    cluster_node() {
        node.enable_cluster(three_members());
        node.set_slot_owner(0, 5460, 0);
        node.set_slot_owner(5461, 10922, 1);
        node.set_slot_owner(10923, 16383, 2);
        node.set_member_role(3, 0, false);
    }
    std::string release(const std::string& key) {
        const edgelock::script& s = edgelock::release_script;
        return send({"EVAL", std::string(s.text), "1", key, std::string(32, 'a')});
    }
};

TEST_F(cluster_node, a_key_of_a_slot_another_node_serves_is_moved_there) {
    ASSERT_EQ(edgelock::cluster_slot("foo"), foo_slot);
    EXPECT_EQ(send({"SET", "foo", "1"}), "-MOVED 12182 127.0.0.1:7103\r\n");
    EXPECT_EQ(release("foo"), "-MOVED 12182 127.0.0.1:7103\r\n");
    // Keyless commands run anywhere; keys of two slots are refused first.
    EXPECT_EQ(send({"PING"}), "+PONG\r\n");
    EXPECT_EQ(send({"DEL", "foo", "bar"}),
              "-CROSSSLOT Keys in request don't hash to the same slot\r\n");
    std::string own = "k0";  // a key of a slot this node (member 0) serves
    for (int i = 1; edgelock::cluster_slot(own) > 5460; ++i) own = "k" + std::to_string(i);
    EXPECT_EQ(send({"SET", own, "1"}), "+OK\r\n");
}

TEST_F(cluster_node, the_owner_serves_and_asks_for_a_key_it_no_longer_has_while_migrating) {
    node.set_slot_owner(10923, 16383, 0);  // this node (member 0) serves "foo" now
    EXPECT_EQ(send({"SET", "foo", "1"}), "+OK\r\n");
    node.set_migrating(foo_slot, 1);
    EXPECT_EQ(send({"GET", "foo"}), "$1\r\n1\r\n");
    EXPECT_EQ(send({"GET", "{foo}:fence"}), "-ASK 12182 127.0.0.1:7102\r\n");
    // Of the two keys one is here and one is not: neither node can run it.
    EXPECT_EQ(send({"DEL", "foo", "{foo}:fence"}),
              "-TRYAGAIN Multiple keys request during rehashing of slot\r\n");
    node.clear_migration(foo_slot);
    EXPECT_EQ(send({"GET", "{foo}:fence"}), "$-1\r\n");
}

TEST_F(cluster_node, an_importing_node_serves_the_slot_right_after_asking_only) {
    node.set_importing(foo_slot, 2);
    EXPECT_EQ(send({"SET", "foo", "1"}), "-MOVED 12182 127.0.0.1:7103\r\n");
    EXPECT_EQ(send({"ASKING"}), "+OK\r\n");
    EXPECT_EQ(send({"SET", "foo", "1"}), "+OK\r\n");
    EXPECT_EQ(send({"GET", "foo"}), "-MOVED 12182 127.0.0.1:7103\r\n");
    // ASKING is spent by any command, a keyless one too.
    EXPECT_EQ(send({"ASKING"}), "+OK\r\n");
    EXPECT_EQ(send({"PING"}), "+PONG\r\n");
    EXPECT_EQ(send({"GET", "foo"}), "-MOVED 12182 127.0.0.1:7103\r\n");
    // Several keys, one missing, after ASKING: TRYAGAIN.
    EXPECT_EQ(send({"ASKING"}), "+OK\r\n");
    EXPECT_EQ(send({"DEL", "foo", "{foo}:fence"}),
              "-TRYAGAIN Multiple keys request during rehashing of slot\r\n");
    EXPECT_EQ(send({"ASKING"}), "+OK\r\n");
    EXPECT_EQ(send({"DEL", "foo", "foo"}), ":1\r\n");
}

TEST_F(cluster_node, cluster_slots_answers_the_view_in_the_shape_redis_7_sends) {
    const std::string id_a(40, 'a'), id_b(40, 'b'), id_c(40, 'c'), id_d(40, 'd');
    const std::string expected =
        "*3\r\n"
        "*4\r\n:0\r\n:5460\r\n"
        "*4\r\n$9\r\n127.0.0.1\r\n:7101\r\n$40\r\n" +
        id_a +
        "\r\n*0\r\n"
        "*4\r\n$9\r\n127.0.0.1\r\n:7104\r\n$40\r\n" +
        id_d +
        "\r\n*0\r\n"
        "*3\r\n:5461\r\n:10922\r\n"
        "*4\r\n$9\r\n127.0.0.1\r\n:7102\r\n$40\r\n" +
        id_b +
        "\r\n*0\r\n"
        "*3\r\n:10923\r\n:16383\r\n"
        "*4\r\n$9\r\n127.0.0.1\r\n:7103\r\n$40\r\n" +
        id_c + "\r\n*0\r\n";
    EXPECT_EQ(send({"CLUSTER", "SLOTS"}), expected);
    // A failed replica is left out; a slot nobody serves splits the ranges.
    node.set_member_role(3, 0, true);
    node.set_slot_owner(100, 100, no_cluster_node);
    const std::string view = send({"CLUSTER", "SLOTS"});
    EXPECT_EQ(view.substr(0, 4), "*4\r\n");
    EXPECT_NE(view.find(":99\r\n*4\r\n$9"), std::string::npos);
    EXPECT_NE(view.find("*3\r\n:101\r\n:5460\r\n"), std::string::npos);
    EXPECT_EQ(send({"SET", "foo", "1"}).substr(0, 7), "-MOVED ");
}

}  // namespace
