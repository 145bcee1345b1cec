// SPDX-License-Identifier: Apache-2.0
// Redis Cluster's routing rules: the slot map read from CLUSTER SLOTS replies (the first one
// as Redis 7.0.15 sent it for three masters with a replica each), and MOVED and ASK read.
#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

#include "cluster_testing.hpp"
#include "edgelock/keys.hpp"
#include "edgelock/limits.hpp"
#include "edgelock/session/cluster.hpp"

namespace {

using namespace cluster_testing;

using namespace edgelock;
using namespace edgelock::session;

// CLUSTER SLOTS of a 3-master cluster on 127.0.0.1:7101..7103, replicas on 7104..7106.
const std::string three_masters =
    "*3\r\n"
    "*4\r\n:0\r\n:5460\r\n"
    "*4\r\n$9\r\n127.0.0.1\r\n:7101\r\n$40\r\n44d09086c0aedb19e660c2d154eed24fa5c23402\r\n*0\r\n"
    "*4\r\n$9\r\n127.0.0.1\r\n:7104\r\n$40\r\ned7dbf4eb89bedefa1412f354b3a5e0b25d8bf19\r\n*0\r\n"
    "*4\r\n:5461\r\n:10922\r\n"
    "*4\r\n$9\r\n127.0.0.1\r\n:7102\r\n$40\r\n97e2408d86ab717aa0516ea133b0c9fe90d3c6b9\r\n*0\r\n"
    "*4\r\n$9\r\n127.0.0.1\r\n:7105\r\n$40\r\n73fe502ae297a78886ef14323844db79d87411b9\r\n*0\r\n"
    "*4\r\n:10923\r\n:16383\r\n"
    "*4\r\n$9\r\n127.0.0.1\r\n:7103\r\n$40\r\n6820b5e8a89c89f61bc42841db99d188cfda725f\r\n*0\r\n"
    "*4\r\n$9\r\n127.0.0.1\r\n:7106\r\n$40\r\nc84ac2f596b5cbc8f80917838351fefaf28630c7\r\n*0\r\n";

std::string port_of_slot(const slot_map& map, std::uint16_t slot) {
    const std::uint8_t m = map.master_of(slot);
    if (m == slot_map::no_master) return "none";
    return std::string(map.node(m).host.view()) + ":" + std::to_string(map.node(m).port);
}

TEST(cluster_slots, reads_the_masters_of_a_real_reply) {
    const parsed reply(three_masters);
    slot_map map;
    EXPECT_TRUE(map.stale());
    EXPECT_EQ(map.master_of(0), slot_map::no_master);
    ASSERT_EQ(map.read_slots(reply.nodes.data(), reply.count, node("redis://:pw@10.0.0.1:7101")),
              errc::ok);
    EXPECT_FALSE(map.stale());
    EXPECT_EQ(map.nodes(), 3u);
    EXPECT_TRUE(map.covers_all());
    EXPECT_EQ(port_of_slot(map, 0), "127.0.0.1:7101");
    EXPECT_EQ(port_of_slot(map, 5460), "127.0.0.1:7101");
    EXPECT_EQ(port_of_slot(map, 5461), "127.0.0.1:7102");
    EXPECT_EQ(port_of_slot(map, 16383), "127.0.0.1:7103");
    // Credentials come from the node that answered.
    EXPECT_EQ(map.node(map.master_of(100)).password.view(), "pw");
    // "foo" is in slot 12182 (CLUSTER KEYSLOT foo), on the third master.
    EXPECT_EQ(cluster_slot("foo"), 12182);
    EXPECT_EQ(port_of_slot(map, cluster_slot("foo")), "127.0.0.1:7103");
}

TEST(cluster_slots, an_unknown_endpoint_is_the_host_asked_and_a_question_mark_none) {
    const parsed reply(
        "*2\r\n"
        "*3\r\n:0\r\n:99\r\n*3\r\n$-1\r\n:7001\r\n$2\r\nid\r\n"
        "*3\r\n:100\r\n:16383\r\n*3\r\n$1\r\n?\r\n:7002\r\n$2\r\nid\r\n");
    slot_map map;
    ASSERT_EQ(map.read_slots(reply.nodes.data(), reply.count, node("redis://gw.example:7000")),
              errc::ok);
    EXPECT_EQ(port_of_slot(map, 99), "gw.example:7001");
    EXPECT_EQ(port_of_slot(map, 100), "none");
    EXPECT_FALSE(map.covers_all());
}

TEST(cluster_slots, refuses_replies_of_another_shape_and_keeps_the_map) {
    const parsed good(three_masters);
    slot_map map;
    ASSERT_EQ(map.read_slots(good.nodes.data(), good.count, node("redis://127.0.0.1")), errc::ok);
    for (const char* bad : {
             "+OK\r\n",
             "*1\r\n*3\r\n:5\r\n:4\r\n*2\r\n$1\r\nh\r\n:1\r\n",      // backwards
             "*1\r\n*3\r\n:0\r\n:16384\r\n*2\r\n$1\r\nh\r\n:1\r\n",  // past the last slot
             "*1\r\n*3\r\n:0\r\n:1\r\n*2\r\n$1\r\nh\r\n:0\r\n",      // port 0
             "*1\r\n*3\r\n:0\r\n:1\r\n$1\r\nh\r\n",                  // a node that is no array
             "*1\r\n*2\r\n:0\r\n:1\r\n",                             // no master
         }) {
        const parsed reply(bad);
        EXPECT_EQ(map.read_slots(reply.nodes.data(), reply.count, node("redis://127.0.0.1")),
                  errc::unexpected_reply)
            << bad;
    }
    EXPECT_EQ(port_of_slot(map, 0), "127.0.0.1:7101");
    EXPECT_FALSE(map.stale());
}

// What read_slot_ranges() hands over, one line per node: "first-last master host:port id" and
// "replica host:port id".
struct ranges_seen final : slots_reader {
    std::vector<std::string> lines;
    static std::string text(const slots_member& m) {
        return std::string(m.host) + ":" + std::to_string(m.port) + " " + std::string(m.id) +
               (m.unknown ? " unknown" : "");
    }
    void range(std::uint16_t first, std::uint16_t last, const slots_member& master) override {
        lines.push_back(std::to_string(first) + "-" + std::to_string(last) + " master " +
                        text(master));
    }
    void replica(const slots_member& r) override { lines.push_back("replica " + text(r)); }
};

TEST(cluster_slot_ranges, every_range_with_its_master_and_replicas_and_their_ids) {
    const parsed reply(three_masters);
    ranges_seen seen;
    ASSERT_EQ(read_slot_ranges(reply.nodes.data(), reply.count, seen), errc::ok);
    ASSERT_EQ(seen.lines.size(), 6u);
    EXPECT_EQ(seen.lines[0],
              "0-5460 master 127.0.0.1:7101 44d09086c0aedb19e660c2d154eed24fa5c23402");
    EXPECT_EQ(seen.lines[1], "replica 127.0.0.1:7104 ed7dbf4eb89bedefa1412f354b3a5e0b25d8bf19");
    EXPECT_EQ(seen.lines[4],
              "10923-16383 master 127.0.0.1:7103 "
              "6820b5e8a89c89f61bc42841db99d188cfda725f");
}

TEST(cluster_slot_ranges, an_empty_host_and_a_question_mark_are_handed_over_as_written) {
    const parsed reply(
        "*2\r\n"
        "*4\r\n:0\r\n:99\r\n*2\r\n$-1\r\n:7001\r\n*3\r\n$1\r\n?\r\n:7003\r\n$1\r\nr\r\n"
        "*3\r\n:100\r\n:16383\r\n*3\r\n$1\r\n?\r\n:7002\r\n$2\r\nid\r\n");
    ranges_seen seen;
    ASSERT_EQ(read_slot_ranges(reply.nodes.data(), reply.count, seen), errc::ok);
    EXPECT_EQ(seen.lines,
              (std::vector<std::string>{"0-99 master :7001 ", "replica ?:7003 r unknown",
                                        "100-16383 master ?:7002 id unknown"}));
}

TEST(cluster_slot_ranges, a_reply_of_another_shape_hands_over_nothing) {
    const std::string good_range = "*3\r\n:0\r\n:1\r\n*2\r\n$1\r\nh\r\n:1\r\n";
    const std::string backwards = "*3\r\n:5\r\n:4\r\n*2\r\n$1\r\nh\r\n:1\r\n";
    const std::string replica_port_0 =
        "*4\r\n:0\r\n:1\r\n*2\r\n$1\r\nh\r\n:1\r\n*2\r\n$1\r\nh\r\n:0\r\n";
    for (const std::string& bad :
         {std::string("+OK\r\n"), "*2\r\n" + good_range + backwards, "*1\r\n" + replica_port_0}) {
        const parsed reply(bad);
        ranges_seen seen;
        EXPECT_EQ(read_slot_ranges(reply.nodes.data(), reply.count, seen), errc::unexpected_reply)
            << bad;
        EXPECT_TRUE(seen.lines.empty()) << "a good first range is not handed over alone: " << bad;
    }
}

// A cluster of more masters than one client reaches is told apart (invalid_instances: the
// clients' too_many_masters) from masters that fit but not beside nodes still in use.
TEST(cluster_slots, more_masters_than_it_holds_is_a_cluster_too_large_for_one_client) {
    std::string resp = "*" + std::to_string(cluster_masters_max + 1) + "\r\n";
    for (std::size_t m = 0; m <= cluster_masters_max; ++m) {
        resp += "*3\r\n:" + std::to_string(m) + "\r\n:" + std::to_string(m) +
                "\r\n*2\r\n$1\r\nh\r\n:" + std::to_string(7000 + m) + "\r\n";
    }
    const parsed reply(resp);
    slot_map map;
    EXPECT_EQ(map.read_slots(reply.nodes.data(), reply.count, node("redis://h")),
              errc::invalid_instances);
    EXPECT_EQ(map.nodes(), 0u);
}

TEST(cluster_slots, a_node_keeps_its_index_across_reads) {
    slot_map map;
    const std::uint8_t seed = map.add_node(node("redis://127.0.0.1:7102"));
    ASSERT_EQ(seed, 0);
    const parsed first(three_masters);
    ASSERT_EQ(map.read_slots(first.nodes.data(), first.count, node("redis://127.0.0.1")), errc::ok);
    EXPECT_EQ(map.reads(), 1u);
    EXPECT_EQ(map.master_of(5461), seed) << "the seed is the second master: same index";
    EXPECT_EQ(map.nodes(), 3u);
    const std::uint8_t third = map.master_of(16383);
    const parsed second(one_master(7103));
    ASSERT_EQ(map.read_slots(second.nodes.data(), second.count, node("redis://127.0.0.1")),
              errc::ok);
    EXPECT_EQ(map.reads(), 2u);
    EXPECT_EQ(map.master_of(0), third) << "the surviving master keeps its index";
    EXPECT_EQ(map.nodes(), 3u) << "the others stay known, serving no slot";
}

TEST(cluster_slots, a_full_table_reuses_the_index_of_a_node_no_one_uses) {
    slot_map map;
    for (std::size_t m = 0; m < cluster_masters_max; ++m) {
        ASSERT_EQ(map.add_node(node(("redis://127.0.0.1:" + std::to_string(8000 + m)).c_str())), m);
    }
    EXPECT_EQ(map.add_node(node("redis://127.0.0.1:9000")), slot_map::no_master);
    const parsed reply(one_master(9000));
    const slot_map::node_set all_in_use = ~slot_map::node_set{0};
    EXPECT_EQ(
        map.read_slots(reply.nodes.data(), reply.count, node("redis://127.0.0.1"), all_in_use),
        errc::invalid_config);
    EXPECT_EQ(map.master_of(0), slot_map::no_master) << "unchanged";
    const slot_map::node_set in_use = all_in_use & ~slot_map::node_set{1u << 5};
    ASSERT_EQ(map.read_slots(reply.nodes.data(), reply.count, node("redis://127.0.0.1"), in_use),
              errc::ok);
    EXPECT_EQ(map.master_of(0), 5) << "the one index nobody uses";
    EXPECT_EQ(map.node(5).port, 9000);
}

TEST(cluster_slots, moved_adds_the_node_and_marks_the_map_stale) {
    const parsed reply(three_masters);
    slot_map map;
    ASSERT_EQ(map.read_slots(reply.nodes.data(), reply.count, node("redis://127.0.0.1")), errc::ok);
    ASSERT_FALSE(map.stale());
    EXPECT_TRUE(map.moved(12182, node("redis://127.0.0.1:7107")));
    EXPECT_TRUE(map.stale());
    EXPECT_EQ(port_of_slot(map, 12182), "127.0.0.1:7107");
    EXPECT_EQ(port_of_slot(map, 12183), "127.0.0.1:7103") << "only the slot named";
    EXPECT_EQ(map.nodes(), 4u);
}

reply_node error(const char* text) {
    reply_node n;
    n.type = reply_type::error;
    n.text = text;
    return n;
}

TEST(cluster_redirect, reads_moved_and_ask) {
    const node_address from = node("rediss://user:pw@10.0.0.1:7101/0");
    const redirect moved = parse_redirect(error("MOVED 15495 127.0.0.1:7103"), from);
    EXPECT_EQ(moved.what, redirect::kind::moved);
    EXPECT_EQ(moved.slot, 15495);
    EXPECT_EQ(moved.to.host.view(), "127.0.0.1");
    EXPECT_EQ(moved.to.port, 7103);
    EXPECT_TRUE(moved.to.tls);
    EXPECT_EQ(moved.to.user.view(), "user");
    const redirect ask = parse_redirect(error("ASK 0 ::1:7002"), from);
    EXPECT_EQ(ask.what, redirect::kind::ask);
    EXPECT_EQ(ask.to.host.view(), "::1");
    EXPECT_EQ(ask.to.port, 7002);
    // An unknown endpoint: the host that answered, the port given.
    const redirect here = parse_redirect(error("MOVED 3999 :6380"), from);
    EXPECT_EQ(here.to.host.view(), "10.0.0.1");
    EXPECT_EQ(here.to.port, 6380);
}

TEST(cluster_redirect, anything_else_is_an_answer) {
    const node_address from = node("redis://127.0.0.1:7101");
    for (const char* text :
         {"ERR unknown command", "MOVED", "MOVED 16384 h:1", "MOVED -1 h:1", "MOVED 1 h",
          "MOVED 1 h:0", "ASK 1 h:99999", "MOVED 1x h:1", "moved 1 h:1", "ASKING"}) {
        EXPECT_EQ(parse_redirect(error(text), from).what, redirect::kind::none) << text;
    }
    reply_node ok;
    ok.type = reply_type::simple_string;
    ok.text = "MOVED 1 h:1";
    EXPECT_EQ(parse_redirect(ok, from).what, redirect::kind::none);
}

TEST(cluster_redirect, moved_teaches_the_map_and_makes_it_stale) {
    const parsed reply(three_masters);
    slot_map map;
    ASSERT_EQ(map.read_slots(reply.nodes.data(), reply.count, node("redis://127.0.0.1")), errc::ok);
    const redirect r = parse_redirect(error("MOVED 12182 127.0.0.1:7102"), node("redis://x"));
    EXPECT_TRUE(map.moved(r.slot, r.to));
    EXPECT_TRUE(map.stale());
    EXPECT_EQ(port_of_slot(map, 12182), "127.0.0.1:7102");
    EXPECT_EQ(port_of_slot(map, 12183), "127.0.0.1:7103");
    EXPECT_EQ(map.nodes(), 3u);
    // A master not seen before is added...
    EXPECT_TRUE(map.moved(1, node("redis://127.0.0.1:7200")));
    EXPECT_EQ(map.nodes(), 4u);
    // ...until there is no room: the slot is then unknown until the map is read again.
    for (std::uint16_t p = 1; map.nodes() < cluster_masters_max; ++p) {
        node_address extra = node("redis://127.0.0.1");
        extra.port = static_cast<std::uint16_t>(7200 + p);
        EXPECT_TRUE(map.moved(2, extra));
    }
    EXPECT_FALSE(map.moved(3, node("redis://127.0.0.1:9999")));
    EXPECT_EQ(map.master_of(3), slot_map::no_master);
}

// ---- reading the map again -----------------------------------------------------------------

TEST(cluster_slots, a_read_that_fails_counts_no_read_and_keeps_the_map_stale) {
    const parsed reply(three_masters);
    slot_map map;
    ASSERT_EQ(map.read_slots(reply.nodes.data(), reply.count, node("redis://127.0.0.1")), errc::ok);
    ASSERT_TRUE(map.moved(12182, node("redis://127.0.0.1:7107")));
    const parsed bad("*1\r\n*3\r\n:5\r\n:4\r\n*2\r\n$1\r\nh\r\n:1\r\n");
    EXPECT_EQ(map.read_slots(bad.nodes.data(), bad.count, node("redis://127.0.0.1")),
              errc::unexpected_reply);
    EXPECT_EQ(map.reads(), 1u);
    EXPECT_TRUE(map.stale()) << "still to be read";
    EXPECT_EQ(port_of_slot(map, 12182), "127.0.0.1:7107");
    // A reply cut short inside an entry is refused too.
    const parsed whole(one_master(7101));
    EXPECT_EQ(map.read_slots(whole.nodes.data(), whole.count - 1, node("redis://127.0.0.1")),
              errc::unexpected_reply);
    EXPECT_EQ(map.reads(), 1u);
    // Nodes past the reply's end are no part of it: not the reply asked for.
    parsed longer(one_master(7101));
    longer.nodes[longer.count].type = reply_type::integer;
    EXPECT_EQ(map.read_slots(longer.nodes.data(), longer.count + 1, node("redis://127.0.0.1")),
              errc::unexpected_reply);
    EXPECT_EQ(map.reads(), 1u);
}

TEST(cluster_slots, a_read_forgets_the_slots_no_master_serves_now) {
    const parsed first(three_masters);
    slot_map map;
    ASSERT_EQ(map.read_slots(first.nodes.data(), first.count, node("redis://127.0.0.1")), errc::ok);
    const parsed partial("*1\r\n*3\r\n:0\r\n:99\r\n*2\r\n$9\r\n127.0.0.1\r\n:7102\r\n");
    ASSERT_EQ(map.read_slots(partial.nodes.data(), partial.count, node("redis://127.0.0.1")),
              errc::ok);
    EXPECT_EQ(port_of_slot(map, 0), "127.0.0.1:7102");
    EXPECT_EQ(port_of_slot(map, 100), "none") << "not kept from the last read";
    EXPECT_EQ(port_of_slot(map, 16383), "none");
    EXPECT_FALSE(map.covers_all());
}

// The nodes a caller still uses keep their index: a new master takes one that no slot and no
// caller needs, and a read that would have to take one in use is refused whole.
TEST(cluster_slots, a_node_in_use_keeps_its_index_when_the_table_is_full) {
    slot_map map;
    for (std::size_t m = 0; m < cluster_masters_max; ++m) {
        ASSERT_EQ(map.add_node(node(("redis://127.0.0.1:" + std::to_string(8000 + m)).c_str())), m);
    }
    const parsed two(
        "*2\r\n"
        "*3\r\n:0\r\n:99\r\n*2\r\n$9\r\n127.0.0.1\r\n:9000\r\n"
        "*3\r\n:100\r\n:16383\r\n*2\r\n$9\r\n127.0.0.1\r\n:9001\r\n");
    const slot_map::node_set all = ~slot_map::node_set{0};
    const slot_map::node_set one_free = all & ~slot_map::node_set{1u << 3};
    EXPECT_EQ(map.read_slots(two.nodes.data(), two.count, node("redis://127.0.0.1"), one_free),
              errc::invalid_config)
        << "two new masters, one index free";
    EXPECT_EQ(map.reads(), 0u);
    EXPECT_EQ(map.node(3).port, 8003) << "unchanged";
    const slot_map::node_set two_free = one_free & ~slot_map::node_set{1u << 9};
    ASSERT_EQ(map.read_slots(two.nodes.data(), two.count, node("redis://127.0.0.1"), two_free),
              errc::ok);
    EXPECT_EQ(map.master_of(0), 3);
    EXPECT_EQ(map.master_of(100), 9);
    EXPECT_EQ(map.node(9).port, 9001);
    for (std::uint8_t m : {0, 2, 4, 8, 10, 15}) {
        EXPECT_EQ(map.node(m).port, 8000 + m) << "in use: kept";
    }
    // Masters the map knows keep their index whatever is in use; no free one is needed.
    ASSERT_EQ(map.read_slots(two.nodes.data(), two.count, node("redis://127.0.0.1"), all),
              errc::ok);
    EXPECT_EQ(map.master_of(0), 3);
    EXPECT_EQ(map.master_of(100), 9);
}

TEST(cluster_refresh, a_stale_map_is_read_at_once_then_not_sooner_than_the_gap) {
    slot_map map;  // never read: stale
    map_refresh refresh;
    EXPECT_TRUE(refresh.due(map, 0));
    EXPECT_LE(refresh.next_ms(map), 0) << "never read: at once";
    refresh.sent();
    EXPECT_TRUE(refresh.in_flight());
    EXPECT_FALSE(refresh.due(map, 0)) << "one read on its way at a time";
    EXPECT_EQ(refresh.next_ms(map), no_deadline_ms);
    refresh.ended(40);  // refused, say: still stale
    EXPECT_FALSE(refresh.in_flight());
    EXPECT_EQ(refresh.next_ms(map), 40 + map_refresh::refresh_gap_ms);
    EXPECT_FALSE(refresh.due(map, 40 + map_refresh::refresh_gap_ms - 1));
    EXPECT_TRUE(refresh.due(map, 40 + map_refresh::refresh_gap_ms));

    const parsed reply(one_master(7101));
    refresh.sent();
    ASSERT_EQ(map.read_slots(reply.nodes.data(), reply.count, node("redis://127.0.0.1")), errc::ok);
    refresh.ended(200);
    EXPECT_FALSE(refresh.due(map, 10'000)) << "not stale: nothing to read";
    EXPECT_EQ(refresh.next_ms(map), no_deadline_ms);
    ASSERT_TRUE(map.moved(1, node("redis://127.0.0.1:7102")));
    EXPECT_FALSE(refresh.due(map, 250)) << "a MOVED within the gap waits for its end";
    EXPECT_EQ(refresh.next_ms(map), 200 + map_refresh::refresh_gap_ms);
    EXPECT_TRUE(refresh.due(map, 300));
    map.mark_stale();
    EXPECT_TRUE(map.stale());
}

TEST(cluster_refresh, cluster_slots_is_written_whole_or_not_at_all) {
    const std::string expected = "*2\r\n$7\r\nCLUSTER\r\n$5\r\nSLOTS\r\n";
    std::array<char, 64> out{};
    ASSERT_EQ(write_cluster_slots(out.data(), out.size()), expected.size());
    EXPECT_EQ(std::string(out.data(), expected.size()), expected);
    EXPECT_EQ(write_cluster_slots(out.data(), expected.size()), expected.size()) << "exact fit";
    EXPECT_EQ(write_cluster_slots(out.data(), expected.size() - 1), 0u);
    EXPECT_EQ(write_cluster_slots(out.data(), 0), 0u);
}

TEST(cluster_refresh, a_map_never_read_is_due_at_once_whatever_the_clock_reads) {
    const slot_map map;  // never read: stale
    const map_refresh refresh;
    EXPECT_TRUE(refresh.due(map, -5'000)) << "no read ended yet: no gap to wait for";
    EXPECT_LE(refresh.next_ms(map), -5'000);
}

}  // namespace
