// SPDX-License-Identifier: Apache-2.0
// The session's Redis Cluster routing rules (session/cluster.hpp) against a live cluster of
// redis-server processes (tests/support redis_cluster.hpp): the slot map read from the exact
// bytes of CLUSTER SLOTS, edgelock::cluster_slot against the master a SET succeeds on, the
// -ASK of a half-migrated slot and the -MOVED after it, and the map after a master's replica
// took over.
#include <gtest/gtest.h>

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <netinet/in.h>

#include <arpa/inet.h>

#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "edgelock/keys.hpp"
#include "edgelock/limits.hpp"
#include "edgelock/resp_reader.hpp"
#include "edgelock/session/cluster.hpp"
#include "edgelock/testing/redis_cluster.hpp"

namespace {

using namespace edgelock;
using edgelock::session::redirect;
using edgelock::session::slot_map;
using edgelock::testing::migration;
using edgelock::testing::redis_cluster;
using edgelock::testing::redis_server;
using edgelock::testing::slot_range;

constexpr int read_timeout_ms = 5'000;
constexpr std::size_t names_per_master = 4;
constexpr std::size_t names_tried_max = 100'000;
constexpr std::size_t no_node = static_cast<std::size_t>(-1);

// A plain TCP connection that returns each reply's exact bytes, so the session parses what a
// server sends rather than a re-encoding of it.
class raw_connection {
public:
    explicit raw_connection(std::uint16_t port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_port = htons(port);
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (fd_ < 0 || ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
            throw std::runtime_error("raw_connection: connect failed");
    }
    ~raw_connection() { ::close(fd_); }
    raw_connection(const raw_connection&) = delete;
    raw_connection& operator=(const raw_connection&) = delete;

    std::string exchange(const std::vector<std::string>& args) {
        std::string request = "*" + std::to_string(args.size()) + "\r\n";
        for (const std::string& a : args)
            request += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
        if (::send(fd_, request.data(), request.size(), MSG_NOSIGNAL) !=
            static_cast<ssize_t>(request.size()))
            throw std::runtime_error("raw_connection: send failed");
        std::string bytes;
        std::vector<reply_node> nodes(nodes_max);
        for (;;) {
            const parse_result r = parse_reply(bytes.data(), bytes.size(), nodes.data(), nodes_max);
            if (r.code == errc::ok) return bytes;
            if (r.code != errc::need_more) throw std::runtime_error("raw_connection: bad reply");
            pollfd readable{fd_, POLLIN, 0};
            char chunk[4096];
            const ssize_t got = ::poll(&readable, 1, read_timeout_ms) == 1
                                    ? ::recv(fd_, chunk, sizeof chunk, 0)
                                    : -1;
            if (got <= 0) throw std::runtime_error("raw_connection: no reply");
            bytes.append(chunk, static_cast<std::size_t>(got));
        }
    }

private:
    int fd_;
};

// A reply's bytes and the nodes parsed from them (the nodes view into the bytes).
struct parsed {
    std::string resp;
    std::vector<reply_node> nodes = std::vector<reply_node>(nodes_max);
    std::size_t count = 0;
    explicit parsed(std::string bytes) : resp(std::move(bytes)) {
        const parse_result r = parse_reply(resp.data(), resp.size(), nodes.data(), nodes.size());
        EXPECT_EQ(r.code, errc::ok) << resp;
        count = r.nodes;
    }
};

session::node_address address_of(redis_server& server) {
    session::node_address a;
    EXPECT_EQ(session::parse_node_url(server.url(), a).code, errc::ok);
    return a;
}

// The map as CLUSTER SLOTS of node i says, read from the exact bytes it sent.
slot_map map_seen_by(redis_cluster& cluster, std::size_t i) {
    raw_connection c(cluster.node(i).port());
    const parsed reply(c.exchange({"CLUSTER", "SLOTS"}));
    slot_map map;
    EXPECT_EQ(map.read_slots(reply.nodes.data(), reply.count, address_of(cluster.node(i))),
              errc::ok)
        << reply.resp;
    return map;
}

std::uint16_t port_of(const slot_map& map, std::uint16_t slot) {
    const std::uint8_t m = map.master_of(slot);
    return m == slot_map::no_master ? 0 : map.node(m).port;
}

// Every slot is served by the master the cluster was formed with, unless `moved_to` says
// the range of `moved_from` is served by another node now.
void expect_layout(const slot_map& map, redis_cluster& cluster, std::size_t moved_from = no_node,
                   std::size_t moved_to = no_node) {
    EXPECT_TRUE(map.covers_all());
    EXPECT_EQ(map.nodes(), cluster.masters_at_start());
    for (std::size_t m = 0; m < cluster.masters_at_start(); ++m) {
        const slot_range r = cluster.assigned(m);
        const std::size_t owner = m == moved_from ? moved_to : m;
        for (std::uint32_t slot = r.first; slot <= r.last; ++slot) {
            const auto s = static_cast<std::uint16_t>(slot);
            ASSERT_EQ(port_of(map, s), cluster.node(owner).port()) << "slot " << slot;
            ASSERT_EQ(map.node(map.master_of(s)).host.view(), "127.0.0.1") << "slot " << slot;
        }
    }
}

// Names whose slots lie in master m's range, found by trying "lock:0", "lock:1", ...
std::vector<std::string> names_on(redis_cluster& cluster, std::size_t m) {
    const slot_range r = cluster.assigned(m);
    std::vector<std::string> names;
    for (std::size_t n = 0; n < names_tried_max && names.size() < names_per_master; ++n) {
        const std::string name = "lock:" + std::to_string(n);
        const std::uint16_t slot = cluster_slot(name);
        if (slot >= r.first && slot <= r.last) names.push_back(name);
    }
    return names;
}

std::string moved_bytes(std::uint16_t slot, std::uint16_t port) {
    return "-MOVED " + std::to_string(slot) + " 127.0.0.1:" + std::to_string(port) + "\r\n";
}

TEST(cluster_live, cluster_slot_names_the_master_a_set_succeeds_on) {
    redis_cluster cluster;
    expect_layout(map_seen_by(cluster, 0), cluster);
    for (std::size_t m = 0; m < cluster.masters_at_start(); ++m) {
        const std::vector<std::string> names = names_on(cluster, m);
        ASSERT_EQ(names.size(), names_per_master);
        for (const std::string& name : names) {
            for (std::size_t other = 0; other < cluster.masters_at_start(); ++other) {
                raw_connection c(cluster.node(other).port());
                const std::string reply = c.exchange({"SET", name, "v"});
                const std::string expected =
                    other == m ? "+OK\r\n"
                               : moved_bytes(cluster_slot(name), cluster.node(m).port());
                EXPECT_EQ(reply, expected) << name << " on master " << other;
            }
        }
    }
}

// The slot of "{t}:*" half-migrated from master 0 to master 1: the keys already moved are
// answered with -ASK by the source and served by the target after ASKING; then -MOVED.
TEST(cluster_live, a_migrating_slot_answers_ask_then_moved) {
    redis_cluster cluster;
    const std::string tag = names_on(cluster, 0).at(0);
    const std::uint16_t slot = cluster_slot("{" + tag + "}");
    const std::vector<std::string> keys = {"{" + tag + "}:a", "{" + tag + "}:b", "{" + tag + "}:c",
                                           "{" + tag + "}:d"};
    raw_connection source(cluster.node(0).port());
    for (const std::string& k : keys) ASSERT_EQ(source.exchange({"SET", k, k}), "+OK\r\n");
    slot_map map = map_seen_by(cluster, 2);

    ASSERT_EQ(cluster.migrate_slot(slot, 0, 1, migration::half_way), keys.size() / 2);
    const std::string ask = "-ASK " + std::to_string(slot) +
                            " 127.0.0.1:" + std::to_string(cluster.node(1).port()) + "\r\n";
    std::size_t asked = 0;
    for (const std::string& k : keys) {
        const std::string reply = source.exchange({"GET", k});
        if (reply != ask) {
            EXPECT_EQ(reply, "$" + std::to_string(k.size()) + "\r\n" + k + "\r\n");
            continue;
        }
        ++asked;
        const parsed p(reply);
        const redirect r = session::parse_redirect(p.nodes[0], address_of(cluster.node(0)));
        EXPECT_EQ(r.what, redirect::kind::ask);
        EXPECT_EQ(r.slot, slot);
        EXPECT_EQ(r.to.host.view(), "127.0.0.1");
        EXPECT_EQ(r.to.port, cluster.node(1).port());
        raw_connection target(r.to.port);
        EXPECT_EQ(target.exchange({"GET", k}), moved_bytes(slot, cluster.node(0).port()));
        EXPECT_EQ(target.exchange({"ASKING"}), "+OK\r\n");
        EXPECT_EQ(target.exchange({"GET", k}),
                  "$" + std::to_string(k.size()) + "\r\n" + k + "\r\n");
    }
    EXPECT_EQ(asked, keys.size() / 2);

    ASSERT_EQ(cluster.migrate_slot(slot, 0, 1, migration::complete), keys.size() / 2);
    const parsed moved(source.exchange({"GET", keys[0]}));
    EXPECT_EQ(moved.resp, moved_bytes(slot, cluster.node(1).port()));
    const redirect r = session::parse_redirect(moved.nodes[0], address_of(cluster.node(0)));
    ASSERT_EQ(r.what, redirect::kind::moved);
    EXPECT_FALSE(map.stale());
    ASSERT_TRUE(map.moved(r.slot, r.to));
    EXPECT_TRUE(map.stale());
    // The patched map is the one every node now sends, slot for slot.
    const slot_map fresh = map_seen_by(cluster, 2);
    for (std::uint32_t s = 0; s < cluster_slots; ++s) {
        const auto s16 = static_cast<std::uint16_t>(s);
        ASSERT_EQ(port_of(map, s16), port_of(fresh, s16)) << "slot " << s;
    }
    EXPECT_EQ(port_of(map, slot), cluster.node(1).port());
}

// With a replica each, replicas are in CLUSTER SLOTS but not in the map; after master 0 is
// killed, the replica promoted serves its slots in the map read again.
TEST(cluster_live, the_map_read_again_names_the_promoted_replica) {
    edgelock::testing::cluster_settings settings;
    settings.replicas_per_master = 1;
    redis_cluster cluster(settings);
    expect_layout(map_seen_by(cluster, 0), cluster);
    expect_layout(map_seen_by(cluster, cluster.replica_of(2)), cluster);

    const auto killed_at = std::chrono::steady_clock::now();
    const std::size_t promoted = cluster.kill_master(0);
    const auto took = std::chrono::steady_clock::now() - killed_at;
    std::printf("kill_master: replica promoted and seen by every node in %lld ms\n",
                static_cast<long long>(
                    std::chrono::duration_cast<std::chrono::milliseconds>(took).count()));
    EXPECT_EQ(promoted, cluster.replica_of(0));
    expect_layout(map_seen_by(cluster, 1), cluster, 0, promoted);

    // A manual failover of master 1 to its replica: the map follows it too.
    cluster.failover(cluster.replica_of(1));
    const slot_map after = map_seen_by(cluster, 2);
    EXPECT_EQ(port_of(after, cluster.assigned(1).first),
              cluster.node(cluster.replica_of(1)).port());
    EXPECT_EQ(port_of(after, cluster.assigned(0).last), cluster.node(promoted).port());
}

}  // namespace
