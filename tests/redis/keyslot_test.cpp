// SPDX-License-Identifier: Apache-2.0
// A lock's fence key lies in its name's Redis Cluster slot, as a real redis-server in cluster
// mode computes slots (CLUSTER KEYSLOT answers with no slot assigned to the node), for names
// full of braces and binary bytes. The tests' own slot oracle (edgelock/testing/key_slot.hpp,
// which keys_test relies on) must agree with the server on every key too, and so must
// edgelock::cluster_slot, by which a cluster deployment routes a lock's requests.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "edgelock/keys.hpp"
#include "edgelock/limits.hpp"
#include "edgelock/testing/key_slot.hpp"
#include "edgelock/testing/redis_client.hpp"
#include "edgelock/testing/redis_process.hpp"

namespace {

using edgelock::testing::free_port;
using edgelock::testing::key_slot;
using edgelock::testing::redis_client;
using edgelock::testing::redis_reply;
using edgelock::testing::redis_server;

constexpr std::size_t generated_names = 2000;
constexpr std::size_t failures_shown_max = 10;

std::string fence_key(const std::string& name) {
    std::array<char, edgelock::key_bytes_max> out{};
    const std::size_t size = edgelock::write_fence_key(name, out.data(), out.size());
    return std::string(out.data(), size);
}

// Bytes outside printable ASCII as \xNN, so a failure message shows the exact key.
std::string shown(const std::string& key) {
    std::string text;
    for (const char c : key) {
        const auto byte = static_cast<unsigned char>(c);
        if (byte >= 0x20 && byte < 0x7f && byte != '\\') {
            text += c;
        } else {
            char escaped[5];
            std::snprintf(escaped, sizeof escaped, "\\x%02x", byte);
            text += escaped;
        }
    }
    return '"' + text + '"';
}

// Hand-picked names (a stray '}', empty, nested and repeated tags, NUL and 0xff bytes), then
// names drawn from a fixed seed, so every run checks the same ones.
std::vector<std::string> names_to_check() {
    using namespace std::string_literals;
    std::vector<std::string> names = {
        "orders:42",
        "x}y",
        "a{}b",
        "}",
        "{",
        "{}",
        "}{",
        "{}}",
        "{{}}",
        "a{b",
        "a}b{c",
        "{x}",
        "jobs{eu}:nightly",
        "a{b}c{}",
        "{}x}y",
        "{{x}}",
        "{a{b}c}",
        "x{}y{z}",
        "\xff}"s,
        "a\0}b"s,
        "{\0}"s,
        "\0"s,
        std::string(edgelock::name_bytes_max, '}'),
        std::string(edgelock::name_bytes_max, '{'),
    };
    std::mt19937 rng(20240611);
    const std::string common = "{}{}{}ab:";
    std::uniform_int_distribution<std::size_t> size(1, edgelock::name_bytes_max);
    std::uniform_int_distribution<std::size_t> pick(0, common.size());  // common.size(): any byte
    std::uniform_int_distribution<int> any_byte(0, 255);
    for (std::size_t i = 0; i < generated_names; ++i) {
        std::string name(size(rng) % (i % 4 == 0 ? edgelock::name_bytes_max : 12) + 1, '\0');
        for (char& c : name) {
            const std::size_t at = pick(rng);
            c = at < common.size() ? common[at] : static_cast<char>(any_byte(rng));
        }
        names.push_back(name);
    }
    return names;
}

long long cluster_keyslot(redis_client& client, const std::string& key) {
    const redis_reply reply = client.command({"CLUSTER", "KEYSLOT", key});
    EXPECT_EQ(reply.type, redis_reply::kind::integer) << shown(key) << ": " << reply.text;
    return reply.integer;
}

TEST(keyslot, the_fence_key_lies_in_the_names_slot_on_a_cluster_node) {
    // The cluster bus gets its own free port: the default (port + 10000) may not exist.
    redis_server server({"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                         "--cluster-port", std::to_string(free_port())});
    redis_client client(server.port());

    std::size_t oracle_wrong = 0;
    std::size_t slot_moved = 0;
    std::size_t routed_wrong = 0;  // edgelock::cluster_slot, which routes a cluster's requests
    std::string failures;
    for (const std::string& name : names_to_check()) {
        const std::string fence = fence_key(name);
        ASSERT_FALSE(fence.empty()) << shown(name);
        const long long name_slot = cluster_keyslot(client, name);
        const long long fence_slot = cluster_keyslot(client, fence);
        const bool oracle_agrees = key_slot(name) == name_slot && key_slot(fence) == fence_slot;
        if (!oracle_agrees) ++oracle_wrong;
        if (fence_slot != name_slot) ++slot_moved;
        if (edgelock::cluster_slot(name) != name_slot) ++routed_wrong;
        if ((!oracle_agrees || fence_slot != name_slot) &&
            oracle_wrong + slot_moved <= failures_shown_max) {
            failures += "\n  " + shown(name) + " slot " + std::to_string(name_slot) + " (oracle " +
                        std::to_string(key_slot(name)) + "), fence key " + shown(fence) + " slot " +
                        std::to_string(fence_slot) + " (oracle " + std::to_string(key_slot(fence)) +
                        ")";
        }
    }
    EXPECT_EQ(oracle_wrong, 0u) << "keys the test's slot oracle got wrong" << failures;
    EXPECT_EQ(slot_moved, 0u) << "fence keys in another slot than their lock name" << failures;
    EXPECT_EQ(routed_wrong, 0u) << "names edgelock::cluster_slot puts in another slot";
}

}  // namespace
