// SPDX-License-Identifier: Apache-2.0
#include "edgelock/keys.hpp"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <array>
#include <string>
#include <utility>
#include <vector>

#include "edgelock/limits.hpp"
#include "edgelock/testing/key_slot.hpp"

namespace {

using edgelock::testing::key_slot;

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
    EXPECT_EQ(fence_key("a{}b"), "{AG@C}a{}b:fence");
    EXPECT_FALSE(edgelock::has_hash_tag("a{b"));
    EXPECT_FALSE(edgelock::has_hash_tag("a}b{"));
    EXPECT_TRUE(edgelock::has_hash_tag("a{b}c{}"));
}

// Names of 1..name_bytes_max bytes, mostly braces: hash tags, empty tags ("{}"), nested and
// unbalanced braces, with some ordinary and arbitrary (binary) bytes between them.
rc::Gen<std::string> name_gen() {
    const rc::Gen<char> byte = rc::gen::weightedOneOf<char>({
        {4, rc::gen::element('{', '}')},
        {2, rc::gen::element('a', 'b', ':')},
        {1, rc::gen::arbitrary<char>()},
    });
    return rc::gen::mapcat(
        rc::gen::inRange<std::size_t>(1, edgelock::name_bytes_max + 1),
        [byte](std::size_t size) { return rc::gen::container<std::string>(size, byte); });
}

TEST(keys, the_slot_oracle_agrees_with_redis) {
    // The check value of CRC16-XMODEM, and slots CLUSTER KEYSLOT of redis-server 7.0 returns.
    EXPECT_EQ(edgelock::testing::crc16_xmodem("123456789"), 0x31C3);
    EXPECT_EQ(key_slot("x}y"), 8210);
    EXPECT_EQ(key_slot("{x}y}:fence"), 16287);
    EXPECT_EQ(key_slot("{x}y}:fence"), key_slot("x"));
}

TEST(keys, a_name_with_a_closing_brace_but_no_hash_tag_keeps_its_slot) {
    // As a tag, "x}y" would end at its '}': a computed tag of the name's slot comes first.
    EXPECT_EQ(fence_key("x}y"), "{BN@B}x}y:fence");
    EXPECT_EQ(key_slot("BN@B"), key_slot("x}y"));
    for (const std::string_view name :
         {"x}y", "a{}b", "}", "}}", "{}", "{}}", "a}b{c", "{}x}y", "a{}b}c"}) {
        EXPECT_EQ(key_slot(fence_key(name)), key_slot(name)) << name << " -> " << fence_key(name);
    }
}

RC_GTEST_PROP(keys, the_fence_key_hashes_to_the_names_slot, ()) {
    const std::string name = *name_gen();
    const std::string key = fence_key(name);
    RC_ASSERT(!key.empty());
    RC_ASSERT(key_slot(key) == key_slot(name));
}

TEST(keys, the_fence_key_of_any_name_is_recognised) {
    for (const std::string_view name :
         {"x", "orders:42", "jobs{eu}:nightly", "{x}", "x}y", "a{}b", "}"}) {
        EXPECT_TRUE(edgelock::is_fence_key(fence_key(name))) << fence_key(name);
        EXPECT_FALSE(edgelock::is_fence_key(name)) << name;
    }
    // Ending in ":fence" is not enough: what comes before must have a hash tag.
    for (const std::string_view name : {"x:fence", "db:fence", "{}:fence", "x}:fence", ":fence",
                                        "{x}:fence:2", "{x}:Fence", "{x}fence", "a{:fence}"}) {
        EXPECT_FALSE(edgelock::is_fence_key(name)) << name;
    }
}

