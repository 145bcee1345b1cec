// SPDX-License-Identifier: Apache-2.0
// The async client's wake-up channel table (transport/asio/src/fair_channels.hpp) driven by
// hand against a subscriber connection and a model of what Redis has subscribed: random sequences
// of locks joining and leaving, wanting wake-ups or not, confirmations and lost connections. After
// every step the table finds each channel by name and lists exactly its locks; once the commands
// are answered, Redis has subscribed exactly the channels some lock waits on.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <array>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "edgelock/keys.hpp"
#include "edgelock/session/connection.hpp"
#include "fair_channels.hpp"

namespace {

using edgelock::async::detail::fair_channels;
namespace session = edgelock::session;

constexpr std::size_t locks_max = 6;
const std::array<std::string, 5> names = {"a", "b", "c", "{a}x", "orders:42"};

std::string queue_key(const std::string& name) {
    std::array<char, edgelock::key_bytes_max> key{};
    const std::size_t size =
        edgelock::write_companion_key(name, edgelock::companion::queue, key.data(), key.size());
    return std::string(key.data(), size);
}

struct buffer_sink {
    std::array<char, 4096> bytes{};
    std::size_t size = 0;
    char* cursor() noexcept { return bytes.data() + size; }
    std::size_t room() const noexcept { return bytes.size() - size; }
    bool commit(std::size_t n) noexcept {
        size += n;
        return true;
    }
};

// The table, a ready subscriber connection, and what Redis would have subscribed.
class harness {
public:
    explicit harness(std::size_t locks = locks_max)
        : storage_(2 * locks + session::handshake_steps_max) {
        EXPECT_EQ(session::parse_node_url("redis://127.0.0.1:6379", server_).code,
                  edgelock::errc::ok);
        session::connection_setup setup;
        setup.kind = session::connection_kind::subscriber;
        setup.node = &server_;
        setup.in_flight_storage = storage_.data();
        setup.in_flight_capacity = storage_.size();
        EXPECT_EQ(connection_.setup(setup), edgelock::errc::ok);
        channels_.set_up(locks);
        connect();
    }
    fair_channels& table() noexcept { return channels_; }

    void attach(std::uint32_t lock, const std::string& name) {
        if (lock_name_.count(lock) != 0) return;
        ASSERT_TRUE(channels_.attach(lock, queue_key(name)));
        lock_name_[lock] = name;
    }
    void detach(std::uint32_t lock) {
        channels_.detach(lock);
        lock_name_.erase(lock);
        wanting_.erase(lock);
    }
    void set_wants(std::uint32_t lock, bool wants) {
        if (lock_name_.count(lock) == 0) return;
        channels_.set_wants(lock, wants);
        if (wants) {
            wanting_.insert(lock);
        } else {
            wanting_.erase(lock);
        }
    }
    // Writes what is due and lets Redis answer up to `answers` of the commands in flight.
    void exchange(std::size_t answers) {
        buffer_sink sink;
        channels_.write_commands(connection_, now_, sink);
        parse_commands(std::string(sink.bytes.data(), sink.size));
        for (std::size_t n = 0; n < answers && !unanswered_.empty(); ++n) answer_one();
    }
    std::size_t unanswered() const noexcept { return unanswered_.size(); }
    void settle() {
        for (int n = 0; n < 64 && (channels_.has_work() || !unanswered_.empty()); ++n)
            exchange(locks_max);
        RC_ASSERT(!channels_.has_work());
        RC_ASSERT(unanswered_.empty());
    }
    void lose_connection() {
        connection_.on_io_error(edgelock::failure::of(edgelock::transport_errc::connection_closed),
                                now_);
        connection_.on_closed(now_, [](const session::in_flight&) {});
        channels_.on_connection_lost();
        subscribed_.clear();
        unanswered_.clear();
        connect();
    }

