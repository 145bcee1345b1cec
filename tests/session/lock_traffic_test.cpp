// SPDX-License-Identifier: Apache-2.0
// The rules between a connection and the lock on it, with a real lock and a real connection driven
// by hand: literal timestamps, replies written as RESP text, a sink that records what it got.
#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

#include "edgelock/session/lock_traffic.hpp"
#include "scripted_faults.hpp"

namespace {

using namespace edgelock;
using namespace edgelock::session;

const std::string pong = "+PONG\r\n";
const std::string sha = "$40\r\n0123456789012345678901234567890123456789\r\n";

// A connection's write buffer: `capacity` bytes of room, commits that fail on demand.
struct recording_sink {
    std::array<char, 4096> buffer{};
    std::size_t capacity = 4096;
    std::size_t used = 0;
    bool fail = false;
    std::vector<std::string> committed;

    char* cursor() { return buffer.data() + used; }
    std::size_t room() const { return capacity - used; }
    bool commit(std::size_t size) {
        if (fail) return false;
        committed.emplace_back(buffer.data() + used, size);
        used += size;
        return true;
    }
};

std::string info_reply(int uptime_s, const std::string& memory) {
    const std::string info = "# Server\r\nrun_id:" + std::string(40, 'a') +
                             "\r\nuptime_in_seconds:" + std::to_string(uptime_s) +
                             "\r\n# Persistence\r\naof_enabled:0\r\n# Memory\r\n" + memory;
    return "$" + std::to_string(info.size()) + "\r\n" + info + "\r\n";
}

class lock_traffic_test : public ::testing::Test {
protected:
    void SetUp() override { ASSERT_EQ(parse_node_url("h:1", server).code, errc::ok); }

    void set_up(bool read_node) {
        reading_node = read_node;
        connection_setup s;
        s.node = &server;
        s.in_flight_storage = storage.data();
        s.in_flight_capacity = storage.size();
        s.seed = 1;
        s.read_node = read_node;
        ASSERT_EQ(connection.setup(s), errc::ok);
        lock_config c;
        c.name = "job";
        c.ttl_ms = 1000;
        ASSERT_EQ(core.configure(c), errc::ok);
    }
    // A plain connection that asks `faults` at its fault points.
    void set_up_with(scripted_faults& faults) {
        connection_setup s;
        s.node = &server;
        s.in_flight_storage = storage.data();
        s.in_flight_capacity = storage.size();
        s.faults = &faults;
        ASSERT_EQ(connection.setup(s), errc::ok);
    }
    routed_reply reply(const std::string& resp, std::int64_t now) {
        std::array<reply_node, nodes_max> n{};
        const parse_result r = parse_reply(resp.data(), resp.size(), n.data(), n.size());
        EXPECT_EQ(r.code, errc::ok) << resp;
        return connection.on_reply(n.data(), r.nodes, now);
    }
    // Connects and answers the handshake: PING and the four scripts, or with read_node also
    // INFO (uptime, `memory` lines) and CONFIG GET appendfsync. Returns the last reply's verdict.
    routed_reply connect(std::int64_t now, int uptime_s = 86400,
                         const std::string& memory = "maxmemory:0\r\n") {
        EXPECT_NE(connection.start(now), nullptr);
        std::array<char, 4096> hello{};
        EXPECT_GT(connection.on_connected(now, hello.data(), hello.size()), 0u);
        routed_reply last = reply(pong, now);
        if (reading_node) {
            reply(info_reply(uptime_s, memory), now);
            reply("*2\r\n$11\r\nappendfsync\r\n$8\r\neverysec\r\n", now);
        }
        for (int i = 0; i < 4; ++i) last = reply(sha, now);
        return last;
    }
    // A plain connection, ready, with an acquire written on it.
    void acquire_in_flight() {
        set_up(false);
        connect(0);
        ASSERT_EQ(core.acquire(1, 0, token), errc::ok);
        recording_sink sink;
        ASSERT_EQ(write_requests(core, 0, connection, 0, 0, 1, sink).written, 1u);
    }
    std::vector<event> drain() {
        std::vector<event> out;
        event e;
        while (core.poll_event(e)) out.push_back(e);
        return out;
    }

