// SPDX-License-Identifier: Apache-2.0
// The simulated Redis in cluster mode (redis_model.hpp, "Redis Cluster") held to a real Redis
// 7.0 cluster (tests/support's redis_cluster: three masters, a replica each): the same
// commands to a real node and to its model, the replies compared byte for byte. The models
// are told what the cluster is told (the slots each master was given, each replica's master,
// a slot's migration half way and complete, the keys MIGRATE moved); every answer that
// routes a client (MOVED, ASK, ASKING, TRYAGAIN, CROSSSLOT, CLUSTER SLOTS) comes from the
// model's own rules.
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "edgelock/keys.hpp"
#include "edgelock/scripts.hpp"
#include "edgelock/sim/key_slot.hpp"
#include "edgelock/sim/redis_model.hpp"
#include "edgelock/testing/redis_cluster.hpp"
#include "raw_connection.hpp"

namespace {

using edgelock::conformance::encode_request;
using edgelock::conformance::raw_connection;
using edgelock::sim::cluster_member;
using edgelock::sim::node_output;
using edgelock::sim::persistence;
using edgelock::sim::redis_node;
using edgelock::testing::cluster_settings;
using edgelock::testing::migration;
using edgelock::testing::redis_cluster;

struct cluster_pair {
    redis_cluster real;
    std::vector<redis_node> models;
    std::int64_t now_us = 1'000'000;

