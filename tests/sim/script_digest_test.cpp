// SPDX-License-Identifier: Apache-2.0
// The simulated Redis's own script digests (sim/script_digest.hpp): SHA-1 against FIPS 180's
// examples and a text of several blocks; tests/conformance holds SCRIPT LOAD's answers to a
// real server's.
#include "edgelock/sim/script_digest.hpp"

#include <gtest/gtest.h>

#include <string>

namespace {

std::string digest(std::string_view text) {
    const auto d = edgelock::sim::server_script_digest(text);
    return {d.data(), d.size()};
}

TEST(script_digest, sha1_of_the_standards_examples) {
    EXPECT_EQ(digest(""), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
    EXPECT_EQ(digest("abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
    // 56 bytes: the length no longer fits the first block.
    EXPECT_EQ(digest("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
              "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
    EXPECT_EQ(digest(std::string(1'000'000, 'a')), "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
}

TEST(script_digest, a_text_of_every_length_around_a_block) {
    // 55, 56, 63, 64 and 65 bytes: the padding's edge cases, checked against sha1sum.
    EXPECT_EQ(digest(std::string(55, 'x')), "cef734ba81a024479e09eb5a75b6ddae62e6abf1");
    EXPECT_EQ(digest(std::string(56, 'x')), "901305367c259952f4e7af8323f480d59f81335b");
    EXPECT_EQ(digest(std::string(63, 'x')), "0ddc4e0cccd9a12850deb5abb0853a4425559fec");
    EXPECT_EQ(digest(std::string(64, 'x')), "bb2fa3ee7afb9f54c6dfb5d021f14b1ffe40c163");
    EXPECT_EQ(digest(std::string(65, 'x')), "78c741ddc482e4cdf8c474a0876347a0905b6233");
}

}  // namespace