    bool reading_node = false;
    lock core;
    session::connection connection;
    node_address server;
    std::array<in_flight, 16> storage{};
    owner_token token{{1, 2, 3}};
};

TEST_F(lock_traffic_test, requests_go_out_while_the_link_accepts_them_each_tracked_for_its_reply) {
    set_up(false);
    ASSERT_EQ(core.acquire(0, 0, token), errc::ok);
    recording_sink sink;
    EXPECT_EQ(write_requests(core, 0, connection, 7, 9, 0, sink).stop, write_stop::not_accepting)
        << "no connection yet: the request stays queued";
    EXPECT_TRUE(core.has_request(0));

    connect(1);
    const write_report r = write_requests(core, 0, connection, 7, 9, 2, sink);
    EXPECT_EQ(r.stop, write_stop::done);
    EXPECT_EQ(r.written, 1u);
    ASSERT_EQ(sink.committed.size(), 1u);
    EXPECT_EQ(sink.committed[0].rfind("*7\r\n$3\r\nSET\r\n", 0), 0u)
        << "SET job token NX PX 1000 GET";
    EXPECT_EQ(connection.requests_in_flight(), 1u);
    const routed_reply answer = reply("$-1\r\n", 3);
    EXPECT_EQ(answer.what, routed_reply::kind::answer);
    EXPECT_EQ(answer.entry.owner, 7u);
    EXPECT_EQ(answer.entry.tag, 9u);
}

TEST_F(lock_traffic_test,
       a_full_sink_keeps_the_request_and_a_failed_write_drops_it_with_the_connection) {
    set_up(false);
    connect(0);
    ASSERT_EQ(core.acquire(1, 0, token), errc::ok);
    recording_sink sink;
    sink.capacity = 10;
    EXPECT_EQ(write_requests(core, 0, connection, 0, 0, 1, sink).stop, write_stop::full);
    EXPECT_TRUE(core.has_request(0));
    EXPECT_EQ(connection.requests_in_flight(), 0u);

    sink.capacity = sink.buffer.size();
    sink.fail = true;
    const write_report r = write_requests(core, 0, connection, 0, 0, 2, sink);
    EXPECT_EQ(r.stop, write_stop::failed);
    EXPECT_FALSE(core.has_request(0));
    EXPECT_EQ(connection.requests_in_flight(), 1u)
        << "in flight: the connection's close gives it up";
}

// The fault point delay_wait (fault_points.hpp): the claim's WAIT waits on the connection for
// the point's delay, the transport is woken at its end, and a connection that ends drops the hold.
TEST_F(lock_traffic_test, a_wait_the_fault_point_holds_goes_once_its_delay_passed) {
    scripted_faults faults(fault_point::delay_wait);
    faults.firing = true;
    faults.delay = 50;
    set_up_with(faults);
    lock_config c;
    c.name = "job";
    c.ttl_ms = 1000;
    c.replicas_to_wait = 1;
    ASSERT_EQ(core.configure(c), errc::ok);
    connect(0);
    ASSERT_EQ(core.acquire(1, 0, token), errc::ok);
    recording_sink sink;
    ASSERT_EQ(write_requests(core, 0, connection, 0, 0, 1, sink).written, 1u);
    EXPECT_EQ(faults.asked, 0) << "the claim is no WAIT";
    EXPECT_EQ(reply("$-1\r\n", 2).what, routed_reply::kind::answer);
    reply_node free_key{};
    free_key.type = reply_type::nil;  // SET ... NX GET: the key was free, ours now
    failure last;
    ASSERT_EQ(deliver_answer(core, 0, free_key, 2, last), errc::ok);
    ASSERT_TRUE(core.next_request_waits(0));

    EXPECT_EQ(write_requests(core, 0, connection, 0, 0, 2, sink).stop, write_stop::not_accepting);
    EXPECT_EQ(faults.asked, 1);
    EXPECT_EQ(connection.next_deadline_ms(), 52) << "the transport looks again at the hold's end";
    EXPECT_EQ(write_requests(core, 0, connection, 0, 0, 51, sink).stop, write_stop::not_accepting)
        << "still held, and the point not asked again";
    EXPECT_EQ(faults.asked, 1);
    connection.on_timer(52);
    EXPECT_EQ(connection.next_deadline_ms(), no_deadline_ms) << "no wake for a hold that is over";
    const write_report r = write_requests(core, 0, connection, 0, 0, 52, sink);
    EXPECT_EQ(r.written, 1u);
    ASSERT_EQ(sink.committed.size(), 2u);
    EXPECT_EQ(sink.committed[1].rfind("*3\r\n$4\r\nWAIT\r\n", 0), 0u);
    EXPECT_EQ(faults.asked, 1) << "its delay over, the WAIT goes without the point asked again";
}

TEST_F(lock_traffic_test, a_connection_that_ends_drops_the_hold_on_a_wait) {
    scripted_faults faults(fault_point::delay_wait);
    faults.firing = true;
    faults.delay = 500;
    set_up_with(faults);
    connect(0);
    EXPECT_TRUE(connection.holds_wait(1));
    EXPECT_EQ(connection.next_deadline_ms(), 501);
    connection.close(failure::of(transport_errc::connection_closed), 2);
    (void)connection.on_closed(2, [](const in_flight&) {});
    faults.firing = false;
    EXPECT_FALSE(connection.holds_wait(3)) << "the next connection's WAIT goes at once";
}

TEST_F(lock_traffic_test, an_error_reply_is_kept_as_the_instances_failure) {
    acquire_in_flight();
    reply_node err{};
    err.type = reply_type::error;
    err.text = "ERR something";
    failure last;
    EXPECT_EQ(deliver_answer(core, 0, err, 2, last), errc::error_reply);
    EXPECT_EQ(last, failure::of(errc::error_reply));
}

// Redis's text goes with the error reply, so a message can say what the server said.
TEST_F(lock_traffic_test, an_error_replys_text_is_kept_with_it) {
    acquire_in_flight();
    reply_node err{};
    err.type = reply_type::error;
    err.text = "OOM command not allowed when used memory > 'maxmemory'.";
    failure last;
    error_text text;
    EXPECT_EQ(deliver_answer(core, 0, err, 2, last, &text), errc::error_reply);
    EXPECT_EQ(text.view(), err.text);
}

// However long the server's text, the copy stays within its fixed storage.
TEST_F(lock_traffic_test, a_long_error_text_is_cut_to_its_bound) {
    acquire_in_flight();
    const std::string long_text = "ERR " + std::string(2 * error_text_bytes_max, 'x');
    reply_node err{};
    err.type = reply_type::error;
    err.text = long_text;
    failure last;
    error_text text;
    EXPECT_EQ(deliver_answer(core, 0, err, 2, last, &text), errc::error_reply);
    EXPECT_EQ(text.size(), error_text_bytes_max);
    EXPECT_EQ(text.view(), std::string_view(long_text).substr(0, error_text_bytes_max));
}

// A reply of the wrong shape has no text of its own: an earlier error's text goes.
TEST_F(lock_traffic_test, an_unexpected_reply_leaves_no_error_text) {
    acquire_in_flight();
    reply_node odd{};
    odd.type = reply_type::integer;  // SET NX GET never answers with an integer
    failure last;
    error_text text;
    text.assign_prefix("ERR from before");
    EXPECT_EQ(deliver_answer(core, 0, odd, 2, last, &text), errc::unexpected_reply);
    EXPECT_TRUE(text.empty());
}

TEST_F(lock_traffic_test, an_answer_leaves_the_instances_failure_alone) {
    acquire_in_flight();
    reply_node granted{};  // nil: SET NX GET found the key free
    failure last;
    EXPECT_EQ(deliver_answer(core, 0, granted, 2, last), errc::ok);
    EXPECT_FALSE(last);
    EXPECT_EQ(drain().at(0).type, event_type::acquired);
}

// A server before 7.0 refuses SET NX GET with a syntax error: an answer on a connection that
// stays, not the instance's failure; the lock's next request on it is the acquire script.
TEST_F(lock_traffic_test,
       a_syntax_error_for_set_nx_get_keeps_the_connection_and_brings_the_script) {
    acquire_in_flight();
    const std::string resp = "-ERR syntax error\r\n";
    std::array<reply_node, nodes_max> nodes{};
    const parse_result parsed = parse_reply(resp.data(), resp.size(), nodes.data(), nodes.size());
    ASSERT_EQ(parsed.code, errc::ok);
    EXPECT_EQ(connection.on_reply(nodes.data(), parsed.nodes, 2).what, routed_reply::kind::answer);
    failure last;
    EXPECT_EQ(deliver_answer(core, 0, nodes[0], 2, last), errc::ok);
    EXPECT_FALSE(last);
    EXPECT_TRUE(connection.ready());
    recording_sink sink;
    ASSERT_EQ(write_requests(core, 0, connection, 0, 0, 2, sink).written, 1u);
    EXPECT_EQ(sink.committed[0].rfind("*6\r\n$4\r\nEVAL\r\n", 0), 0u)
        << "the retry: the script's text";
    EXPECT_EQ(reply(":0\r\n", 3).what, routed_reply::kind::answer);
    reply_node granted{};  // the script's 0: the key was free
    granted.type = reply_type::integer;
    EXPECT_EQ(deliver_answer(core, 0, granted, 3, last), errc::ok);
    EXPECT_EQ(drain().at(0).type, event_type::acquired);
}

TEST_F(lock_traffic_test, with_the_guard_the_lock_hears_a_fresh_node_started_and_keeps_it_out) {
    set_up(true);
    ASSERT_EQ(connect(0, 0).what, routed_reply::kind::node_read);
    EXPECT_EQ(tell_node_started(core, 0, connection, true, 0), errc::ok);
    ASSERT_EQ(core.acquire(1, 0, token), errc::ok);
    const std::vector<event> events = drain();
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].code, errc::restart_guard) << "a node that just started counts a TTL later";
    EXPECT_FALSE(core.has_request(0));
}

