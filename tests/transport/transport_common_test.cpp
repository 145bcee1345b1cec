#include <gtest/gtest.h>

#include <set>
#include <string>

#include "edgelock/entropy.hpp"
#include "edgelock/error_code.hpp"
#include "edgelock/redis_url.hpp"

namespace {

using edgelock::errc;
using edgelock::parse_redis_url;

TEST(redis_url, parses_every_documented_form) {
    auto r = parse_redis_url("redis://127.0.0.1");
    ASSERT_EQ(r.code, errc::ok);
    EXPECT_EQ(r.url.host, "127.0.0.1");
    EXPECT_EQ(r.url.port, 6379);

    r = parse_redis_url("redis://user:s3cret@cache.local:6380/2");
    ASSERT_EQ(r.code, errc::ok);
    EXPECT_EQ(r.url.user, "user");
    EXPECT_EQ(r.url.password, "s3cret");
    EXPECT_EQ(r.url.host, "cache.local");
    EXPECT_EQ(r.url.port, 6380);
    EXPECT_EQ(r.url.db, 2);

    r = parse_redis_url("redis://:only-password@h:1");
    ASSERT_EQ(r.code, errc::ok);
    EXPECT_EQ(r.url.user, "");
    EXPECT_EQ(r.url.password, "only-password");

    r = parse_redis_url("redis://[::1]:7000");
    ASSERT_EQ(r.code, errc::ok);
    EXPECT_EQ(r.url.host, "::1");
    EXPECT_EQ(r.url.port, 7000);

    r = parse_redis_url("localhost:6390");
    ASSERT_EQ(r.code, errc::ok);
    EXPECT_EQ(r.url.host, "localhost");
    EXPECT_EQ(r.url.port, 6390);

    r = parse_redis_url("redis://u:p@ss@h:2");
    ASSERT_EQ(r.code, errc::ok) << "the last @ ends the credentials";
    EXPECT_EQ(r.url.password, "p@ss");
}

TEST(redis_url, refuses_malformed_addresses_with_a_reason) {
    for (const char* bad : {"", "redis://", "http://h:1", "redis://h:", "redis://h:0", "redis://h:65536",
                            "redis://h:12x", "redis://h:1/x", "redis://h:1/70000", "redis://[::1",
                            "redis://[::1]x", "redis://:p@", "redis://h h:1"}) {
        const auto r = parse_redis_url(bad);
        EXPECT_EQ(r.code, errc::invalid_config) << bad;
        EXPECT_STRNE(r.problem, "") << bad;
    }
}

TEST(error_code, wraps_errc_with_its_name) {
    const std::error_code ec = errc::busy;
    EXPECT_EQ(ec, errc::busy);
    EXPECT_NE(ec, errc::no_quorum);
    EXPECT_STREQ(ec.category().name(), "edgelock");
    EXPECT_EQ(ec.message(), "busy");
    EXPECT_TRUE(ec) << "any code but ok is an error";
    EXPECT_FALSE(std::error_code(errc::ok));
}

TEST(entropy, tokens_are_filled_and_differ) {
    std::set<std::string> seen;
    for (int i = 0; i < 64; ++i) {
        edgelock::owner_token token{};
        ASSERT_EQ(edgelock::random_token(token), errc::ok);
        seen.emplace(reinterpret_cast<const char*>(token.data()), token.size());
    }
    EXPECT_EQ(seen.size(), 64u);
}

TEST(entropy, a_pool_hands_out_distinct_tokens_across_refills) {
    edgelock::token_pool pool;
    std::set<std::string> seen;
    const std::size_t count = 5 * edgelock::token_pool::tokens_per_refill + 3;
    for (std::size_t i = 0; i < count; ++i) {
        edgelock::owner_token token{};
        ASSERT_EQ(pool.next(token), errc::ok);
        EXPECT_NE(token, edgelock::owner_token{}) << "an all-zero token means a slot was reused";
        seen.emplace(reinterpret_cast<const char*>(token.data()), token.size());
    }
    EXPECT_EQ(seen.size(), count);
}

}  // namespace
