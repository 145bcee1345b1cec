// SPDX-License-Identifier: Apache-2.0
// Helpers for the Redis Cluster tests of the session: a reply parsed from RESP text, a node
// from its URL, and the CLUSTER SLOTS of a cluster with one master.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "edgelock/limits.hpp"
#include "edgelock/resp_reader.hpp"
#include "edgelock/session/address.hpp"

namespace cluster_testing {

// A reply parsed from its RESP text (which it keeps: the nodes view into it).
struct parsed {
    std::string resp;
    std::vector<edgelock::reply_node> nodes =
        std::vector<edgelock::reply_node>(edgelock::nodes_max);
    std::size_t count = 0;
    explicit parsed(std::string text) : resp(std::move(text)) {
        const edgelock::parse_result r =
            edgelock::parse_reply(resp.data(), resp.size(), nodes.data(), nodes.size());
        EXPECT_EQ(r.code, edgelock::errc::ok) << resp;
        count = r.nodes;
    }
};

inline edgelock::session::node_address node(const std::string& url) {
    edgelock::session::node_address a;
    EXPECT_EQ(edgelock::session::parse_node_url(url, a).code, edgelock::errc::ok) << url;
    return a;
}

// CLUSTER SLOTS giving every slot to one master at 127.0.0.1:`port`.
inline std::string one_master(int port) {
    return "*1\r\n*3\r\n:0\r\n:16383\r\n*2\r\n$9\r\n127.0.0.1\r\n:" + std::to_string(port) + "\r\n";
}

}  // namespace cluster_testing