TEST_F(lock_traffic_test, without_the_guard_the_lock_hears_nothing_of_the_node) {
    set_up(true);
    ASSERT_EQ(connect(0, 0).what, routed_reply::kind::node_read);
    EXPECT_EQ(tell_node_started(core, 0, connection, false, 0), errc::ok);
    ASSERT_EQ(core.acquire(1, 0, token), errc::ok);
    EXPECT_TRUE(drain().empty());
    EXPECT_TRUE(core.has_request(0));
}

TEST_F(lock_traffic_test, a_node_that_may_evict_is_warned_of_when_the_check_is_warn) {
    set_up(true);
    connect(0, 86400, "maxmemory:1000000\r\nmaxmemory_policy:allkeys-lru\r\n");
    EXPECT_TRUE(warns_of_eviction(eviction_check::warn, connection));
    EXPECT_FALSE(warns_of_eviction(eviction_check::off, connection));
    connection.reset();
    connect(1, 86400, "maxmemory:1000000\r\nmaxmemory_policy:noeviction\r\n");
    EXPECT_FALSE(warns_of_eviction(eviction_check::warn, connection));
}

TEST_F(lock_traffic_test, the_lock_hears_every_closed_connection_but_a_step_that_only_moved_on) {
    set_up(false);
    connect(0);
    connection.on_io_error(failure::system(104), 1);
    connection_end closed = connection.on_closed(1, [](const in_flight&) {});
    EXPECT_TRUE(lock_hears_close(closed, 0, connection, 1)) << "it was ready";

    const std::int64_t t = std::max<std::int64_t>(connection.start_not_before_ms(), 2);
    ASSERT_NE(connection.start(t), nullptr);
    connection.on_io_error(failure::system(111), t);  // refused
    closed = connection.on_closed(t, [](const in_flight&) {});
    EXPECT_TRUE(unreachable_now(connection, t)) << "the reconnect delay runs";
    EXPECT_TRUE(lock_hears_close(closed, 0, connection, t))
        << "no connection before the delay ends";
    EXPECT_FALSE(lock_hears_close(closed, 0, connection, connection.start_not_before_ms()))
        << "one is made at once";
    EXPECT_TRUE(lock_hears_close(closed, 1, connection, connection.start_not_before_ms()))
        << "a request was lost";
}

