// SPDX-License-Identifier: Apache-2.0
// The connection driven by hand: literal timestamps, replies written as RESP text.
#include <gtest/gtest.h>

#include <array>
#include <cerrno>
#include <string>
#include <vector>

#include "edgelock/session/connection.hpp"

namespace {

using namespace edgelock;
using namespace edgelock::session;

std::vector<reply_node> nodes_of(const std::string& resp, std::vector<reply_node>& out) {
    out.assign(nodes_max, reply_node{});
    const parse_result r = parse_reply(resp.data(), resp.size(), out.data(), out.size());
    EXPECT_EQ(r.code, errc::ok) << resp;
    EXPECT_EQ(r.consumed, resp.size()) << resp;
    out.resize(r.nodes);
    return out;
}

node_address address(const std::string& url) {
    node_address a;
    EXPECT_EQ(parse_node_url(url, a).code, errc::ok);
    return a;
}

const std::string ok = "+OK\r\n";
const std::string pong = "+PONG\r\n";
const std::string sha = "$40\r\n0123456789012345678901234567890123456789\r\n";

class connection_test : public ::testing::Test {
protected:
    // A reading connection to h:1 whose INFO says `info`, set up as `s` says (its node, storage
    // and read_node filled in here), through its whole handshake: the last reply's routing.
    routed_reply read_a_node_saying(const std::string& info, connection_setup s) {
        const std::string info_reply = "$" + std::to_string(info.size()) + "\r\n" + info + "\r\n";
        server = address("h:1");
        s.node = &server;
        s.in_flight_storage = storage.data();
        s.in_flight_capacity = storage.size();
        s.read_node = true;
        EXPECT_EQ(l.setup(s), errc::ok);
        connect(0);
        reply(pong, 1);
        reply(info_reply, 1);
        reply("*2\r\n$11\r\nappendfsync\r\n$8\r\neverysec\r\n", 1);
        for (int i = 0; i < 3; ++i) reply(sha, 1);
        return reply(sha, 1);
    }

    void set_up_direct(const std::string& url, bool read_node = false) {
        server = address(url);
        connection_setup s;
        s.node = &server;
        s.in_flight_storage = storage.data();
        s.in_flight_capacity = storage.size();
        s.seed = 1;
        s.read_node = read_node;
        ASSERT_EQ(l.setup(s), errc::ok);
    }
    void set_up_reading_node(const std::string& url) { set_up_direct(url, true); }
    void set_up_sentinel(connection_kind kind = connection_kind::lock_traffic,
                         const std::string& scheme = "redis://") {
        sentinels = {address(scheme + ":spw@s1:26379"), address(scheme + "s2:26379")};
        master = address("redis://app:mpw@unused/2");
        connection_setup s;
        s.kind = kind;
        s.sentinels = sentinels.data();
        s.sentinel_count = sentinels.size();
        s.master_name = "mymaster";
        s.master = &master;
        s.in_flight_storage = storage.data();
        s.in_flight_capacity = storage.size();
        s.seed = 2;
        ASSERT_EQ(l.setup(s), errc::ok);
    }
    // Connects and returns the handshake bytes.
    std::string connect(std::int64_t now) {
        const node_address* to = l.start(now);
        EXPECT_NE(to, nullptr);
        std::array<char, 4096> out{};
        const std::size_t size = l.on_connected(now, out.data(), out.size());
        EXPECT_GT(size, 0u);
        return std::string(out.data(), size);
    }
    routed_reply reply(const std::string& resp, std::int64_t now) {
        std::vector<reply_node> n;
        nodes_of(resp, n);
        return l.on_reply(n.data(), n.size(), now);
    }
    void finish_server_handshake(std::int64_t now, bool with_select, bool with_role) {
        if (with_select) reply(ok, now);
        reply(pong, now);
        if (with_role) reply("*3\r\n$6\r\nmaster\r\n:100\r\n*0\r\n", now);
        for (int i = 0; i < 4; ++i) reply(sha, now);
    }
    // PING, INFO (uptime, run_id, AOF), CONFIG GET appendfsync, the scripts; returns the
    // last reply's verdict.
    routed_reply finish_reading_handshake(std::int64_t now, int uptime_s, char run_id_digit,
                                          bool aof, const std::string& fsync) {
        reply(pong, now);
        const std::string info = "# Server\r\nrun_id:" + std::string(40, run_id_digit) +
                                 "\r\nuptime_in_seconds:" + std::to_string(uptime_s) +
                                 "\r\n# Persistence\r\naof_enabled:" + (aof ? "1" : "0") + "\r\n";
        reply("$" + std::to_string(info.size()) + "\r\n" + info + "\r\n", now);
        reply("*2\r\n$11\r\nappendfsync\r\n$" + std::to_string(fsync.size()) + "\r\n" + fsync +
                  "\r\n",
              now);
        for (int i = 0; i < 3; ++i) reply(sha, now);
        return reply(sha, now);
    }
    // Closes the connection at `now`, and reads the node again on a new one made at `at` (or
    // once the reconnect delay allows); `now` becomes that instant.
    void reread(std::int64_t& now, std::int64_t at, int uptime_s, char run_id_digit, bool aof,
                const std::string& fsync) {
        l.on_io_error(failure::of(transport_errc::connection_closed), now);
        closed(now);
        now = std::max<std::int64_t>(l.start_not_before_ms(), at);
        connect(now);
        finish_reading_handshake(now, uptime_s, run_id_digit, aof, fsync);
    }
    connection_end closed(std::int64_t now) {
        return l.on_closed(now, [this](const in_flight& e) { dropped.push_back(e); });
    }

