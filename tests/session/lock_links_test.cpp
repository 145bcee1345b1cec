// SPDX-License-Identifier: Apache-2.0
// One lock's side of its client's links (session/lock_links.hpp), with a real lock, a real slot
// map and a real connection driven by hand: which link carries the lock's traffic, when a move
// is a failover, and when the lock hears a node's start.
#include <gtest/gtest.h>

#include <array>
#include <string>

#include "../core/lock_driving.hpp"
#include "cluster_testing.hpp"
#include "edgelock/session/lock_links.hpp"
#include "scripted_faults.hpp"

namespace {

using namespace cluster_testing;
using namespace edgelock;
using namespace edgelock::session;
using namespace lock_driving;

constexpr std::uint8_t none = lock_links::none;

// A lock traffic connection to a node that started `uptime_s` ago, ready, its node read.
class read_node_connection {
public:
    explicit read_node_connection(int uptime_s) {
        connection_setup s;
        s.node = &server_;
        s.in_flight_storage = storage_.data();
        s.in_flight_capacity = storage_.size();
        s.read_node = true;
        EXPECT_EQ(c.setup(s), errc::ok);
        EXPECT_NE(c.start(0), nullptr);
        std::array<char, 4096> hello{};
        EXPECT_GT(c.on_connected(0, hello.data(), hello.size()), 0u);
        const std::string info = "# Server\r\nrun_id:" + std::string(40, 'a') +
                                 "\r\nuptime_in_seconds:" + std::to_string(uptime_s) +
                                 "\r\n# Persistence\r\naof_enabled:0\r\n";
        const std::string sha = "$40\r\n" + std::string(40, '0') + "\r\n";
        for (const std::string& r :
             {std::string("+PONG\r\n"), "$" + std::to_string(info.size()) + "\r\n" + info + "\r\n",
              std::string("*2\r\n$11\r\nappendfsync\r\n$8\r\neverysec\r\n"), sha, sha, sha, sha}) {
            const parsed reply(r);
            (void)c.on_reply(reply.nodes.data(), reply.count, 0);
        }
        EXPECT_TRUE(c.knows_node());
    }
    connection c;

private:
    node_address server_ = node("redis://127.0.0.1:7101");
    std::array<in_flight, 16> storage_{};
};

// A cluster lock's map: every slot on one master, read again to move it.
class lock_links_cluster_test : public ::testing::Test {
protected:
    void SetUp() override {
        const node_address seed = node("redis://127.0.0.1:7101");
        ASSERT_TRUE(links.set_seeds(&seed, 1));
        read_map(7101);
        configure(core, 1);
    }
    // Every node keeps its index (all in use), so the lock's old node stays where it was.
    void read_map(int port) {
        links.read_sent(links.seed());
        const parsed reply(one_master(port));
        ASSERT_FALSE(links.read_answered(links.seed(), reply.nodes.data(), reply.count,
                                         ~cluster_links::node_set{0}, 0));
    }
    std::uint8_t index_of(int port) const {
        for (std::uint8_t i = 0; i < links.map().nodes(); ++i) {
            if (links.map().node(i).port == port) return i;
        }
        return none;
    }
    // The lock held on 127.0.0.1:7101 from t=0, its acquire answered by link `from`.
    void held_on_the_first_master() {
        ASSERT_EQ(core.acquire(0, 0, token_a), errc::ok);
        const lock_writes first = place.route_writes(core, links, 0);
        ASSERT_EQ(first.step.to.node, index_of(7101));
        EXPECT_TRUE(first.step.moved) << "its first node";
        EXPECT_FALSE(first.failed_over) << "a first placement is no failover";
        (void)take_request(core, 0);
        ASSERT_EQ(place.answer(core, index_of(7101), key_was_free(), &links, 10, last), errc::ok);
        ASSERT_EQ(take_events(core).at(0).type, event_type::acquired);
    }
    // The renewal due, routed: where it goes and whether that was a failover.
    lock_writes renew() {
        EXPECT_EQ(core.on_timer(core.next_deadline_ms()), errc::ok);
        EXPECT_TRUE(core.has_request(0)) << "the renewal is queued";
        const lock_writes w = place.route_writes(core, links, core.next_deadline_ms());
        (void)take_events(core);
        return w;
    }

