// SPDX-License-Identifier: Apache-2.0
// The driver over scripted hooks: a socket that connects, fails at once or later as the test
// says, and a record of what the connection delivered. Literal timestamps, replies as RESP.
#include "edgelock/session/connection_driver.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cerrno>
#include <string>
#include <vector>

#include "scripted_faults.hpp"

namespace {

using namespace edgelock;
using namespace edgelock::session;

node_address address(const std::string& url) {
    node_address a;
    EXPECT_EQ(parse_node_url(url, a).code, errc::ok);
    return a;
}

const std::string pong = "+PONG\r\n";
const std::string sha = "$40\r\n0123456789012345678901234567890123456789\r\n";
// A sentinel's answer to SENTINEL GET-MASTER-ADDR-BY-NAME.
const std::string master_at = "*2\r\n$2\r\nm1\r\n$4\r\n6379\r\n";
const std::string role_master = "*3\r\n$6\r\nmaster\r\n:100\r\n*0\r\n";

// The socket: records what it was asked; refuses at once the hosts in `refusing`.
struct scripted_io final : connection_io {
    connection_driver* driver = nullptr;
    std::vector<std::string> opened;
    std::vector<std::string> refusing;
    int closes = 0;
    bool paused = false;
    std::int64_t now = 0;

    void open(const node_address& to) override {
        opened.emplace_back(to.host.view());
        for (const std::string& host : refusing) {
            if (host == to.host.view()) driver->on_io_error(failure::system(ECONNREFUSED), now);
        }
    }
    void close() override { ++closes; }
    bool suspended() const override { return paused; }
};

struct recorded_events final : connection_events {
    connection_driver* driver = nullptr;
    std::vector<in_flight> answers;
    std::vector<in_flight> drops;
    std::vector<connection_end> ends;
    std::vector<bool> lock_heard;
    int readies = 0;
    bool replace_on_answer = false;  // a blocking client reconnecting inside a delivery

    void answered(const in_flight& entry, const reply_node*, std::size_t) override {
        answers.push_back(entry);
        if (!replace_on_answer) return;
        driver->stop();
        driver->settle(0, true);
        std::array<char, 4096> out{};
        EXPECT_GT(driver->on_connected(0, out.data(), out.size()), 0u);
    }
    void became_ready() override { ++readies; }
    void dropped(const in_flight& entry) override { drops.push_back(entry); }
    void ended(const connection_end& closed, bool lock_hears) override {
        ends.push_back(closed);
        lock_heard.push_back(lock_hears);
    }
};

class connection_driver_test : public ::testing::Test {
protected:
    void set_up(const std::vector<std::string>& sentinel_urls, fault_points* faults = nullptr) {
        io.driver = &d;
        events.driver = &d;
        connection_setup s;
        s.in_flight_storage = storage.data();
        s.in_flight_capacity = storage.size();
        s.seed = 7;
        s.faults = faults;
        if (sentinel_urls.empty()) {
            server = address("redis://n1:6379");
            s.node = &server;
        } else {
            for (const std::string& url : sentinel_urls) sentinels.push_back(address(url));
            s.sentinels = sentinels.data();
            s.sentinel_count = sentinels.size();
            s.master_name = "mymaster";
            s.master = &master;
        }
        ASSERT_EQ(d.setup(s, io, events), errc::ok);
    }
    // The socket is up: the handshake goes out.
    void connected(std::int64_t now) {
        std::array<char, 4096> out{};
        ASSERT_GT(d.on_connected(now, out.data(), out.size()), 0u);
    }
    std::size_t feed(const std::string& bytes, std::int64_t now) {
        return d.on_bytes(bytes.data(), bytes.size(), nodes.data(), nodes.size(), now);
    }
    void finish_handshake(std::int64_t now) { feed(pong + sha + sha + sha + sha, now); }

