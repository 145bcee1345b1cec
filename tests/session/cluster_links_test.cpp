// SPDX-License-Identifier: Apache-2.0
// The per-node side of a cluster client (session/cluster_links.hpp): seeds, the node each link
// serves, the map's reads and which links have work.
#include <gtest/gtest.h>

#include <string>

#include "cluster_testing.hpp"
#include "edgelock/session/cluster_links.hpp"
#include "scripted_faults.hpp"

namespace {

using namespace cluster_testing;
using namespace edgelock;
using namespace edgelock::session;

using node_set = cluster_links::node_set;
constexpr std::uint8_t none = cluster_links::none;

node_set bit(std::uint8_t k) { return node_set{1} << k; }

// CLUSTER SLOTS giving `masters` ranges of the slots, each to a master of its own port.
std::string ranges_to(int masters, int first_port) {
    std::string resp = "*" + std::to_string(masters) + "\r\n";
    const int width = 16384 / masters;
    for (int m = 0; m < masters; ++m) {
        const int last = m == masters - 1 ? 16383 : (m + 1) * width - 1;
        resp += "*3\r\n:" + std::to_string(m * width) + "\r\n:" + std::to_string(last) +
                "\r\n*2\r\n$9\r\n127.0.0.1\r\n:" + std::to_string(first_port + m) + "\r\n";
    }
    return resp;
}

class cluster_links_test : public ::testing::Test {
protected:
    void SetUp() override {
        const node_address seeds[] = {node("redis://127.0.0.1:7001"),
                                      node("redis://127.0.0.1:7002"),
                                      node("redis://127.0.0.1:7001")};
        ASSERT_TRUE(links.set_seeds(seeds, 3));
    }
    failure read(std::uint8_t from, const std::string& resp, node_set in_use = 0) {
        links.read_sent(from);
        const parsed reply(resp);
        return links.read_answered(from, reply.nodes.data(), reply.count, in_use, 0);
    }
    cluster_links links;
};

TEST_F(cluster_links_test, the_seeds_are_in_the_map_once_each_and_taken_in_turn) {
    EXPECT_EQ(links.seed_count(), 2u) << "a seed named twice is one seed";
    EXPECT_EQ(links.map().nodes(), 2u);
    const std::uint8_t first = links.seed();
    EXPECT_EQ(links.map().node(first).port, 7001);
    links.next_seed();
    EXPECT_EQ(links.map().node(links.seed()).port, 7002);
    EXPECT_NE(links.seed(), first);
    links.next_seed();
    EXPECT_EQ(links.seed(), first) << "each in turn, then the first again";
}

TEST_F(cluster_links_test, a_link_is_set_up_for_the_node_its_index_serves) {
    const std::uint8_t k = links.seed();
    EXPECT_TRUE(links.needs_setup(k));
    EXPECT_FALSE(links.linked(k));
    const node_address& at = links.set_up(k);
    EXPECT_EQ(&at, &links.address(k)) << "the connection points at the links' own copy";
    EXPECT_EQ(at.port, 7001);
    EXPECT_TRUE(links.linked(k));
    EXPECT_FALSE(links.needs_setup(k));
}

// A full map gives the index of a node that serves no slot and is not in use to a master it
// has not met: that link serves another node now, and must be set up again.
TEST_F(cluster_links_test, an_index_given_to_another_node_needs_its_link_set_up_again) {
    const std::uint8_t seed = links.seed();
    (void)links.set_up(seed);
    ASSERT_FALSE(read(seed, ranges_to(15, 7101), bit(seed))) << "15 masters beside a seed in use";
    EXPECT_EQ(links.map().node(seed).port, 7001) << "in use: kept";
    EXPECT_FALSE(links.needs_setup(seed));
    ASSERT_FALSE(read(seed, ranges_to(16, 7201), 0)) << "no index in use: all 16 for masters";
    EXPECT_NE(links.map().node(seed).port, 7001);
    EXPECT_TRUE(links.needs_setup(seed)) << "its index serves another node now";
    EXPECT_EQ(links.seed(), seed) << "its first index: the node there answers CLUSTER SLOTS too";
}

TEST_F(cluster_links_test, an_unreadable_answer_says_what_the_locks_meet) {
    EXPECT_EQ(read(links.seed(), "-ERR This instance has cluster support disabled\r\n"),
              failure::of(transport_errc::no_slot_map));
    EXPECT_TRUE(links.map().stale());
    EXPECT_EQ(read(links.seed(), ranges_to(17, 7101)),
              failure::of(transport_errc::too_many_masters));
    EXPECT_FALSE(read(links.seed(), one_master(7101)));
    EXPECT_FALSE(links.map().stale());
    EXPECT_EQ(links.map().node(links.map().master_of(0)).port, 7101);
}

// The fault point fail_map_read (fault_points.hpp): an answer the map could read is not, the
// map stays stale, and the read is over: the next goes after the gap.
TEST_F(cluster_links_test, a_read_the_fault_point_fails_leaves_the_map_stale_until_the_next) {
    scripted_faults faults(fault_point::fail_map_read);
    faults.firing = true;
    links.set_faults(&faults);
    links.read_sent(links.seed());
    const parsed reply(one_master(7101));
    EXPECT_EQ(links.read_answered(links.seed(), reply.nodes.data(), reply.count, 0, 10),
              failure::of(transport_errc::no_slot_map));
    EXPECT_EQ(faults.asked, 1);
    EXPECT_TRUE(links.map().stale());
    EXPECT_FALSE(links.read_due(10 + map_refresh::refresh_gap_ms - 1));
    EXPECT_TRUE(links.read_due(10 + map_refresh::refresh_gap_ms)) << "the failed read ended";

    faults.firing = false;
    EXPECT_FALSE(read(links.seed(), one_master(7101)));
    EXPECT_FALSE(links.map().stale());
    EXPECT_EQ(links.map().node(links.map().master_of(0)).port, 7101);
}

TEST_F(cluster_links_test, one_read_at_a_time_and_not_sooner_than_the_gap) {
    EXPECT_TRUE(links.read_due(0)) << "never read";
    links.read_sent(links.seed());
    EXPECT_FALSE(links.read_due(0)) << "one on its way";
    links.read_lost(10);
    EXPECT_FALSE(links.read_due(10 + map_refresh::refresh_gap_ms - 1));
    EXPECT_TRUE(links.read_due(10 + map_refresh::refresh_gap_ms));
    EXPECT_EQ(links.next_read_ms(), 10 + map_refresh::refresh_gap_ms);
}

// The read goes on the ready link after the one asked last: a node with a wrong view is not
// asked forever.
TEST_F(cluster_links_test, the_map_is_read_from_the_next_ready_link_after_the_last) {
    const node_set ready = bit(1) | bit(4) | bit(9);
    EXPECT_EQ(links.reader(0), none);
    EXPECT_EQ(links.reader(ready), 1);
    links.read_sent(1);
    EXPECT_EQ(links.reader(ready), 4);
    links.read_sent(4);
    EXPECT_EQ(links.reader(ready), 9);
    links.read_sent(9);
    EXPECT_EQ(links.reader(ready), 1) << "round again";
    EXPECT_EQ(links.reader(bit(9)), 9) << "the only one ready";
}

TEST_F(cluster_links_test, a_link_end_that_may_mean_a_failover_makes_the_map_stale) {
    ASSERT_FALSE(read(links.seed(), one_master(7101)));
    links.link_ended(connection_end{});
    EXPECT_FALSE(links.map().stale()) << "a connection closed on purpose";
    links.link_ended(connection_end{true, {}});
    EXPECT_TRUE(links.map().stale()) << "traffic was flowing";
    ASSERT_FALSE(read(links.seed(), one_master(7101)));
    links.link_ended(connection_end{false, failure::system(111)});
    EXPECT_TRUE(links.map().stale());
}

// The blocking client's stall: a node never linked (a promoted replica, an importing master)
// has work when the lock's requests target it.
TEST_F(cluster_links_test, the_target_has_work_linked_or_not) {
    ASSERT_FALSE(read(links.seed(), one_master(7101)));
    const std::uint8_t target = links.map().master_of(0);
    ASSERT_FALSE(links.linked(target));
    EXPECT_TRUE(links.wanted(linking::on_demand, target, target, false, false));
    EXPECT_FALSE(links.wanted(linking::on_demand, target, none, false, false))
        << "no request: no work";
}

// A read of the map that is due goes on a ready link, or on the seed's link made for it; the
// other seeds wait their turn.
TEST_F(cluster_links_test, a_due_read_wants_a_ready_link_or_the_seed) {
    const std::uint8_t seed = links.seed();
    EXPECT_FALSE(links.wanted(linking::on_demand, seed, none, true, false))
        << "a seed never linked waits for tend_map";
    (void)links.set_up(seed);
    EXPECT_TRUE(links.wanted(linking::on_demand, seed, none, true, false))
        << "the seed to read the map from";
    EXPECT_FALSE(links.wanted(linking::on_demand, seed, none, false, false)) << "no read due";
    links.next_seed();
    const std::uint8_t other = links.seed();
    (void)links.set_up(other);
    EXPECT_FALSE(links.wanted(linking::on_demand, seed, none, true, false))
        << "only the seed in turn";
    EXPECT_TRUE(links.wanted(linking::on_demand, seed, none, true, true))
        << "a ready link carries the read";
    EXPECT_TRUE(links.wanted(linking::on_demand, other, none, true, false));
}

}  // namespace
