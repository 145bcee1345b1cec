// SPDX-License-Identifier: Apache-2.0
// The fair scripts (scripts.hpp) run by a real redis-server, called by hand: who may take the
// lock, the line's order and expiry, leaving it, and the wake-ups published on its channel.
// The simulator's Redis model implements the same scripts; this is what it must agree with.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "channel_listener.hpp"
#include "edgelock/keys.hpp"
#include "edgelock/limits.hpp"
#include "edgelock/scripts.hpp"
#include "edgelock/testing/redis_client.hpp"
#include "edgelock/testing/redis_process.hpp"

namespace {

using namespace std::chrono_literals;
using edgelock::testing::redis_client;
using edgelock::testing::redis_reply;
using edgelock::testing::redis_server;

const std::string lock_key = "orders:42";

std::string companion_key(edgelock::companion which) {
    std::array<char, edgelock::key_bytes_max> out{};
    const std::size_t size = edgelock::write_companion_key(lock_key, which, out.data(), out.size());
    return std::string(out.data(), size);
}

const std::string queue_key = companion_key(edgelock::companion::queue);
const std::string qttl_key = companion_key(edgelock::companion::queue_ttl);
const std::string fence_key = companion_key(edgelock::companion::fence);

std::string token(char c) { return std::string(32, c); }

redis_reply fair_acquire(redis_client& c, const std::string& who, long long entry_ttl_ms = 10'000,
                         bool fenced = false, bool join = false) {
    std::vector<std::string> args = {"EVAL",
                                     std::string(edgelock::fair_acquire_script.text),
                                     fenced ? "4" : "3",
                                     lock_key,
                                     queue_key,
                                     qttl_key};
    if (fenced) args.push_back(fence_key);
    for (const std::string& a : {who, std::string("30000"), std::to_string(entry_ttl_ms)})
        args.push_back(a);
    if (join) args.push_back("join");
    return c.command(args);
}

redis_reply join_line(redis_client& c, const std::string& who) {
    return fair_acquire(c, who, 10'000, false, true);
}

redis_reply fair_release(redis_client& c, const std::string& who, bool stay = false,
                         bool fenced = false) {
    std::vector<std::string> args = {"EVAL",
                                     std::string(edgelock::fair_release_script.text),
                                     fenced ? "4" : "3",
                                     lock_key,
                                     queue_key,
                                     qttl_key};
    if (fenced) args.push_back(fence_key);
    args.push_back(who);
    if (stay) args.push_back("stay");
    return c.command(args);
}

// What a release publishes when it hands the lock to `who` (fence 0: unfenced).
std::string grant(const std::string& who, const std::string& fence = "0") {
    return who + " " + fence;
}

bool took_it(const redis_reply& r) {
    return r.type == redis_reply::kind::integer && r.integer == 0;
}

std::vector<std::string> line(redis_client& c) {
    std::vector<std::string> members;
    for (const redis_reply& e : c.command({"ZRANGE", queue_key, "0", "-1"}).elements)
        members.push_back(e.text);
    return members;
}

// A second connection listening to the channels of the lock's waiters.
class channel_listener : public edgelock::testing::channel_listener {
public:
    explicit channel_listener(std::uint16_t port)
        : edgelock::testing::channel_listener(port, queue_key) {}
};

TEST(fair_scripts, the_taker_of_a_free_lock_stands_at_the_head_until_its_release) {
    redis_server server;
    redis_client c(server.port());
    EXPECT_TRUE(took_it(fair_acquire(c, token('a'))));
    EXPECT_EQ(c.get(lock_key), token('a'));
    EXPECT_EQ(line(c), (std::vector<std::string>{token('a')}));
    EXPECT_GT(c.pttl(qttl_key), 9'000) << "its entry expires like a waiter's";
    EXPECT_EQ(fair_release(c, token('a')).integer, 1);
    EXPECT_FALSE(c.exists(lock_key));
    EXPECT_FALSE(c.exists(queue_key)) << "the release leaves nothing behind";
    EXPECT_FALSE(c.exists(qttl_key));
}

// A taker whose answer is lost cleans up with "stay": the key goes, its place at the head
// stays, and its next attempt takes the lock before anyone behind it.
TEST(fair_scripts, a_taker_whose_answer_was_lost_keeps_the_head_through_its_cleanup) {
    redis_server server;
    redis_client c(server.port());
    ASSERT_TRUE(took_it(fair_acquire(c, token('h'))));
    ASSERT_TRUE(fair_acquire(c, token('a')).is_nil());
    ASSERT_TRUE(fair_acquire(c, token('b')).is_nil());
    ASSERT_EQ(fair_release(c, token('h')).integer, 1);
    ASSERT_TRUE(took_it(fair_acquire(c, token('a'))));  // its answer never reaches a
    EXPECT_EQ(fair_release(c, token('a'), true).integer, 1) << "the cleanup deletes the key";
    EXPECT_EQ(line(c), (std::vector<std::string>{token('a'), token('b')})) << "a is still first";
    EXPECT_TRUE(fair_acquire(c, token('b')).is_nil()) << "b may not take a's turn";
    EXPECT_TRUE(took_it(fair_acquire(c, token('a'))));
}

// A head whose expiry entry is gone (deleted, evicted by a volatile-* policy) could never
// expire: it drops out instead of blocking the line for good.
TEST(fair_scripts, a_head_without_an_expiry_entry_drops_out) {
    redis_server server;
    redis_client c(server.port());
    channel_listener listener(server.port());
    ASSERT_TRUE(took_it(fair_acquire(c, token('h'))));
    ASSERT_TRUE(fair_acquire(c, token('a')).is_nil());
    ASSERT_TRUE(fair_acquire(c, token('b')).is_nil());
    ASSERT_EQ(c.command({"ZREM", qttl_key, token('a')}).integer, 1);
    ASSERT_EQ(fair_release(c, token('h')).integer, 1);
    EXPECT_EQ(listener.next(), grant(token('b'))) << "the release serves the first live waiter";
    EXPECT_TRUE(took_it(fair_acquire(c, token('b'))));
    c.command({"DEL", qttl_key});
    EXPECT_EQ(fair_release(c, token('b')).integer, 1);
    EXPECT_FALSE(c.exists(queue_key)) << "nothing without an entry is left in line";
}

// A waiter the restart guard keeps from taking the lock still takes its place ("join").
TEST(fair_scripts, a_waiter_that_only_joins_takes_its_place_but_never_the_lock) {
    redis_server server;
    redis_client c(server.port());
    channel_listener listener(server.port());
    EXPECT_TRUE(join_line(c, token('a')).is_nil()) << "a free lock and an empty line";
    EXPECT_FALSE(c.exists(lock_key));
    EXPECT_EQ(listener.next(), "") << "nobody else to wake";
    EXPECT_TRUE(join_line(c, token('b')).is_nil());
    EXPECT_EQ(listener.next(), token('a')) << "the free lock is the head's";
    EXPECT_TRUE(join_line(c, token('a')).is_nil()) << "the head joining again does not take it";
    EXPECT_EQ(listener.next(), "") << "nor wakes itself";
    EXPECT_EQ(line(c), (std::vector<std::string>{token('a'), token('b')}));
    EXPECT_TRUE(fair_acquire(c, token('b')).is_nil()) << "the order holds once the guard lifts";
    EXPECT_TRUE(took_it(fair_acquire(c, token('a'))));
}

TEST(fair_scripts, waiters_line_up_in_arrival_order_and_keep_their_place) {
    redis_server server;
    redis_client c(server.port());
    ASSERT_TRUE(took_it(fair_acquire(c, token('a'))));
    for (const char w : {'c', 'b', 'd'}) EXPECT_TRUE(fair_acquire(c, token(w)).is_nil()) << w;
    EXPECT_TRUE(fair_acquire(c, token('c')).is_nil()) << "looking again";
    EXPECT_TRUE(fair_acquire(c, token('b')).is_nil());
    EXPECT_EQ(line(c), (std::vector<std::string>{token('a'), token('c'), token('b'), token('d')}))
        << "the holder first, then arrival order, not token order; a re-check keeps the place";
    const long long queue_ttl = c.pttl(queue_key);
    EXPECT_GT(queue_ttl, 9'000);
    EXPECT_LE(queue_ttl, 10'000) << "the line lives as long as its longest entry";
    EXPECT_GT(c.pttl(qttl_key), 9'000);
}

TEST(fair_scripts, a_release_hands_the_lock_to_the_head_until_its_entry_would_expire) {
    redis_server server;
    redis_client c(server.port());
    channel_listener listener(server.port());
    ASSERT_TRUE(took_it(fair_acquire(c, token('a'))));
    ASSERT_TRUE(fair_acquire(c, token('b')).is_nil());
    ASSERT_TRUE(fair_acquire(c, token('c')).is_nil());
    EXPECT_EQ(listener.next(), "") << "nothing is published while the lock is held";
    const long long entry_left = c.pttl(qttl_key);

    EXPECT_EQ(fair_release(c, token('a')).integer, 1);
    EXPECT_EQ(listener.next(), grant(token('b'))) << "the release names the head and the fence";
    EXPECT_EQ(c.get(lock_key), token('b')) << "the lock is the head's already";
    const long long lease = c.pttl(lock_key);
    EXPECT_GT(lease, 8'000);
    EXPECT_LE(lease, entry_left) << "it lasts as long as the head's entry in the line, no longer";
    EXPECT_TRUE(fair_acquire(c, token('c')).is_nil());
    EXPECT_TRUE(fair_acquire(c, token('a')).is_nil()) << "the releaser goes to the back";
    EXPECT_EQ(listener.next(), "") << "the lock is not free: nobody is woken again";
    EXPECT_TRUE(took_it(fair_acquire(c, token('b')))) << "the head's attempt takes its key";
    EXPECT_GT(c.pttl(lock_key), 29'000) << "for its own ttl";
    EXPECT_EQ(line(c), (std::vector<std::string>{token('b'), token('c'), token('a')}))
        << "the taker heads the line until its release";
    EXPECT_NE(c.command({"ZSCORE", qttl_key, token('b')}).type, redis_reply::kind::nil);
}

TEST(fair_scripts, a_waiter_whose_entry_expired_drops_out_and_the_next_is_served) {
    redis_server server;
    redis_client c(server.port());
    channel_listener listener(server.port());
    ASSERT_TRUE(took_it(fair_acquire(c, token('a'))));
    ASSERT_TRUE(fair_acquire(c, token('b'), 100).is_nil());  // dies after this
    ASSERT_TRUE(fair_acquire(c, token('c')).is_nil());
    std::this_thread::sleep_for(150ms);  // on purpose: b's 100 ms entry TTL runs out
    EXPECT_EQ(fair_release(c, token('a')).integer, 1);
    EXPECT_EQ(listener.next(), grant(token('c'))) << "the expired head is skipped";
    EXPECT_TRUE(took_it(fair_acquire(c, token('c'))));
    EXPECT_EQ(line(c), (std::vector<std::string>{token('c')}));
}

TEST(fair_scripts, leaving_the_line_wakes_the_next_when_the_lock_is_free) {
    redis_server server;
    redis_client c(server.port());
    channel_listener listener(server.port());
    ASSERT_TRUE(took_it(fair_acquire(c, token('a'))));
    ASSERT_TRUE(fair_acquire(c, token('b')).is_nil());
    ASSERT_TRUE(fair_acquire(c, token('c')).is_nil());
    EXPECT_EQ(fair_release(c, token('c')).integer, 0) << "a waiter giving up deletes nothing";
    EXPECT_EQ(listener.next(), "") << "the lock is held: nobody to wake";
    EXPECT_EQ(line(c), (std::vector<std::string>{token('a'), token('b')}));
    ASSERT_EQ(fair_release(c, token('a')).integer, 1);
    EXPECT_EQ(listener.next(), grant(token('b')));
    EXPECT_EQ(fair_release(c, token('b')).integer, 1) << "the head gives up the lock it was given";
    EXPECT_EQ(listener.next(), "") << "and the line is empty";
    EXPECT_FALSE(c.exists(queue_key));
    EXPECT_TRUE(took_it(fair_acquire(c, token('d'))));
}

TEST(fair_scripts, a_waiters_cleanup_that_stays_keeps_its_place_and_frees_a_key_it_set) {
    redis_server server;
    redis_client c(server.port());
    channel_listener listener(server.port());
    ASSERT_TRUE(took_it(fair_acquire(c, token('a'))));
    ASSERT_TRUE(fair_acquire(c, token('b')).is_nil());
    ASSERT_TRUE(fair_acquire(c, token('c')).is_nil());
    EXPECT_EQ(fair_release(c, token('b'), true).integer, 0);
    EXPECT_EQ(line(c), (std::vector<std::string>{token('a'), token('b'), token('c')}))
        << "b keeps its place behind the holder";
    EXPECT_EQ(listener.next(), "");
    // a's release hands the lock to b, whose attempt meanwhile timed out: its cleanup frees
    // the key and only wakes b, still the head (a cleanup hands nothing over).
    ASSERT_EQ(fair_release(c, token('a')).integer, 1);
    EXPECT_EQ(listener.next(), grant(token('b')));
    EXPECT_EQ(fair_release(c, token('b'), true).integer, 1);
    EXPECT_FALSE(c.exists(lock_key));
    EXPECT_EQ(listener.next(), token('b'));
    EXPECT_EQ(line(c), (std::vector<std::string>{token('b'), token('c')}));
}

TEST(fair_scripts, a_queue_key_of_another_type_does_not_keep_the_holder_from_releasing) {
    redis_server server;
    redis_client c(server.port());
    ASSERT_TRUE(took_it(fair_acquire(c, token('a'))));
    c.set(qttl_key, "not a sorted set");
    EXPECT_TRUE(fair_release(c, token('a')).is_error()) << "WRONGTYPE from the line's upkeep";
    EXPECT_FALSE(c.exists(lock_key)) << "but the lock was released first";
}

TEST(fair_scripts, our_own_key_is_extended_and_we_leave_the_line) {
    redis_server server;
    redis_client c(server.port());
    ASSERT_TRUE(took_it(fair_acquire(c, token('a'))));
    c.command({"PEXPIRE", lock_key, "1000"});
    EXPECT_TRUE(took_it(fair_acquire(c, token('a')))) << "a retry whose first reply was lost";
    EXPECT_GT(c.pttl(lock_key), 29'000);
}

TEST(fair_scripts, a_foreign_client_may_take_a_free_lock_ahead_of_the_line_and_waiters_stay) {
    redis_server server;
    redis_client c(server.port());
    ASSERT_TRUE(took_it(fair_acquire(c, token('a'))));
    ASSERT_TRUE(fair_acquire(c, token('b')).is_nil());
    c.command({"DEL", lock_key});  // a plain client's release: nobody is woken
    EXPECT_EQ(c.command({"SET", lock_key, "foreign", "NX", "PX", "30000"}).text, "OK");
    EXPECT_TRUE(fair_acquire(c, token('b')).is_nil()) << "the lock key excludes everyone alike";
    EXPECT_EQ(line(c), (std::vector<std::string>{token('a'), token('b')}))
        << "a, whose key a plain client deleted, stays first until its release or its entry's "
           "expiry";
}

TEST(fair_scripts, with_a_fence_key_the_counter_moves_when_the_lock_is_taken) {
    redis_server server;
    redis_client c(server.port());
    const redis_reply first = fair_acquire(c, token('a'), 10'000, true);
    ASSERT_EQ(first.type, redis_reply::kind::string) << first.text;
    EXPECT_TRUE(fair_acquire(c, token('b'), 10'000, true).is_nil());
    EXPECT_EQ(c.get(fence_key), first.text) << "a refused waiter moves no counter";
    ASSERT_EQ(fair_release(c, token('a'), false, true).integer, 1);
    const redis_reply second = fair_acquire(c, token('b'), 10'000, true);
    ASSERT_EQ(second.type, redis_reply::kind::string) << second.text;
    EXPECT_GT(std::stoll(second.text), std::stoll(first.text));
    c.set(fence_key, "9223372036854775807");
    ASSERT_EQ(fair_release(c, token('b'), false, true).integer, 1);
    const redis_reply exhausted = fair_acquire(c, token('c'), 10'000, true);
    EXPECT_TRUE(exhausted.is_error());
    EXPECT_EQ(exhausted.text.rfind("FENCE_EXHAUSTED", 0), 0u) << exhausted.text;
    EXPECT_FALSE(c.exists(lock_key));
    EXPECT_FALSE(c.exists(queue_key)) << "refused before anything changed";
}

// A fenced release numbers the hold it hands over, above the counter as an acquire would; with
// the counter exhausted it hands nothing over and only wakes the head, whose own attempt then
// meets the error.
TEST(fair_scripts, a_fenced_grant_moves_the_counter_and_an_exhausted_one_only_wakes) {
    redis_server server;
    redis_client c(server.port());
    channel_listener listener(server.port());
    const redis_reply first = fair_acquire(c, token('a'), 10'000, true);
    ASSERT_EQ(first.type, redis_reply::kind::string) << first.text;
    ASSERT_TRUE(fair_acquire(c, token('b'), 10'000, true).is_nil());
    ASSERT_EQ(fair_release(c, token('a'), false, true).integer, 1);
    const std::string granted = listener.next();
    ASSERT_EQ(granted.rfind(token('b') + " ", 0), 0u) << granted;
    const std::string fence = granted.substr(token('b').size() + 1);
    EXPECT_GT(std::stoll(fence), std::stoll(first.text));
    EXPECT_EQ(c.get(fence_key), fence) << "the counter is at the fence handed out";

    ASSERT_TRUE(fair_acquire(c, token('c'), 10'000, true).is_nil());
    c.set(fence_key, "9223372036854775807");
    ASSERT_EQ(fair_release(c, token('b'), false, true).integer, 1);
    EXPECT_EQ(listener.next(), token('c')) << "a wake-up, not a grant";
    EXPECT_FALSE(c.exists(lock_key));
}

}  // namespace