    cluster_links links;
    lock_links place = lock_links::in_cluster("orders:42");
    lock core;
    failure last;
};

TEST(lock_links_test, over_instances_link_i_carries_instance_i) {
    const lock_links place;
    EXPECT_FALSE(place.clustered());
    for (std::uint8_t k = 0; k < instances_max; ++k) EXPECT_EQ(place.instance_on(k), k);
}

TEST(lock_links_test, the_guard_tells_a_nodes_start_once_per_connection) {
    read_node_connection fresh(0);  // a node that just started: the guard keeps it out
    lock core;
    configure(core, 1);
    lock_links place;
    EXPECT_EQ(place.hear_start(core, 0, fresh.c, true, 0), errc::ok);
    EXPECT_TRUE(place.heard_start(0));
    EXPECT_EQ(place.hear_start(core, 0, fresh.c, true, 0), errc::ok) << "heard: nothing again";
    ASSERT_EQ(core.acquire(1, 0, token_a), errc::ok);
    const std::vector<event> events = take_events(core);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].code, errc::restart_guard);

    EXPECT_EQ(place.link_closed(core, 0, fresh.c, false, 2), errc::ok);
    EXPECT_FALSE(place.heard_start(0)) << "the next connection's reading is heard anew";
}

TEST(lock_links_test, a_late_node_start_is_told_at_the_next_write_instead) {
    read_node_connection fresh(0);  // the guard keeps a node that just started out
    lock core;
    configure(core, 1);
    lock_links place;
    scripted_faults faults(fault_point::late_node_start);
    faults.firing = true;
    EXPECT_EQ(place.node_read(core, 0, fresh.c.started(), true, 0, &faults), errc::ok);
    EXPECT_EQ(faults.asked, 1);
    EXPECT_FALSE(place.heard_start(0)) << "not told when the connection read it";
    ASSERT_EQ(core.acquire(1, 0, token_a), errc::ok);
    EXPECT_TRUE(core.has_request(0)) << "the lock knows nothing against the node yet";

    // Before its first write the lock hears it, and the attempt leaves the node out.
    EXPECT_EQ(place.hear_late_start(core, 0, fresh.c, true, 2), errc::ok);
    EXPECT_TRUE(place.heard_start(0));
    const std::vector<event> events = take_events(core);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].type, event_type::acquire_failed);
    EXPECT_EQ(events[0].code, errc::restart_guard);
}

// Only a start the fault point kept back is told late: one node_read did not tell (its link
// carried none of the lock's traffic then, or the guard was off) stays untold.
TEST(lock_links_test, only_a_start_kept_back_by_the_fault_point_is_told_late) {
    read_node_connection fresh(0);
    lock core;
    configure(core, 1);
    lock_links place;
    EXPECT_EQ(place.node_read(core, 0, fresh.c.started(), false, 0), errc::ok);
    EXPECT_EQ(place.hear_late_start(core, 0, fresh.c, true, 1), errc::ok);
    EXPECT_FALSE(place.heard_start(0));

    scripted_faults faults(fault_point::late_node_start);
    faults.firing = true;
    EXPECT_EQ(place.node_read(core, 0, fresh.c.started(), true, 2, &faults), errc::ok);
    place.link_lost(0);
    EXPECT_EQ(place.hear_late_start(core, 0, fresh.c, true, 3), errc::ok);
    EXPECT_FALSE(place.heard_start(0)) << "a start of a connection that ended is not told";
}

TEST(lock_links_test, without_the_guard_or_a_reading_the_lock_hears_nothing) {
    read_node_connection fresh(0);
    lock core;
    configure(core, 1);
    lock_links place;
    EXPECT_EQ(place.hear_start(core, 0, fresh.c, false, 0), errc::ok);
    EXPECT_FALSE(place.heard_start(0));
    const connection unread;  // never connected: nothing read
    EXPECT_EQ(place.hear_start(core, 0, unread, true, 0), errc::ok);
    EXPECT_FALSE(place.heard_start(0));
    ASSERT_EQ(core.acquire(1, 0, token_a), errc::ok);
    EXPECT_TRUE(take_events(core).empty());
    EXPECT_TRUE(core.has_request(0)) << "the acquire goes";
}

TEST_F(lock_links_cluster_test, the_lock_is_instance_0_on_its_routes_home_only) {
    EXPECT_TRUE(place.clustered());
    EXPECT_EQ(place.instance_on(index_of(7101)), none) << "on no node before its first write";
    held_on_the_first_master();
    EXPECT_EQ(place.instance_on(index_of(7101)), 0);
    EXPECT_EQ(place.route().home, index_of(7101));
    const std::uint8_t other = static_cast<std::uint8_t>(index_of(7101) + 1);
    EXPECT_EQ(place.instance_on(other), none);
    EXPECT_EQ(place.link_closed(core, other, connection{}, true, 20), errc::ok);
    EXPECT_FALSE(core.has_request(0)) << "another node's link ending is none of the lock's";
}

TEST_F(lock_links_cluster_test, a_move_off_a_node_whose_link_ended_is_a_failover) {
    held_on_the_first_master();
    EXPECT_EQ(place.link_closed(core, index_of(7101), connection{}, true, 20), errc::ok);
    (void)take_events(core);
    read_map(7102);  // the replica promoted
    const lock_writes w = renew();
    EXPECT_EQ(w.step.to.node, index_of(7102));
    EXPECT_TRUE(w.step.moved);
    EXPECT_TRUE(w.failed_over);
    const lock_writes again = place.route_writes(core, links, core.next_deadline_ms());
    EXPECT_FALSE(again.failed_over) << "counted once";
}

