// SPDX-License-Identifier: Apache-2.0
// The map's drive every cluster client runs (cluster_links::tend_map): where a read goes, when
// a seed's link is made, when nothing can answer, and which links a read makes needless. Real
// connections driven by hand through a port that records what it was asked to do.
#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

#include "cluster_testing.hpp"
#include "edgelock/session/cluster_links.hpp"

namespace {

using namespace cluster_testing;
using namespace edgelock;
using namespace edgelock::session;

// The client's links: a connection per node index, set up at the address cluster_links names.
class recording_port final : public node_port {
public:
    explicit recording_port(cluster_links& links) : links_(links) {}

    const connection* link(std::uint8_t k) const override { return made_[k] ? &c_[k] : nullptr; }
    void open(std::uint8_t k) override {
        opened.push_back(k);
        if (links_.needs_setup(k)) set_up(k);
        (void)c_[k].start(now);
    }
    bool send_map_read(std::uint8_t k) override {
        sent.push_back(k);
        return write_fails == 0 ? c_[k].track(cluster_links::map_owner, 0, now)
                                : (--write_fails, false);
    }
    void stop(std::uint8_t k) override {
        stopped.push_back(k);
        c_[k].reset();
    }
    std::uint32_t routed() const override { return routes; }

    // Node k's link, set up and ready (its handshake answered).
    void ready(std::uint8_t k) {
        if (links_.needs_setup(k)) set_up(k);
        if (c_[k].state() == connection_state::idle) {
            ASSERT_NE(c_[k].start(now), nullptr);
        }
        std::array<char, 4096> hello{};
        ASSERT_GT(c_[k].on_connected(now, hello.data(), hello.size()), 0u);
        const std::string sha = "$40\r\n" + std::string(40, '0') + "\r\n";
        for (const std::string& r : {std::string("+PONG\r\n"), sha, sha, sha, sha}) {
            const parsed reply(r);
            (void)c_[k].on_reply(reply.nodes.data(), reply.count, now);
        }
        ASSERT_TRUE(c_[k].ready());
    }
    // Node k's link refused: idle inside its reconnect delay.
    void refused(std::uint8_t k) {
        if (links_.needs_setup(k)) set_up(k);
        ASSERT_NE(c_[k].start(now), nullptr);
        c_[k].on_io_error(failure::system(111), now);
        (void)c_[k].on_closed(now, [](const in_flight&) {});
        ASSERT_FALSE(c_[k].may_start(now));
    }
    connection& at(std::uint8_t k) { return c_[k]; }

    std::int64_t now = 0;
    int write_fails = 0;
    std::uint32_t routes = 0;
    std::vector<std::uint8_t> opened, sent, stopped;

private:
    void set_up(std::uint8_t k) {
        connection_setup s;
        s.node = &links_.set_up(k);
        s.in_flight_storage = storage_[k].data();
        s.in_flight_capacity = storage_[k].size();
        s.seed = 1 + k;
        s.times.reconnect_delay_min_ms = 1000;  // a refused link waits up to a second
        ASSERT_EQ(c_[k].setup(s), errc::ok);
        made_[k] = true;
    }

    cluster_links& links_;
    std::array<connection, cluster_masters_max> c_{};
    std::array<std::array<in_flight, 16>, cluster_masters_max> storage_{};
    std::array<bool, cluster_masters_max> made_{};
};

class map_tending_test : public ::testing::Test {
protected:
    void SetUp() override {
        const node_address seeds[] = {node("redis://127.0.0.1:7001"),
                                      node("redis://127.0.0.1:7002")};
        ASSERT_TRUE(links.set_seeds(seeds, 2));
        first = links.seed();
        links.next_seed();
        second = links.seed();
        links.next_seed();
    }
    // The answer to the read on its way, from node k.
    failure answer(std::uint8_t k, const std::string& resp) {
        const parsed reply(resp);
        (void)port.at(k).on_reply(reply.nodes.data(), reply.count, port.now);
        return links.read_answered(k, reply.nodes.data(), reply.count, links.in_use(port),
                                   port.now);
    }