    connection l;
    node_address server;
    std::vector<node_address> sentinels;
    node_address master;
    std::array<in_flight, 32> storage{};
    std::vector<in_flight> dropped;
};

TEST_F(connection_test, a_direct_server_gets_auth_select_ping_and_the_scripts_then_is_ready) {
    set_up_direct("redis://user:pw@h:7000/3");
    const std::string hello = connect(10);
    EXPECT_EQ(l.address().port, 7000);
    EXPECT_EQ(l.state(), connection_state::handshaking);
    EXPECT_EQ(hello.find("*3\r\n$4\r\nAUTH\r\n$4\r\nuser\r\n$2\r\npw\r\n"), 0u) << hello;
    EXPECT_NE(hello.find("$6\r\nSELECT\r\n$1\r\n3\r\n"), std::string::npos);
    EXPECT_NE(hello.find("$4\r\nPING\r\n"), std::string::npos);
    EXPECT_EQ(hello.find("ROLE"), std::string::npos)
        << "a directly named server is not asked its role";
    EXPECT_NE(hello.find("SCRIPT"), std::string::npos);
    reply(ok, 11);  // AUTH
    finish_server_handshake(12, true, false);
    EXPECT_TRUE(l.ready());
    EXPECT_EQ(l.attempts_finished(), 1u);
    EXPECT_FALSE(l.last_error());
    EXPECT_EQ(l.next_deadline_ms(), no_deadline_ms) << "nothing in flight, nothing timed";
}

TEST_F(connection_test, refusals_in_the_handshake_close_with_their_reason) {
    struct refusal {
        std::string url;
        int replies_before;  // accepted replies before the refused one
        std::string refused;
        failure expected;
    };
    const std::vector<refusal> cases = {
        {"redis://:bad@h:1", 0, "-WRONGPASS invalid username-password pair\r\n",
         failure::of(transport_errc::auth_failed)},
        {"redis://h:1/9", 0, "-ERR DB index is out of range\r\n",
         failure::of(transport_errc::select_failed)},
        {"redis://h:1", 0, "-NOAUTH Authentication required.\r\n",
         failure::of(transport_errc::auth_required)},
        {"redis://h:1", 0, "-LOADING Redis is loading the dataset in memory\r\n",
         failure::of(transport_errc::loading)},
        {"redis://h:1", 0, "-MASTERDOWN Connection with MASTER is down\r\n",
         failure::of(transport_errc::master_down)},
        {"redis://h:1", 0, "-ERR unknown command\r\n", failure::of(errc::error_reply)},
    };
    for (const refusal& c : cases) {
        set_up_direct(c.url);
        connect(0);
        reply(c.refused, 5);
        ASSERT_EQ(l.state(), connection_state::closing) << c.refused;
        const connection_end done = closed(6);
        EXPECT_FALSE(done.was_ready);
        EXPECT_EQ(done.why, c.expected) << c.refused;
        EXPECT_EQ(l.last_error(), c.expected) << c.refused;
        EXPECT_EQ(l.state(), connection_state::idle);
        EXPECT_EQ(l.attempts_finished(), 1u);
    }
}

TEST_F(connection_test, a_refused_script_load_is_no_failure) {
    set_up_direct("h:1");
    connect(0);
    reply(pong, 1);
    for (int i = 0; i < 4; ++i)
        reply("-NOPERM this user has no permissions to run the 'script' command\r\n", 1);
    EXPECT_TRUE(l.ready());
}

TEST_F(connection_test, after_a_failure_the_next_attempt_waits_the_reconnect_delay) {
    set_up_direct("h:1");
    connect(0);
    l.on_io_error(failure::system(111), 3);
    closed(3);
    const std::int64_t due = l.next_deadline_ms();
    EXPECT_GE(due, 4);
    EXPECT_LE(due, 3 + timing{}.reconnect_delay_min_ms);
    EXPECT_EQ(l.start(due - 1), nullptr);
    EXPECT_NE(l.start(due), nullptr);
    EXPECT_EQ(l.last_error(), failure::system(111));
}

TEST_F(connection_test, a_connection_that_served_requests_is_made_again_at_once) {
    set_up_direct("h:1");
    connect(0);
    finish_server_handshake(1, false, false);
    l.track(1, 1, 2);
    reply(":1\r\n", 3);
    l.on_io_error(failure::of(transport_errc::connection_closed), 50);
    EXPECT_TRUE(closed(50).was_ready);
    ASSERT_NE(l.start(50), nullptr) << "no reconnect delay after a connection that served requests";
    l.on_io_error(failure::system(111), 51);
    closed(51);
    EXPECT_EQ(l.start(51), nullptr) << "but a failed attempt waits";
}

TEST_F(connection_test, a_server_that_drops_every_connection_after_its_handshake_is_backed_off) {
    set_up_direct("h:1");
    std::int64_t now = 0;
    std::int64_t last_delay = 0;
    for (int i = 0; i < 8; ++i) {
        connect(now);
        finish_server_handshake(now, false, false);
        l.on_io_error(failure::of(transport_errc::connection_closed), now);
        closed(now);
        EXPECT_EQ(l.start(now), nullptr) << "round " << i << ": no reconnect loop";
        last_delay = l.next_deadline_ms() - now;
        now = l.next_deadline_ms();
    }
    EXPECT_GT(last_delay, 0);
    EXPECT_EQ(l.attempts_finished(), 8u);
}

TEST_F(connection_test, the_delay_keeps_growing_over_rounds_of_dead_sentinels) {
    set_up_sentinel();
    std::int64_t now = 0;
    std::int64_t longest = 0;
    for (int round = 0; round < 12; ++round) {
        for (int s = 0; s < 2; ++s) {
            ASSERT_NE(l.start(now), nullptr);
            l.on_io_error(failure::system(111), now);
            closed(now);
        }
        longest = std::max(longest, l.next_deadline_ms() - now);
        now = l.next_deadline_ms();
    }
    EXPECT_GT(longest, timing{}.reconnect_delay_min_ms * 4)
        << "the cap grew: rounds do not start from the first cap";
}

TEST_F(connection_test, a_connect_that_outlasts_the_connect_timeout_fails) {
    set_up_direct("h:1");
    ASSERT_NE(l.start(100), nullptr);
    EXPECT_EQ(l.next_deadline_ms(), 100 + timing{}.connect_timeout_ms);
    l.on_timer(100 + timing{}.connect_timeout_ms - 1);
    EXPECT_EQ(l.state(), connection_state::connecting);
    l.on_timer(100 + timing{}.connect_timeout_ms);
    EXPECT_EQ(l.state(), connection_state::closing);
    EXPECT_EQ(closed(2200).why, failure::of(transport_errc::connect_timeout));
}

// A server that took the connection but never answered is up and silent (hung, or a proxy
// whose backend is gone), which is not a server that cannot be reached.
TEST_F(connection_test, a_connected_server_that_never_answers_is_a_handshake_timeout) {
    set_up_direct("h:1");
    connect(100);
    ASSERT_EQ(l.state(), connection_state::handshaking);
    EXPECT_EQ(l.next_deadline_ms(), 100 + timing{}.connect_timeout_ms)
        << "one deadline for the attempt";
    l.on_timer(100 + timing{}.connect_timeout_ms);
    ASSERT_EQ(l.state(), connection_state::closing);
    EXPECT_EQ(closed(2200).why, failure::of(transport_errc::handshake_timeout));
    EXPECT_EQ(l.last_error(), failure::of(transport_errc::handshake_timeout));

    set_up_direct("rediss://h:1");
    ASSERT_NE(l.start(100), nullptr);
    l.on_tls_handshake();
    std::array<char, 4096> out{};
    ASSERT_GT(l.on_connected(150, out.data(), out.size()), 0u);
    l.on_timer(100 + timing{}.connect_timeout_ms);
    EXPECT_EQ(closed(2200).why, failure::of(transport_errc::handshake_timeout))
        << "the TLS handshake ended: what is missing is Redis's answer";
}

TEST_F(connection_test, a_tls_handshake_that_outlasts_the_connect_timeout_says_so) {
    set_up_direct("rediss://h:1");
    ASSERT_NE(l.start(100), nullptr);
    l.on_tls_handshake();
    l.on_timer(100 + timing{}.connect_timeout_ms);
    EXPECT_EQ(closed(2200).why, failure::of(transport_errc::tls_handshake_timeout));
    // The next attempt that times out before its TLS handshake began is a connect timeout.
    ASSERT_NE(l.start(l.start_not_before_ms()), nullptr);
    const std::int64_t deadline = l.next_deadline_ms();
    l.on_timer(deadline);
    EXPECT_EQ(closed(deadline).why, failure::of(transport_errc::connect_timeout));
}

TEST_F(connection_test, a_plain_connection_dropped_before_its_first_reply_hints_at_a_tls_port) {
    const failure reset = failure::system(ECONNRESET);
    const failure eof = failure::of(transport_errc::connection_closed);
    for (const failure& drop : {reset, eof}) {
        set_up_direct("redis://h:1");
        connect(0);
        l.on_io_error(drop, 1);
        EXPECT_EQ(closed(1).why, failure::of(transport_errc::closed_before_reply));
    }
    set_up_direct("redis://h:1");
    connect(0);
    reply(pong, 1);
    l.on_io_error(reset, 2);
    EXPECT_EQ(closed(2).why, reset) << "a server that answered once speaks plain RESP";
    set_up_direct("redis://h:1");
    connect(0);
    l.on_bytes_received();
    l.on_io_error(reset, 1);
    EXPECT_EQ(closed(1).why, reset) << "part of a reply came: a reset mid-reply is just that";
    set_up_direct("rediss://h:1");
    connect(0);
    l.on_io_error(reset, 1);
    EXPECT_EQ(closed(1).why, reset) << "over TLS, the TLS layer says what went wrong";
    set_up_direct("redis://h:1");
    ASSERT_NE(l.start(0), nullptr);
    l.on_io_error(failure::system(ECONNREFUSED), 1);
    EXPECT_EQ(closed(1).why, failure::system(ECONNREFUSED));
}

TEST_F(connection_test, lock_replies_are_routed_in_order_and_a_late_one_times_the_connection_out) {
    set_up_direct("h:1");
    connect(0);
    finish_server_handshake(1, false, false);
    ASSERT_TRUE(l.track(7, 70, 100));
    ASSERT_TRUE(l.track(8, 80, 150));
    EXPECT_EQ(l.next_deadline_ms(), 100 + timing{}.command_timeout_ms);
    const routed_reply first = reply(":1\r\n", 120);
    EXPECT_EQ(first.what, routed_reply::kind::answer);
    EXPECT_EQ(first.entry.owner, 7u);
    EXPECT_EQ(first.entry.tag, 70u);
    EXPECT_EQ(l.next_deadline_ms(), 150 + timing{}.command_timeout_ms);
    l.on_timer(150 + timing{}.command_timeout_ms);
    ASSERT_EQ(l.state(), connection_state::closing);
    const connection_end done = closed(2200);
    EXPECT_TRUE(done.was_ready);
    EXPECT_EQ(done.why, failure::of(transport_errc::command_timeout));
    ASSERT_EQ(dropped.size(), 1u);
    EXPECT_EQ(dropped[0].owner, 8u);
}

TEST_F(connection_test, in_flight_at_names_what_each_coming_reply_answers_in_order) {
    set_up_direct("h:1");
    connect(0);
    finish_server_handshake(1, false, false);
    ASSERT_TRUE(l.track(7, 70, 100));
    ASSERT_TRUE(l.track(8, 80, 150));
    ASSERT_NE(l.in_flight_at(0), nullptr);
    ASSERT_NE(l.in_flight_at(1), nullptr);
    EXPECT_EQ(l.in_flight_at(0)->owner, 7u);
    EXPECT_EQ(l.in_flight_at(1)->owner, 8u);
    EXPECT_EQ(l.in_flight_at(2), nullptr) << "only two in flight";
    EXPECT_EQ(reply(":1\r\n", 120).entry.owner, 7u);
    ASSERT_NE(l.in_flight_at(0), nullptr);
    EXPECT_EQ(l.in_flight_at(0)->owner, 8u) << "the next reply answers the second request";
    EXPECT_EQ(l.in_flight_at(1), nullptr);
    EXPECT_EQ(reply(":1\r\n", 130).entry.owner, 8u);
    EXPECT_EQ(l.in_flight_at(0), nullptr);
}

TEST_F(connection_test,
       lock_requests_are_pipelined_behind_a_server_handshake_not_a_sentinel_query) {
    set_up_direct("h:1");
    connect(0);
    ASSERT_TRUE(l.accepts_requests()) << "behind the server's own handshake";
    ASSERT_TRUE(l.track(4, 40, 1));
    reply(pong, 2);
    for (int i = 0; i < 3; ++i) reply(sha, 2);
    EXPECT_EQ(l.state(), connection_state::handshaking);
    reply(sha, 3);
    EXPECT_TRUE(l.ready());
    const routed_reply r = reply(":1\r\n", 4);
    EXPECT_EQ(r.what, routed_reply::kind::answer);
    EXPECT_EQ(r.entry.owner, 4u);

    set_up_direct("redis://:bad@h:1");
    connect(0);
    l.track(5, 50, 1);
    reply("-WRONGPASS invalid username-password pair\r\n", 2);
    dropped.clear();
    EXPECT_EQ(closed(3).why, failure::of(transport_errc::auth_failed));
    ASSERT_EQ(dropped.size(), 1u) << "a request behind a failed handshake is dropped with it";
    EXPECT_EQ(dropped[0].owner, 5u);

    set_up_sentinel();
    connect(0);
    EXPECT_FALSE(l.accepts_requests()) << "a sentinel is not the server";
}

TEST_F(connection_test, a_wrong_server_reply_is_delivered_then_the_connection_ends) {
    for (const auto& [text, reason] : std::vector<std::pair<std::string, transport_errc>>{
             {"-READONLY You can't write against a read only replica.\r\n",
              transport_errc::not_master},
             {"-MASTERDOWN Connection with MASTER is down and replica-serve-stale-data is set to "
              "'no'.\r\n",
              transport_errc::master_down},
             {"-LOADING Redis is loading the dataset in memory\r\n", transport_errc::loading},
             {"-NOAUTH Authentication required.\r\n", transport_errc::auth_required}}) {
        set_up_direct("h:1");
        connect(0);
        finish_server_handshake(1, false, false);
        l.track(1, 1, 10);
        l.track(2, 2, 10);
        const routed_reply r = reply(text, 11);
        EXPECT_EQ(r.what, routed_reply::kind::answer) << text;
        EXPECT_EQ(r.entry.owner, 1u);
        ASSERT_EQ(l.state(), connection_state::closing) << text;
        dropped.clear();
        EXPECT_EQ(closed(12).why, failure::of(reason));
        EXPECT_EQ(dropped.size(), 1u) << "the request behind it is given up";
    }
}

TEST_F(connection_test, ordinary_error_replies_and_noscript_keep_the_connection) {
    set_up_direct("h:1");
    connect(0);
    finish_server_handshake(1, false, false);
    l.track(1, 1, 10);
    l.track(1, 2, 10);
    EXPECT_EQ(reply("-NOSCRIPT No matching script.\r\n", 11).what, routed_reply::kind::answer);
    EXPECT_EQ(reply("-ERR something\r\n", 11).what, routed_reply::kind::answer);
    EXPECT_TRUE(l.ready());
}

TEST_F(connection_test, a_reply_nobody_asked_for_ends_the_connection) {
    set_up_direct("h:1");
    connect(0);
    finish_server_handshake(1, false, false);
    EXPECT_EQ(reply(":1\r\n", 2).what, routed_reply::kind::none);
    EXPECT_EQ(closed(3).why, failure::of(errc::unexpected_reply));
}

TEST_F(connection_test, reading_the_node_holds_lock_requests_until_the_start_is_known) {
    set_up_reading_node("h:1");
    const std::string hello = connect(1'000);
    EXPECT_NE(hello.find("$4\r\nINFO\r\n"), std::string::npos);
    EXPECT_NE(hello.find("$11\r\nappendfsync\r\n"), std::string::npos);
    EXPECT_FALSE(l.accepts_requests())
        << "a claim must not reach the node before the lock knows its start";
    const routed_reply done = finish_reading_handshake(1'200, 30, 'a', false, "everysec");
    EXPECT_EQ(done.what, routed_reply::kind::node_read);
    EXPECT_TRUE(l.ready());
    EXPECT_EQ(l.started().started_ms, 1'200 - 29'000) << "uptime less a second of rounding";
    EXPECT_FALSE(l.started().durable);
    EXPECT_FALSE(l.started().restarted) << "nothing was read before";
    EXPECT_EQ(l.node().uptime_s, 30);
}

TEST_F(connection_test, aof_with_fsync_always_is_durable) {
    set_up_reading_node("h:1");
    connect(0);
    finish_reading_handshake(5, 2, 'a', true, "always");
    EXPECT_TRUE(l.started().durable);
}

TEST_F(connection_test, a_new_run_id_on_the_same_server_is_a_restart) {
    set_up_reading_node("h:1");
    connect(0);
    finish_reading_handshake(5, 100, 'a', false, "no");
    l.on_io_error(failure::of(transport_errc::connection_closed), 10);
    closed(10);
    std::int64_t now = l.start_not_before_ms();  // it served nothing: a reconnect delay
    connect(now);
    finish_reading_handshake(now, 100, 'a', false, "no");
    EXPECT_FALSE(l.started().restarted) << "the same process again";
    l.on_io_error(failure::of(transport_errc::connection_closed), now);
    closed(now);
    now = l.start_not_before_ms();
    connect(now);
    finish_reading_handshake(now, 100, 'b', false, "no");
    EXPECT_TRUE(l.started().restarted);
}

// A process without durable data restarted, and came back with AOF always: the restart lost
// what the old one had, so the start is not durable.
TEST_F(connection_test, a_restart_is_durable_only_when_the_process_before_was) {
    set_up_reading_node("h:1");
    std::int64_t l_now = 0;
    connect(l_now);
    finish_reading_handshake(l_now, 100, 'a', false, "everysec");
    reread(l_now, 1'000, 0, 'b', true, "always");
    EXPECT_TRUE(l.started().restarted);
    EXPECT_FALSE(l.started().durable) << "the process that restarted kept nothing";
    reread(l_now, 2'000, 1, 'c', true, "always");
    EXPECT_TRUE(l.started().durable) << "now the one before was durable";
}

// Another server behind the same address (a moved VIP) with days of uptime counts from the
// reading that found it, on this and every later connection while it runs.
TEST_F(connection_test, a_replacement_counts_from_the_reading_that_found_it_while_it_runs) {
    set_up_reading_node("h:1");
    std::int64_t l_now = 0;
    connect(l_now);
    finish_reading_handshake(l_now, 100, 'a', false, "no");
    const int days = 5 * 24 * 3600;
    reread(l_now, 1'000, days, 'b', false, "no");
    const std::int64_t found = l.started().started_ms;
    EXPECT_GE(found, 1'000);
    reread(l_now, 60'000, days + 59, 'b', false, "no");
    EXPECT_FALSE(l.started().restarted);
    EXPECT_EQ(l.started().started_ms, found) << "not its uptime: it never had our keys";
}

// Redis rounds its uptime: a later reading of the same process may put the start up to two
// seconds later. The earliest estimate is kept, so a reconnect never looks like a restart.
TEST_F(connection_test, a_reconnect_to_the_same_process_never_moves_its_start_later) {
    set_up_reading_node("h:1");
    std::int64_t l_now = 0;
    connect(l_now);
    finish_reading_handshake(l_now, 2, 'a', false, "no");  // started at -1'000 by this reading
    const std::int64_t first = l.started().started_ms;
    reread(l_now, 40'500, 40, 'a', false, "no");  // 40'500 - 39'000 = 1'500 by this one
    EXPECT_EQ(l.started().started_ms, first);
}

TEST_F(connection_test, a_node_that_may_evict_is_refused_only_when_asked_to) {
    for (const bool refuse : {false, true}) {
        connection_setup s;
        s.refuse_evicting = refuse;
        const routed_reply last =
            read_a_node_saying("# Memory\r\nmaxmemory:1000\r\nmaxmemory_policy:allkeys-lru\r\n", s);
        if (refuse) {
            ASSERT_EQ(l.state(), connection_state::closing);
            EXPECT_EQ(closed(2).why, failure::of(transport_errc::evicting_node));
        } else {
            EXPECT_EQ(last.what, routed_reply::kind::node_read);
            EXPECT_TRUE(l.node().may_evict());
        }
    }
}

// A replica named directly can never hold a lock: with refuse_replica its INFO ends the
// connection with not_master before the locks hear of its start (which would hold them up by
// the restart guard for nothing). Seen failing before: the node was told as started.
TEST_F(connection_test, a_replica_named_directly_is_refused_before_its_start_is_told) {
    for (const bool refuse : {false, true}) {
        connection_setup s;
        s.refuse_replica = refuse;
        const routed_reply last = read_a_node_saying(
            "# Replication\r\nrole:slave\r\nmaster_host:10.0.0.5\r\nmaster_port:6379\r\n", s);
        EXPECT_EQ(l.node().master_port, 6379);
        if (refuse) {
            EXPECT_NE(last.what, routed_reply::kind::node_read);
            ASSERT_EQ(l.state(), connection_state::closing);
            EXPECT_EQ(closed(2).why, failure::of(transport_errc::not_master));
        } else {
            EXPECT_EQ(last.what, routed_reply::kind::node_read);
        }
    }
}

TEST_F(connection_test, a_refused_info_ends_the_connection_with_node_info_refused) {
    set_up_reading_node("h:1");
    connect(0);
    reply(pong, 1);
    reply("-NOPERM this user has no permissions to run the 'info' command\r\n", 2);
    ASSERT_EQ(l.state(), connection_state::closing);
    EXPECT_EQ(closed(3).why, failure::of(transport_errc::node_info_refused));
}

TEST_F(connection_test, sentinel_mode_asks_a_sentinel_then_checks_the_master_role) {
    set_up_sentinel();
    const std::string ask = connect(0);
    EXPECT_EQ(l.address().host.view(), "s1");
    EXPECT_TRUE(l.asking_sentinel());
    EXPECT_EQ(ask.find("*2\r\n$4\r\nAUTH\r\n$3\r\nspw\r\n"), 0u)
        << "the sentinel's own credentials";
    EXPECT_NE(ask.find("$23\r\nget-master-addr-by-name\r\n$8\r\nmymaster\r\n"), std::string::npos);
    reply(ok, 1);
    reply("*2\r\n$8\r\n10.0.0.9\r\n$4\r\n6380\r\n", 2);
    ASSERT_EQ(l.state(), connection_state::closing);
    const connection_end moved = closed(2);
    EXPECT_FALSE(moved.why) << "moving on to the master is no failure";
    const node_address* to = l.start(2);
    ASSERT_NE(to, nullptr) << "the master is connected to at once";
    EXPECT_EQ(to->host.view(), "10.0.0.9");
    EXPECT_EQ(to->port, 6380);
    EXPECT_EQ(to->user.view(), "app");
    EXPECT_EQ(to->db, 2);
    std::array<char, 4096> out{};
    const std::string hello(out.data(), l.on_connected(3, out.data(), out.size()));
    EXPECT_NE(hello.find("$4\r\nROLE\r\n"), std::string::npos);
    reply(ok, 4);  // AUTH
    finish_server_handshake(5, true, true);
    EXPECT_TRUE(l.ready());
    EXPECT_FALSE(l.asking_sentinel());
}

TEST_F(connection_test, the_master_is_reached_with_tls_exactly_when_its_sentinel_was) {
    for (const std::string scheme : {"redis://", "rediss://"}) {
        set_up_sentinel(connection_kind::lock_traffic, scheme);
        EXPECT_FALSE(master.tls) << "the configured master credentials say nothing of TLS";
        connect(0);
        EXPECT_EQ(l.address().tls, scheme == "rediss://");
        reply(ok, 1);
        reply("*2\r\n$8\r\n10.0.0.9\r\n$4\r\n6380\r\n", 2);
        closed(2);
        const node_address* to = l.start(2);
        ASSERT_NE(to, nullptr);
        EXPECT_EQ(to->host.view(), "10.0.0.9");
        EXPECT_EQ(to->tls, scheme == "rediss://") << scheme;
    }
}

TEST_F(connection_test, a_sentinel_refused_by_tls_keeps_the_cause_others_read_as_no_master) {
    set_up_sentinel(connection_kind::lock_traffic, "rediss://");
    ASSERT_NE(l.start(0), nullptr);
    l.on_tls_handshake();
    l.on_io_error(failure::of(transport_errc::tls_untrusted), 1);
    EXPECT_EQ(closed(1).why, failure::of(transport_errc::tls_untrusted));
    EXPECT_EQ(l.last_error(), failure::of(transport_errc::tls_untrusted));
    ASSERT_NE(l.start(1), nullptr) << "the next sentinel, at once";
    l.on_io_error(failure::system(ECONNREFUSED), 2);
    closed(2);
    EXPECT_EQ(l.last_error(), failure::of(transport_errc::no_master));
}

TEST_F(connection_test,
       a_master_that_says_it_is_a_replica_sends_the_next_attempt_to_the_next_sentinel) {
    set_up_sentinel();
    connect(0);
    reply(ok, 1);
    reply("*2\r\n$1\r\nm\r\n$4\r\n6380\r\n", 1);
    closed(1);
    l.start(1);
    std::array<char, 4096> out{};
    l.on_connected(2, out.data(), out.size());
    reply(ok, 3);
    reply(ok, 3);
    reply(pong, 3);
    reply("*5\r\n$5\r\nslave\r\n$1\r\nx\r\n:1\r\n$9\r\nconnected\r\n:1\r\n", 3);
    ASSERT_EQ(l.state(), connection_state::closing);
    EXPECT_EQ(closed(4).why, failure::of(transport_errc::not_master));
    EXPECT_EQ(l.last_error(), failure::of(transport_errc::not_master));
    const node_address* next = l.start(4);
    ASSERT_NE(next, nullptr) << "the next sentinel is asked at once";
    EXPECT_EQ(next->host.view(), "s2");
}

TEST_F(connection_test, every_sentinel_is_tried_once_before_a_reconnect_delay) {
    set_up_sentinel();
    for (int round = 0; round < 2; ++round) {
        const node_address* first = l.start(round * 1000);
        ASSERT_NE(first, nullptr);
        EXPECT_EQ(first->host.view(), "s1");
        l.on_io_error(failure::system(111), round * 1000);
        closed(round * 1000);
        const node_address* second = l.start(round * 1000);
        ASSERT_NE(second, nullptr) << "no delay before the second sentinel";
        EXPECT_EQ(second->host.view(), "s2");
        l.on_io_error(failure::system(111), round * 1000);
        closed(round * 1000);
        EXPECT_EQ(l.start(round * 1000), nullptr) << "a whole round failed: now the delay";
        EXPECT_GT(l.next_deadline_ms(), round * 1000);
    }
}

TEST_F(connection_test, a_sentinel_that_knows_no_master_is_reported_as_no_master) {
    set_up_sentinel();
    connect(0);
    reply(ok, 1);
    reply("*-1\r\n", 1);
    EXPECT_EQ(closed(2).why, failure::of(transport_errc::no_master));
    EXPECT_EQ(l.last_error(), failure::of(transport_errc::no_master));
    set_up_sentinel();
    l.start(0);
    l.on_io_error(failure::system(111), 1);
    closed(1);
    EXPECT_EQ(l.last_error(), failure::of(transport_errc::no_master))
        << "an unreachable sentinel too";
}

TEST_F(connection_test, a_watch_subscribes_and_reports_switches_of_its_master_only) {
    set_up_sentinel(connection_kind::watch);
    const std::string hello = connect(0);
    EXPECT_NE(hello.find("$9\r\nSUBSCRIBE\r\n$14\r\n+switch-master\r\n"), std::string::npos);
    reply(ok, 1);  // AUTH
    reply("*3\r\n$9\r\nsubscribe\r\n$14\r\n+switch-master\r\n:1\r\n", 1);
    ASSERT_TRUE(l.ready());
    const std::string other =
        "*3\r\n$7\r\nmessage\r\n$14\r\n+switch-master\r\n$31\r\nothermaster 1.1.1.1 1 2.2.2.2 "
        "2\r\n";
    EXPECT_EQ(reply(other, 2).what, routed_reply::kind::none);
    const std::string ours =
        "*3\r\n$7\r\nmessage\r\n$14\r\n+switch-master\r\n$32\r\nmymaster 1.1.1.1 1 2.2.2.2 "
        "26380\r\n";
    EXPECT_EQ(reply(ours, 3).what, routed_reply::kind::master_switched);
    EXPECT_EQ(l.switched_to().host.view(), "2.2.2.2");
    EXPECT_EQ(l.switched_to().port, 26380);
    EXPECT_TRUE(l.ready());
}

TEST_F(connection_test,
       a_subscriber_says_ping_and_routes_confirmations_as_answers_and_messages_apart) {
    server = address("redis://:pw@h:1/3");
    connection_setup s;
    s.kind = connection_kind::subscriber;
    s.node = &server;
    s.in_flight_storage = storage.data();
    s.in_flight_capacity = storage.size();
    ASSERT_EQ(l.setup(s), errc::ok);
    const std::string hello = connect(0);
    EXPECT_EQ(hello, "*2\r\n$4\r\nAUTH\r\n$2\r\npw\r\n*1\r\n$4\r\nPING\r\n")
        << "no SELECT, scripts or INFO";
    reply(ok, 1);
    reply(pong, 1);
    ASSERT_TRUE(l.ready());
    ASSERT_TRUE(l.track(7, 70, 2));  // SUBSCRIBE {a}:queue
    ASSERT_TRUE(l.track(8, 80, 2));  // SUBSCRIBE {b}:queue
    const std::string message = "*3\r\n$7\r\nmessage\r\n$9\r\n{a}:queue\r\n$1\r\nt\r\n";
    EXPECT_EQ(reply(message, 3).what, routed_reply::kind::message)
        << "a message before any confirmation";
    EXPECT_EQ(l.requests_in_flight(), 2u) << "answers nothing";
    const routed_reply first = reply("*3\r\n$9\r\nsubscribe\r\n$9\r\n{a}:queue\r\n:1\r\n", 4);
    EXPECT_EQ(first.what, routed_reply::kind::answer);
    EXPECT_EQ(first.entry.owner, 7u);
    EXPECT_EQ(first.entry.tag, 70u);
    EXPECT_EQ(reply(message, 5).what, routed_reply::kind::message);
    const routed_reply refused =
        reply("-NOPERM this user has no permissions to access one of the channels\r\n", 6);
    EXPECT_EQ(refused.what, routed_reply::kind::answer) << "an error answers the next command";
    EXPECT_EQ(refused.entry.owner, 8u);
    EXPECT_TRUE(l.ready());
    EXPECT_EQ(l.next_deadline_ms(), no_deadline_ms) << "nothing in flight: no timeout";

    ASSERT_TRUE(l.track(7, 70, 10));
    EXPECT_EQ(l.next_deadline_ms(), 10 + l.times().command_timeout_ms)
        << "a confirmation that never comes";
    l.on_timer(10 + l.times().command_timeout_ms);
    EXPECT_EQ(l.state(), connection_state::closing);
    const connection_end c = closed(10 + l.times().command_timeout_ms);
    EXPECT_TRUE(c.was_ready);
    EXPECT_EQ(c.why, failure::of(transport_errc::command_timeout));
    ASSERT_EQ(dropped.size(), 1u);
    EXPECT_EQ(dropped[0].owner, 7u);
    EXPECT_NE(l.start(10 + l.times().command_timeout_ms), nullptr)
        << "one that answered reconnects at once";
}

TEST_F(connection_test, a_subscriber_behind_sentinels_reaches_the_master_and_checks_its_role) {
    set_up_sentinel(connection_kind::subscriber);
    const std::string ask = connect(0);
    EXPECT_NE(ask.find("get-master-addr-by-name"), std::string::npos);
    reply(ok, 1);  // AUTH to the sentinel
    reply("*2\r\n$8\r\n10.0.0.9\r\n$4\r\n6379\r\n", 1);
    closed(1);
    const std::string hello = connect(2);
    EXPECT_EQ(l.address().host.view(), "10.0.0.9");
    EXPECT_NE(hello.find("$4\r\nPING\r\n"), std::string::npos);
    EXPECT_NE(hello.find("$4\r\nROLE\r\n"), std::string::npos);
    EXPECT_EQ(hello.find("SELECT"), std::string::npos);
    reply(ok, 3);  // AUTH as app
    reply(pong, 3);
    reply("*3\r\n$5\r\nslave\r\n$8\r\n10.0.0.1\r\n:6379\r\n", 3);
    EXPECT_EQ(l.state(), connection_state::closing) << "a replica is no master";
}

TEST_F(connection_test, a_close_with_reconnect_now_skips_the_delay) {
    set_up_direct("h:1");
    connect(0);
    finish_server_handshake(1, false, false);
    l.close(failure::of(transport_errc::master_changed), 5, true);
    EXPECT_TRUE(closed(5).was_ready);
    EXPECT_NE(l.start(5), nullptr);
}

// The rule every client follows when its watch hears +switch-master.
TEST_F(connection_test, a_switch_to_another_master_closes_the_connection_and_asks_again_at_once) {
    set_up_sentinel();
    connect(0);
    reply(ok, 1);
    reply("*2\r\n$8\r\n10.0.0.9\r\n$4\r\n6380\r\n", 1);
    closed(1);
    connect(2);
    reply(ok, 3);
    finish_server_handshake(3, true, true);
    ASSERT_TRUE(l.ready());
    const node_address same = address("10.0.0.9:6380");
    const node_address other = address("10.0.0.7:6380");
    EXPECT_TRUE(l.serves(same));
    EXPECT_FALSE(l.follow_switch(other, same, 4)) << "already on the announced master";
    EXPECT_FALSE(l.follow_switch(address("10.0.0.5:6380"), other, 4))
        << "an older switch, from a master it is not on: its sentinel knew better";
    EXPECT_TRUE(l.ready());

    EXPECT_FALSE(l.serves(other));
    EXPECT_TRUE(l.follow_switch(same, other, 4));
    ASSERT_EQ(l.state(), connection_state::closing);
    const connection_end end = closed(4);
    EXPECT_TRUE(end.was_ready) << "the locks on it hear the end";
    EXPECT_EQ(end.why, failure::of(transport_errc::master_changed));
    const node_address* to = l.start(4);
    ASSERT_NE(to, nullptr) << "made again at once";
    EXPECT_FALSE(l.asking_sentinel()) << "to the announced master, not a sentinel still naming "
                                         "the old one";
    EXPECT_EQ(to->host.view(), "10.0.0.7");
    EXPECT_EQ(to->port, 6380);
    EXPECT_EQ(to->user.view(), "app") << "with the master's credentials";
    std::array<char, 4096> out{};
    const std::string hello(out.data(), l.on_connected(5, out.data(), out.size()));
    EXPECT_NE(hello.find("$4\r\nROLE\r\n"), std::string::npos) << "its role is checked";
    reply(ok, 5);
    finish_server_handshake(5, true, true);
    ASSERT_TRUE(l.serves(other)) << "once there, it is an ordinary connection to its master";
    l.on_io_error(failure::of(transport_errc::connection_closed), 6);
    EXPECT_TRUE(closed(6).was_ready);
    const std::int64_t at = std::max<std::int64_t>(6, l.start_not_before_ms());
    ASSERT_NE(l.start(at), nullptr);
    EXPECT_TRUE(l.asking_sentinel()) << "its end goes back to the sentinels";
    EXPECT_EQ(l.address().host.view(), "s1") << "the next in turn, as after any master's end";
}

TEST_F(connection_test, a_switch_leaves_a_direct_connection_and_hurries_an_idle_one) {
    set_up_direct("h:1");
    connect(0);
    finish_server_handshake(1, false, false);
    EXPECT_FALSE(l.follow_switch(address("h:1"), address("10.0.0.7:6380"), 2))
        << "no sentinel named this one";
    EXPECT_TRUE(l.ready());

    set_up_sentinel();
    for (int sentinel = 0; sentinel < 2; ++sentinel) {
        ASSERT_NE(l.start(10), nullptr);
        l.on_io_error(failure::system(111), 11);
        closed(11);
    }
    ASSERT_EQ(l.state(), connection_state::idle);
    EXPECT_FALSE(l.may_start(11)) << "every sentinel failed: the reconnect delay";
    const node_address old_master = address("10.0.0.9:6380");
    const node_address new_master = address("10.0.0.7:6380");
    EXPECT_FALSE(l.follow_switch(old_master, new_master, 11)) << "nothing to close";
    EXPECT_TRUE(l.may_start(11)) << "the announcement ends the delay";
    const node_address* to = l.start(11);
    ASSERT_NE(to, nullptr);
    EXPECT_EQ(to->host.view(), "10.0.0.7") << "straight to the announced master";
    l.on_io_error(failure::system(111), 12);
    closed(12);
    ASSERT_NE(l.start(12), nullptr) << "its failure costs no reconnect delay";
    EXPECT_TRUE(l.asking_sentinel());
    EXPECT_EQ(l.address().host.view(), "s1") << "and passes over no sentinel";
}

TEST_F(connection_test, an_announcement_is_used_within_a_connect_timeout_only) {
    set_up_sentinel();
    for (int sentinel = 0; sentinel < 2; ++sentinel) {
        ASSERT_NE(l.start(10), nullptr);
        l.on_io_error(failure::system(111), 11);
        closed(11);
    }
    EXPECT_FALSE(l.follow_switch(address("10.0.0.9:6380"), address("10.0.0.7:6380"), 11));
    const std::int64_t later = 12 + l.times().connect_timeout_ms;
    const std::int64_t after_delay = std::max(later, l.start_not_before_ms());
    ASSERT_NE(l.start(after_delay), nullptr);
    EXPECT_TRUE(l.asking_sentinel()) << "a later attempt asks the sentinels, who know by then";
}

TEST_F(connection_test, a_handshake_that_does_not_fit_is_a_configuration_error) {
    set_up_direct("redis://:" + std::string(200, 'p') + "@h:1");
    ASSERT_NE(l.start(0), nullptr);
    std::array<char, 64> tiny{};
    EXPECT_EQ(l.on_connected(0, tiny.data(), tiny.size()), 0u);
    EXPECT_EQ(closed(0).why, failure::of(errc::invalid_config));
}

TEST_F(connection_test, setup_refuses_what_cannot_work) {
    std::array<in_flight, 32> s{};
    node_address a = address("h:1");
    connection_setup bad;
    bad.in_flight_storage = s.data();
    bad.in_flight_capacity = s.size();
    EXPECT_EQ(l.setup(bad), errc::invalid_config) << "no server";
    bad.node = &a;
    bad.in_flight_capacity = handshake_steps_max - 1;
    EXPECT_EQ(l.setup(bad), errc::invalid_config) << "no room for the handshake";
    bad.in_flight_capacity = s.size();
    bad.times.command_timeout_ms = 0;
    EXPECT_EQ(l.setup(bad), errc::invalid_config) << "bad timing";
    bad.times = timing{};
    bad.kind = connection_kind::watch;
    EXPECT_EQ(l.setup(bad), errc::invalid_config) << "a watch needs sentinels";
    bad.kind = connection_kind::lock_traffic;
    EXPECT_EQ(l.setup(bad), errc::ok);
}

}  // namespace