// The lock names refused for being fence keys are exactly the fence keys of lock names.
RC_GTEST_PROP(keys, a_name_is_a_fence_key_exactly_when_some_name_has_it_as_fence_key, ()) {
    const std::string stem = *name_gen();
    const std::string name = *rc::gen::element(stem, stem + ":fence");
    RC_ASSERT(edgelock::is_fence_key(fence_key(stem)));
    const std::string_view suffix = ":fence";
    const bool ends_in_suffix =
        name.size() > suffix.size() &&
        std::string_view(name).substr(name.size() - suffix.size()) == suffix;
    const bool is_some_fence_key =
        ends_in_suffix && fence_key(name.substr(0, name.size() - suffix.size())) == name;
    RC_ASSERT(edgelock::is_fence_key(name) == is_some_fence_key);
}

std::string companion_key(std::string_view name, edgelock::companion which) {
    std::array<char, edgelock::key_bytes_max> out{};
    const std::size_t size = edgelock::write_companion_key(name, which, out.data(), out.size());
    return std::string(out.data(), size);
}

// A fair lock's queue keys, the owner key and a fenced semaphore's slots key lie in the
// name's slot and are refused as lock names.
RC_GTEST_PROP(keys, the_queue_keys_hash_to_the_names_slot_and_are_refused_as_names, ()) {
    const std::string name = *name_gen();
    for (const auto which : {edgelock::companion::queue, edgelock::companion::queue_ttl,
                             edgelock::companion::owner, edgelock::companion::slots}) {
        const std::string key = companion_key(name, which);
        RC_ASSERT(!key.empty());
        RC_ASSERT(key_slot(key) == key_slot(name));
        RC_ASSERT(edgelock::is_companion_key(key));
        RC_ASSERT(!edgelock::is_fence_key(key));
    }
    RC_ASSERT(edgelock::is_companion_key(fence_key(name)));
}

// The lock name a line key belongs to, read back as keys.hpp describes: after the suffix is
// cut, the first tag is the name when nothing follows it, and otherwise what follows it is.
std::string name_of_line_key(std::string_view key, std::string_view suffix) {
    if (key.size() <= suffix.size() || key.substr(key.size() - suffix.size()) != suffix) return {};
    const std::string_view stem = key.substr(0, key.size() - suffix.size());
    const std::size_t close = stem.find('}');
    if (stem.empty() || stem[0] != '{' || close == std::string_view::npos) return {};
    const std::string_view rest = stem.substr(close + 1);
    return std::string(rest.empty() ? stem.substr(1, close - 1) : rest);
}

// No two names share a line (nor an owner key, which has the same form): the key gives back
// its name, so different names have different
// keys. Generated names and each one's would-be twins ("x" and "{x}", "x}y" and the form with
// its computed tag) are checked.
RC_GTEST_PROP(keys, each_line_key_belongs_to_one_name, ()) {
    const std::string name = *name_gen();
    const std::string queue = companion_key(name, edgelock::companion::queue);
    std::vector<std::string> twins = {"{" + name + "}", queue.substr(0, queue.size() - 6)};
    twins.push_back(name_of_line_key(queue, ":queue"));
    for (const std::string& candidate : twins) {
        if (candidate.empty() || candidate.size() > edgelock::name_bytes_max) continue;
        if (edgelock::is_companion_key(candidate)) continue;  // refused as a lock name
        const bool same_name = candidate == name;
        RC_ASSERT((companion_key(candidate, edgelock::companion::queue) == queue) == same_name);
        RC_ASSERT((companion_key(candidate, edgelock::companion::queue_ttl) ==
                   companion_key(name, edgelock::companion::queue_ttl)) == same_name);
        RC_ASSERT((companion_key(candidate, edgelock::companion::owner) ==
                   companion_key(name, edgelock::companion::owner)) == same_name);
        RC_ASSERT((companion_key(candidate, edgelock::companion::slots) ==
                   companion_key(name, edgelock::companion::slots)) == same_name);
    }
    RC_ASSERT(name_of_line_key(companion_key(name, edgelock::companion::slots), ":slots") == name);
    RC_ASSERT(name_of_line_key(companion_key(name, edgelock::companion::owner), ":owner") == name);
    RC_ASSERT(name_of_line_key(queue, ":queue") == name);
    RC_ASSERT(name_of_line_key(companion_key(name, edgelock::companion::queue_ttl), ":qttl") ==
              name);
}