    cluster_links links;
    recording_port port{links};
    std::uint8_t first = 0;
    std::uint8_t second = 0;
    static constexpr std::uint8_t none_ = cluster_links::none;
};

TEST_F(map_tending_test, with_no_link_the_seeds_link_is_made_once_and_waited_for) {
    EXPECT_EQ(links.tend_map(port, linking::eager, true, 0), map_tending::waiting);
    EXPECT_EQ(port.opened, std::vector<std::uint8_t>{first});
    EXPECT_EQ(links.tend_map(port, linking::eager, true, 0), map_tending::waiting);
    EXPECT_EQ(port.opened.size(), 1u) << "on its way: no second link for the same read";
    EXPECT_TRUE(port.sent.empty());
}

TEST_F(map_tending_test, a_read_goes_on_a_ready_link_one_at_a_time) {
    port.ready(second);
    EXPECT_EQ(links.tend_map(port, linking::eager, true, 0), map_tending::sent);
    EXPECT_EQ(port.sent, std::vector<std::uint8_t>{second});
    EXPECT_TRUE(port.opened.empty()) << "a ready link carries it: no seed made";
    EXPECT_TRUE(links.read_in_flight());
    EXPECT_EQ(links.tend_map(port, linking::eager, true, 0), map_tending::idle)
        << "one read at a time";
}

// The map is wanted by an eager client whenever it is stale, by one linking on demand only
// while its lock has requests to route (read_wanted).
TEST_F(map_tending_test, nothing_is_done_for_a_map_the_client_does_not_want) {
    EXPECT_EQ(links.tend_map(port, linking::on_demand, false, 0), map_tending::idle);
    EXPECT_TRUE(port.opened.empty());
    EXPECT_EQ(links.tend_map(port, linking::on_demand, true, 0), map_tending::waiting);
    EXPECT_EQ(port.opened, std::vector<std::uint8_t>{first});
}

// A seed's link is made when no link is ready, even while another link is still connecting
// (it may never be ready): the read goes on whichever is ready first.
TEST_F(map_tending_test, a_link_connecting_elsewhere_does_not_hold_the_seed_back) {
    const std::uint8_t node_of_a_lock = links.map().add_node(node("redis://127.0.0.1:7101"));
    port.open(node_of_a_lock);  // connecting
    port.opened.clear();
    EXPECT_EQ(links.tend_map(port, linking::on_demand, true, 0), map_tending::waiting);
    EXPECT_EQ(port.opened, std::vector<std::uint8_t>{first});
}

// One linking on demand connects before it writes its lock's requests: after an answer with
// no usable map it does not make another seed's link beside the read, it asks the next ready
// link, as the reader rotation has it.
TEST_F(map_tending_test, one_linking_on_demand_makes_no_extra_seed_link_after_a_bad_answer) {
    port.ready(first);
    ASSERT_EQ(links.tend_map(port, linking::on_demand, true, 0), map_tending::sent);
    ASSERT_TRUE(answer(first, "-ERR This instance has cluster support disabled\r\n"));
    EXPECT_EQ(links.tend_map(port, linking::on_demand, true, map_refresh::refresh_gap_ms),
              map_tending::sent);
    EXPECT_TRUE(port.opened.empty());
}

// After a read that leaves the lock no node, a client linking on demand fails its lock's
// requests at once when no read soon routes them; an eager one lets them wait. A lock still
// routed goes on (its requests in flight are answered on its link).
TEST_F(map_tending_test,
       a_read_that_leaves_the_lock_no_node_fails_its_requests_when_linking_on_demand) {
    const failure none_read{};
    const failure too_many = failure::of(transport_errc::too_many_masters);
    const failure unread = failure::of(transport_errc::no_slot_map);
    EXPECT_TRUE(links.route_lost_after_read(linking::on_demand, too_many, false));
    EXPECT_TRUE(links.route_lost_after_read(linking::on_demand, none_read, false))
        << "read, and no master for the slot";
    EXPECT_FALSE(links.route_lost_after_read(linking::on_demand, unread, false))
        << "unread: the next read may name one";
    EXPECT_FALSE(links.route_lost_after_read(linking::on_demand, too_many, true)) << "routed";
    EXPECT_FALSE(links.route_lost_after_read(linking::on_demand, none_read, true));
    EXPECT_FALSE(links.route_lost_after_read(linking::eager, too_many, false));
    EXPECT_FALSE(links.route_lost_after_read(linking::eager, none_read, false));
}

// A map read that names no master for the lock's slot is read again after the gap: the slot
// may be served again, and a lock whose requests wait on no link would not ask for it.
TEST_F(map_tending_test, a_map_with_no_master_for_the_lock_is_read_again) {
    port.ready(first);
    ASSERT_EQ(links.tend_map(port, linking::on_demand, true, 0), map_tending::sent);
    ASSERT_FALSE(answer(first, one_master(7101)));
    ASSERT_FALSE(links.map().stale());
    EXPECT_FALSE(links.route_lost_after_read(linking::on_demand, failure{}, true));
    EXPECT_FALSE(links.map().stale()) << "routed: nothing to read again";
    EXPECT_TRUE(links.route_lost_after_read(linking::on_demand, failure{}, false));
    EXPECT_TRUE(links.map().stale());
    EXPECT_FALSE(links.read_due(map_refresh::refresh_gap_ms - 1)) << "the gap first";
    EXPECT_TRUE(links.read_due(map_refresh::refresh_gap_ms));
}

// With no seed able to connect, the cursor is left on the seed whose reconnect delay ends
// first: the one a client linking on demand wakes up for (wanted's seed).
TEST_F(map_tending_test, with_every_seed_in_its_delay_the_cursor_waits_on_the_soonest) {
    port.now = 1000;
    port.refused(second);
    port.now = 1200;  // the first seed refused later: its delay ends last (the jitter is seeded)
    port.refused(first);
    ASSERT_FALSE(port.at(second).may_start(port.now)) << "still in its delay";
    ASSERT_EQ(links.tend_map(port, linking::on_demand, true, port.now), map_tending::unreachable);
    const std::uint8_t soonest =
        port.at(first).start_not_before_ms() <= port.at(second).start_not_before_ms() ? first
                                                                                      : second;
    ASSERT_EQ(soonest, second);
    EXPECT_EQ(links.seed(), soonest);
    EXPECT_TRUE(links.wanted(linking::on_demand, soonest, none_, true, false));
}

// A write that fails leaves its link not ready: the next ready one carries the read.
TEST_F(map_tending_test, a_failed_write_passes_the_read_to_the_next_ready_link) {
    port.ready(first);
    port.ready(second);
    port.write_fails = 1;
    EXPECT_EQ(links.tend_map(port, linking::eager, true, 0), map_tending::sent);
    ASSERT_EQ(port.sent.size(), 2u);
    EXPECT_NE(port.sent[0], port.sent[1]);
}

TEST_F(map_tending_test, a_seed_in_its_reconnect_delay_is_passed_over_and_with_all_none_answers) {
    port.refused(first);
    EXPECT_EQ(links.tend_map(port, linking::eager, true, 0), map_tending::waiting);
    EXPECT_EQ(port.opened, std::vector<std::uint8_t>{second});
    EXPECT_EQ(links.seed(), second) << "the cursor stays on the seed made";

    port.at(second).on_io_error(failure::system(111), 0);
    (void)port.at(second).on_closed(0, [](const in_flight&) {});
    EXPECT_EQ(links.tend_map(port, linking::eager, true, 0), map_tending::unreachable);
    EXPECT_EQ(port.opened.size(), 1u) << "no seed may connect now";
}

// A node that answered with no usable map is not asked forever: another seed's link is made
// beside the next read.
TEST_F(map_tending_test, after_an_answer_without_a_map_another_seed_gets_its_chance) {
    port.ready(first);
    ASSERT_EQ(links.tend_map(port, linking::eager, true, 0), map_tending::sent);
    EXPECT_EQ(answer(first, "-ERR This instance has cluster support disabled\r\n"),
              failure::of(transport_errc::no_slot_map));
    port.now = map_refresh::refresh_gap_ms;
    EXPECT_EQ(links.tend_map(port, linking::eager, true, port.now), map_tending::sent);
    EXPECT_EQ(port.opened, std::vector<std::uint8_t>{second});
    port.ready(second);
    ASSERT_EQ(answer(first, "-ERR This instance has cluster support disabled\r\n"),
              failure::of(transport_errc::no_slot_map));
    port.now += map_refresh::refresh_gap_ms;
    EXPECT_EQ(links.tend_map(port, linking::eager, true, port.now), map_tending::sent);
    EXPECT_EQ(port.sent.back(), second) << "the new seed's link carries the next read";
}

// After a read, a link whose node serves no slot, routes no lock and carries nothing is
// stopped; the slots' masters, a lock's route and a request in flight keep theirs.
TEST_F(map_tending_test, a_read_prunes_the_links_nothing_needs) {
    port.ready(first);
    port.ready(second);
    ASSERT_EQ(links.tend_map(port, linking::eager, true, 0), map_tending::sent);
    const std::uint8_t reader = port.sent.back();
    ASSERT_FALSE(answer(reader, one_master(7101)));
    const std::uint8_t master = links.map().master_of(0);
    ASSERT_NE(master, first);
    ASSERT_NE(master, second);
    port.ready(master);
    port.routes = std::uint32_t{1} << second;
    EXPECT_EQ(links.tend_map(port, linking::eager, true, 0), map_tending::idle)
        << "the map is read";
    EXPECT_EQ(port.stopped, std::vector<std::uint8_t>{first});

    port.stopped.clear();
    EXPECT_EQ(links.tend_map(port, linking::eager, true, 0), map_tending::idle);
    EXPECT_TRUE(port.stopped.empty()) << "once per read";
}

// An eager client keeps every link it made up (cluster_links::wanted), but not one a read
// pruned, until a lock's requests or a read need its node again.
TEST_F(map_tending_test, an_eager_client_keeps_its_links_up_but_not_a_pruned_one) {
    port.ready(first);
    EXPECT_TRUE(links.wanted(linking::eager, first, none_, false, false));
    EXPECT_FALSE(links.wanted(linking::on_demand, first, none_, false, false));
    ASSERT_EQ(links.tend_map(port, linking::eager, true, 0), map_tending::sent);
    ASSERT_FALSE(answer(first, one_master(7101)));
    ASSERT_EQ(links.tend_map(port, linking::eager, true, 0), map_tending::idle);
    ASSERT_EQ(port.stopped, std::vector<std::uint8_t>{first});
    EXPECT_FALSE(links.wanted(linking::eager, first, none_, false, false)) << "pruned";
    links.keep_up(first);
    EXPECT_TRUE(links.wanted(linking::eager, first, none_, false, false)) << "needed again";
}

TEST_F(map_tending_test, a_link_with_a_request_in_flight_is_not_pruned) {
    port.ready(first);
    ASSERT_EQ(links.tend_map(port, linking::eager, true, 0), map_tending::sent);
    ASSERT_TRUE(port.at(first).track(0, 0, 0));  // a lock's request, still out
    ASSERT_FALSE(answer(first, one_master(7101)));
    EXPECT_EQ(links.tend_map(port, linking::eager, true, 0), map_tending::idle);
    EXPECT_TRUE(port.stopped.empty());
}

}  // namespace
