#include "edgelock/keys.hpp"

#include <gtest/gtest.h>

#include <array>
#include <string>

#include "edgelock/limits.hpp"

namespace {

std::string fence_key(std::string_view name) {
    std::array<char, edgelock::key_bytes_max> out{};
    const std::size_t size = edgelock::write_fence_key(name, out.data(), out.size());
    return std::string(out.data(), size);
}

TEST(keys, a_name_without_a_hash_tag_becomes_the_fence_keys_tag) {
    EXPECT_EQ(fence_key("orders:42"), "{orders:42}:fence");
    EXPECT_EQ(fence_key("a"), "{a}:fence");
}

TEST(keys, a_name_with_a_hash_tag_keeps_it) {
    EXPECT_EQ(fence_key("jobs{eu}:nightly"), "jobs{eu}:nightly:fence");
    EXPECT_EQ(fence_key("{x}"), "{x}:fence");
}

TEST(keys, empty_braces_are_not_a_hash_tag) {
    // Redis Cluster hashes the whole key when the first '{' is followed directly by '}'.
    EXPECT_FALSE(edgelock::has_hash_tag("a{}b"));
    EXPECT_EQ(fence_key("a{}b"), "{a{}b}:fence");
    EXPECT_FALSE(edgelock::has_hash_tag("a{b"));
    EXPECT_FALSE(edgelock::has_hash_tag("a}b{"));
    EXPECT_TRUE(edgelock::has_hash_tag("a{b}c{}"));
}

TEST(keys, the_longest_name_fits_and_a_short_buffer_is_refused) {
    const std::string name(edgelock::name_bytes_max, 'n');
    EXPECT_EQ(fence_key(name).size(), name.size() + 8);
    std::array<char, 10> small{};
    EXPECT_EQ(edgelock::write_fence_key("orders:42", small.data(), small.size()), 0u);
}

}  // namespace