TEST_F(
    lock_traffic_test,
    requests_for_an_unreachable_instance_fail_at_once_and_releases_wait_for_the_next_connection) {
    set_up(false);
    ASSERT_EQ(core.acquire(0, 0, token), errc::ok);
    ASSERT_EQ(give_up_unsent(core, 0, 1), errc::ok);
    const std::vector<event> events = drain();
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].type, event_type::acquire_failed);
    EXPECT_TRUE(core.has_request(0))
        << "the cleanup release of the failed attempt waits for a connection";
}

TEST_F(lock_traffic_test, an_idle_link_wakes_its_transport_only_when_it_wants_a_connection) {
    set_up(false);
    EXPECT_EQ(wake_ms(connection, false, 5), no_deadline_ms);
    EXPECT_EQ(wake_ms(connection, true, 5), 5) << "no delay yet: now";
    ASSERT_NE(connection.start(5), nullptr);
    EXPECT_EQ(wake_ms(connection, false, 5), connection.next_deadline_ms())
        << "connecting: its timeout";
    connection.on_io_error(failure::system(111), 6);
    connection.on_closed(6, [](const in_flight&) {});
    EXPECT_EQ(wake_ms(connection, true, 6), connection.start_not_before_ms());
    EXPECT_EQ(wake_ms(connection, true, connection.start_not_before_ms() + 50),
              connection.start_not_before_ms() + 50);
}

