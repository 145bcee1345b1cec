// SPDX-License-Identifier: Apache-2.0
// The simulated sentinel (sentinel_model.hpp) held to a real redis-sentinel 7.0 for what a
// client's watch reads: the confirmation of SUBSCRIBE +switch-master, and the message a
// sentinel publishes when a failover replaced the master, byte for byte once the model's node
// names are written as the real addresses (the model's nodes are n0, n1 on one port; the real
// ones are 127.0.0.1 on two).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "edgelock/sim/resp_text.hpp"
#include "edgelock/sim/sentinel_model.hpp"
#include "edgelock/testing/redis_client.hpp"
#include "edgelock/testing/redis_process.hpp"
#include "raw_connection.hpp"

namespace {

using edgelock::conformance::encode_request;
using edgelock::conformance::raw_connection;
using edgelock::sim::sentinel_node;
using edgelock::testing::redis_client;
using edgelock::testing::sentinel_topology;

// The model's message with node n's "n<n> <port>" written as "127.0.0.1 <ports[n]>".
std::string with_real_addresses(const std::string& model_text, std::uint16_t old_port,
                                std::uint16_t new_port) {
    std::string text = model_text;
    const auto swap = [&](const std::string& from, std::uint16_t port) {
        const std::size_t at = text.find(from);
        ASSERT_NE(at, std::string::npos) << model_text;
        text.replace(at, from.size(), "127.0.0.1 " + std::to_string(port));
    };
    swap("n0 6379", old_port);
    swap("n1 6379", new_port);
    return text;
}

TEST(sentinel_conformance, a_switch_is_announced_as_the_model_announces_it) {
    sentinel_topology topology;
    const std::uint16_t old_port = topology.master_port();
    const sentinel_node model(0, sentinel_topology::master_name, 0);
    raw_connection watch(topology.sentinel(0).port());
    const std::string subscribe = encode_request({"SUBSCRIBE", "+switch-master"});
    EXPECT_EQ(watch.call(subscribe), model.answer(subscribe));
    EXPECT_TRUE(sentinel_node::subscribes_to_switches(subscribe));

    redis_client(topology.sentinel(1).port())
        .command({"SENTINEL", "FAILOVER", sentinel_topology::master_name});
    const std::string announced = watch.next_reply();
    const std::uint16_t new_port = topology.wait_for_failover(old_port);

    // The model's frame, its text in the real addresses: ["message", "+switch-master", text].
    const std::string frame = model.switch_message(0, 1);
    const std::string prefix = "*3\r\n$7\r\nmessage\r\n$14\r\n+switch-master\r\n";
    ASSERT_EQ(frame.compare(0, prefix.size(), prefix), 0) << frame;
    const std::size_t text_at = frame.find("\r\n", prefix.size()) + 2;
    const std::string text = frame.substr(text_at, frame.size() - text_at - 2);
    std::string expected = prefix;
    edgelock::sim::append_bulk(expected, with_real_addresses(text, old_port, new_port));
    EXPECT_EQ(announced, expected);
}

}  // namespace
