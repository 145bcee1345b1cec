// SPDX-License-Identifier: Apache-2.0
// The semaphore (lock_config::permits > 1) as the core drives it: the configurations it
// accepts, the scripts and arguments it sends, and the refusals no retry can mend.
#include <gtest/gtest.h>

#include "edgelock/keys.hpp"
#include "lock_driving.hpp"

namespace {

using namespace lock_driving;

lock_config semaphore_config(std::uint16_t permits, bool fencing = false, bool fair = false) {
    lock_config config = config_for(1, fencing);
    config.permits = permits;
    config.fair = fair;
    return config;
}

std::string companion_key(edgelock::companion which) {
    std::array<char, edgelock::key_bytes_max> out{};
    const std::size_t size =
        edgelock::write_companion_key("orders:42", which, out.data(), out.size());
    return std::string(out.data(), size);
}

// Acquires with `wait_ms`, answers the attempt with `reply`, and returns the events.
std::vector<event> answer_attempt(lock& l, std::int64_t wait_ms, const reply_node& reply) {
    EXPECT_EQ(l.acquire(1000, wait_ms, token_a), errc::ok);
    take_request(l, 0);
    EXPECT_EQ(l.on_reply(0, reply, 1010), errc::error_reply);
    return take_events(l);
}

TEST(lock_semaphore_config, permits_from_one_to_the_maximum_are_accepted) {
    lock l;
    EXPECT_EQ(l.configure(semaphore_config(0)), errc::invalid_config);
    EXPECT_EQ(l.configure(semaphore_config(edgelock::permits_max + 1)), errc::invalid_config);
    EXPECT_EQ(l.configure(semaphore_config(1)), errc::ok);
    EXPECT_EQ(l.configure(semaphore_config(edgelock::permits_max)), errc::ok);
}

// A fenced semaphore numbers its leases: its acquire (plain or fair) sends the fence counter
// and the slots key last, its renew the slots key; the answer is the fence token, and the
// permit it stands for is its remainder by N.
TEST(lock_semaphore_wire, a_fenced_semaphore_sends_the_fence_and_slots_keys_and_takes_the_token) {
    lock l;
    ASSERT_EQ(l.configure(semaphore_config(3, true)), errc::ok);
    ASSERT_EQ(l.acquire(1000, 0, token_a), errc::ok);
    const std::string fence = companion_key(edgelock::companion::fence);
    const std::string slots = companion_key(edgelock::companion::slots);
    EXPECT_EQ(take_request(l, 0),
              (std::vector<std::string>{"EVALSHA", sha(edgelock::permit_acquire_script), "3",
                                        "orders:42", fence, slots, token_a_hex, "30000", "3"}));
    ASSERT_EQ(l.on_reply(0, bulk("1700000000000002"), 1010), errc::ok);
    const std::vector<event> events = take_events(l);
    ASSERT_EQ(events.at(0).type, event_type::acquired);
    EXPECT_EQ(l.fence(), 1'700'000'000'000'002);
    EXPECT_EQ(edgelock::permit_of(l.fence(), l.permits()), 1) << "1700000000000002 % 3";
    ASSERT_EQ(l.on_timer(1000 + 10'000), errc::ok);
    EXPECT_EQ(take_request(l, 0),
              (std::vector<std::string>{"EVALSHA", sha(edgelock::permit_renew_script), "2",
                                        "orders:42", slots, token_a_hex, "30000", "1"}))
        << "the renewal names its permit";
    lock fair;
    ASSERT_EQ(fair.configure(semaphore_config(3, true, true)), errc::ok);
    ASSERT_EQ(fair.acquire(1000, 0, token_a), errc::ok);
    const std::vector<std::string> request = take_request(fair, 0);
    ASSERT_GE(request.size(), 8u);
    EXPECT_EQ(
        std::vector<std::string>(request.begin() + 2, request.begin() + 8),
        (std::vector<std::string>{"5", "orders:42", companion_key(edgelock::companion::queue),
                                  companion_key(edgelock::companion::queue_ttl), fence, slots}));
    ASSERT_EQ(fair.on_reply(0, integer(0), 1010), errc::unexpected_reply)
        << "a fenced acquire answers its token, not 0";
}

TEST(lock_semaphore_config, permit_of_is_the_tokens_remainder) {
    EXPECT_EQ(edgelock::permit_of(10, 3), 1);
    EXPECT_EQ(edgelock::permit_of(9'223'372'036'854'775'807, 1000), 807);
    EXPECT_EQ(edgelock::permit_of(41, 1), 0) << "the lock has one permit";
}

TEST(lock_semaphore_config, permits_over_independent_masters_are_refused) {
    lock l;
    lock_config config = semaphore_config(3);
    config.instances = 5;
    EXPECT_EQ(l.configure(config), errc::invalid_instances)
        << "a quorum of 5 masters does not bound 3 holders";
    config.permits = 1;
    EXPECT_EQ(l.configure(config), errc::ok) << "Redlock itself stays";
}

TEST(lock_semaphore_wire, one_permit_is_the_lock_on_the_wire) {
    lock l;
    ASSERT_EQ(l.configure(semaphore_config(1)), errc::ok);
    ASSERT_EQ(l.acquire(1000, 0, token_a), errc::ok);
    EXPECT_EQ(take_request(l, 0), set_nx_request(token_a_hex));
}

TEST(lock_semaphore_wire, acquire_renew_and_release_are_the_permit_scripts_with_n) {
    lock l;
    ASSERT_EQ(l.configure(semaphore_config(3)), errc::ok);
    ASSERT_EQ(l.acquire(1000, 0, token_a), errc::ok);
    EXPECT_EQ(take_request(l, 0),
              (std::vector<std::string>{"EVALSHA", sha(edgelock::permit_acquire_script), "1",
                                        "orders:42", token_a_hex, "30000", "3"}));
    ASSERT_EQ(l.on_reply(0, integer(0), 1010), errc::ok);
    ASSERT_EQ(take_events(l).at(0).type, event_type::acquired);
    ASSERT_EQ(l.on_timer(1000 + 10'000), errc::ok);
    EXPECT_EQ(take_request(l, 0),
              (std::vector<std::string>{"EVALSHA", sha(edgelock::permit_renew_script), "1",
                                        "orders:42", token_a_hex, "30000"}));
    ASSERT_EQ(l.on_reply(0, integer(1), 11'010), errc::ok);
    ASSERT_EQ(l.release(11'020), errc::ok);
    EXPECT_EQ(take_request(l, 0),
              (std::vector<std::string>{"EVALSHA", sha(edgelock::permit_release_script), "1",
                                        "orders:42", token_a_hex}));
}

TEST(lock_semaphore_wire, a_fair_acquire_sends_the_entry_ttl_then_n_then_join) {
    lock l;
    ASSERT_EQ(l.configure(semaphore_config(3, false, true)), errc::ok);
    const std::string entry_ttl =
        std::to_string(edgelock::resolve(semaphore_config(3, false, true)).queue_entry_ttl_ms);
    ASSERT_EQ(l.acquire(1000, 0, token_a), errc::ok);
    EXPECT_EQ(take_request(l, 0),
              (std::vector<std::string>{"EVALSHA", sha(edgelock::fair_permit_acquire_script), "3",
                                        "orders:42", companion_key(edgelock::companion::queue),
                                        companion_key(edgelock::companion::queue_ttl), token_a_hex,
                                        "30000", entry_ttl, "3"}));
    ASSERT_EQ(l.on_reply(0, nil(), 1010), errc::ok);
    const std::vector<event> events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].code, errc::busy) << "nil: all permits held";
    EXPECT_EQ(
        take_request(l, 0),
        (std::vector<std::string>{"EVALSHA", sha(edgelock::fair_permit_release_script), "3",
                                  "orders:42", companion_key(edgelock::companion::queue),
                                  companion_key(edgelock::companion::queue_ttl), token_a_hex, "3"}))
        << "a waiter that gives up leaves the line, and wakes as many as permits are free";
}

TEST(lock_semaphore_refusals, a_name_held_as_the_other_kind_fails_at_once_whatever_the_wait) {
    lock l;
    ASSERT_EQ(l.configure(semaphore_config(3)), errc::ok);
    const std::vector<event> events = answer_attempt(
        l, 60'000,
        error("WRONGTYPE Operation against a key holding the wrong kind of value script: x"));
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].type, event_type::acquire_failed);
    EXPECT_EQ(events[0].code, errc::wrong_kind);
    EXPECT_EQ(l.state(), lock_state::idle);
}

TEST(lock_semaphore_refusals, a_lock_on_a_semaphores_name_fails_with_wrong_kind) {
    lock l;
    ASSERT_EQ(l.configure(semaphore_config(1)), errc::ok);
    const std::vector<event> events = answer_attempt(
        l, 60'000, error("WRONGTYPE Operation against a key holding the wrong kind of value"));
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].code, errc::wrong_kind) << "SET ... GET's refusal of a sorted set";
}

// A server before 7.0 wraps an error raised inside a script.
TEST(lock_semaphore_refusals, a_wrong_type_wrapped_by_an_older_server_is_wrong_kind_too) {
    lock l;
    ASSERT_EQ(l.configure(semaphore_config(3)), errc::ok);
    const std::vector<event> events = answer_attempt(
        l, 60'000,
        error("ERR Error running script (call to f_8d3c): @user_script:3: WRONGTYPE Operation "
              "against a key holding the wrong kind of value"));
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].code, errc::wrong_kind);
}

TEST(lock_semaphore_refusals, another_n_fails_at_once_with_permits_mismatch) {
    lock l;
    ASSERT_EQ(l.configure(semaphore_config(3)), errc::ok);
    const std::vector<event> events =
        answer_attempt(l, 60'000, error("PERMITS_MISMATCH the name has 2 permits, not 3"));
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].code, errc::permits_mismatch);
    EXPECT_EQ(l.last_cause(), errc::permits_mismatch);
}

TEST(lock_semaphore_refusals, other_errors_are_retried_while_the_wait_lasts) {
    lock l;
    ASSERT_EQ(l.configure(semaphore_config(3)), errc::ok);
    const std::vector<event> events = answer_attempt(l, 60'000, error("ERR something else"));
    EXPECT_TRUE(events.empty()) << "backing off, not failed";
    EXPECT_EQ(l.state(), lock_state::backing_off);
}

}  // namespace
