// SPDX-License-Identifier: Apache-2.0
// Fence tokens against a real redis-server, with the counter seeded where a Lua number (a
// double) stops being exact: past 2^53 every holder still gets its own, strictly higher
// token, a Redlock raise moves every counter to the exact maximum, and a counter at 2^63-1
// refuses the next acquire with a clear error instead of repeating or wrapping a token.
// The counter expires fence_ttl_ms after the last acquire or raise wrote it (limits.hpp), so
// an idle name leaves nothing behind for good, and one that expired restarts from the clock.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "edgelock/error_code.hpp"
#include "edgelock/blocking_lock.hpp"
#include "edgelock/limits.hpp"
#include "edgelock/scripts.hpp"
#include "edgelock/testing/redis_client.hpp"
#include "edgelock/testing/redis_process.hpp"
#include "redis_test_util.hpp"

namespace {

using namespace std::chrono_literals;
using edgelock::redis_tests::options_for;
using edgelock::testing::redis_client;
using edgelock::testing::redis_server;

constexpr const char* fence_key = "{job}:fence";

edgelock::blocking::lock_options fenced_options(std::vector<std::string> urls) {
    auto options = options_for("job", std::move(urls), 5000);
    options.fencing = true;
    return options;
}

// Takes and drops the lock once; returns the fence token the hold carried.
std::int64_t take_and_drop(edgelock::blocking::lock& lock) {
    edgelock::blocking::hold hold;
    const std::error_code acquired = lock.acquire(2s, &hold);
    EXPECT_FALSE(acquired) << acquired.message();
    EXPECT_FALSE(lock.release());
    return hold.fence;
}

TEST(fence, holders_past_2_pow_53_get_distinct_exact_tokens) {
    redis_server server;
    redis_client client(server.port());
    client.set(fence_key, "9007199254740994");  // 2^53 + 2: 2^53 + 3 is no double
    edgelock::blocking::lock first;
    edgelock::blocking::lock second;
    ASSERT_FALSE(first.open(fenced_options({server.url()})));
    ASSERT_FALSE(second.open(fenced_options({server.url()})));
    EXPECT_EQ(take_and_drop(first), 9007199254740995);
    EXPECT_EQ(take_and_drop(second), 9007199254740996);
    EXPECT_EQ(client.get(fence_key), "9007199254740996");
}

TEST(fence, a_redlock_raise_sets_the_quorums_counters_to_the_exact_maximum) {
    redis_server a;
    redis_server b;
    redis_server down;
    down.stop();  // the quorum is a and b, so both take part in the raise
    redis_client client_a(a.port());
    redis_client client_b(b.port());
    // The INCRs answer 2^53 and 2^53 + 1: the raise to 2^53 + 1, compared as doubles, looks
    // like no raise at all on a.
    client_a.set(fence_key, "9007199254740991");
    client_b.set(fence_key, "9007199254740992");
    edgelock::blocking::lock lock;
    ASSERT_FALSE(lock.open(fenced_options({a.url(), b.url(), down.url()})));
    edgelock::blocking::hold hold;
    ASSERT_FALSE(lock.acquire(2s, &hold));
    EXPECT_EQ(hold.fence, 9007199254740993);
    EXPECT_EQ(client_a.get(fence_key), "9007199254740993");
    EXPECT_EQ(client_b.get(fence_key), "9007199254740993");
    EXPECT_FALSE(lock.release());
}

TEST(fence, the_last_token_is_2_pow_63_minus_1_then_acquire_fails_with_fence_exhausted) {
    redis_server server;
    redis_client client(server.port());
    client.set(fence_key, "9223372036854775806");
    edgelock::blocking::lock lock;
    ASSERT_FALSE(lock.open(fenced_options({server.url()})));
    EXPECT_EQ(take_and_drop(lock), 9223372036854775807);

    edgelock::blocking::hold hold;
    const std::error_code refused = lock.try_acquire(&hold);
    EXPECT_EQ(refused, edgelock::errc::fence_exhausted) << refused.message();
    EXPECT_FALSE(lock.held());
    EXPECT_FALSE(client.exists("job")) << "the exhausted counter left the lock key alone";
    EXPECT_EQ(client.get(fence_key), "9223372036854775807") << "never wrapped";
    EXPECT_EQ(client.pttl(fence_key), -1)
        << "an exhausted counter persists: expired, it would restart below its tokens";

    const auto start = std::chrono::steady_clock::now();
    const std::error_code waited = lock.acquire(60s, &hold);
    EXPECT_EQ(waited, edgelock::errc::fence_exhausted) << waited.message();
    EXPECT_LT(edgelock::redis_tests::elapsed_ms(start), 30'000) << "no retry can help: no waiting";
    EXPECT_FALSE(client.exists("job"));
}

// The counter's remaining time, in ms: -1 without an expiry, -2 without the key.
long long fence_pttl(redis_client& client) { return client.command({"PTTL", fence_key}).integer; }

// Set by the script a moment ago: within a minute of the full expiry (a generous bound for a
// slow machine, not a timing assertion: the expiry is a week).
void expect_fresh_expiry(redis_client& client) {
    const long long pttl = fence_pttl(client);
    EXPECT_LE(pttl, edgelock::fence_ttl_ms);
    EXPECT_GT(pttl, edgelock::fence_ttl_ms - 60'000);
}

TEST(fence, an_acquire_gives_the_counter_the_fence_expiry) {
    redis_server server;
    redis_client client(server.port());
    client.set(fence_key, "5");  // a counter from before, without expiry
    ASSERT_EQ(fence_pttl(client), -1);
    edgelock::blocking::lock lock;
    ASSERT_FALSE(lock.open(fenced_options({server.url()})));
    take_and_drop(lock);
    expect_fresh_expiry(client);
}

TEST(fence, a_fair_acquire_gives_the_counter_the_fence_expiry) {
    redis_server server;
    redis_client client(server.port());
    auto options = fenced_options({server.url()});
    options.fair = true;
    edgelock::blocking::lock lock;
    ASSERT_FALSE(lock.open(options));
    take_and_drop(lock);
    expect_fresh_expiry(client);
}

TEST(fence, a_raise_gives_the_counter_the_fence_expiry_whether_it_moves_it_or_not) {
    redis_server server;
    redis_client client(server.port());
    const std::string token(32, 'a');
    client.set("job", token);
    const auto raise = [&](const std::string& value) {
        return client.command({"EVAL", std::string(edgelock::raise_script.text), "2", "job",
                               fence_key, token, value});
    };
    client.set(fence_key, "7");  // SET clears any expiry
    EXPECT_EQ(raise("9").integer, 1);
    EXPECT_EQ(client.get(fence_key), "9");
    expect_fresh_expiry(client);
    client.set(fence_key, "7");
    EXPECT_EQ(raise("3").integer, 1);
    EXPECT_EQ(client.get(fence_key), "7");
    expect_fresh_expiry(client);
}

// What the expiry relies on: a counter that is gone (expired, or never written) restarts at
// the node's clock in microseconds, above every token handed out before.
TEST(fence, a_counter_that_expired_restarts_above_every_earlier_token) {
    redis_server server;
    redis_client client(server.port());
    edgelock::blocking::lock lock;
    ASSERT_FALSE(lock.open(fenced_options({server.url()})));
    std::int64_t highest = 0;
    for (int i = 0; i < 3; ++i) highest = std::max(highest, take_and_drop(lock));
    client.command({"DEL", fence_key});
    EXPECT_GT(take_and_drop(lock), highest);
}

}  // namespace
