#include <gtest/gtest.h>

#include <set>
#include <string>

#include "edgelock/entropy.hpp"
#include "edgelock/error_code.hpp"

namespace {

using edgelock::errc;

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