TEST(keys, a_name_and_its_hash_tag_form_have_lines_of_their_own) {
    EXPECT_EQ(companion_key("orders:42", edgelock::companion::queue), "{orders:42}:queue");
    EXPECT_EQ(companion_key("x", edgelock::companion::queue), "{x}:queue");
    const std::string tagged = companion_key("{x}", edgelock::companion::queue);
    EXPECT_NE(tagged, "{x}:queue");
    EXPECT_EQ(key_slot(tagged), key_slot("x"));
    EXPECT_EQ(companion_key("x}y", edgelock::companion::queue), "{BN@B}x}y:queue");
    EXPECT_NE(companion_key("{BN@B}x}y", edgelock::companion::queue), "{BN@B}x}y:queue");
    EXPECT_EQ(companion_key("orders:42", edgelock::companion::owner), "{orders:42}:owner");
    EXPECT_NE(companion_key("{x}", edgelock::companion::owner), "{x}:owner");
    // The fence counter keeps its key, shared by "x" and "{x}" (it only moves up).
    EXPECT_EQ(fence_key("{x}"), fence_key("x"));
}

TEST(keys, only_the_five_suffixes_after_a_hash_tag_make_a_companion_key) {
    for (const std::string_view name :
         {"{x}:queue", "{x}:qttl", "{x}:fence", "job{7}:queue", "{x}:owner", "{x}:slots"}) {
        EXPECT_TRUE(edgelock::is_companion_key(name)) << name;
    }
    for (const std::string_view name : {"x:queue", "{}:qttl", "{x}:queues", "{x}:Queue", "{x}qttl",
                                        "queue", "x:owner", "{x}:owners", "x:slots"}) {
        EXPECT_FALSE(edgelock::is_companion_key(name)) << name;
    }
}

TEST(keys, the_longest_name_fits_and_a_short_buffer_is_refused) {
    const std::string name(edgelock::name_bytes_max, 'n');
    EXPECT_EQ(fence_key(name).size(), name.size() + 8);
    const std::string braces(edgelock::name_bytes_max, '}');
    EXPECT_EQ(fence_key(braces).size(), braces.size() + edgelock::fence_suffix_bytes_max);
    const std::string tagged = "{t}" + std::string(edgelock::name_bytes_max - 3, 'n');
    EXPECT_EQ(companion_key(tagged, edgelock::companion::queue).size(),
              tagged.size() + edgelock::fence_suffix_bytes_max);
    EXPECT_EQ(companion_key(tagged, edgelock::companion::owner).size(),
              tagged.size() + edgelock::fence_suffix_bytes_max);
    EXPECT_EQ(companion_key(tagged, edgelock::companion::slots).size(),
              tagged.size() + edgelock::fence_suffix_bytes_max);
    std::array<char, 10> small{};
    EXPECT_EQ(edgelock::write_fence_key("orders:42", small.data(), small.size()), 0u);
}

TEST(wake_names, a_token_alone_or_before_a_space_names_its_waiter) {
    const std::string token(32, 'a');
    EXPECT_TRUE(edgelock::wake_names(token, token)) << "a wake-up";
    EXPECT_TRUE(edgelock::wake_names(token + " 17", token)) << "a grant";
    EXPECT_FALSE(edgelock::wake_names("", token));
    EXPECT_FALSE(edgelock::wake_names(token.substr(1), token)) << "one short";
    EXPECT_FALSE(edgelock::wake_names(token + "b", token)) << "another, longer token";
    EXPECT_FALSE(edgelock::wake_names(std::string(32, 'b') + " 17", token));
}

}  // namespace
