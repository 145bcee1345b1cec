// SPDX-License-Identifier: Apache-2.0
// A lock's way through Redis Cluster (cluster_route.hpp), with a real lock, a real slot map and
// literal redirects: where its requests go, when it moves, what it hears of a move, and how
// many redirects it follows.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../core/lock_driving.hpp"
#include "cluster_testing.hpp"
#include "edgelock/session/cluster_route.hpp"

namespace {

using namespace cluster_testing;

using namespace edgelock;
using namespace edgelock::session;
using namespace lock_driving;

lock_config waiting_for_a_replica() {
    lock_config config = config_for(1);
    config.replicas_to_wait = 1;  // WAIT 1 1500 after each claim
    return config;
}

class cluster_route_test : public ::testing::Test {
protected:
    void SetUp() override {
        read_map(one_master(7101));
        route = route_of("orders:42");
        slot = route.slot;
    }
    void read_map(const std::string& resp) {
        const parsed reply(resp);
        ASSERT_EQ(map.read_slots(reply.nodes.data(), reply.count, seed), errc::ok);
    }
    // The map's index of 127.0.0.1:`port`, or no_master.
    std::uint8_t index_of(int port) const {
        for (std::uint8_t i = 0; i < map.nodes(); ++i) {
            if (map.node(i).port == port) return i;
        }
        return slot_map::no_master;
    }
    errc answer(const reply_node& reply, std::int64_t now) {
        return deliver_cluster_answer(core, 0, route, map, reply, seed, now, last);
    }
    // "MOVED <slot> 127.0.0.1:<port>" or "ASK ...", for the lock's slot.
    errc redirect(const char* kind, int port, std::int64_t now) {
        text =
            std::string(kind) + " " + std::to_string(slot) + " 127.0.0.1:" + std::to_string(port);
        return answer(error(text), now);
    }
    // begin_writes, expecting the requests to go to 127.0.0.1:`port`; then the next request.
    std::vector<std::string> write_to(int port, std::int64_t now, bool asking = false) {
        const route_step step = begin_writes(core, 0, route, map, now);
        EXPECT_EQ(step.code, errc::ok);
        EXPECT_EQ(step.to.node, index_of(port));
        EXPECT_EQ(step.to.asking, asking);
        if (step.to.node == slot_map::no_master) return std::vector<std::string>(8);
        return take_request(core, 0);
    }
    // Acquired on 127.0.0.1:7101 at t=1000 (reply at 1010), events drained.
    void held_on_the_first_master() {
        ASSERT_EQ(core.acquire(1000, 0, token_a), errc::ok);
        ASSERT_EQ(write_to(7101, 1000), set_nx_request(token_a_hex));
        ASSERT_EQ(answer(key_was_free(), 1010), errc::ok);
        const auto events = take_events(core);
        ASSERT_EQ(events.size(), 1u);
        ASSERT_EQ(events[0].type, event_type::acquired);
    }
    // Three `acquired` events of further holds: the lock refuses input until drained.
    void fill_the_event_queue(std::int64_t now) {
        for (int i = 0; i < 3; ++i) ASSERT_EQ(core.acquire(now, 0, token_a), errc::ok);
        ASSERT_EQ(core.on_timer(now), errc::events_pending);
    }