TEST_F(lock_links_cluster_test, a_home_lost_before_the_lock_hears_it_still_makes_a_failover) {
    held_on_the_first_master();
    place.link_lost(index_of(7101));  // a client telling many locks marks each one first
    read_map(7102);
    EXPECT_TRUE(renew().failed_over);
}

TEST_F(lock_links_cluster_test, a_move_off_a_node_still_reached_is_no_failover) {
    held_on_the_first_master();
    read_map(7102);  // the slot moved on: a redirect, not a failover
    const lock_writes w = renew();
    EXPECT_EQ(w.step.to.node, index_of(7102));
    EXPECT_TRUE(w.step.moved);
    EXPECT_FALSE(w.failed_over);
}

// The node the lock's queued requests go to next waits for its requests in flight on another
// node (a move waits for them), so a client does not work a link that cannot take them yet.
TEST_F(lock_links_cluster_test, the_next_node_waits_for_the_requests_in_flight_elsewhere) {
    held_on_the_first_master();
    EXPECT_EQ(place.next_node(core, links), none) << "nothing queued";
    const lock_writes w = renew();
    ASSERT_EQ(w.step.to.node, index_of(7101));
    (void)take_request(core, 0);  // the renewal, in flight on 7101
    EXPECT_EQ(place.next_node(core, links), none) << "nothing queued";
    ASSERT_EQ(core.release(core.next_deadline_ms() - 1), errc::ok);
    ASSERT_TRUE(core.has_request(0)) << "the release waits behind the renewal";
    EXPECT_EQ(place.next_node(core, links), index_of(7101)) << "its home takes it";
    read_map(7102);  // the slot moved on
    EXPECT_EQ(place.next_node(core, links), none) << "the renewal's answer comes first";
    ASSERT_EQ(place.answer(core, index_of(7101), integer(1), &links, 30, last), errc::ok);
    EXPECT_EQ(place.next_node(core, links), index_of(7102));
}

// A WAIT goes to the lock's home, where the writes it confirms went, whatever the map says
// since: that is the node whose link has work for it.
TEST_F(lock_links_cluster_test, a_queued_wait_goes_to_the_home_whatever_the_map_says) {
    lock waits;
    lock_config config = config_for(1);
    config.replicas_to_wait = 1;
    ASSERT_EQ(waits.configure(config), errc::ok);
    ASSERT_EQ(waits.acquire(0, 0, token_a), errc::ok);
    ASSERT_EQ(place.route_writes(waits, links, 0).step.to.node, index_of(7101));
    (void)take_request(waits, 0);  // the claim
    ASSERT_EQ(place.answer(waits, index_of(7101), key_was_free(), &links, 10, last), errc::ok);
    ASSERT_TRUE(waits.next_request_waits(0)) << "its WAIT is queued";
    read_map(7102);  // an answer naming another master for the slot
    EXPECT_EQ(place.target(links).node, index_of(7102));
    EXPECT_EQ(place.next_node(waits, links), index_of(7101));
}

TEST_F(lock_links_cluster_test, the_start_of_its_own_node_is_heard_and_again_after_a_move) {
    held_on_the_first_master();
    const std::uint8_t first = index_of(7101);
    read_node_connection there(86400);
    EXPECT_EQ(place.node_read(core, first, there.c.started(), true, 20), errc::ok);
    EXPECT_TRUE(place.heard_start(first));
    EXPECT_EQ(place.hear_start(core, first, there.c, true, 20), errc::ok);
    read_map(7102);
    const lock_writes w = renew();
    ASSERT_TRUE(w.step.moved);
    EXPECT_FALSE(place.heard_start(first)) << "a move is a new connection for the lock";
    const std::uint8_t home = index_of(7102);
    EXPECT_EQ(place.node_read(core, home, there.c.started(), true, 30), errc::ok);
    EXPECT_TRUE(place.heard_start(home));
    EXPECT_EQ(place.node_read(core, first, there.c.started(), true, 30), errc::ok);
    EXPECT_FALSE(place.heard_start(first)) << "a node the lock left is not heard";
}

TEST_F(lock_links_cluster_test, a_lock_moved_to_a_node_already_read_hears_its_start_first) {
    held_on_the_first_master();
    read_map(7102);
    const lock_writes w = renew();
    ASSERT_TRUE(w.step.moved);
    const std::uint8_t home = index_of(7102);
    read_node_connection already_read(0);  // the new node's link read it before the move
    EXPECT_EQ(place.hear_start(core, home, already_read.c, true, 30), errc::ok);
    EXPECT_TRUE(place.heard_start(home)) << "as on a new connection, before its first write";
}

}  // namespace