// MOVED and ASK name another node for one slot: the lock follows them (cluster_route.hpp), and
// the connection to this node stays for the slots it still serves.
TEST_F(lock_traffic_test, a_redirect_is_an_answer_and_the_connection_stays) {
    set_up(false);
    connect(0);
    ASSERT_EQ(core.acquire(1, 0, token), errc::ok);
    for (const std::string redirect : {"-MOVED 1234 127.0.0.1:7102\r\n", "-ASK 1234 h:7103\r\n"}) {
        recording_sink sink;
        ASSERT_EQ(write_requests(core, 0, connection, 7, 9, 2, sink).written, 1u);
        const routed_reply r = reply(redirect, 3);
        EXPECT_EQ(r.what, routed_reply::kind::answer) << redirect;
        EXPECT_EQ(r.entry.owner, 7u);
        EXPECT_TRUE(connection.ready()) << redirect;
        ASSERT_EQ(core.on_redirect(0, 3), errc::ok);  // the SET goes again
    }
}

// ---- ASKING (Redis Cluster) ----------------------------------------------------------------

const std::string asking = "*1\r\n$6\r\nASKING\r\n";

TEST_F(lock_traffic_test, asking_goes_before_each_request_in_its_commit_and_its_ok_is_consumed) {
    set_up(false);
    connect(0);
    ASSERT_EQ(core.acquire(1, 0, token), errc::ok);
    recording_sink sink;
    const write_report r = write_requests(core, 0, connection, 7, 9, 2, sink, true);
    EXPECT_EQ(r.stop, write_stop::done);
    EXPECT_EQ(r.written, 1u) << "ASKING counts as no lock request";
    ASSERT_EQ(sink.committed.size(), 1u) << "one commit: nothing can come between them";
    EXPECT_EQ(sink.committed[0].rfind(asking + "*7\r\n$3\r\nSET\r\n", 0), 0u);
    EXPECT_EQ(sink.committed[0].size() - sink.committed[0].rfind("$3\r\nGET\r\n"), 9u)
        << "the whole SET ... GET";
    EXPECT_EQ(connection.requests_in_flight(), 2u);

    ASSERT_EQ(core.release(3), errc::ok);  // cancels: its cleanup goes after an ASKING too
    drain();
    ASSERT_EQ(write_requests(core, 0, connection, 7, 10, 4, sink, true).written, 1u);
    ASSERT_EQ(sink.committed.size(), 2u);
    EXPECT_EQ(sink.committed[1].rfind(asking + "*5\r\n$7\r\nEVALSHA\r\n", 0), 0u);
    EXPECT_EQ(connection.requests_in_flight(), 4u);

    EXPECT_EQ(reply("+OK\r\n", 5).what, routed_reply::kind::none) << "the connection's own";
    EXPECT_TRUE(connection.ready());
    const routed_reply acquired = reply("$-1\r\n", 5);
    EXPECT_EQ(acquired.what, routed_reply::kind::answer);
    EXPECT_EQ(acquired.entry.tag, 9u);
    EXPECT_EQ(reply("+OK\r\n", 6).what, routed_reply::kind::none);
    const routed_reply released = reply(":1\r\n", 6);
    EXPECT_EQ(released.what, routed_reply::kind::answer);
    EXPECT_EQ(released.entry.owner, 7u);
    EXPECT_EQ(released.entry.tag, 10u);
    EXPECT_EQ(connection.requests_in_flight(), 0u);
    EXPECT_TRUE(connection.ready());
}