    node_address seed = node("redis://127.0.0.1:7101");
    slot_map map;
    lock_route route;
    std::uint16_t slot = 0;
    lock core;
    failure last;
    std::string text;  // the last redirect's text: the reply views into it
};

TEST_F(cluster_route_test, a_lock_starts_on_no_node_and_goes_to_its_slots_master) {
    EXPECT_EQ(slot, cluster_slot("orders:42"));
    EXPECT_EQ(route.home, slot_map::no_master);
    EXPECT_EQ(route.ask, slot_map::no_master);
    const route_target to = target_of(route, map);
    EXPECT_EQ(to.node, index_of(7101));
    EXPECT_FALSE(to.asking);
    EXPECT_EQ(target_of(route, slot_map{}).node, slot_map::no_master) << "a map never read";

    configure(core, 1);
    ASSERT_EQ(core.acquire(0, 0, token_a), errc::ok);
    const route_step first = begin_writes(core, 0, route, map, 0);
    EXPECT_EQ(first.code, errc::ok);
    EXPECT_EQ(first.to.node, index_of(7101));
    EXPECT_TRUE(first.moved) << "its first node: tell it the node's start";
    EXPECT_EQ(route.home, index_of(7101));
    const route_step again = begin_writes(core, 0, route, map, 0);
    EXPECT_EQ(again.to.node, index_of(7101));
    EXPECT_FALSE(again.moved);
}

TEST_F(cluster_route_test, nothing_is_written_while_the_slot_has_no_known_master) {
    configure(core, 1);
    ASSERT_EQ(core.acquire(0, 0, token_a), errc::ok);
    slot_map empty;
    const route_step step = begin_writes(core, 0, route, empty, 0);
    EXPECT_EQ(step.code, errc::ok);
    EXPECT_EQ(step.to.node, slot_map::no_master);
    EXPECT_FALSE(step.moved);
    EXPECT_EQ(route.home, slot_map::no_master);
    EXPECT_TRUE(core.has_request(0)) << "queued until a master is known";
}

// MOVED on an acquire: the map learns the new master and is read again soon; the SET did not
// run, so it goes again, to the new master, whose WAIT then confirms it.
TEST_F(cluster_route_test, moved_sends_the_acquire_again_to_the_slots_new_master) {
    ASSERT_EQ(core.configure(waiting_for_a_replica()), errc::ok);
    ASSERT_EQ(core.acquire(0, 0, token_a), errc::ok);
    ASSERT_EQ(write_to(7101, 0), set_nx_request(token_a_hex));
    ASSERT_FALSE(map.stale());

    EXPECT_EQ(redirect("MOVED", 7102, 5), errc::ok);
    EXPECT_TRUE(map.stale());
    ASSERT_NE(index_of(7102), slot_map::no_master);
    EXPECT_EQ(map.master_of(slot), index_of(7102));
    EXPECT_EQ(map.reads(), 1u) << "learnt from the redirect, not read";
    EXPECT_EQ(route.redirects, 1);
    EXPECT_EQ(route.followed, redirect::kind::moved);
    EXPECT_FALSE(last);
    EXPECT_TRUE(take_events(core).empty()) << "a redirect decides nothing";
    EXPECT_EQ(core.requests_in_flight(0), 0);

    const route_step step = begin_writes(core, 0, route, map, 6);
    EXPECT_EQ(step.code, errc::ok);
    EXPECT_EQ(step.to.node, index_of(7102));
    EXPECT_FALSE(step.to.asking);
    EXPECT_TRUE(step.moved);
    EXPECT_EQ(step.left, index_of(7101)) << "the node it left";
    EXPECT_EQ(route.home, index_of(7102));
    EXPECT_EQ(take_request(core, 0), set_nx_request(token_a_hex)) << "the same SET, again";
    ASSERT_EQ(answer(key_was_free(), 8), errc::ok);
    EXPECT_EQ(route.redirects, 0) << "an answer ends the run of redirects";
    EXPECT_EQ(route.followed, redirect::kind::none) << "an answer is no redirect";
    EXPECT_EQ(write_to(7102, 8), (std::vector<std::string>{"WAIT", "1", "1500"}));
    ASSERT_EQ(answer(integer(1), 9), errc::ok);
    const auto events = take_events(core);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].type, event_type::acquired);
    EXPECT_EQ(events[0].valid_until_ms, 30'000 - 302) << "validity from the first send";
}

