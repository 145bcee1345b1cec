// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <cerrno>
#include <ios>
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

TEST(error_code, transport_errors_have_their_own_category_and_one_line_messages) {
    using edgelock::transport_errc;
    const std::error_code ec = transport_errc::auth_failed;
    EXPECT_STREQ(ec.category().name(), "edgelock.transport");
    EXPECT_EQ(ec.message(), "authentication refused: wrong password or user");
    EXPECT_NE(ec, std::error_code(errc::invalid_name));
    EXPECT_EQ(std::error_code(transport_errc::table_full).message(), "lock table full");
    for (int v = 1; v <= static_cast<int>(transport_errc::io_uring_refused); ++v) {
        const std::string text = std::error_code(static_cast<transport_errc>(v)).message();
        EXPECT_FALSE(text.empty());
        EXPECT_EQ(text.find('\n'), std::string::npos);
        EXPECT_NE(text, "unknown transport error") << v;
    }
}

TEST(error_code, failures_convert_both_ways) {
    using edgelock::failure;
    using edgelock::transport_errc;
    EXPECT_FALSE(edgelock::to_error_code(failure{}));
    EXPECT_EQ(edgelock::to_error_code(failure::of(errc::busy)), errc::busy);
    EXPECT_EQ(edgelock::to_error_code(failure::of(transport_errc::no_master)),
              transport_errc::no_master);
    EXPECT_EQ(edgelock::to_error_code(failure::system(ECONNREFUSED)),
              std::errc::connection_refused);
    for (const std::error_code ec :
         {std::error_code(errc::no_quorum), std::error_code(transport_errc::loading),
          std::make_error_code(std::errc::connection_reset)}) {
        EXPECT_EQ(edgelock::to_error_code(edgelock::to_failure(ec)), ec) << ec.message();
    }
    EXPECT_EQ(edgelock::to_failure(std::error_code(ECONNRESET, std::system_category())),
              failure::system(ECONNRESET));
    EXPECT_EQ(edgelock::to_failure(std::make_error_code(std::io_errc::stream)),
              failure::of(errc::io_error));
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

TEST(entropy, seeds_for_the_reconnect_jitter_differ) {
    std::set<std::uint64_t> seen;
    for (int i = 0; i < 64; ++i) {
        std::uint64_t seed = 0;
        ASSERT_EQ(edgelock::random_seed(seed), errc::ok);
        seen.insert(seed);
    }
    EXPECT_EQ(seen.size(), 64u) << "64 draws of 64 bits never repeat";
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