    connection_driver d;
    scripted_io io;
    recorded_events events;
    node_address server;
    node_address master;
    std::vector<node_address> sentinels;
    std::array<in_flight, 32> storage{};
    std::array<reply_node, nodes_max> nodes{};
};

TEST_F(connection_driver_test, settle_opens_when_wanted_and_reports_ready_once) {
    set_up({});
    EXPECT_EQ(d.settle(0, false), no_deadline_ms);
    EXPECT_TRUE(io.opened.empty());
    const std::int64_t wake = d.settle(0, true);
    ASSERT_EQ(io.opened, std::vector<std::string>{"n1"});
    EXPECT_EQ(wake, d.connection().times().connect_timeout_ms);  // the attempt's deadline
    connected(1);
    finish_handshake(2);
    d.settle(2, true);
    d.settle(3, true);
    EXPECT_EQ(events.readies, 1);
    EXPECT_EQ(io.opened.size(), 1u);
}

TEST_F(connection_driver_test, answers_are_routed_and_a_closed_connection_drops_the_rest) {
    set_up({});
    d.settle(0, true);
    connected(0);
    finish_handshake(1);
    d.settle(1, true);
    ASSERT_TRUE(d.connection().track(5, 50, 1));
    ASSERT_TRUE(d.connection().track(6, 60, 1));
    // A reply and a half: the half stays for the next read.
    EXPECT_EQ(feed(":1\r\n:", 2), 4u);
    ASSERT_EQ(events.answers.size(), 1u);
    EXPECT_EQ(events.answers[0].owner, 5u);
    d.on_io_error(failure::system(ECONNRESET), 3);
    d.settle(3, true);
    EXPECT_EQ(io.closes, 1);
    ASSERT_EQ(events.drops.size(), 1u);
    EXPECT_EQ(events.drops[0].owner, 6u);
    ASSERT_EQ(events.ends.size(), 1u);
    EXPECT_TRUE(events.lock_heard[0]);  // it was ready, and a request went with it
    EXPECT_EQ(io.opened.size(), 2u);    // it had served requests: made again at once
}

// close_after_reply: asked after each answer (never for the handshake's replies); when it
// fires the connection fails at once, as if the server closed it, and the replies read with
// that answer are left unrouted: the next request is dropped with the connection.
TEST_F(connection_driver_test, a_fault_point_fails_the_connection_right_after_an_answer) {
    scripted_faults faults;
    set_up({}, &faults);
    d.settle(0, true);
    connected(0);
    finish_handshake(1);
    EXPECT_EQ(faults.asked, 0) << "the handshake's replies are no answers";
    ASSERT_TRUE(d.connection().track(1, 1, 1));
    ASSERT_TRUE(d.connection().track(2, 2, 1));
    ASSERT_TRUE(d.connection().track(3, 3, 1));
    EXPECT_EQ(feed(":1\r\n", 2), 4u);
    EXPECT_EQ(faults.asked, 1);
    EXPECT_TRUE(d.connection().ready());
    faults.firing = true;
    EXPECT_EQ(feed(":1\r\n:1\r\n", 3), 4u) << "nothing after the answer is read";
    ASSERT_EQ(events.answers.size(), 2u);
    EXPECT_EQ(events.answers[1].owner, 2u);
    d.settle(3, true);
    ASSERT_EQ(events.ends.size(), 1u);
    EXPECT_EQ(d.connection().last_error(), failure::of(transport_errc::connection_closed));
    ASSERT_EQ(events.drops.size(), 1u);
    EXPECT_EQ(events.drops[0].owner, 3u);
}

TEST_F(connection_driver_test, routing_stops_when_a_delivery_replaces_the_connection) {
    set_up({});
    d.settle(0, true);
    connected(0);
    finish_handshake(1);
    ASSERT_TRUE(d.connection().track(1, 1, 1));
    ASSERT_TRUE(d.connection().track(2, 2, 1));
    events.replace_on_answer = true;
    // The second reply was the old connection's: never the new handshake's answer.
    EXPECT_EQ(feed(":1\r\n:1\r\n", 2), 4u);
    EXPECT_EQ(events.answers.size(), 1u);
    EXPECT_EQ(d.connection().state(), connection_state::handshaking);
}

TEST_F(connection_driver_test, a_sentinel_refusing_at_once_is_followed_by_the_next_in_one_settle) {
    set_up({"redis://s1:26379", "redis://s2:26379", "redis://s3:26379"});
    io.refusing = {"s1", "s2"};
    d.settle(0, true);
    EXPECT_EQ(io.opened, (std::vector<std::string>{"s1", "s2", "s3"}));
    ASSERT_EQ(events.ends.size(), 2u);
    EXPECT_FALSE(events.lock_heard[0]);  // another sentinel was left to ask: it only moved on
    EXPECT_FALSE(events.lock_heard[1]);
    // s3 names the master: the driver closes the sentinel's connection and opens the master's.
    connected(1);
    feed(master_at, 2);
    d.settle(2, true);
    EXPECT_EQ(io.opened.back(), "m1");
    EXPECT_FALSE(events.lock_heard.back());
    connected(3);
    feed(pong + role_master + sha + sha + sha + sha, 4);
    d.settle(4, true);
    EXPECT_EQ(events.readies, 1);
}

TEST_F(connection_driver_test, every_sentinel_failing_ends_the_round_and_the_lock_hears_it) {
    set_up({"redis://s1:26379", "redis://s2:26379"});
    io.refusing = {"s1", "s2"};
    const std::int64_t wake = d.settle(0, true);
    EXPECT_EQ(io.opened.size(), 2u);
    ASSERT_EQ(events.ends.size(), 2u);
    EXPECT_TRUE(events.lock_heard[1]);  // no sentinel left: the reconnect delay runs
    EXPECT_EQ(d.connection().last_error(), failure::of(transport_errc::no_master));
    EXPECT_GT(wake, 0);
    EXPECT_EQ(d.connection().state(), connection_state::idle);
}

TEST_F(connection_driver_test, a_suspended_client_is_left_alone_and_stop_forgets_the_connection) {
    set_up({});
    io.paused = true;
    d.settle(0, true);
    EXPECT_TRUE(io.opened.empty());
    io.paused = false;
    d.settle(0, true);
    connected(0);
    const std::uint32_t before = d.connections_closed();
    d.stop();
    EXPECT_EQ(io.closes, 1);
    EXPECT_EQ(d.connections_closed(), before + 1);
    EXPECT_TRUE(events.ends.empty());  // a stop tells nobody
    EXPECT_EQ(d.connection().state(), connection_state::idle);
}

}  // namespace