// Without ASKING a request may go behind the handshake; with it, not: the handshake's replies
// and the ASKING's would be told apart only by their order.
TEST_F(lock_traffic_test, asking_requests_wait_for_a_ready_connection) {
    set_up(false);
    ASSERT_NE(connection.start(0), nullptr);
    std::array<char, 4096> hello{};
    ASSERT_GT(connection.on_connected(0, hello.data(), hello.size()), 0u);
    ASSERT_TRUE(connection.accepts_requests());
    const std::size_t handshake = connection.requests_in_flight();
    ASSERT_EQ(core.acquire(1, 0, token), errc::ok);
    recording_sink sink;
    EXPECT_EQ(write_requests(core, 0, connection, 0, 0, 1, sink, true).stop,
              write_stop::not_accepting);
    EXPECT_TRUE(core.has_request(0));
    EXPECT_TRUE(sink.committed.empty());
    EXPECT_EQ(connection.requests_in_flight(), handshake);
    EXPECT_EQ(write_requests(core, 0, connection, 0, 0, 1, sink, false).written, 1u)
        << "without ASKING it is pipelined";
}

TEST_F(lock_traffic_test, an_error_reply_to_asking_closes_the_connection) {
    set_up(false);
    connect(0);
    ASSERT_EQ(core.acquire(1, 0, token), errc::ok);
    recording_sink sink;
    ASSERT_EQ(write_requests(core, 0, connection, 7, 9, 2, sink, true).written, 1u);
    EXPECT_EQ(reply("-ERR This instance has cluster support disabled\r\n", 3).what,
              routed_reply::kind::none)
        << "not the lock's";
    EXPECT_EQ(connection.state(), connection_state::closing);
    std::vector<in_flight> dropped;
    const connection_end end =
        connection.on_closed(3, [&](const in_flight& e) { dropped.push_back(e); });
    EXPECT_EQ(end.why, failure::of(errc::error_reply));
    ASSERT_EQ(dropped.size(), 1u) << "the request behind it is given up with the connection";
    EXPECT_EQ(dropped[0].tag, 9u);
}

TEST_F(lock_traffic_test, a_sink_without_room_for_asking_and_its_request_takes_neither) {
    set_up(false);
    connect(0);
    ASSERT_EQ(core.acquire(1, 0, token), errc::ok);
    for (const std::size_t room : {asking.size() - 1, asking.size() + 10}) {
        recording_sink sink;
        sink.capacity = room;
        EXPECT_EQ(write_requests(core, 0, connection, 0, 0, 2, sink, true).stop, write_stop::full)
            << room;
        EXPECT_TRUE(sink.committed.empty());
        EXPECT_TRUE(core.has_request(0));
        EXPECT_EQ(connection.requests_in_flight(), 0u) << "no ASKING tracked without its request";
    }
}

TEST(lock_traffic, asking_is_written_whole_or_not_at_all) {
    std::array<char, 32> out{};
    ASSERT_EQ(write_asking(out.data(), out.size()), asking.size());
    EXPECT_EQ(std::string(out.data(), asking.size()), asking);
    EXPECT_EQ(write_asking(out.data(), asking.size()), asking.size());
    EXPECT_EQ(write_asking(out.data(), asking.size() - 1), 0u);
}

}  // namespace
