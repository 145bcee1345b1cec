// SPDX-License-Identifier: Apache-2.0
// The simulated cluster's own key-to-slot function (sim/key_slot.hpp) against the Redis
// Cluster specification's examples; tests/conformance/cluster_conformance_test.cpp holds it
// to a real cluster's CLUSTER KEYSLOT.
#include <gtest/gtest.h>

#include <string>

#include "edgelock/sim/key_slot.hpp"

namespace {

using edgelock::sim::server_crc16;
using edgelock::sim::server_key_slot;

TEST(key_slot, crc16_gives_the_specifications_check_value) {
    EXPECT_EQ(server_crc16("123456789"), 0x31C3);
    EXPECT_EQ(server_crc16(""), 0);
    EXPECT_EQ(server_key_slot("123456789"), 0x31C3 % 16384);
}

TEST(key_slot, keys_with_the_same_hash_tag_share_a_slot) {
    EXPECT_EQ(server_key_slot("{user1000}.following"), server_key_slot("{user1000}.followers"));
    EXPECT_EQ(server_key_slot("{user1000}.following"), server_key_slot("user1000"));
    EXPECT_NE(server_key_slot("user1000.following"), server_key_slot("user1000.followers"));
}

// The specification's own cases: the first '{' and the first '}' after it decide.
TEST(key_slot, only_the_first_tag_with_bytes_in_it_counts) {
    EXPECT_EQ(server_key_slot("foo{}{bar}"), server_crc16("foo{}{bar}") % 16384);  // empty tag
    EXPECT_EQ(server_key_slot("foo{{bar}}zap"), server_key_slot("{bar"));
    EXPECT_EQ(server_key_slot("foo{bar}{zap}"), server_key_slot("bar"));
    EXPECT_EQ(server_key_slot("foo{bar"), server_crc16("foo{bar") % 16384);  // no '}'
    EXPECT_EQ(server_key_slot("foo}bar{"), server_crc16("foo}bar{") % 16384);
}

// What redis-server 7.0.15's CLUSTER KEYSLOT answers for these keys.
TEST(key_slot, the_slots_redis_gives) {
    EXPECT_EQ(server_key_slot("foo"), 12182);
    EXPECT_EQ(server_key_slot("somekey"), 11058);
    EXPECT_EQ(server_key_slot("foo{hash_tag}"), 2515);
    EXPECT_EQ(server_key_slot("bar{hash_tag}"), 2515);
    EXPECT_EQ(server_key_slot("123456789"), 12739);
    EXPECT_EQ(server_key_slot("foo{}{bar}"), 8363);
    EXPECT_EQ(server_key_slot("foo{{bar}}zap"), 4015);
    EXPECT_EQ(server_key_slot("foo{bar}{zap}"), 5061);
    EXPECT_EQ(server_key_slot("{user1000}.following"), 3443);
}

}  // namespace