    explicit cluster_pair(const cluster_settings& settings) : real(settings) {
        std::vector<cluster_member> members;
        for (std::size_t i = 0; i < real.size(); ++i)
            members.push_back({"127.0.0.1", real.node(i).port(), real.node_id(i)});
        for (std::size_t i = 0; i < real.size(); ++i) {
            models.emplace_back(static_cast<std::uint8_t>(i), persistence::none, 0);
            models.back().enable_cluster(members);
        }
        for (redis_node& model : models) {
            for (std::size_t m = 0; m < real.masters_at_start(); ++m) {
                const auto range = real.assigned(m);
                model.set_slot_owner(range.first, range.last, static_cast<std::uint8_t>(m));
                const std::size_t replica = real.replica_of(m);
                model.set_member_role(static_cast<std::uint8_t>(replica), static_cast<int>(m),
                                      false);
            }
        }
    }
    // The model's reply to `args` on node i's connection `conn` (epoch 1 of client conn).
    std::string model_call(std::size_t i, const std::vector<std::string>& args,
                           std::uint8_t conn = 0) {
        node_output out;
        models[i].receive(conn, 1, encode_request(args), 1'000'000, now_us, out);
        now_us += 1000;
        return out.replies.empty() ? std::string() : out.replies.front().bytes;
    }
    // The same request to the real node on `link` and to the model: the same reply.
    void expect_same(std::size_t i, raw_connection& link, const std::vector<std::string>& args) {
        const std::string real_reply = link.call(encode_request(args));
        const std::string model_reply = model_call(i, args);
        std::string shown;
        for (const std::string& a : args) shown += (shown.empty() ? "" : " ") + a.substr(0, 20);
        EXPECT_EQ(model_reply, real_reply) << "node " << i << ": " << shown;
    }
};

// "{foo}" keys: the lock name and its companions share slot 12182.
const std::vector<std::string> slot_keys = {"{foo}", "{foo}:fence"};

std::vector<std::string> release_both(const std::vector<std::string>& keys) {
    return {"EVAL",  std::string(edgelock::release_script.text),
            "2",     keys[0],
            keys[1], std::string(32, 'a')};
}

TEST(cluster_conformance, moved_ask_asking_tryagain_and_cluster_slots_answer_as_redis_7_does) {
    cluster_settings settings;
    settings.replicas_per_master = 1;
    cluster_pair pair(settings);
    const std::uint16_t slot = edgelock::cluster_slot("{foo}");
    const std::size_t source = pair.real.owner_of(slot);
    const std::size_t target = (source + 1) % pair.real.masters_at_start();
    std::vector<std::unique_ptr<raw_connection>> links;
    for (std::size_t i = 0; i < pair.real.size(); ++i)
        links.push_back(std::make_unique<raw_connection>(pair.real.node(i).port()));

    // The view every node has, and a key set on its owner, refused elsewhere.
    for (std::size_t i = 0; i < pair.real.size(); ++i) {
        pair.expect_same(i, *links[i], {"CLUSTER", "SLOTS"});
        pair.expect_same(i, *links[i], {"SET", "{foo}", "1"});
        pair.expect_same(i, *links[i], {"SET", "{foo}:fence", "7"});
        pair.expect_same(i, *links[i], {"DEL", "{foo}", "bar"});
        pair.expect_same(i, *links[i], {"PING"});
    }

    // Half way: the first key moved, the second still on the source.
    EXPECT_EQ(pair.real.migrate_slot(slot, source, target, migration::half_way), 1u);
    pair.models[target].set_importing(slot, static_cast<std::uint8_t>(source));
    pair.models[source].set_migrating(slot, static_cast<std::uint8_t>(target));
    std::vector<edgelock::sim::repl_op> effects;
    std::string moved_key;
    for (const std::string& key : slot_keys) {
        if (links[source]->call(encode_request({"GET", key})).rfind("-ASK", 0) == 0) {
            moved_key = key;
            pair.models[target].restore_key({key, key == "{foo}" ? "1" : "7", -1}, effects);
            pair.models[source].delete_key(key, effects);
        }
    }
    ASSERT_FALSE(moved_key.empty());
    for (const std::size_t i : {source, target}) {
        for (const std::string& key : slot_keys) {
            pair.expect_same(i, *links[i], {"GET", key});
            pair.expect_same(i, *links[i], {"ASKING"});
            pair.expect_same(i, *links[i], {"GET", key});
        }
        pair.expect_same(i, *links[i], {"EXISTS", slot_keys[0], slot_keys[1]});
        pair.expect_same(i, *links[i], {"ASKING"});
        pair.expect_same(i, *links[i], {"EXISTS", slot_keys[0], slot_keys[1]});
        pair.expect_same(i, *links[i], release_both(slot_keys));
        pair.expect_same(i, *links[i], {"ASKING"});
        pair.expect_same(i, *links[i], {"PING"});
        pair.expect_same(i, *links[i], {"GET", moved_key});
    }

    // Complete: every node names the target.
    EXPECT_EQ(pair.real.migrate_slot(slot, source, target, migration::complete), 1u);
    for (const std::string& key : slot_keys) {
        if (key == moved_key) continue;
        pair.models[target].restore_key({key, key == "{foo}" ? "1" : "7", -1}, effects);
        pair.models[source].delete_key(key, effects);
    }
    for (redis_node& model : pair.models)
        model.set_slot_owner(slot, slot, static_cast<std::uint8_t>(target));
    for (std::size_t i = 0; i < pair.real.size(); ++i) {
        pair.expect_same(i, *links[i], {"CLUSTER", "SLOTS"});
        pair.expect_same(i, *links[i], {"GET", "{foo}:fence"});
        pair.expect_same(i, *links[i], {"ASKING"});
        pair.expect_same(i, *links[i], {"GET", "{foo}"});
    }
}

// The model's key slots (sim/key_slot.hpp, its own CRC16, not the client's) are the
// cluster's: CLUSTER KEYSLOT of names generated around hash tags (braces anywhere, empty
// tags, a tag's first '}' only, bytes of every value, the empty name).
TEST(cluster_conformance, the_models_key_slots_are_the_clusters) {
    redis_cluster real(cluster_settings{});
    raw_connection link(real.node(0).port());
    std::mt19937 random(20261129);
    using namespace std::string_literals;
    const std::string bytes = "{}{}:ab\xff\x00\r\n z"s;
    std::uniform_int_distribution<std::size_t> length(0, 24);
    std::uniform_int_distribution<std::size_t> pick(0, bytes.size() - 1);
    std::uniform_int_distribution<int> any_byte(0, 255);
    int differing = 0;
    for (int n = 0; n < 2000; ++n) {
        std::string name(length(random), '\0');
        for (char& c : name)
            c = n % 4 == 0 ? static_cast<char>(any_byte(random)) : bytes[pick(random)];
        const std::string real_slot = link.call(encode_request({"CLUSTER", "KEYSLOT", name}));
        const std::string model_slot =
            ":" + std::to_string(edgelock::sim::server_key_slot(name)) + "\r\n";
        if (real_slot != model_slot && ++differing <= 5) {
            ADD_FAILURE() << "name of " << name.size() << " bytes: model " << model_slot
                          << " redis " << real_slot;
        }
    }
    EXPECT_EQ(differing, 0);
}

}  // namespace

// The lock's shard ("{foo}") in a cluster of three masters with a replica each.
struct lock_shard {
    explicit lock_shard(redis_cluster& real)
        : slot(edgelock::cluster_slot("{foo}")),
          master(real.owner_of(slot)),
          replica(real.replica_of(master)) {}
    std::uint16_t slot;
    std::size_t master;
    std::size_t replica;
};

cluster_settings with_replicas() {
    cluster_settings settings;
    settings.replicas_per_master = 1;
    return settings;
}

// Sends `args` on `link` until the reply starts with `prefix` (bounded by the cluster's
// ready timeout): a node's state changing on its own clock.
bool answers_with(raw_connection& link, const std::vector<std::string>& args,
                  const std::string& prefix) {
    return edgelock::testing::eventually(
        [&] { return link.call(encode_request(args)).rfind(prefix, 0) == 0; },
        cluster_settings{}.ready_timeout);
}

