// SPDX-License-Identifier: Apache-2.0
// Helpers for tests that drive an edgelock::lock by hand: literal timestamps, scripted
// replies, requests decoded back into their arguments.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "edgelock/lock.hpp"
#include "edgelock/resp_reader.hpp"
#include "edgelock/scripts.hpp"

namespace lock_driving {

using edgelock::errc;
using edgelock::event;
using edgelock::event_type;
using edgelock::lock;
using edgelock::lock_config;
using edgelock::lock_state;
using edgelock::reply_node;
using edgelock::reply_type;

inline constexpr edgelock::owner_token token_a{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
                                               0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77};
inline constexpr edgelock::owner_token token_b{0xff, 0xee, 0xdd, 0xcc, 0xbb, 0xaa, 0x99, 0x88,
                                               0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, 0x00};
inline constexpr const char* token_a_hex = "0123456789abcdef0011223344556677";
inline constexpr const char* token_b_hex = "ffeeddccbbaa99887766554433221100";

inline std::string sha(const edgelock::script& s) {
    return std::string(s.digest.data(), s.digest.size());
}

inline reply_node integer(std::int64_t value) {
    reply_node node;
    node.type = reply_type::integer;
    node.integer = value;
    return node;
}

inline reply_node nil() { return reply_node{}; }

// A bulk string: a fenced acquire's counter as GET's decimal string (scripts.hpp), or the
// value SET ... GET found under the key.
inline reply_node bulk(std::string_view text) {
    reply_node node;
    node.type = reply_type::bulk_string;
    node.text = text;
    return node;
}

inline reply_node error(std::string_view text) {
    reply_node node;
    node.type = reply_type::error;
    node.text = text;
    return node;
}

inline reply_node status(std::string_view text) {
    reply_node node;
    node.type = reply_type::simple_string;
    node.text = text;
    return node;
}

// The acquire without fencing, SET key token NX PX ttl GET (lock.hpp, "The acquire on the
// wire"), for config_for()'s name and TTL, and its answers: nil when the key was free and
// is now ours, else the token the key already holds.
inline std::vector<std::string> set_nx_request(std::string_view token_hex) {
    return {"SET", "orders:42", std::string(token_hex), "NX", "PX", "30000", "GET"};
}

inline reply_node key_was_free() { return nil(); }

inline reply_node key_held_by(std::string_view token_hex) { return bulk(token_hex); }

// Writes the next request for `instance` and decodes it into its arguments.
inline std::vector<std::string> take_request(lock& l, std::uint8_t instance) {
    std::array<char, edgelock::request_bytes_max> buffer{};
    const edgelock::write_result written = l.write_request(instance, buffer.data(), buffer.size());
    EXPECT_EQ(written.code, errc::ok);
    // On failure, blanks keep the callers' indexing defined; the EXPECT above already failed.
    if (written.code != errc::ok) return std::vector<std::string>(8);
    std::array<reply_node, 16> nodes{};
    const edgelock::parse_result parsed =
        edgelock::parse_reply(buffer.data(), written.size, nodes.data(), nodes.size());
    EXPECT_EQ(parsed.code, errc::ok);
    EXPECT_EQ(parsed.consumed, written.size);
    std::vector<std::string> args;
    for (std::size_t i = 1; i < parsed.nodes; ++i) args.emplace_back(nodes[i].text);
    return args;
}

inline std::vector<event> take_events(lock& l) {
    std::vector<event> events;
    event e;
    while (l.poll_event(e)) events.push_back(e);
    return events;
}

inline lock_config config_for(std::uint8_t instances, bool fencing = false) {
    lock_config config;
    config.name = "orders:42";
    config.ttl_ms = 30'000;  // drift 302 ms, renewal every 10 s, attempt timeout 3 s
    config.instances = instances;
    config.fencing = fencing;
    return config;
}

inline void configure(lock& l, std::uint8_t instances, bool fencing = false) {
    ASSERT_EQ(l.configure(config_for(instances, fencing)), errc::ok);
}

// Acquires a single-instance lock at t=1000 with the reply at t=1010.
inline void acquire_single(lock& l) {
    ASSERT_EQ(l.acquire(1000, 0, token_a), errc::ok);
    take_request(l, 0);
    ASSERT_EQ(l.on_reply(0, key_was_free(), 1010), errc::ok);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    ASSERT_EQ(events[0].type, event_type::acquired);
}

}  // namespace lock_driving
