// SPDX-License-Identifier: Apache-2.0
#include "edgelock/scripts.hpp"

#include <gtest/gtest.h>

#include <string>

#include "edgelock/sha1.hpp"

namespace {

std::string hex(const edgelock::sha1_hex& digest) {
    return std::string(digest.data(), digest.size());
}

// FIPS 180 test vectors, including the two-block and the exact-block-boundary cases.
TEST(sha1, matches_the_published_test_vectors) {
    EXPECT_EQ(hex(edgelock::sha1("")), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
    EXPECT_EQ(hex(edgelock::sha1("abc")), "a9993e364706816aba3e25717850c26c9cd0d89d");
    EXPECT_EQ(hex(edgelock::sha1("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
              "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
    EXPECT_EQ(hex(edgelock::sha1(std::string(64, 'a'))),
              "0098ba824b5c16427bd7a1122a5a442a25ec644d");
    EXPECT_EQ(hex(edgelock::sha1(std::string(1000, 'a'))),
              "291e9a6c66994949b57ba5e650361e98fc36b1ba");
}

TEST(sha1, is_computed_at_compile_time) {
    constexpr edgelock::sha1_hex digest = edgelock::sha1("abc");
    static_assert(digest[0] == 'a' && digest[1] == '9', "constexpr SHA-1");
    EXPECT_EQ(hex(digest), "a9993e364706816aba3e25717850c26c9cd0d89d");
}

TEST(scripts, digests_are_those_of_their_texts_and_all_differ) {
    const edgelock::script* all[] = {
        &edgelock::acquire_script, &edgelock::raise_script,        &edgelock::renew_script,
        &edgelock::release_script, &edgelock::fair_acquire_script, &edgelock::fair_release_script};
    for (const edgelock::script* s : all) {
        EXPECT_EQ(hex(s->digest), hex(edgelock::sha1(std::string(s->text))));
    }
    for (const edgelock::script* a : all) {
        for (const edgelock::script* b : all) {
            if (a != b) {
                EXPECT_NE(hex(a->digest), hex(b->digest));
            }
        }
    }
}

}  // namespace