    void check_lists() const {
        std::map<std::string, std::set<std::uint32_t>> by_name;
        for (const auto& [lock, name] : lock_name_) by_name[name].insert(lock);
        for (const auto& [name, locks] : by_name) {
            const std::uint32_t channel = channels_.find(queue_key(name));
            RC_ASSERT(channel != fair_channels::none);
            std::set<std::uint32_t> listed;
            for (std::uint32_t l = channels_.first_lock(channel); l != fair_channels::none;
                 l = channels_.next_lock(l)) {
                RC_ASSERT(listed.insert(l).second);
                RC_ASSERT(listed.size() <= locks_max);
            }
            RC_ASSERT(listed == locks);
        }
        std::set<std::string> wanted;
        for (const std::uint32_t lock : wanting_) wanted.insert(lock_name_.at(lock));
        RC_ASSERT(channels_.wanted() == !wanted.empty());
        for (std::uint32_t lock = 0; lock < locks_max; ++lock) {
            RC_ASSERT(channels_.attached(lock) == (lock_name_.count(lock) != 0));
        }
    }
    // After settle(): Redis has exactly the wanted channels, and the table keeps no other.
    void check_settled() const {
        std::set<std::string> wanted;
        for (const std::uint32_t lock : wanting_) wanted.insert(queue_key(lock_name_.at(lock)));
        RC_ASSERT(subscribed_ == wanted);
        std::set<std::string> used;
        for (const auto& [lock, name] : lock_name_) used.insert(name);
        RC_ASSERT(channels_.channels() == used.size());
    }

private:
    void connect() {
        RC_ASSERT(connection_.start(now_) != nullptr ||
                  (connection_.retry_now(), connection_.start(now_) != nullptr));
        std::array<char, 256> hello{};
        RC_ASSERT(connection_.on_connected(now_, hello.data(), hello.size()) > 0);
        reply("+PONG\r\n");
        RC_ASSERT(connection_.ready());
    }
    session::routed_reply reply(const std::string& resp) {
        std::vector<edgelock::reply_node> nodes(edgelock::nodes_max);
        const edgelock::parse_result r =
            edgelock::parse_reply(resp.data(), resp.size(), nodes.data(), nodes.size());
        RC_ASSERT(r.code == edgelock::errc::ok);
        const session::routed_reply routed = connection_.on_reply(nodes.data(), r.nodes, now_);
        if (routed.what == session::routed_reply::kind::answer) {
            const fair_channels::answer a =
                channels_.on_answer(routed.entry, nodes.data(), r.nodes);
            RC_ASSERT(!a.violation);
        }
        return routed;
    }
    // "*2\r\n$9\r\nSUBSCRIBE\r\n$N\r\n<channel>\r\n" one after another.
    void parse_commands(const std::string& wire) {
        std::size_t at = 0;
        while (at < wire.size()) {
            std::vector<edgelock::reply_node> nodes(edgelock::nodes_max);
            const edgelock::parse_result r = edgelock::parse_reply(
                wire.data() + at, wire.size() - at, nodes.data(), nodes.size());
            RC_ASSERT(r.code == edgelock::errc::ok);
            RC_ASSERT(r.nodes == 3u);
            unanswered_.push_back({std::string(nodes[1].text), std::string(nodes[2].text)});
            at += r.consumed;
        }
    }
    void answer_one() {
        const auto [command, channel] = unanswered_.front();
        unanswered_.erase(unanswered_.begin());
        const bool subscribe = command == "SUBSCRIBE";
        if (subscribe) {
            subscribed_.insert(channel);
        } else {
            subscribed_.erase(channel);
        }
        const std::string kind = subscribe ? "subscribe" : "unsubscribe";
        reply("*3\r\n$" + std::to_string(kind.size()) + "\r\n" + kind + "\r\n$" +
              std::to_string(channel.size()) + "\r\n" + channel +
              "\r\n:" + std::to_string(subscribed_.size()) + "\r\n");
    }

