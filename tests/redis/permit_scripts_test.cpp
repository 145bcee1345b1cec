// SPDX-License-Identifier: Apache-2.0
// The semaphore's scripts (scripts.hpp, permit_*) run by a real redis-server, called by hand:
// at most N leases, expired ones dropped first, renew and release only our own, a retried
// acquire, N agreed, the lock and the semaphore refusing each other's names, and the fair
// line's wake-ups, and a fenced semaphore's numbered permits and tokens. The simulator's Redis
// model runs the same text.
#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "channel_listener.hpp"
#include "edgelock/keys.hpp"
#include "edgelock/scripts.hpp"
#include "edgelock/testing/redis_client.hpp"
#include "edgelock/testing/redis_process.hpp"

namespace {

using namespace std::chrono_literals;
using edgelock::testing::channel_listener;
using edgelock::testing::redis_client;
using edgelock::testing::redis_reply;
using edgelock::testing::redis_server;

const std::string name = "uplink:site-7";

std::string companion_key(edgelock::companion which) {
    std::array<char, edgelock::key_bytes_max> out{};
    const std::size_t size = edgelock::write_companion_key(name, which, out.data(), out.size());
    return std::string(out.data(), size);
}

const std::string fence_key = companion_key(edgelock::companion::fence);
const std::string queue_key = companion_key(edgelock::companion::queue);
const std::string qttl_key = companion_key(edgelock::companion::queue_ttl);
const std::string slots_key = companion_key(edgelock::companion::slots);

std::string token(char c) { return std::string(32, c); }

redis_reply eval(redis_client& c, const edgelock::script& s, std::vector<std::string> keys,
                 std::vector<std::string> args) {
    std::vector<std::string> command = {"EVAL", std::string(s.text), std::to_string(keys.size())};
    command.insert(command.end(), keys.begin(), keys.end());
    command.insert(command.end(), args.begin(), args.end());
    return c.command(command);
}

redis_reply take(redis_client& c, const std::string& who, int permits = 3,
                 long long ttl_ms = 30'000) {
    return eval(c, edgelock::permit_acquire_script, {name},
                {who, std::to_string(ttl_ms), std::to_string(permits)});
}

redis_reply renew(redis_client& c, const std::string& who, long long ttl_ms = 30'000) {
    return eval(c, edgelock::permit_renew_script, {name}, {who, std::to_string(ttl_ms)});
}

redis_reply give_back(redis_client& c, const std::string& who) {
    return eval(c, edgelock::permit_release_script, {name}, {who});
}

redis_reply fair_take(redis_client& c, const std::string& who, int permits = 2) {
    return eval(c, edgelock::fair_permit_acquire_script, {name, queue_key, qttl_key},
                {who, "30000", "10000", std::to_string(permits)});
}

redis_reply fair_give_back(redis_client& c, const std::string& who, bool stay = false,
                           int permits = 2) {
    std::vector<std::string> args = {who, std::to_string(permits)};
    if (stay) args.push_back("stay");
    return eval(c, edgelock::fair_permit_release_script, {name, queue_key, qttl_key}, args);
}

bool took(const redis_reply& r) { return r.type == redis_reply::kind::integer && r.integer == 0; }

bool refused_with(const redis_reply& r, const std::string& code) {
    return r.type == redis_reply::kind::error && r.text.rfind(code, 0) == 0;
}

std::vector<std::string> holders(redis_client& c) {
    std::vector<std::string> out;
    for (const redis_reply& e : c.command({"ZRANGEBYSCORE", name, "0", "+inf"}).elements)
        out.push_back(e.text);
    return out;
}

// A fenced acquire: KEYS set fence slots; answers the fence token (GET's decimal string).
redis_reply fenced_take(redis_client& c, const std::string& who, int permits = 3) {
    return eval(c, edgelock::permit_acquire_script, {name, fence_key, slots_key},
                {who, "30000", std::to_string(permits)});
}

unsigned long long token_value(const redis_reply& r) {
    EXPECT_EQ(r.type, redis_reply::kind::string) << r.text;
    return std::stoull(r.text);
}

// Each fenced lease holds a permit no other live lease holds, and its token is the first
// value above the counter whose remainder by N is a free permit: tokens rise in grant order,
// a permit freed passes on with a higher token, and a retried acquire keeps its permit.
TEST(permit_scripts, fenced_leases_hold_permits_of_their_own_and_tokens_rise_with_them) {
    redis_server server;
    redis_client c(server.port());
    const unsigned long long a = token_value(fenced_take(c, token('a')));
    const unsigned long long b = token_value(fenced_take(c, token('b')));
    const unsigned long long cc = token_value(fenced_take(c, token('c')));
    EXPECT_EQ((std::set<unsigned long long>{a % 3, b % 3, cc % 3}).size(), 3u) << "a permit each";
    EXPECT_LT(a, b);
    EXPECT_LT(b, cc);
    EXPECT_GE(a, 1'000'000'000'000'000ULL) << "the counter starts from the clock in us";
    EXPECT_EQ(std::to_string(cc), c.command({"GET", fence_key}).text) << "the counter";
    EXPECT_TRUE(fenced_take(c, token('d')).is_nil());
    EXPECT_EQ(give_back(c, token('b')).integer, 1);
    const unsigned long long d = token_value(fenced_take(c, token('d')));
    EXPECT_EQ(d % 3, b % 3) << "b's permit, the one free";
    EXPECT_GT(d, cc);
    const unsigned long long again = token_value(fenced_take(c, token('a')));
    EXPECT_EQ(again % 3, a % 3) << "a retried acquire keeps its permit";
    EXPECT_GT(again, d);
    EXPECT_GT(c.command({"PTTL", slots_key}).integer, 29'000) << "numbers live as the leases";
    EXPECT_EQ(eval(c, edgelock::permit_renew_script, {name, slots_key},
                   {token('a'), "90000", std::to_string(a % 3)})
                  .integer,
              1);
    EXPECT_GT(c.command({"PTTL", slots_key}).integer, 89'000) << "and a renewal extends them";
}

// A lone taker moves the counter by one, whatever N: the nearest free permit above it.
TEST(permit_scripts, a_lone_taker_moves_the_counter_by_one) {
    redis_server server;
    redis_client c(server.port());
    c.command({"SET", fence_key, "4000000000000000"});  // far past the clock: the counter decides
    for (unsigned long long i = 1; i <= 5; ++i) {
        const std::string who = token(static_cast<char>('a' + i));
        EXPECT_EQ(token_value(fenced_take(c, who, 1000)), 4'000'000'000'000'000ULL + i);
        EXPECT_EQ(give_back(c, who).integer, 1);
    }
}

// A renewal puts its permit's number back when the numbers were lost (an eviction, a flush),
// so no later taker is numbered with it; when another live lease took that permit meanwhile,
// the renewal fails: its holder is told it lost the lease.
TEST(permit_scripts, a_renewal_puts_a_lost_number_back_or_fails_when_it_was_taken) {
    redis_server server;
    redis_client c(server.port());
    const unsigned long long a = token_value(fenced_take(c, token('a'), 2));
    const auto renew_fenced = [&](char who, unsigned long long permit) {
        return eval(c, edgelock::permit_renew_script, {name, slots_key},
                    {token(who), "30000", std::to_string(permit)})
            .integer;
    };
    c.command({"DEL", slots_key});
    EXPECT_EQ(renew_fenced('a', a % 2), 1);
    EXPECT_EQ(c.command({"ZSCORE", slots_key, token('a')}).text, std::to_string(a % 2));
    const unsigned long long b = token_value(fenced_take(c, token('b'), 2));
    EXPECT_NE(b % 2, a % 2) << "b is numbered with the other permit";
    c.command({"DEL", slots_key});
    EXPECT_EQ(renew_fenced('b', b % 2), 1);
    c.command({"ZADD", slots_key, std::to_string(a % 2), token('x')});  // a number misplaced...
    c.command({"ZADD", name, "99999999999999", token('x')});            // ...for a live lease
    EXPECT_EQ(renew_fenced('a', a % 2), 0) << "its permit is another live lease's";
}

// The tokens are exact up to 2^63-1 (a Lua number is not past 2^53): the last token of a
// permit is given, and a permit with none left is refused without taking a lease.
TEST(permit_scripts, fenced_tokens_are_exact_to_the_top_and_refused_past_it) {
    redis_server server;
    redis_client c(server.port());
    // 2^63-1 leaves 1 by 3: 9223372036854775805 leaves 2, so permit 0's next is ...806.
    c.command({"SET", fence_key, "9223372036854775805"});
    EXPECT_EQ(fenced_take(c, token('a')).text, "9223372036854775806");
    EXPECT_EQ(fenced_take(c, token('b')).text, "9223372036854775807") << "permit 1's";
    EXPECT_TRUE(refused_with(fenced_take(c, token('c')), "FENCE_EXHAUSTED"))
        << "permit 2's next would be 2^63+1";
    EXPECT_EQ(holders(c).size(), 2u) << "no lease taken";
    EXPECT_EQ(c.command({"PTTL", fence_key}).integer, -1) << "the counter kept for good";
}

TEST(permit_scripts, n_owners_hold_at_once_and_the_next_waits_for_a_release) {
    redis_server server;
    redis_client c(server.port());
    for (const char who : {'a', 'b', 'c'}) EXPECT_TRUE(took(take(c, token(who)))) << who;
    EXPECT_TRUE(take(c, token('d')).is_nil()) << "three permits, three leases";
    EXPECT_EQ(holders(c).size(), 3u);
    EXPECT_EQ(c.command({"ZSCORE", name, "permits"}).text, "-3") << "N kept with the leases";
    EXPECT_EQ(give_back(c, token('b')).integer, 1);
    EXPECT_TRUE(took(take(c, token('d'))));
    EXPECT_TRUE(take(c, token('b')).is_nil()) << "a released owner queues like anyone";
}

TEST(permit_scripts, expired_leases_are_dropped_before_each_decision) {
    redis_server server;
    redis_client c(server.port());
    ASSERT_TRUE(took(take(c, token('a'), 2, 100)));
    ASSERT_TRUE(took(take(c, token('b'), 2)));
    ASSERT_TRUE(take(c, token('c'), 2).is_nil());
    std::this_thread::sleep_for(150ms);  // on purpose: a's 100 ms lease runs out
    EXPECT_EQ(renew(c, token('a')).integer, 0) << "an expired lease is not brought back";
    EXPECT_TRUE(took(take(c, token('c'), 2))) << "a's permit is free again";
    EXPECT_EQ(holders(c), (std::vector<std::string>{token('b'), token('c')}));
}

TEST(permit_scripts, renew_and_release_touch_only_a_lease_we_hold) {
    redis_server server;
    redis_client c(server.port());
    ASSERT_TRUE(took(take(c, token('a'), 3, 1'000)));
    EXPECT_EQ(renew(c, token('x')).integer, 0);
    EXPECT_EQ(give_back(c, token('x')).integer, 0);
    EXPECT_EQ(holders(c), (std::vector<std::string>{token('a')}));
    EXPECT_EQ(renew(c, token('a'), 60'000).integer, 1);
    EXPECT_GT(c.pttl(name), 59'000) << "the set lives as long as its longest lease";
    EXPECT_EQ(give_back(c, token('a')).integer, 1);
    EXPECT_FALSE(c.exists(name)) << "the last release leaves nothing, N included";
    EXPECT_EQ(give_back(c, token('a')).integer, 0) << "a retried release finds nothing";
}

TEST(permit_scripts, a_retried_acquire_of_a_lease_we_hold_refreshes_it_even_when_full) {
    redis_server server;
    redis_client c(server.port());
    ASSERT_TRUE(took(take(c, token('a'), 2, 1'000)));
    ASSERT_TRUE(took(take(c, token('b'), 2)));
    EXPECT_TRUE(took(take(c, token('a'), 2, 60'000))) << "its first answer was lost";
    EXPECT_EQ(holders(c).size(), 2u) << "still one lease for a";
    const long long expiry = std::stoll(c.command({"ZSCORE", name, token('a')}).text);
    const long long now_ms = std::stoll(c.command({"TIME"}).elements[0].text) * 1000;
    EXPECT_GT(expiry - now_ms, 55'000) << "measured from the retry";
}

TEST(permit_scripts, another_n_is_refused_while_leases_are_held_and_taken_when_none_are) {
    redis_server server;
    redis_client c(server.port());
    ASSERT_TRUE(took(take(c, token('a'), 3)));
    const redis_reply mixed = take(c, token('b'), 5);
    EXPECT_TRUE(refused_with(mixed, "PERMITS_MISMATCH")) << mixed.text;
    EXPECT_NE(mixed.text.find("3 permits, not 5"), std::string::npos) << mixed.text;
    EXPECT_EQ(holders(c).size(), 1u) << "the refusal changed nothing";
    ASSERT_EQ(give_back(c, token('a')).integer, 1);
    EXPECT_TRUE(took(take(c, token('b'), 5))) << "no holder: the new N stands";
    EXPECT_EQ(c.command({"ZSCORE", name, "permits"}).text, "-5");
}

TEST(permit_scripts, a_lock_and_a_semaphore_refuse_each_others_names) {
    redis_server server;
    redis_client c(server.port());
    c.set(name, token('l'));
    EXPECT_TRUE(refused_with(take(c, token('a')), "WRONGTYPE"));
    EXPECT_TRUE(refused_with(renew(c, token('a')), "WRONGTYPE"));
    EXPECT_TRUE(refused_with(give_back(c, token('a')), "WRONGTYPE"));
    EXPECT_EQ(c.get(name), token('l')) << "the lock is untouched";
    c.command({"DEL", name});
    ASSERT_TRUE(took(take(c, token('a'))));
    const redis_reply native = c.command({"SET", name, token('l'), "NX", "PX", "30000", "GET"});
    EXPECT_TRUE(refused_with(native, "WRONGTYPE")) << "the lock's own acquire";
    const redis_reply scripted =
        eval(c, edgelock::acquire_script, {name, fence_key}, {token('l'), "30000"});
    EXPECT_TRUE(refused_with(scripted, "WRONGTYPE")) << "the lock's fenced acquire";
    EXPECT_EQ(holders(c), (std::vector<std::string>{token('a')}));
}

TEST(permit_scripts, a_fair_release_wakes_as_many_waiters_as_permits_are_free) {
    redis_server server;
    redis_client c(server.port());
    channel_listener listener(server.port(), queue_key);
    ASSERT_TRUE(took(fair_take(c, token('a'))));
    ASSERT_TRUE(took(fair_take(c, token('b'))));
    for (const char w : {'c', 'd', 'e'}) ASSERT_TRUE(fair_take(c, token(w)).is_nil()) << w;
    ASSERT_EQ(fair_give_back(c, token('a')).integer, 1);
    EXPECT_EQ(listener.next(), token('c')) << "one permit free: the first waiter";
    EXPECT_EQ(listener.next(), "");
    EXPECT_TRUE(fair_take(c, token('d')).is_nil()) << "d may not take c's turn";
    EXPECT_EQ(listener.next(), token('c')) << "the refused look wakes c again";
    EXPECT_TRUE(took(fair_take(c, token('c'))));
    ASSERT_EQ(fair_give_back(c, token('b')).integer, 1);
    ASSERT_EQ(fair_give_back(c, token('c')).integer, 1);
    EXPECT_EQ(listener.next(), token('d'));
    EXPECT_EQ(listener.next(), token('d')) << "c's release: two free, d still ahead of e";
    EXPECT_EQ(listener.next(), token('e'));
    EXPECT_TRUE(took(fair_take(c, token('e')))) << "two free permits, one waiter ahead";
    EXPECT_TRUE(took(fair_take(c, token('d'))));
}

TEST(permit_scripts, a_taker_whose_answer_was_lost_keeps_its_place_through_its_cleanup) {
    redis_server server;
    redis_client c(server.port());
    ASSERT_TRUE(took(fair_take(c, token('h'))));
    ASSERT_TRUE(took(fair_take(c, token('i'))));
    ASSERT_TRUE(fair_take(c, token('a')).is_nil());
    ASSERT_TRUE(fair_take(c, token('b')).is_nil());
    ASSERT_EQ(fair_give_back(c, token('h')).integer, 1);
    ASSERT_TRUE(took(fair_take(c, token('a'))));  // its answer never reaches a
    EXPECT_EQ(fair_give_back(c, token('a'), true).integer, 1) << "the cleanup frees the permit";
    EXPECT_TRUE(fair_take(c, token('b')).is_nil()) << "b may not take a's turn";
    EXPECT_TRUE(took(fair_take(c, token('a'))));
}

// Every lease ran out and the set went with them: a late release still wakes as many
// waiters as permits are free, as N comes with the call.
TEST(permit_scripts, a_release_after_the_set_expired_wakes_a_waiter_per_free_permit) {
    redis_server server;
    redis_client c(server.port());
    channel_listener listener(server.port(), queue_key);
    for (const char who : {'a', 'b'}) {
        ASSERT_TRUE(took(eval(c, edgelock::fair_permit_acquire_script, {name, queue_key, qttl_key},
                              {token(who), "100", "10000", "2"})));
    }
    for (const char w : {'c', 'd'}) ASSERT_TRUE(fair_take(c, token(w)).is_nil()) << w;
    for (const char w : {'a', 'b'}) c.command({"ZREM", queue_key, token(w)});  // they left
    std::this_thread::sleep_for(150ms);  // on purpose: both 100 ms leases run out
    ASSERT_FALSE(c.exists(name));
    EXPECT_EQ(fair_give_back(c, token('a')).integer, 0) << "its lease had ended";
    EXPECT_EQ(listener.next(), token('c'));
    EXPECT_EQ(listener.next(), token('d')) << "two permits free, two waiters woken";
}

// A waiter whose name turned into a lock's meanwhile still leaves the line: its release
// removes the entry before the lease set's WRONGTYPE ends the script.
TEST(permit_scripts, a_waiter_leaves_the_line_even_when_the_name_became_a_lock) {
    redis_server server;
    redis_client c(server.port());
    ASSERT_TRUE(took(fair_take(c, token('a'))));
    ASSERT_TRUE(took(fair_take(c, token('b'))));
    ASSERT_TRUE(fair_take(c, token('w')).is_nil());
    ASSERT_EQ(fair_give_back(c, token('a')).integer, 1);
    ASSERT_EQ(fair_give_back(c, token('b')).integer, 1);
    c.set(name, token('l'));
    EXPECT_TRUE(refused_with(fair_give_back(c, token('w')), "WRONGTYPE"));
    EXPECT_TRUE(c.command({"ZSCORE", queue_key, token('w')}).is_nil()) << "w left the line";
    EXPECT_TRUE(c.command({"ZSCORE", qttl_key, token('w')}).is_nil());
}

TEST(permit_scripts, the_keys_share_the_names_cluster_slot) {
    const std::uint16_t slot = edgelock::cluster_slot(name);
    for (const std::string& key : {queue_key, qttl_key, fence_key, slots_key})
        EXPECT_EQ(edgelock::cluster_slot(key), slot) << key;
}

}  // namespace
