// SPDX-License-Identifier: Apache-2.0
// The restart guard (lock.hpp, "Restarts"), driven by literal timestamps and scripted
// replies: ttl 30 s, drift 302 ms, so the default guard is 30,302 ms.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "edgelock/lock.hpp"
#include "lock_driving.hpp"

namespace {

using namespace lock_driving;
using edgelock::node_start;

constexpr std::int64_t guard_ms = 30'302;

node_start started_at(std::int64_t started_ms) { return node_start{started_ms, false, false}; }
node_start durable_at(std::int64_t started_ms) { return node_start{started_ms, true, false}; }
node_start restarted_at(std::int64_t started_ms) { return node_start{started_ms, false, true}; }

// Writes every queued request of `instance`; returns what each was: the script digest of an
// EVALSHA, else the command (SET for an acquire, WAIT).
std::vector<std::string> drain_requests(lock& l, std::uint8_t instance) {
    std::vector<std::string> sent;
    while (l.has_request(instance)) {
        const std::vector<std::string> args = take_request(l, instance);
        sent.push_back(args[0] == "EVALSHA" ? args[1] : args[0]);
    }
    return sent;
}

// Answers each instance's acquire in `ok` with OK at `now`.
void answer_acquires(lock& l, const std::vector<std::uint8_t>& ok, std::int64_t now) {
    for (const std::uint8_t i : ok) {
        ASSERT_EQ(take_request(l, i), set_nx_request(token_a_hex)) << int{i};
        ASSERT_EQ(l.on_reply(i, key_was_free(), now), errc::ok) << int{i};
    }
}

TEST(restart_guard, a_guard_longer_than_ttl_ms_max_is_refused_zero_and_default_are_not) {
    lock l;
    lock_config config = config_for(1);
    config.restart_guard_ms = edgelock::ttl_ms_max + 1;
    EXPECT_EQ(l.configure(config), errc::invalid_config);
    for (const std::int64_t guard : {std::int64_t{-1}, std::int64_t{0}, edgelock::ttl_ms_max}) {
        config.restart_guard_ms = guard;
        EXPECT_EQ(l.configure(config), errc::ok) << guard;
    }
}

TEST(restart_guard,
     a_node_started_less_than_the_guard_ago_is_not_asked_and_the_acquire_says_until_when) {
    lock l;
    configure(l, 1);
    ASSERT_EQ(l.on_node_started(0, started_at(10'000), 10'500), errc::ok);
    ASSERT_EQ(l.acquire(11'000, 0, token_a), errc::ok);
    EXPECT_FALSE(l.has_request(0)) << "nothing is sent to an instance that does not count";
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].type, event_type::acquire_failed);
    EXPECT_EQ(events[0].code, errc::restart_guard);
    EXPECT_EQ(events[0].guard_until_ms, 10'000 + guard_ms);
    EXPECT_EQ(l.state(), lock_state::idle);
}

TEST(restart_guard, a_node_counts_from_the_instant_its_start_plus_the_guard_is_reached) {
    lock l;
    configure(l, 1);
    ASSERT_EQ(l.on_node_started(0, started_at(10'000), 10'500), errc::ok);
    ASSERT_EQ(l.acquire(10'000 + guard_ms - 1, 0, token_a), errc::ok);
    ASSERT_EQ(take_events(l).at(0).code, errc::restart_guard);
    ASSERT_EQ(l.acquire(10'000 + guard_ms, 0, token_a), errc::ok);
    answer_acquires(l, {0}, 10'000 + guard_ms + 5);
    EXPECT_EQ(take_events(l).at(0).type, event_type::acquired);
}

TEST(restart_guard, a_wait_that_reaches_the_guard_waits_it_out_and_then_acquires) {
    lock l;
    configure(l, 1);
    ASSERT_EQ(l.on_node_started(0, started_at(10'000), 10'500), errc::ok);
    ASSERT_EQ(l.acquire(11'000, 40'000, token_a), errc::ok);
    EXPECT_TRUE(take_events(l).empty());
    EXPECT_EQ(l.state(), lock_state::backing_off);
    EXPECT_EQ(l.next_deadline_ms(), 10'000 + guard_ms)
        << "the retry waits for the guard, not a backoff";
    EXPECT_FALSE(l.has_request(0));
    ASSERT_EQ(l.on_timer(10'000 + guard_ms), errc::ok);
    answer_acquires(l, {0}, 10'000 + guard_ms + 5);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].type, event_type::acquired);
}

TEST(restart_guard, a_wait_that_ends_before_the_guard_fails_at_once_with_restart_guard) {
    lock l;
    configure(l, 1);
    ASSERT_EQ(l.on_node_started(0, started_at(10'000), 10'500), errc::ok);
    ASSERT_EQ(l.acquire(11'000, 5'000, token_a), errc::ok);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].code, errc::restart_guard) << "waiting cannot help: no wait_timeout later";
    EXPECT_EQ(events[0].guard_until_ms, 10'000 + guard_ms);
}

TEST(restart_guard, a_durable_node_and_a_lock_with_the_guard_off_count_at_once) {
    lock durable;
    configure(durable, 1);
    ASSERT_EQ(durable.on_node_started(0, durable_at(10'000), 10'500), errc::ok);
    ASSERT_EQ(durable.acquire(11'000, 0, token_a), errc::ok);
    answer_acquires(durable, {0}, 11'005);
    EXPECT_EQ(take_events(durable).at(0).type, event_type::acquired);

    lock off;
    lock_config config = config_for(1);
    config.restart_guard_ms = 0;
    ASSERT_EQ(off.configure(config), errc::ok);
    ASSERT_EQ(off.on_node_started(0, started_at(10'000), 10'500), errc::ok);
    ASSERT_EQ(off.acquire(11'000, 0, token_a), errc::ok);
    answer_acquires(off, {0}, 11'005);
    EXPECT_EQ(take_events(off).at(0).type, event_type::acquired);
}

// What a lock learns with the guard off is kept: configured again with it on (same instance
// count), the lock guards a node that restarted meanwhile without waiting for a reconnect.
TEST(restart_guard, a_start_told_while_the_guard_was_off_counts_once_it_is_on) {
    lock l;
    lock_config config = config_for(3);
    config.restart_guard_ms = 0;
    ASSERT_EQ(l.configure(config), errc::ok);
    ASSERT_EQ(l.on_node_started(0, restarted_at(1'000), 1'000), errc::ok);
    config.restart_guard_ms = 60'000;
    ASSERT_EQ(l.configure(config), errc::ok);
    ASSERT_EQ(l.acquire(1'500, 0, token_a), errc::ok);
    EXPECT_FALSE(l.has_request(0)) << "node 0 restarted 500 ms ago: not asked";
    answer_acquires(l, {1, 2}, 1'505);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].type, event_type::acquired) << "on the two that count";
}

// A node that restarted without durable data forgot keys; becoming durable afterwards (AOF
// always switched on, same process) brings none back: its start still counts for the guard.
TEST(restart_guard, a_node_made_durable_after_a_restart_stays_guarded_from_that_restart) {
    lock l;
    configure(l, 1);
    ASSERT_EQ(l.on_node_started(0, restarted_at(1'000), 1'000), errc::ok);
    ASSERT_EQ(l.on_node_started(0, durable_at(1'000), 1'500), errc::ok);
    ASSERT_EQ(l.acquire(2'000, 0, token_a), errc::ok);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].code, errc::restart_guard);
    EXPECT_EQ(events[0].guard_until_ms, 1'000 + guard_ms);

    lock fresh;  // a durable process that restarted loaded everything: it counts at once
    configure(fresh, 1);
    ASSERT_EQ(fresh.on_node_started(0, restarted_at(1'000), 1'000), errc::ok);
    ASSERT_EQ(fresh.on_node_started(0, node_start{1'400, true, true}, 1'500), errc::ok);
    ASSERT_EQ(fresh.acquire(2'000, 0, token_a), errc::ok);
    EXPECT_TRUE(fresh.has_request(0));
}

TEST(restart_guard, an_explicit_guard_replaces_ttl_plus_drift) {
    lock l;
    lock_config config = config_for(1);
    config.restart_guard_ms = 60'000;  // another client of this name uses a 60 s TTL
    ASSERT_EQ(l.configure(config), errc::ok);
    ASSERT_EQ(l.on_node_started(0, started_at(10'000), 10'500), errc::ok);
    ASSERT_EQ(l.acquire(50'000, 0, token_a), errc::ok);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].code, errc::restart_guard);
    EXPECT_EQ(events[0].guard_until_ms, 70'000);
}

TEST(restart_guard, redlock_asks_only_the_instances_that_count_and_holds_on_a_quorum_of_them) {
    lock l;
    configure(l, 5);
    ASSERT_EQ(l.on_node_started(1, started_at(10'000), 10'500), errc::ok);
    ASSERT_EQ(l.on_node_started(3, started_at(10'000), 10'500), errc::ok);
    ASSERT_EQ(l.acquire(11'000, 0, token_a), errc::ok);
    EXPECT_FALSE(l.has_request(1));
    EXPECT_FALSE(l.has_request(3));
    answer_acquires(l, {0, 2, 4}, 11'010);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].type, event_type::acquired);
    ASSERT_EQ(l.on_timer(21'000), errc::ok);  // the first renewal
    EXPECT_FALSE(l.has_request(1)) << "renewals skip the instances the hold does not count";
    EXPECT_FALSE(l.has_request(3));
    EXPECT_TRUE(l.has_request(0));
}

TEST(restart_guard, redlock_waits_for_the_quorum_th_instance_to_count) {
    lock l;
    configure(l, 3);
    ASSERT_EQ(l.on_node_started(0, started_at(9'000), 10'500), errc::ok);
    ASSERT_EQ(l.on_node_started(2, started_at(10'000), 10'500), errc::ok);
    ASSERT_EQ(l.acquire(11'000, 0, token_a), errc::ok);
    for (std::uint8_t i = 0; i < 3; ++i)
        EXPECT_FALSE(l.has_request(i)) << "one instance cannot make a quorum";
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].code, errc::restart_guard);
    EXPECT_EQ(events[0].guard_until_ms, 9'000 + guard_ms)
        << "instances 1 and 0 make a quorum first";
}

TEST(restart_guard, a_refusal_beside_a_guarded_instance_says_busy) {
    lock l;
    configure(l, 3);
    ASSERT_EQ(l.on_node_started(0, started_at(10'000), 10'500), errc::ok);
    ASSERT_EQ(l.acquire(11'000, 0, token_a), errc::ok);
    EXPECT_FALSE(l.has_request(0));
    answer_acquires(l, {1}, 11'010);
    take_request(l, 2);
    ASSERT_EQ(l.on_reply(2, key_held_by(token_b_hex), 11'010), errc::ok);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].code, errc::busy) << "another owner holds it: that is said first";
}

TEST(restart_guard,
     a_failure_while_a_quorum_counts_is_no_quorum_and_not_asked_ones_are_not_cleaned) {
    lock l;
    configure(l, 3);
    ASSERT_EQ(l.on_node_started(0, started_at(10'000), 10'500), errc::ok);
    ASSERT_EQ(l.acquire(11'000, 0, token_a), errc::ok);
    answer_acquires(l, {1}, 11'010);
    take_request(l, 2);
    ASSERT_EQ(l.on_io_error(2, 11'010), errc::ok);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].code, errc::no_quorum)
        << "instances 1 and 2 count: the guard kept nothing back";
    EXPECT_EQ(drain_requests(l, 1), std::vector<std::string>{sha(edgelock::release_script)});
    EXPECT_TRUE(drain_requests(l, 0).empty()) << "an instance never asked holds nothing to clean";
}

TEST(restart_guard, a_restart_during_a_single_instance_hold_loses_it_with_node_restarted) {
    lock l;
    configure(l, 1);
    acquire_single(l);
    ASSERT_EQ(l.on_io_error(0, 5'000), errc::ok);
    ASSERT_EQ(l.on_node_started(0, restarted_at(4'000), 5'100), errc::ok);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].type, event_type::lost);
    EXPECT_EQ(events[0].code, errc::node_restarted);
    EXPECT_FALSE(l.held(5'100));
}

TEST(restart_guard, a_restart_noticed_while_a_renewal_waits_is_node_restarted_not_token_gone) {
    lock l;
    configure(l, 1);
    acquire_single(l);
    ASSERT_EQ(l.on_timer(11'000), errc::ok);  // the renewal is queued for the new connection
    ASSERT_TRUE(l.has_request(0));
    ASSERT_EQ(l.on_node_started(0, restarted_at(10'900), 11'010), errc::ok);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].code, errc::node_restarted);
}

TEST(restart_guard, a_start_after_the_lease_began_is_a_restart_even_with_the_same_run_id) {
    lock l;
    configure(l, 1);
    acquire_single(l);  // lease from t=1000
    ASSERT_EQ(l.on_node_started(0, started_at(1'001), 5'100), errc::ok);
    EXPECT_EQ(take_events(l).at(0).code, errc::node_restarted);
}

TEST(restart_guard, a_reconnect_to_a_node_that_did_not_restart_keeps_the_hold) {
    lock l;
    configure(l, 1);
    ASSERT_EQ(l.on_node_started(0, started_at(-100'000), 500), errc::ok);
    acquire_single(l);
    ASSERT_EQ(l.on_io_error(0, 5'000), errc::ok);
    ASSERT_EQ(l.on_node_started(0, started_at(-100'000), 5'100), errc::ok);
    EXPECT_TRUE(take_events(l).empty());
    EXPECT_TRUE(l.held(5'100));
}

TEST(restart_guard, a_durable_restart_during_a_hold_keeps_it) {
    lock l;
    configure(l, 1);
    acquire_single(l);
    ASSERT_EQ(l.on_node_started(0, node_start{4'000, true, true}, 5'100), errc::ok);
    EXPECT_TRUE(take_events(l).empty());
    EXPECT_TRUE(l.held(5'100));
}

TEST(restart_guard, redlock_holds_while_a_quorum_has_not_restarted_and_loses_the_hold_after) {
    lock l;
    configure(l, 3);
    ASSERT_EQ(l.acquire(1'000, 0, token_a), errc::ok);
    answer_acquires(l, {0, 1, 2}, 1'010);
    ASSERT_EQ(take_events(l).at(0).type, event_type::acquired);
    ASSERT_EQ(l.on_node_started(2, restarted_at(4'000), 5'000), errc::ok);
    EXPECT_TRUE(take_events(l).empty());
    ASSERT_EQ(l.on_timer(11'000), errc::ok);  // a renewal goes to instances 0 and 1 only
    EXPECT_FALSE(l.has_request(2));
    for (const std::uint8_t i : {0, 1}) {
        take_request(l, i);
        ASSERT_EQ(l.on_reply(i, integer(1), 11'010), errc::ok);
    }
    EXPECT_EQ(take_events(l).at(0).type, event_type::renewed);
    ASSERT_EQ(l.on_node_started(1, restarted_at(12'000), 12'500), errc::ok);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].code, errc::node_restarted);
}

TEST(restart_guard, an_ok_taken_before_a_restart_noticed_mid_attempt_no_longer_counts) {
    lock l;
    configure(l, 3);
    ASSERT_EQ(l.acquire(1'000, 0, token_a), errc::ok);
    answer_acquires(l, {0}, 1'010);
    ASSERT_EQ(l.on_io_error(0, 1'020), errc::ok);
    ASSERT_EQ(l.on_node_started(0, restarted_at(1'015), 1'030), errc::ok);
    answer_acquires(l, {1}, 1'040);
    EXPECT_TRUE(take_events(l).empty()) << "one counting OK is not a quorum of 3";
    take_request(l, 2);
    ASSERT_EQ(l.on_reply(2, key_held_by(token_b_hex), 1'050), errc::ok);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].type, event_type::acquire_failed);
    EXPECT_EQ(events[0].code, errc::busy);
}

TEST(restart_guard, an_ok_from_a_node_that_started_after_the_lease_began_does_not_count) {
    lock l;
    configure(l, 1);
    ASSERT_EQ(l.acquire(1'000, 0, token_a), errc::ok);
    // The request waits while the connection's handshake reads a start after t0.
    ASSERT_EQ(l.on_node_started(0, started_at(1'002), 1'005), errc::ok);
    for (const std::string& sent : drain_requests(l, 0)) {
        EXPECT_NE(sent, "SET") << "its unwritten claim is not sent";
        EXPECT_NE(sent, sha(edgelock::acquire_script)) << "its unwritten claim is not sent";
    }
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].code, errc::restart_guard);
    EXPECT_EQ(events[0].guard_until_ms, 1'002 + guard_ms);
}

TEST(restart_guard, a_reply_in_flight_from_a_restarted_node_is_not_counted) {
    lock l;
    configure(l, 3);
    ASSERT_EQ(l.acquire(1'000, 0, token_a), errc::ok);
    for (std::uint8_t i = 0; i < 3; ++i) take_request(l, i);
    ASSERT_EQ(l.on_node_started(2, restarted_at(900), 1'005), errc::ok);  // a restart told late
    ASSERT_EQ(l.on_reply(0, key_was_free(), 1'010), errc::ok);
    ASSERT_EQ(l.on_reply(2, key_was_free(), 1'010), errc::ok);
    EXPECT_TRUE(take_events(l).empty()) << "instance 2's OK is not the second of a quorum";
    ASSERT_EQ(l.on_reply(1, key_was_free(), 1'020), errc::ok);
    EXPECT_EQ(take_events(l).at(0).type, event_type::acquired);
}

TEST(restart_guard, a_clock_stepping_back_counts_a_start_from_the_new_reading) {
    lock l;
    configure(l, 1);
    ASSERT_EQ(l.on_node_started(0, started_at(100'000), 100'500), errc::ok);
    ASSERT_EQ(l.acquire(50, 0, token_a), errc::ok);  // the clock went back to 50
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].guard_until_ms, 50 + guard_ms) << "not 100,000 + guard on the old timeline";
}

TEST(restart_guard, a_new_instance_count_forgets_what_was_learned_of_the_old_indices) {
    lock l;
    configure(l, 1);
    ASSERT_EQ(l.on_node_started(0, started_at(10'000), 10'500), errc::ok);
    configure(l, 3);
    ASSERT_EQ(l.acquire(11'000, 0, token_a), errc::ok);
    EXPECT_TRUE(l.has_request(0));
}

TEST(restart_guard, bad_input_is_refused) {
    lock l;
    EXPECT_EQ(l.on_node_started(0, started_at(0), 0), errc::invalid_state);
    configure(l, 1);
    EXPECT_EQ(l.on_node_started(1, started_at(0), 0), errc::invalid_instance);
    EXPECT_EQ(l.on_node_started(0, started_at(edgelock::now_ms_limit + 1), 0), errc::invalid_time);
    EXPECT_EQ(l.on_node_started(0, started_at(0), -edgelock::now_ms_limit - 1), errc::invalid_time);
}

}  // namespace