// The slot moves (a new read of the map) while a renewal is in flight on the old master: the
// lock stays until the renewal's answer is back; the WAIT its OK queued goes there too, the
// node whose replicas must have the renewal; the next renewal goes to the new master.
TEST_F(cluster_route_test, a_move_waits_for_the_requests_in_flight_and_for_their_wait) {
    ASSERT_EQ(core.configure(waiting_for_a_replica()), errc::ok);
    ASSERT_EQ(core.acquire(0, 0, token_a), errc::ok);
    write_to(7101, 0);
    ASSERT_EQ(answer(key_was_free(), 2), errc::ok);
    ASSERT_EQ(write_to(7101, 2)[0], "WAIT");
    ASSERT_EQ(answer(integer(1), 5), errc::ok);
    ASSERT_EQ(take_events(core).size(), 1u);

    ASSERT_EQ(core.on_timer(10'000), errc::ok);
    ASSERT_EQ(write_to(7101, 10'000)[1], sha(edgelock::renew_script));
    read_map(one_master(7102));
    const std::uint8_t old_home = route.home;

    const route_step waiting = begin_writes(core, 0, route, map, 10'005);
    EXPECT_EQ(waiting.code, errc::ok);
    EXPECT_EQ(waiting.to.node, slot_map::no_master) << "the renewal is still on the old master";
    EXPECT_FALSE(waiting.moved);
    EXPECT_EQ(route.home, old_home);
    EXPECT_EQ(core.requests_in_flight(0), 1) << "the lock heard nothing";

    ASSERT_EQ(answer(integer(1), 10'010), errc::ok);  // renewed there; its WAIT is queued
    ASSERT_TRUE(core.next_request_waits(0));
    EXPECT_EQ(write_to(7101, 10'011)[0], "WAIT") << "where the renewal ran";
    EXPECT_EQ(route.home, old_home);
    ASSERT_EQ(answer(integer(1), 10'015), errc::ok);
    const auto renewed = take_events(core);
    ASSERT_EQ(renewed.size(), 1u);
    EXPECT_EQ(renewed[0].type, event_type::renewed);

    const std::int64_t next = core.next_deadline_ms();
    ASSERT_EQ(core.on_timer(next), errc::ok);
    const route_step moving = begin_writes(core, 0, route, map, next);
    EXPECT_EQ(moving.to.node, index_of(7102));
    EXPECT_TRUE(moving.moved);
    EXPECT_EQ(take_request(core, 0)[1], sha(edgelock::renew_script))
        << "the next renewal goes to the new master";
}

// Two requests in flight on the old master (a cancelled acquire and its cleanup): a MOVED for
// the first does not move the lock while the second is still there.
TEST_F(cluster_route_test, moved_moves_the_lock_only_once_its_last_request_came_back) {
    configure(core, 1);
    ASSERT_EQ(core.acquire(0, 0, token_a), errc::ok);
    write_to(7101, 0);
    ASSERT_EQ(core.release(10), errc::ok);  // cancels: the cleanup follows the acquire
    take_events(core);
    const auto cleanup = write_to(7101, 10);
    ASSERT_EQ(cleanup[1], sha(edgelock::release_script));
    ASSERT_EQ(core.requests_in_flight(0), 2);

    ASSERT_EQ(redirect("MOVED", 7102, 20), errc::ok);  // the cancelled acquire: dropped
    const route_step waiting = begin_writes(core, 0, route, map, 21);
    EXPECT_EQ(waiting.to.node, slot_map::no_master);
    EXPECT_EQ(route.home, index_of(7101));

    ASSERT_EQ(redirect("MOVED", 7102, 22), errc::ok);  // the cleanup: queued again
    EXPECT_EQ(route.redirects, 2);
    EXPECT_EQ(write_to(7102, 23), cleanup);
    EXPECT_EQ(route.home, index_of(7102));
}

// ASK: the one request it redirected goes to the importing node, after ASKING; the lock's
// next request goes to the slot's master again (the importing node serves any key of the slot
// after ASKING, so a request whose key is still on the master would be granted there twice).
// The map's owner of the slot stays as it was.
TEST_F(cluster_route_test, ask_sends_the_one_request_it_redirected_to_the_importing_node) {
    configure(core, 1);
    ASSERT_EQ(core.acquire(1000, 0, token_a), errc::ok);
    write_to(7101, 1000);
    ASSERT_EQ(redirect("ASK", 7102, 1005), errc::ok);
    EXPECT_FALSE(map.stale()) << "an ASK does not make the map stale";
    EXPECT_EQ(map.master_of(slot), index_of(7101));
    ASSERT_NE(index_of(7102), slot_map::no_master) << "the importing node is added";
    EXPECT_EQ(route.ask, index_of(7102));
    EXPECT_EQ(route.redirects, 1);
    EXPECT_EQ(route.followed, redirect::kind::ask);
    const route_target to = target_of(route, map);
    EXPECT_EQ(to.node, index_of(7102));
    EXPECT_TRUE(to.asking);

    EXPECT_EQ(write_to(7102, 1006, true), set_nx_request(token_a_hex));
    EXPECT_EQ(route.ask, slot_map::no_master) << "used up by the one request";
    const route_target after = target_of(route, map);
    EXPECT_EQ(after.node, index_of(7101));
    EXPECT_FALSE(after.asking);
    ASSERT_EQ(answer(key_was_free(), 1010), errc::ok);
    ASSERT_EQ(take_events(core).size(), 1u);

    ASSERT_EQ(core.on_timer(11'000), errc::ok);
    EXPECT_EQ(write_to(7101, 11'000)[1], sha(edgelock::renew_script)) << "to the master first";
    ASSERT_EQ(redirect("ASK", 7102, 11'001), errc::ok);  // the key is on the importing node
    EXPECT_EQ(write_to(7102, 11'002, true)[1], sha(edgelock::renew_script));
}

// An ASK not used before the map is read again is void: the read says where the slot is.
TEST_F(cluster_route_test, a_map_read_voids_an_ask_not_yet_used) {
    configure(core, 1);
    ASSERT_EQ(core.acquire(1000, 0, token_a), errc::ok);
    write_to(7101, 1000);
    ASSERT_EQ(redirect("ASK", 7102, 1005), errc::ok);
    // A read that fails leaves the map as it was, and the ASK.
    const parsed bad("+OK\r\n");
    ASSERT_EQ(map.read_slots(bad.nodes.data(), bad.count, seed), errc::unexpected_reply);
    EXPECT_TRUE(target_of(route, map).asking);
    read_map(one_master(7103));
    const route_target after = target_of(route, map);
    EXPECT_EQ(after.node, index_of(7103));
    EXPECT_FALSE(after.asking) << "a read ends the ASK";
}

TEST_F(cluster_route_test, moved_ends_an_ask_in_force) {
    configure(core, 1);
    ASSERT_EQ(core.acquire(0, 0, token_a), errc::ok);
    write_to(7101, 0);
    ASSERT_EQ(redirect("ASK", 7102, 1), errc::ok);
    write_to(7102, 1, true);
    ASSERT_EQ(redirect("MOVED", 7103, 2), errc::ok);
    const route_target to = target_of(route, map);
    EXPECT_EQ(to.node, index_of(7103));
    EXPECT_FALSE(to.asking);
    EXPECT_EQ(route.ask, slot_map::no_master);
    EXPECT_EQ(write_to(7103, 3), set_nx_request(token_a_hex));
}

// redirects_max redirects in a row are followed; the next one is the error it is, and the
// instance's failure says why.
TEST_F(cluster_route_test, the_redirect_after_redirects_max_in_a_row_is_an_error) {
    configure(core, 1);
    ASSERT_EQ(core.acquire(0, 0, token_a), errc::ok);
    write_to(7101, 0);
    int port = 7101;
    for (std::size_t n = 1; n <= redirects_max; ++n) {
        port = port == 7101 ? 7102 : 7101;  // a slot moving back and forth
        ASSERT_EQ(redirect("MOVED", port, static_cast<std::int64_t>(n)), errc::ok) << n;
        EXPECT_EQ(route.redirects, n);
        ASSERT_EQ(write_to(port, static_cast<std::int64_t>(n)), set_nx_request(token_a_hex)) << n;
    }
    EXPECT_FALSE(last);
    const std::uint8_t home = route.home;
    EXPECT_EQ(redirect("MOVED", port == 7101 ? 7102 : 7101, 10), errc::error_reply);
    EXPECT_EQ(last, failure::of(transport_errc::too_many_redirects));
    EXPECT_EQ(route.redirects, 0);
    EXPECT_EQ(core.requests_in_flight(0), 0);
    ASSERT_TRUE(core.has_request(0));
    EXPECT_EQ(take_request(core, 0)[1], sha(edgelock::release_script))
        << "not sent again: only the failed attempt's cleanup goes";
    const auto events = take_events(core);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].type, event_type::acquire_failed);
    EXPECT_EQ(target_of(route, map).node, home) << "the map is not told";
}

TEST_F(cluster_route_test, too_many_asks_are_an_error_too) {
    configure(core, 1);
    ASSERT_EQ(core.acquire(0, 0, token_a), errc::ok);
    write_to(7101, 0);
    for (std::size_t n = 1; n <= redirects_max; ++n) {
        ASSERT_EQ(redirect("ASK", 7102, 1), errc::ok) << n;
        write_to(7102, 1, true);
    }
    EXPECT_EQ(redirect("ASK", 7102, 2), errc::error_reply);
    EXPECT_EQ(last, failure::of(transport_errc::too_many_redirects));
}

TEST_F(cluster_route_test, an_answer_between_redirects_starts_the_count_again) {
    configure(core, 1);
    ASSERT_EQ(core.acquire(1000, 0, token_a), errc::ok);
    write_to(7101, 1000);
    for (std::size_t n = 1; n < redirects_max; ++n) {
        ASSERT_EQ(redirect("ASK", 7102, 1001), errc::ok);
        write_to(7102, 1001, true);
    }
    ASSERT_EQ(answer(key_was_free(), 1010), errc::ok);
    EXPECT_EQ(route.redirects, 0);
    ASSERT_EQ(take_events(core).size(), 1u);
    ASSERT_EQ(core.on_timer(11'000), errc::ok);  // the renewal, to the master
    write_to(7101, 11'000);
    for (std::size_t n = 1; n <= redirects_max; ++n) {
        ASSERT_EQ(redirect("ASK", 7102, 11'001), errc::ok) << n;
        write_to(7102, 11'001, true);
    }
    EXPECT_FALSE(last);
    EXPECT_EQ(route.redirects, redirects_max);
}

// An error reply that is no redirect is an answer too: it ends the run of redirects.
TEST_F(cluster_route_test, an_error_answer_between_redirects_starts_the_count_again) {
    configure(core, 1);
    ASSERT_EQ(core.acquire(1000, 0, token_a), errc::ok);
    write_to(7101, 1000);
    ASSERT_EQ(redirect("MOVED", 7102, 1001), errc::ok);
    write_to(7102, 1001);
    EXPECT_EQ(answer(error("ERR something"), 1002), errc::error_reply);
    EXPECT_EQ(route.redirects, 0);
}

TEST_F(cluster_route_test, an_ask_to_a_node_the_map_has_no_room_for_is_no_slot_map) {
    for (int p = 1; map.nodes() < cluster_masters_max; ++p)
        map.add_node(node("redis://127.0.0.1:" + std::to_string(7200 + p)));
    configure(core, 1);
    ASSERT_EQ(core.acquire(0, 0, token_a), errc::ok);
    write_to(7101, 0);
    EXPECT_EQ(redirect("ASK", 7300, 1), errc::error_reply);
    EXPECT_EQ(last, failure::of(transport_errc::no_slot_map));
    EXPECT_EQ(route.ask, slot_map::no_master);
    EXPECT_EQ(route.redirects, 0);
    EXPECT_EQ(map.nodes(), cluster_masters_max);
    ASSERT_TRUE(core.has_request(0));
    EXPECT_EQ(take_request(core, 0)[1], sha(edgelock::release_script))
        << "not sent again: only the failed attempt's cleanup goes";
    EXPECT_EQ(take_events(core).at(0).type, event_type::acquire_failed);
}

TEST_F(cluster_route_test, an_ask_to_a_known_node_is_followed_when_the_table_is_full) {
    for (int p = 1; map.nodes() < cluster_masters_max; ++p)
        map.add_node(node("redis://127.0.0.1:" + std::to_string(7200 + p)));
    configure(core, 1);
    ASSERT_EQ(core.acquire(0, 0, token_a), errc::ok);
    write_to(7101, 0);
    EXPECT_EQ(redirect("ASK", 7201, 1), errc::ok);
    EXPECT_FALSE(last);
    EXPECT_EQ(write_to(7201, 2, true), set_nx_request(token_a_hex));
}

// A MOVED to a node the map has no room for is followed: the slot is unknown until the map is
// read again, and the request waits for that.
TEST_F(cluster_route_test, a_moved_to_a_node_the_map_has_no_room_for_waits_for_a_read) {
    for (int p = 1; map.nodes() < cluster_masters_max; ++p)
        map.add_node(node("redis://127.0.0.1:" + std::to_string(7200 + p)));
    configure(core, 1);
    ASSERT_EQ(core.acquire(0, 0, token_a), errc::ok);
    write_to(7101, 0);
    EXPECT_EQ(redirect("MOVED", 7300, 1), errc::ok);
    EXPECT_TRUE(map.stale());
    const route_step step = begin_writes(core, 0, route, map, 2);
    EXPECT_EQ(step.to.node, slot_map::no_master);
    EXPECT_TRUE(core.has_request(0));
}

TEST_F(cluster_route_test, a_malformed_moved_is_just_an_error_reply) {
    configure(core, 1);
    ASSERT_EQ(core.acquire(0, 0, token_a), errc::ok);
    write_to(7101, 0);
    ASSERT_EQ(redirect("MOVED", 7102, 1), errc::ok);
    write_to(7102, 1);
    const std::size_t nodes = map.nodes();
    EXPECT_EQ(answer(error("MOVED 12182"), 2), errc::error_reply);
    EXPECT_EQ(last, failure::of(errc::error_reply)) << "not too_many_redirects";
    EXPECT_EQ(route.redirects, 0);
    EXPECT_EQ(map.nodes(), nodes);
    EXPECT_EQ(map.master_of(slot), index_of(7102));
    ASSERT_TRUE(core.has_request(0));
    EXPECT_EQ(take_request(core, 0)[1], sha(edgelock::release_script));
    EXPECT_EQ(take_events(core).at(0).type, event_type::acquire_failed);
}

// A lock whose event queue is full takes nothing: the redirect leaves the route, the map and
// the lock as they were, and is handed over again once the events are drained.
TEST_F(cluster_route_test, a_moved_while_events_are_pending_changes_nothing) {
    configure(core, 1);
    held_on_the_first_master();
    ASSERT_EQ(core.on_timer(11'000), errc::ok);
    write_to(7101, 11'000);  // the renewal
    fill_the_event_queue(11'001);
    ASSERT_FALSE(map.stale());

    EXPECT_EQ(redirect("MOVED", 7102, 11'002), errc::events_pending);
    EXPECT_EQ(route.redirects, 0);
    EXPECT_FALSE(map.stale());
    EXPECT_EQ(map.nodes(), 1u);
    EXPECT_EQ(map.master_of(slot), index_of(7101));
    EXPECT_EQ(core.requests_in_flight(0), 1);

    EXPECT_EQ(take_events(core).size(), 3u);
    EXPECT_EQ(redirect("MOVED", 7102, 11'003), errc::ok);
    EXPECT_EQ(route.redirects, 1);
    EXPECT_EQ(map.master_of(slot), index_of(7102));
}

TEST_F(cluster_route_test, the_last_redirect_while_events_are_pending_changes_nothing) {
    configure(core, 1);
    held_on_the_first_master();
    ASSERT_EQ(core.on_timer(11'000), errc::ok);
    write_to(7101, 11'000);
    for (std::size_t n = 1; n <= redirects_max; ++n) {
        ASSERT_EQ(redirect("MOVED", 7101, 11'001), errc::ok);
        write_to(7101, 11'001);
    }
    fill_the_event_queue(11'002);
    EXPECT_EQ(redirect("MOVED", 7101, 11'003), errc::events_pending);
    EXPECT_EQ(route.redirects, redirects_max);
    EXPECT_FALSE(last);
    take_events(core);
    EXPECT_EQ(redirect("MOVED", 7101, 11'004), errc::error_reply);
    EXPECT_EQ(last, failure::of(transport_errc::too_many_redirects));
}

TEST_F(cluster_route_test, a_non_redirect_while_events_are_pending_keeps_the_count) {
    configure(core, 1);
    held_on_the_first_master();
    ASSERT_EQ(core.on_timer(11'000), errc::ok);
    write_to(7101, 11'000);
    ASSERT_EQ(redirect("MOVED", 7101, 11'001), errc::ok);
    write_to(7101, 11'001);
    fill_the_event_queue(11'002);
    EXPECT_EQ(answer(integer(1), 11'003), errc::events_pending);
    EXPECT_EQ(route.redirects, 1) << "the answer was not used";
}

TEST_F(cluster_route_test, a_move_while_events_are_pending_leaves_the_route_and_is_tried_again) {
    configure(core, 1);
    held_on_the_first_master();
    ASSERT_EQ(core.on_timer(11'000), errc::ok);  // the renewal, queued
    read_map(one_master(7102));
    fill_the_event_queue(11'001);

    const std::uint8_t home = route.home;
    const route_step refused = begin_writes(core, 0, route, map, 11'002);
    EXPECT_EQ(refused.code, errc::events_pending);
    EXPECT_EQ(refused.to.node, slot_map::no_master) << "nothing goes";
    EXPECT_FALSE(refused.moved);
    EXPECT_EQ(route.home, home);

    take_events(core);
    const route_step moved = begin_writes(core, 0, route, map, 11'003);
    EXPECT_EQ(moved.code, errc::ok);
    EXPECT_EQ(moved.to.node, index_of(7102));
    EXPECT_TRUE(moved.moved);
    EXPECT_EQ(take_request(core, 0)[1], sha(edgelock::renew_script));
}

TEST_F(cluster_route_test, an_ask_while_events_are_pending_changes_nothing) {
    configure(core, 1);
    held_on_the_first_master();
    ASSERT_EQ(core.on_timer(11'000), errc::ok);
    write_to(7101, 11'000);
    fill_the_event_queue(11'001);
    EXPECT_EQ(redirect("ASK", 7102, 11'002), errc::events_pending);
    EXPECT_EQ(route.ask, slot_map::no_master);
    EXPECT_EQ(route.redirects, 0);
    EXPECT_EQ(map.nodes(), 1u) << "the importing node is not added yet";
    take_events(core);
    EXPECT_EQ(redirect("ASK", 7102, 11'003), errc::ok);
    EXPECT_EQ(target_of(route, map).node, index_of(7102));
}

}  // namespace