    session::node_address server_;
    std::vector<session::in_flight> storage_;  // a command per channel: two channels per lock
    session::connection connection_;
    fair_channels channels_;
    std::int64_t now_ = 0;
    std::map<std::uint32_t, std::string> lock_name_;
    std::set<std::uint32_t> wanting_;
    std::set<std::string> subscribed_;
    std::vector<std::pair<std::string, std::string>> unanswered_;
};

RC_GTEST_PROP(asio_fair_channels, lists_locks_by_name_and_subscribes_exactly_what_is_wanted, ()) {
    harness h;
    const int steps = *rc::gen::inRange(1, 120);
    for (int step = 0; step < steps; ++step) {
        const auto lock = static_cast<std::uint32_t>(*rc::gen::inRange<int>(0, locks_max));
        switch (*rc::gen::inRange(0, 7)) {
            case 0:
            case 1: h.attach(lock, names[*rc::gen::inRange<std::size_t>(0, names.size())]); break;
            case 2: h.detach(lock); break;
            case 3: h.set_wants(lock, *rc::gen::arbitrary<bool>()); break;
            case 4: h.exchange(*rc::gen::inRange<std::size_t>(0, 3)); break;
            case 5:
                if (*rc::gen::inRange(0, 4) == 0) h.lose_connection();
                break;
            default:
                h.settle();
                h.check_settled();
                break;
        }
        h.check_lists();
    }
    h.settle();
    h.check_settled();
}

TEST(asio_fair_channels, the_subscriber_message_kinds_reach_the_right_channel) {
    fair_channels channels;
    channels.set_up(4);
    ASSERT_TRUE(channels.attach(0, "{x}:queue"));
    ASSERT_TRUE(channels.attach(1, "{x}:queue"));
    ASSERT_TRUE(channels.attach(2, "{y}:queue"));
    EXPECT_FALSE(channels.attach(3, "")) << "no channel";
    EXPECT_FALSE(channels.attach(3, std::string(edgelock::wake_channel_bytes_max + 1, 'k')))
        << "longer than any wait's channel";
    EXPECT_EQ(channels.channels(), 2u);
    const std::uint32_t x = channels.find("{x}:queue");
    ASSERT_NE(x, fair_channels::none);
    EXPECT_EQ(channels.channel_name(1), "{x}:queue");
    EXPECT_FALSE(channels.wanted());
    channels.set_wants(1, true);
    EXPECT_TRUE(channels.wanted());
    EXPECT_TRUE(channels.has_work());
    channels.detach(1);
    EXPECT_FALSE(channels.wanted()) << "a lock that leaves stops wanting";
    channels.detach(0);
    channels.detach(2);
    EXPECT_EQ(channels.channels(), 0u) << "nothing was subscribed: the channels go at once";
    EXPECT_FALSE(channels.has_work());
}

// A channel whose last lock left stays until Redis confirms its UNSUBSCRIBE, while the
// lock goes on to its next wait's channel (or its slot in the client's table is free at once
// for another lock), which must still find a channel (the client's add_lock() did abort here). Only
// channels leaving beyond one per lock make a new name wait for a free one, and it gets it once one
// leaves.
TEST(asio_fair_channels, a_channel_still_leaving_leaves_room_for_a_new_name) {
    harness h(1);
    fair_channels& table = h.table();
    ASSERT_TRUE(table.attach(0, "{a}:queue"));
    table.set_wants(0, true);
    h.exchange(1);
    ASSERT_EQ(table.state(table.find("{a}:queue")), fair_channels::subscription::on);
    table.set_wants(0, false);
    table.detach(0);
    h.exchange(0);
    ASSERT_EQ(table.state(table.find("{a}:queue")), fair_channels::subscription::unsubscribing);

    ASSERT_TRUE(table.attach(0, "{b}:queue")) << "the table's one lock gets its next channel";
    EXPECT_EQ(table.channels(), 2u);
    table.set_wants(0, true);
    h.exchange(0);
    EXPECT_EQ(table.state(table.find("{b}:queue")), fair_channels::subscription::subscribing);
    table.set_wants(0, false);
    table.detach(0);
    EXPECT_EQ(h.unanswered(), 2u) << "both channels leave, their commands unanswered";

    EXPECT_FALSE(table.attach(0, "{c}:queue")) << "a second channel leaving for one lock: no room";
    EXPECT_FALSE(table.attached(0));
    h.exchange(1);  // the UNSUBSCRIBE of {a}:queue confirmed: its channel goes
    EXPECT_EQ(table.find("{a}:queue"), fair_channels::none);
    ASSERT_TRUE(table.attach(0, "{c}:queue"));
    table.set_wants(0, true);
    for (int n = 0; n < 8 && (table.has_work() || h.unanswered() > 0); ++n) h.exchange(1);
    EXPECT_EQ(table.find("{b}:queue"), fair_channels::none) << "subscribed, then dropped: gone";
    EXPECT_EQ(table.state(table.find("{c}:queue")), fair_channels::subscription::on);
    EXPECT_EQ(table.channels(), 1u);
}

}  // namespace
