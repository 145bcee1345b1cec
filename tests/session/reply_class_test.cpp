// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <string>

#include "edgelock/session/reply_class.hpp"

namespace {

using namespace edgelock;
using edgelock::session::classify;
using edgelock::session::reply_class;

reply_node error(const char* text) {
    reply_node n;
    n.type = reply_type::error;
    n.text = text;
    return n;
}

TEST(reply_class, the_wrong_server_errors_end_the_connection_with_their_reason) {
    const std::pair<const char*, transport_errc> cases[] = {
        {"READONLY You can't write against a read only replica.", transport_errc::not_master},
        {"MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
         transport_errc::master_down},
        {"LOADING Redis is loading the dataset in memory", transport_errc::loading},
        {"NOAUTH Authentication required.", transport_errc::auth_required},
        {"WRONGPASS invalid username-password pair or user is disabled.",
         transport_errc::auth_failed},
        {"READONLY", transport_errc::not_master},
    };
    for (const auto& [text, reason] : cases) {
        const auto verdict = classify(error(text));
        EXPECT_EQ(verdict.what, reply_class::wrong_node) << text;
        EXPECT_EQ(verdict.reason, reason) << text;
    }
}

// A cluster moving a slot or failing a master over answers so for a while; any other error,
// and a word that only begins like one of these, is an answer a wait does not change.
TEST(reply_class, tryagain_and_clusterdown_say_a_cluster_is_settling) {
    using edgelock::session::cluster_settling;
    EXPECT_TRUE(cluster_settling("TRYAGAIN Multiple keys request during rehashing of slot"));
    EXPECT_TRUE(cluster_settling("CLUSTERDOWN The cluster is down"));
    EXPECT_TRUE(cluster_settling("CLUSTERDOWN Hash slot not served"));
    EXPECT_FALSE(cluster_settling("CROSSSLOT Keys in request don't hash to the same slot"));
    EXPECT_FALSE(cluster_settling("ERR Error running script"));
    EXPECT_FALSE(cluster_settling("TRYAGAINX"));
    EXPECT_FALSE(cluster_settling(""));
    EXPECT_EQ(classify(error("TRYAGAIN Multiple keys request")).what, reply_class::answer);
}

// Redis sends this on connect when maxclients is reached, then closes: the connection never
// served, and another try (after the reconnect delay) may find a free slot.
TEST(reply_class, a_full_server_refuses_the_connection_itself) {
    const auto verdict = classify(error("ERR max number of clients reached"));
    EXPECT_EQ(verdict.what, reply_class::refused_connection);
    EXPECT_EQ(verdict.reason, transport_errc::max_clients);
    EXPECT_EQ(classify(error("ERR max number of clients reachedX")).what, reply_class::answer);
    EXPECT_EQ(classify(error("ERR unknown command")).what, reply_class::answer);
}

TEST(reply_class, every_other_reply_is_an_answer) {
    for (const char* text :
         {"NOSCRIPT No matching script.", "ERR unknown command", "BUSY Redis is busy",
          "READONLYX not the word", "readonly lower case", "TOKEN_GONE", "LOADINGS", ""}) {
        EXPECT_EQ(classify(error(text)).what, reply_class::answer) << text;
    }
    reply_node bulk;
    bulk.type = reply_type::bulk_string;
    bulk.text = "READONLY";
    EXPECT_EQ(classify(bulk).what, reply_class::answer) << "only error replies are classified";
    reply_node integer;
    integer.type = reply_type::integer;
    EXPECT_EQ(classify(integer).what, reply_class::answer);
}

}  // namespace