// A failover as Redis Cluster runs it, the lock's master stopped by SIGSTOP past the node
// timeout: another master answers MOVED to it, then, once it is marked FAIL and until its
// replica is promoted, CLUSTERDOWN (cluster_state fail); then MOVED to the promoted replica.
// The old master, resumed, answers what waited in its socket as the master it believed it was,
// and the next request with MOVED: the configuration it missed waited in its cluster bus.
// The world drives the model through the same steps (world::cluster_fail, cluster_promoted,
// sentinel_reconfigure); here each step is told to the models as the real nodes show it.
TEST(cluster_conformance, a_failover_answers_clusterdown_until_the_promotion_as_redis_7_does) {
    cluster_pair pair(with_replicas());
    const auto [slot, master, replica] = lock_shard(pair.real);
    const std::size_t other = (master + 1) % pair.real.masters_at_start();
    raw_connection at_other(pair.real.node(other).port());
    raw_connection at_master(pair.real.node(master).port());
    const std::vector<std::string> write = {"SET", "{foo}", "1"};
    pair.expect_same(other, at_other, write);
    pair.expect_same(master, at_master, write);

    pair.real.node(master).freeze();
    ASSERT_TRUE(answers_with(at_other, write, "-CLUSTERDOWN")) << pair.real.node(other).log_tail();
    for (std::size_t i = 0; i < pair.models.size(); ++i) {
        if (i != master) pair.models[i].set_cluster_down(true);
    }
    pair.expect_same(other, at_other, write);
    pair.expect_same(other, at_other, {"GET", "{foo}"});
    pair.expect_same(other, at_other, release_both(slot_keys));
    pair.expect_same(other, at_other, {"PING"});

    ASSERT_TRUE(answers_with(at_other, write, "-MOVED")) << pair.real.node(other).log_tail();
    for (std::size_t i = 0; i < pair.models.size(); ++i) {
        if (i == master) continue;
        pair.models[i].set_slot_owner(slot, slot, static_cast<std::uint8_t>(replica));
        pair.models[i].set_cluster_down(false);
    }
    pair.expect_same(other, at_other, write);

    at_master.send_only(encode_request(write));
    pair.real.node(master).thaw();
    EXPECT_EQ(pair.model_call(master, write), at_master.next_reply());
    // Until it has read the newer configuration it answers as the master it was: never
    // CLUSTERDOWN (the model's old master serves until it hears, a gossip delay).
    std::string answer;
    EXPECT_TRUE(edgelock::testing::eventually(
        [&] {
            answer = at_master.call(encode_request(write));
            return answer != "+OK\r\n";
        },
        cluster_settings{}.ready_timeout));
    EXPECT_EQ(answer.rfind("-MOVED", 0), 0U) << answer;
    pair.models[master].set_slot_owner(slot, slot, static_cast<std::uint8_t>(replica));
    pair.expect_same(master, at_master, write);
    pair.expect_same(master, at_master, {"GET", "{foo}"});
}

// A master cut off from the majority of masters (here: every other master and replica
// stopped with SIGSTOP, the master and its replica left running) turns its cluster_state to
// fail once the node timeout passed: it and its replica answer keyed commands with
// CLUSTERDOWN, so the old master takes no more writes. Once the others answer again the
// replica is up at once; the master stays down for its rejoin delay (the node timeout) in
// case a failover happened meanwhile, then serves again (world::cluster_minority, cluster_rejoin).
TEST(cluster_conformance, a_master_in_the_minority_answers_clusterdown_as_redis_7_does) {
    cluster_pair pair(with_replicas());
    const auto [slot, master, replica] = lock_shard(pair.real);
    raw_connection at_master(pair.real.node(master).port());
    raw_connection at_replica(pair.real.node(replica).port());
    const std::vector<std::string> write = {"SET", "{foo}", "1"};
    const std::vector<std::string> read = {"GET", "{foo}"};
    pair.expect_same(master, at_master, write);
    pair.expect_same(replica, at_replica, read);

    for (std::size_t i = 0; i < pair.real.size(); ++i) {
        if (i != master && i != replica) pair.real.node(i).freeze();
    }
    ASSERT_TRUE(answers_with(at_master, write, "-CLUSTERDOWN"))
        << pair.real.node(master).log_tail();
    ASSERT_TRUE(answers_with(at_replica, read, "-CLUSTERDOWN"));
    pair.models[master].set_cluster_down(true);
    pair.models[replica].set_cluster_down(true);
    pair.expect_same(master, at_master, write);
    pair.expect_same(master, at_master, release_both(slot_keys));
    pair.expect_same(master, at_master, {"PING"});
    pair.expect_same(replica, at_replica, read);

    for (std::size_t i = 0; i < pair.real.size(); ++i) {
        if (i != master && i != replica) pair.real.node(i).thaw();
    }
    pair.expect_same(master, at_master, write);  // its rejoin delay: still down
    ASSERT_TRUE(answers_with(at_replica, read, "-MOVED"));
    pair.models[replica].set_cluster_down(false);
    pair.expect_same(replica, at_replica, read);
    ASSERT_TRUE(answers_with(at_master, write, "+OK")) << pair.real.node(master).log_tail();
    pair.models[master].set_cluster_down(false);
    pair.expect_same(master, at_master, write);
    pair.expect_same(master, at_master, read);
}
