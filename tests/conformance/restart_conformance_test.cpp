// SPDX-License-Identifier: Apache-2.0
// What the simulated Redis says of itself after a restart (a crash, or another server at the
// address: the world's replace fault is a restart whose start lies earlier), held to a real
// redis-server: INFO's run_id is new with every start of the process, and its uptime counts
// again from that start, while nothing else tells the two processes apart. The restart guard
// reads exactly these two fields (session/node_facts.hpp).
#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "edgelock/sim/redis_model.hpp"
#include "edgelock/testing/redis_client.hpp"
#include "edgelock/testing/redis_process.hpp"
#include "raw_connection.hpp"

namespace {

using edgelock::conformance::encode_request;
using edgelock::sim::node_output;
using edgelock::sim::persistence;
using edgelock::sim::redis_node;
using edgelock::testing::redis_client;
using edgelock::testing::redis_server;

struct identity {
    std::string run_id;
    long long uptime_s = -1;
};

// The run_id and uptime_in_seconds lines of an INFO reply's text.
identity identity_in(const std::string& info) {
    identity out;
    const auto field = [&](const std::string& name) {
        const std::size_t at = info.find(name + ":");
        if (at == std::string::npos) return std::string();
        const std::size_t from = at + name.size() + 1;
        return info.substr(from, info.find('\r', from) - from);
    };
    out.run_id = field("run_id");
    const std::string uptime = field("uptime_in_seconds");
    if (!uptime.empty()) out.uptime_s = std::stoll(uptime);
    return out;
}

identity model_identity(redis_node& node, std::int64_t wall_ms) {
    node_output out;
    node.receive(0, 1, encode_request({"INFO"}), wall_ms, wall_ms * 1000, out);
    EXPECT_EQ(out.replies.size(), 1u);
    return out.replies.empty() ? identity{} : identity_in(out.replies.front().bytes);
}

TEST(restart_conformance, a_restart_brings_a_new_run_id_and_an_uptime_counted_from_it) {
    redis_server real({}, edgelock::testing::persistence::volatile_);
    const identity real_before{
        redis_client(real.port()).info_field("server", "run_id"),
        std::stoll(redis_client(real.port()).info_field("server", "uptime_in_seconds"))};
    real.restart();
    const identity real_after{
        redis_client(real.port()).info_field("server", "run_id"),
        std::stoll(redis_client(real.port()).info_field("server", "uptime_in_seconds"))};

    redis_node model(0, persistence::none, 0);
    const std::int64_t wall_ms = 1'700'000'000'000;
    model.set_started(wall_ms - 86'400'000);  // up a day, as a long-running server is
    const identity model_before = model_identity(model, wall_ms);
    model.crash(wall_ms * 1000);
    model.restart(wall_ms * 1000 + 1000, wall_ms + 1000);
    const identity model_after = model_identity(model, wall_ms + 1500);

    for (const auto& [before, after, who] : {std::tuple{real_before, real_after, "redis-server"},
                                             std::tuple{model_before, model_after, "model"}}) {
        SCOPED_TRACE(who);
        EXPECT_EQ(before.run_id.size(), 40u);
        EXPECT_EQ(after.run_id.size(), 40u);
        EXPECT_NE(before.run_id, after.run_id) << "a new run_id with every start";
        EXPECT_GE(after.uptime_s, 0);
        EXPECT_LE(after.uptime_s, 1) << "the uptime counts from the new start";
    }
    EXPECT_EQ(model_before.uptime_s, 86'400);
}

}  // namespace
