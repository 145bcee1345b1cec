// SPDX-License-Identifier: Apache-2.0
// One simulated Redis node under test (sim/include/edgelock/sim/redis_model.hpp): requests
// written as the clients write them, sent at a clock the test moves by hand.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <string>

#include "edgelock/resp_writer.hpp"
#include "edgelock/sim/redis_model.hpp"

namespace edgelock::sim::fixtures {

// A request as the clients write it: a RESP array of bulk strings.
inline std::string command(std::initializer_list<std::string> args) {
    char buffer[2048];
    edgelock::resp_writer w(buffer, sizeof buffer);
    w.array(args.size());
    for (const std::string& a : args) w.bulk(a);
    return std::string(buffer, w.size());
}

struct model_node : ::testing::Test {
    redis_node node{0, persistence::none, 0};
    node_output out;
    std::int64_t wall_ms = 1'000'000;
    std::int64_t now_us = 5'000'000;
    std::uint32_t epoch = 1;

    // Sends one request from `client` and returns the reply bytes ("" when blocked).
    std::string send(const std::string& bytes, std::uint8_t client = 0) {
        out.clear();
        node.receive(client, epoch, bytes, wall_ms, now_us, out);
        return out.replies.empty() ? std::string() : out.replies.front().bytes;
    }
    std::string send(std::initializer_list<std::string> args) { return send(command(args)); }
};

}  // namespace edgelock::sim::fixtures
