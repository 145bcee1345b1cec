// SPDX-License-Identifier: Apache-2.0
// The lock once held: renewal, release, reentrancy, bad input, the caller's clock,
// configure(), cancelling and requests given up unwritten (lock_test.cpp has configuration,
// acquire, fencing and WAIT).
#include "edgelock/lock.hpp"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <limits>

#include <array>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "edgelock/resp_reader.hpp"
#include "edgelock/scripts.hpp"
#include "lock_driving.hpp"

namespace {

using namespace lock_driving;

// ---- renewal -----------------------------------------------------------------------------

TEST(lock_renewal, a_confirmed_renewal_extends_validity_from_its_send_time) {
    lock l;
    configure(l, 1);
    acquire_single(l);
    EXPECT_EQ(l.next_deadline_ms(), 11'000);
    ASSERT_EQ(l.on_timer(11'000), errc::ok);
    EXPECT_EQ(take_request(l, 0),
              (std::vector<std::string>{"EVALSHA", sha(edgelock::renew_script), "1", "orders:42",
                                        token_a_hex, "30000"}));
    EXPECT_EQ(l.next_deadline_ms(), 14'000) << "while renewing, the round's attempt timeout is due";
    ASSERT_EQ(l.on_reply(0, integer(1), 11'050), errc::ok);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].type, event_type::renewed);
    EXPECT_EQ(events[0].valid_until_ms, 11'000 + 30'000 - 302);
    EXPECT_EQ(l.next_deadline_ms(), 21'000);
}

TEST(lock_renewal, no_confirmation_before_validity_ends_is_lost) {
    lock l;
    configure(l, 1);
    acquire_single(l);
    ASSERT_EQ(l.on_timer(11'000), errc::ok);
    take_request(l, 0);
    ASSERT_EQ(l.on_timer(30'697), errc::ok);
    EXPECT_TRUE(take_events(l).empty());
    EXPECT_TRUE(l.held(30'697));
    ASSERT_EQ(l.on_timer(30'698), errc::ok);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].type, event_type::lost);
    EXPECT_EQ(events[0].code, errc::expired);
    EXPECT_FALSE(l.held(30'698));
    // A confirmation arriving after the end cannot bring the lock back.
    ASSERT_EQ(l.on_reply(0, integer(1), 30'700), errc::ok);
    EXPECT_TRUE(take_events(l).empty());
    EXPECT_FALSE(l.held(30'700));
    // The loss cleans up behind the late renewal.
    EXPECT_EQ(take_request(l, 0)[1], sha(edgelock::release_script));
}

TEST(lock_renewal, held_is_false_after_validity_even_without_a_timer_call) {
    lock l;
    configure(l, 1);
    acquire_single(l);
    EXPECT_TRUE(l.held(30'697));
    EXPECT_FALSE(l.held(30'698));
    EXPECT_FALSE(l.held(1'000'000));
}

TEST(lock_renewal, a_key_gone_on_the_quorum_is_lost_at_once) {
    lock l;
    configure(l, 1);
    acquire_single(l);
    ASSERT_EQ(l.on_timer(11'000), errc::ok);
    take_request(l, 0);
    ASSERT_EQ(l.on_reply(0, integer(0), 11'010), errc::ok);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].type, event_type::lost);
    EXPECT_EQ(events[0].code, errc::token_gone);
    EXPECT_FALSE(l.has_request(0)) << "the key is someone else's: no cleanup";
}

TEST(lock_renewal, unreachable_instances_are_retried_while_validity_lasts) {
    lock l;
    configure(l, 1);
    acquire_single(l);
    ASSERT_EQ(l.on_timer(11'000), errc::ok);
    take_request(l, 0);
    ASSERT_EQ(l.on_io_error(0, 11'005), errc::ok);
    EXPECT_TRUE(take_events(l).empty());
    EXPECT_EQ(l.next_deadline_ms(), 11'005 + 50);
    ASSERT_EQ(l.on_timer(11'055), errc::ok);
    ASSERT_TRUE(l.has_request(0));
    EXPECT_EQ(take_request(l, 0)[1], sha(edgelock::renew_script));
    ASSERT_EQ(l.on_reply(0, integer(1), 11'060), errc::ok);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].valid_until_ms, 11'055 + 30'000 - 302);
}

// Found by the simulator's kept check: with a retry delay longer than the rest of the lease,
// one failed renewal used to let the lease lapse while the master still kept the key.
TEST(lock_renewal, a_retry_delay_past_the_lease_still_leaves_one_more_try_in_time) {
    lock l;
    lock_config config = config_for(1);
    config.retry_delay_ms_min = 40'000;  // longer than the TTL (the cap follows)
    ASSERT_EQ(l.configure(config), errc::ok);
    acquire_single(l);  // valid until 1'000 + 30'000 - 302
    ASSERT_EQ(l.on_timer(11'000), errc::ok);
    take_request(l, 0);
    ASSERT_EQ(l.on_io_error(0, 11'005), errc::ok);
    EXPECT_EQ(l.next_deadline_ms(), 30'698 - 3'000)
        << "the last instant a renewal with its attempt timeout ends within validity";
    ASSERT_EQ(l.on_timer(27'698), errc::ok);
    ASSERT_TRUE(l.has_request(0));
    EXPECT_EQ(take_request(l, 0)[1], sha(edgelock::renew_script));
    ASSERT_EQ(l.on_reply(0, integer(1), 27'710), errc::ok);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].type, event_type::renewed);
    EXPECT_EQ(events[0].valid_until_ms, 27'698 + 30'000 - 302);
}

TEST(lock_renewal, a_silent_instance_is_given_up_after_the_attempt_timeout) {
    lock l;
    configure(l, 3);
    ASSERT_EQ(l.acquire(0, 0, token_a), errc::ok);
    for (std::uint8_t i = 0; i < 3; ++i) take_request(l, i);
    for (std::uint8_t i = 0; i < 3; ++i) ASSERT_EQ(l.on_reply(i, key_was_free(), 1), errc::ok);
    take_events(l);
    ASSERT_EQ(l.on_timer(10'000), errc::ok);
    for (std::uint8_t i = 0; i < 3; ++i) take_request(l, i);
    ASSERT_EQ(l.on_reply(0, integer(1), 10'002), errc::ok);
    ASSERT_EQ(l.on_reply(1, nil(), 10'003), errc::unexpected_reply);  // a broken answer
    // Instance 2 is frozen. At the attempt timeout the round fails and is retried soon.
    EXPECT_EQ(l.next_deadline_ms(), 13'000);
    ASSERT_EQ(l.on_timer(13'000), errc::ok);
    EXPECT_TRUE(take_events(l).empty());
    EXPECT_TRUE(l.held(13'000));
    EXPECT_EQ(l.next_deadline_ms(), 13'050);
    ASSERT_EQ(l.on_timer(13'050), errc::ok);
    ASSERT_TRUE(l.has_request(0));
    ASSERT_TRUE(l.has_request(1));
    ASSERT_TRUE(l.has_request(2)) << "queued behind the stuck one; sent if the instance wakes";
    for (std::uint8_t i = 0; i < 2; ++i) take_request(l, i);
    ASSERT_EQ(l.on_reply(0, integer(1), 13'052), errc::ok);
    ASSERT_EQ(l.on_reply(1, integer(1), 13'053), errc::ok);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].type, event_type::renewed);
    EXPECT_EQ(events[0].valid_until_ms, 13'050 + 30'000 - 302);
}

TEST(lock_renewal, without_the_watchdog_the_lease_just_ends) {
    lock_config config = config_for(1);
    config.watchdog = false;
    lock l;
    ASSERT_EQ(l.configure(config), errc::ok);
    acquire_single(l);
    EXPECT_EQ(l.next_deadline_ms(), 30'698);
    ASSERT_EQ(l.on_timer(11'000), errc::ok);
    EXPECT_FALSE(l.has_request(0));
    ASSERT_EQ(l.on_timer(30'698), errc::ok);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].type, event_type::lost);
}

// ---- release -----------------------------------------------------------------------------

TEST(lock_release, compare_and_delete_everywhere) {
    lock l;
    configure(l, 1);
    acquire_single(l);
    ASSERT_EQ(l.release(2000), errc::ok);
    EXPECT_EQ(l.state(), lock_state::releasing);
    EXPECT_FALSE(l.held(2000));
    EXPECT_EQ(take_request(l, 0),
              (std::vector<std::string>{"EVALSHA", sha(edgelock::release_script), "1", "orders:42",
                                        token_a_hex}));
    ASSERT_EQ(l.on_reply(0, integer(1), 2003), errc::ok);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].type, event_type::released);
    EXPECT_FALSE(events[0].expired_before);
    EXPECT_EQ(events[0].instances_released, 1);
    EXPECT_EQ(l.state(), lock_state::idle);
    EXPECT_EQ(l.release(2004), errc::not_held);
}

TEST(lock_release, a_key_that_is_no_longer_ours_is_reported_as_expired_before) {
    lock l;
    configure(l, 1);
    acquire_single(l);
    ASSERT_EQ(l.release(2000), errc::ok);
    take_request(l, 0);
    ASSERT_EQ(l.on_reply(0, integer(0), 2003), errc::ok);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].type, event_type::released);
    EXPECT_TRUE(events[0].expired_before);
    EXPECT_EQ(events[0].instances_released, 0);
}

TEST(lock_release, release_after_the_lease_ran_out_is_its_own_result) {
    lock l;
    configure(l, 1);
    acquire_single(l);
    ASSERT_EQ(l.release(40'000), errc::ok);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 2u);
    EXPECT_EQ(events[0].type, event_type::lost);
    EXPECT_EQ(events[1].type, event_type::released);
    EXPECT_TRUE(events[1].expired_before);
    EXPECT_EQ(l.state(), lock_state::idle);
    EXPECT_TRUE(l.has_request(0))
        << "a compare-and-delete still goes out, harmless if the key moved on";
}

TEST(lock_release, a_release_lost_with_its_connection_is_retried_on_the_next) {
    lock l;
    configure(l, 1);
    acquire_single(l);
    ASSERT_EQ(l.release(2000), errc::ok);
    take_request(l, 0);
    ASSERT_EQ(l.on_io_error(0, 2001), errc::ok);
    ASSERT_TRUE(l.has_request(0));
    EXPECT_EQ(take_request(l, 0)[4], token_a_hex) << "the retry carries our token, never another";
    ASSERT_EQ(l.on_reply(0, integer(1), 2010), errc::ok);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].instances_released, 1);
}

TEST(lock_release, unanswered_release_ends_at_the_attempt_timeout) {
    lock l;
    configure(l, 3);
    ASSERT_EQ(l.acquire(0, 0, token_a), errc::ok);
    for (std::uint8_t i = 0; i < 3; ++i) take_request(l, i);
    for (std::uint8_t i = 0; i < 3; ++i) ASSERT_EQ(l.on_reply(i, key_was_free(), 1), errc::ok);
    take_events(l);
    ASSERT_EQ(l.release(100), errc::ok);
    for (std::uint8_t i = 0; i < 3; ++i) take_request(l, i);
    ASSERT_EQ(l.on_reply(1, integer(1), 101), errc::ok);
    EXPECT_EQ(l.next_deadline_ms(), 3100);
    ASSERT_EQ(l.on_timer(3100), errc::ok);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].type, event_type::released);
    EXPECT_EQ(events[0].instances_released, 1);
    EXPECT_FALSE(events[0].expired_before);
}

TEST(lock_release, a_cleanup_written_after_a_new_acquire_keeps_its_own_token) {
    lock l;
    configure(l, 1);
    acquire_single(l);
    ASSERT_EQ(l.release(40'000), errc::ok);  // lost, then released; the cleanup is queued
    take_events(l);
    ASSERT_EQ(l.acquire(40'001, 0, token_b), errc::ok);
    EXPECT_EQ(take_request(l, 0)[4], token_a_hex) << "cleanup of the old hold";
    EXPECT_EQ(take_request(l, 0), set_nx_request(token_b_hex)) << "the new attempt";
}

TEST(lock_release, a_stale_cleanup_refused_with_noscript_is_resent_when_nothing_of_ours_follows) {
    lock l;
    configure(l, 1);
    ASSERT_EQ(l.acquire(0, 0, token_a), errc::ok);
    take_request(l, 0);
    ASSERT_EQ(l.on_timer(3000), errc::ok);  // the attempt times out: cleanup queued
    take_events(l);
    take_request(l, 0);
    ASSERT_EQ(l.on_reply(0, key_was_free(), 3001), errc::ok);  // the late acquire: our key is there
    ASSERT_EQ(l.on_reply(0, error("NOSCRIPT No matching script."), 3002), errc::ok);
    ASSERT_TRUE(l.has_request(0)) << "without a resend the key would outlive the attempt by a TTL";
    const auto resent = take_request(l, 0);
    EXPECT_EQ(resent[0], "EVAL");
    EXPECT_EQ(resent[1], std::string(edgelock::release_script.text));
    EXPECT_EQ(resent[4], token_a_hex);
}

TEST(lock_release, a_stale_cleanup_is_not_resent_behind_a_newer_claim_of_the_same_token) {
    lock l;
    configure(l, 1);
    ASSERT_EQ(l.acquire(0, 5000, token_a), errc::ok);  // waiting: the attempt is retried
    take_request(l, 0);
    ASSERT_EQ(l.on_timer(3000), errc::ok);  // attempt 1 times out: cleanup queued, backing off
    take_request(l, 0);                     // the cleanup goes out
    ASSERT_EQ(l.on_timer(l.next_deadline_ms()), errc::ok);
    take_request(l, 0);                                        // attempt 2, same token, behind it
    ASSERT_EQ(l.on_reply(0, key_was_free(), 3200), errc::ok);  // attempt 1's late acquire
    ASSERT_EQ(l.on_reply(0, error("NOSCRIPT No matching script."), 3201), errc::ok);
    // Re-sent now, the release would run after attempt 2's SET and delete our new key.
    EXPECT_FALSE(l.has_request(0));
    // Attempt 2 finds attempt 1's key, ours: renewed from attempt 2, it holds.
    ASSERT_EQ(l.on_reply(0, key_held_by(token_a_hex), 3202), errc::ok);
    EXPECT_EQ(take_request(l, 0)[1], sha(edgelock::renew_script));
    ASSERT_EQ(l.on_reply(0, integer(1), 3203), errc::ok);
    EXPECT_TRUE(l.held(3203));
}

// An attempt timed out, its cleanup went out, and the connection dropped before the answer:
// the SET may have run, so the release goes again on the next connection.
TEST(lock_release, a_stale_cleanup_lost_with_its_connection_is_resent) {
    lock l;
    configure(l, 1);
    ASSERT_EQ(l.acquire(0, 0, token_a), errc::ok);
    take_request(l, 0);
    ASSERT_EQ(l.on_timer(3000), errc::ok);  // acquire_failed(no_quorum): cleanup queued
    ASSERT_EQ(take_events(l).at(0).code, errc::no_quorum);
    EXPECT_EQ(take_request(l, 0)[1], sha(edgelock::release_script));
    ASSERT_EQ(l.on_io_error(0, 3100), errc::ok);
    ASSERT_TRUE(l.has_request(0)) << "without a resend the key would outlive the attempt by a TTL";
    const auto resent = take_request(l, 0);
    EXPECT_EQ(resent[1], sha(edgelock::release_script));
    EXPECT_EQ(resent[4], token_a_hex);
    ASSERT_EQ(l.on_io_error(0, 3100 + 30'000 + 302 - 1), errc::ok);
    EXPECT_TRUE(l.has_request(0)) << "lost again within a TTL of the claim's end: again";
    take_request(l, 0);
    ASSERT_EQ(l.on_reply(0, integer(1), 3100 + 30'000 + 302), errc::ok);
    EXPECT_FALSE(l.has_request(0));
}

// The claim left flight at the connection's drop: a TTL (and the drift allowance) later no
// key of ours can be there, and an unreachable instance must not keep the cleanup forever.
TEST(lock_release, a_stale_cleanup_stops_once_no_key_of_ours_can_be_left) {
    lock l;
    configure(l, 1);
    ASSERT_EQ(l.acquire(0, 0, token_a), errc::ok);
    take_request(l, 0);
    ASSERT_EQ(l.on_timer(3000), errc::ok);
    take_request(l, 0);
    ASSERT_EQ(l.on_io_error(0, 3100), errc::ok);  // the acquire left flight here
    take_request(l, 0);
    ASSERT_EQ(l.on_io_error(0, 3100 + 30'000 + 302), errc::ok);
    EXPECT_FALSE(l.has_request(0));
}

TEST(lock_release, a_stale_cleanup_lost_with_its_connection_is_not_resent_behind_a_newer_claim) {
    lock l;
    configure(l, 1);
    ASSERT_EQ(l.acquire(0, 5000, token_a), errc::ok);  // waiting: the attempt is retried
    take_request(l, 0);
    ASSERT_EQ(l.on_timer(3000), errc::ok);  // attempt 1 times out: cleanup queued, backing off
    take_request(l, 0);
    ASSERT_EQ(l.on_timer(l.next_deadline_ms()), errc::ok);
    take_request(l, 0);  // attempt 2, same token, behind the cleanup
    ASSERT_EQ(l.on_io_error(0, 3300), errc::ok);
    // Attempt 2 failed with the connection, and its own cleanup follows it: that one only.
    ASSERT_TRUE(l.has_request(0));
    EXPECT_EQ(take_request(l, 0)[1], sha(edgelock::release_script));
    EXPECT_FALSE(l.has_request(0)) << "the first cleanup was not queued again";
}

// ---- reentrancy ----------------------------------------------------------------------------

TEST(lock_reentrancy, nested_holds_cost_no_traffic_and_only_the_last_release_talks) {
    lock l;
    configure(l, 1);
    acquire_single(l);
    ASSERT_EQ(l.acquire(1500, 0, token_b), errc::ok);
    auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].type, event_type::acquired);
    EXPECT_EQ(events[0].valid_until_ms, 30'698);
    EXPECT_EQ(l.hold_count(), 2);
    EXPECT_FALSE(l.has_request(0));
    EXPECT_EQ(std::string(l.token_hex().data(), l.token_hex().size()), token_a_hex)
        << "the hold keeps its token";

    ASSERT_EQ(l.release(1600), errc::ok);
    EXPECT_FALSE(l.has_request(0));
    EXPECT_TRUE(take_events(l).empty());
    EXPECT_TRUE(l.held(1600));
    EXPECT_EQ(l.hold_count(), 1);

    ASSERT_EQ(l.release(1700), errc::ok);
    EXPECT_TRUE(l.has_request(0));
    EXPECT_FALSE(l.held(1700));
}

// The caller holds as far as it has heard, but the lease ran out (or the clock stepped back)
// before this acquire(): it nests in nothing, so the hold is lost and the call fails; no
// attempt starts with the new token, and release() then reports the loss.
TEST(lock_reentrancy, one_over_a_hold_that_already_ended_loses_it_and_starts_nothing) {
    for (const bool stepped_back : {false, true}) {
        SCOPED_TRACE(stepped_back ? "the clock stepped back" : "the lease ran out");
        lock l;
        configure(l, 1);
        acquire_single(l);
        const std::int64_t at = stepped_back ? 900 : l.valid_until_ms();
        EXPECT_EQ(l.acquire(at, 5000, token_b), errc::expired);
        const auto events = take_events(l);
        ASSERT_EQ(events.size(), 1u);
        EXPECT_EQ(events[0].type, event_type::lost);
        EXPECT_EQ(events[0].code, stepped_back ? errc::clock_stepped_back : errc::expired);
        EXPECT_EQ(l.state(), lock_state::lost);
        EXPECT_EQ(l.hold_count(), 0);
        EXPECT_EQ(std::string(l.token_hex().data(), l.token_hex().size()), token_a_hex)
            << "no attempt took the new token";
        while (l.has_request(0))
            EXPECT_EQ(take_request(l, 0)[1], sha(edgelock::release_script)) << "cleanup only";

        ASSERT_EQ(l.release(at), errc::ok);
        const auto released = take_events(l);
        ASSERT_EQ(released.size(), 1u);
        EXPECT_EQ(released[0].type, event_type::released);
        EXPECT_TRUE(released[0].expired_before);
    }
}

// ---- bad input -----------------------------------------------------------------------------

TEST(lock_bad_input, is_refused_with_a_code_and_leaves_the_lock_usable) {
    lock l;
    configure(l, 3);
    EXPECT_EQ(l.acquire(0, -1, token_a), errc::invalid_wait);
    EXPECT_EQ(l.acquire(0, edgelock::wait_ms_max + 1, token_a), errc::invalid_wait);
    EXPECT_EQ(l.release(0), errc::not_held);
    EXPECT_EQ(l.on_reply(0, integer(0), 0), errc::unexpected_reply) << "nothing in flight";
    EXPECT_EQ(l.on_reply(3, integer(0), 0), errc::invalid_instance);
    EXPECT_EQ(l.on_io_error(7, 0), errc::invalid_instance);
    EXPECT_EQ(l.write_request(0, nullptr, 0).code, errc::invalid_state) << "nothing queued";
    EXPECT_EQ(l.state(), lock_state::idle);

    ASSERT_EQ(l.acquire(0, 0, token_a), errc::ok);
    EXPECT_EQ(l.acquire(0, 0, token_a), errc::invalid_state) << "already acquiring";
    std::array<char, 16> tiny{};
    EXPECT_EQ(l.write_request(0, tiny.data(), tiny.size()).code, errc::buffer_too_small);
    EXPECT_TRUE(l.has_request(0)) << "a refused write keeps the request";
    for (std::uint8_t i = 0; i < 3; ++i) take_request(l, i);

    reply_node array;
    array.type = reply_type::array;
    EXPECT_EQ(l.on_reply(0, array, 1), errc::unexpected_reply);
    EXPECT_EQ(l.on_reply(1, status("OK"), 1), errc::unexpected_reply);
    EXPECT_EQ(l.on_reply(2, error("READONLY You can't write against a read only replica."), 1),
              errc::error_reply);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].code, errc::no_quorum);

    // Still usable: a fresh attempt succeeds.
    ASSERT_EQ(l.acquire(10, 0, token_b), errc::ok);
    for (std::uint8_t i = 0; i < 3; ++i) {
        while (l.has_request(i)) take_request(l, i);
    }
    for (std::uint8_t i = 0; i < 3; ++i)
        ASSERT_EQ(l.on_reply(i, integer(0), 11), errc::ok);  // cleanups
    for (std::uint8_t i = 0; i < 3; ++i)
        ASSERT_EQ(l.on_reply(i, key_was_free(), 12), errc::ok);  // acquires
    EXPECT_TRUE(l.held(12));
}

TEST(lock_bad_input, a_full_event_queue_refuses_input_until_drained) {
    lock l;
    configure(l, 1);
    acquire_single(l);
    for (int i = 0; i < 3; ++i)
        ASSERT_EQ(l.acquire(1100, 0, token_a), errc::ok);  // 3 events queued
    EXPECT_EQ(l.acquire(1100, 0, token_a), errc::events_pending)
        << "its own code, not invalid_state";
    EXPECT_EQ(l.on_timer(1100), errc::events_pending);
    EXPECT_EQ(l.on_io_error(0, 1100), errc::events_pending);
    EXPECT_EQ(l.hold_count(), 4);
    EXPECT_EQ(take_events(l).size(), 3u);
    EXPECT_EQ(l.on_timer(1100), errc::ok);
}

// ---- the caller's clock ----------------------------------------------------------------------

TEST(lock_clock, a_negative_start_counts_validity_from_that_start) {
    lock l;
    configure(l, 1);
    ASSERT_EQ(l.acquire(-100'000, 0, token_a), errc::ok);
    take_request(l, 0);
    ASSERT_EQ(l.on_reply(0, key_was_free(), -99'990), errc::ok);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].valid_until_ms, -100'000 + 30'000 - 302);
    EXPECT_FALSE(l.held(-60'000)) << "Redis expired the key near -70'000";
    EXPECT_TRUE(l.held(-70'303));
}

TEST(lock_clock, a_clock_going_backwards_ends_the_hold_at_once) {
    lock l;
    configure(l, 1);
    acquire_single(l);  // t=1000, valid until 30'698
    EXPECT_TRUE(l.held(2000));
    EXPECT_FALSE(l.held(999)) << "a reading below the last input's is not trusted";
    ASSERT_EQ(l.on_timer(500), errc::ok);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].type, event_type::lost);
    EXPECT_EQ(events[0].code, errc::clock_stepped_back);
    EXPECT_FALSE(l.held(501));
    EXPECT_FALSE(l.held(20'000)) << "never a longer lease";
    EXPECT_EQ(take_request(l, 0)[1], sha(edgelock::release_script)) << "the key is cleaned up";
    EXPECT_EQ(l.next_deadline_ms(), edgelock::no_deadline_ms);
}

TEST(lock_clock, a_wrapped_32_bit_tick_ends_a_running_acquire) {
    lock l;
    configure(l, 1);
    const std::int64_t before_wrap = 4'294'967'000;
    ASSERT_EQ(l.acquire(before_wrap, 5000, token_a), errc::ok);
    take_request(l, 0);
    ASSERT_EQ(l.on_reply(0, key_was_free(), 200), errc::ok);  // the tick wrapped to 200
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].type, event_type::acquire_failed);
    EXPECT_EQ(events[0].code, errc::clock_stepped_back);
    EXPECT_FALSE(l.held(200));
    EXPECT_EQ(l.state(), lock_state::idle);
    ASSERT_EQ(l.acquire(300, 0, token_b), errc::ok) << "usable on the new timeline";
    while (l.has_request(0)) take_request(l, 0);
    ASSERT_EQ(l.on_reply(0, integer(0), 301), errc::ok);      // the cleanup
    ASSERT_EQ(l.on_reply(0, key_was_free(), 302), errc::ok);  // the new acquire
    EXPECT_TRUE(l.held(302));
    EXPECT_EQ(l.valid_until_ms(), 300 + 30'000 - 302);
}

TEST(lock_clock, a_release_goes_on_after_the_clock_steps_back) {
    lock l;
    configure(l, 1);
    acquire_single(l);
    ASSERT_EQ(l.release(2000), errc::ok);
    take_request(l, 0);
    ASSERT_EQ(l.on_timer(100), errc::ok);
    EXPECT_EQ(l.state(), lock_state::releasing);
    EXPECT_EQ(l.next_deadline_ms(), 100 + 3000) << "its deadline on the new timeline";
    ASSERT_EQ(l.on_reply(0, integer(1), 150), errc::ok);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].type, event_type::released);
}

TEST(lock_clock, readings_beyond_the_limit_are_refused_and_the_extremes_do_not_overflow) {
    lock l;
    configure(l, 1);
    EXPECT_EQ(l.acquire(edgelock::now_ms_limit + 1, 0, token_a), errc::invalid_time);
    EXPECT_EQ(l.acquire(-edgelock::now_ms_limit - 1, 0, token_a), errc::invalid_time);
    EXPECT_EQ(l.on_timer(std::numeric_limits<std::int64_t>::max()), errc::invalid_time);
    EXPECT_EQ(l.state(), lock_state::idle);
    const std::int64_t late = edgelock::now_ms_limit - 1000;
    ASSERT_EQ(l.acquire(late, edgelock::wait_ms_max, token_a), errc::ok);
    take_request(l, 0);
    ASSERT_EQ(l.on_reply(0, key_was_free(), late + 1), errc::ok);
    EXPECT_EQ(l.valid_until_ms(), late + 30'000 - 302);
    EXPECT_GT(l.next_deadline_ms(), late);
    ASSERT_EQ(l.on_timer(edgelock::now_ms_limit), errc::ok);
}

// ---- configure() ---------------------------------------------------------------------------

TEST(lock_config_test, configure_is_refused_while_requests_are_queued_or_in_flight) {
    lock l;
    configure(l, 3);
    ASSERT_EQ(l.acquire(0, 0, token_a), errc::ok);
    take_request(l, 0);                 // in flight on instance 0; queued on 1 and 2
    ASSERT_EQ(l.release(1), errc::ok);  // cancelled: idle, with cleanups queued
    take_events(l);
    EXPECT_EQ(l.state(), lock_state::idle);
    lock_config other = config_for(5);
    other.name = "orders:43";
    EXPECT_EQ(l.configure(other), errc::invalid_state)
        << "queued requests would change name and instances";
    // Each request gets its own kind of answer: the claims nil (SET NX GET), the cleanups 1.
    std::array<std::vector<reply_node>, 3> answers;
    answers[0].push_back(key_was_free());  // the claim already in flight
    for (std::uint8_t i = 0; i < 3; ++i) {
        while (l.has_request(i)) {
            const bool claim = take_request(l, i)[0] == "SET";
            answers[i].push_back(claim ? key_was_free() : integer(1));
        }
    }
    for (std::uint8_t i = 0; i < 3; ++i) {
        for (const reply_node& answer : answers[i]) ASSERT_EQ(l.on_reply(i, answer, 2), errc::ok);
    }
    EXPECT_EQ(l.configure(other), errc::ok) << "nothing left in flight";
    EXPECT_EQ(l.instance_count(), 5);
}

TEST(lock_config_test, every_duration_is_bounded_whatever_the_flags) {
    lock l;
    lock_config config = config_for(1);
    config.watchdog = false;
    config.renew_interval_ms = std::numeric_limits<std::int64_t>::max();
    EXPECT_EQ(l.configure(config), errc::invalid_config);
    config.renew_interval_ms = 0;
    config.replica_wait_ms = std::numeric_limits<std::int64_t>::max();
    EXPECT_EQ(l.configure(config), errc::invalid_config) << "even without replicas_to_wait";
    config.replica_wait_ms = 0;
    config.drift_ms = 0;
    ASSERT_EQ(l.configure(config), errc::ok) << "drift 0 is no allowance, not the default";
    ASSERT_EQ(l.acquire(0, 0, token_a), errc::ok);
    take_request(l, 0);
    ASSERT_EQ(l.on_reply(0, key_was_free(), 1), errc::ok);
    EXPECT_EQ(l.valid_until_ms(), 30'000);
}

// ---- cancelling ------------------------------------------------------------------------------

TEST(lock_acquire, cancelling_during_backoff_queues_no_second_cleanup) {
    lock l;
    configure(l, 1);
    ASSERT_EQ(l.acquire(0, 10'000, token_a), errc::ok);  // the claim stays unwritten
    ASSERT_EQ(l.on_timer(3000), errc::ok);               // the attempt times out: cleanup queued
    EXPECT_EQ(l.state(), lock_state::backing_off);
    ASSERT_EQ(l.release(3001), errc::ok);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].code, errc::cancelled);
    EXPECT_EQ(take_request(l, 0), set_nx_request(token_a_hex));
    EXPECT_EQ(take_request(l, 0)[1], sha(edgelock::release_script));
    EXPECT_FALSE(l.has_request(0)) << "one cleanup per attempt";
}

TEST(lock_acquire, a_fresh_acquire_after_a_cancel_behaves_like_one_from_idle) {
    lock l;
    configure(l, 1);
    ASSERT_EQ(l.acquire(0, 10'000, token_a), errc::ok);
    ASSERT_EQ(l.on_timer(3000), errc::ok);
    ASSERT_EQ(l.release(3001), errc::ok);
    take_events(l);
    ASSERT_EQ(l.acquire(3002, 0, token_b), errc::ok);
    EXPECT_TRUE(take_events(l).empty()) << "not failed at once for want of queue room";
    EXPECT_EQ(l.state(), lock_state::acquiring);
    take_request(l, 0);
    take_request(l, 0);
    EXPECT_EQ(take_request(l, 0), set_nx_request(token_b_hex));
}

// ---- requests given up unwritten (give_up_unsent) ------------------------------------------

TEST(lock_give_up_unsent,
     an_unwritten_acquire_fails_at_once_and_its_cleanup_waits_for_a_connection) {
    lock l;
    configure(l, 1);
    ASSERT_EQ(l.acquire(0, 0, token_a), errc::ok);
    ASSERT_EQ(l.give_up_unsent(0, 10), errc::ok);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].type, event_type::acquire_failed);
    EXPECT_EQ(events[0].code, errc::no_quorum) << "at once, not at the round's deadline";
    EXPECT_EQ(l.state(), lock_state::idle);
    ASSERT_TRUE(l.has_request(0)) << "the attempt's cleanup is queued for the next connection";
    const auto cleanup = take_request(l, 0);
    EXPECT_EQ(cleanup[1], sha(edgelock::release_script));
    EXPECT_EQ(cleanup[4], token_a_hex);
    EXPECT_FALSE(l.has_request(0));
}

TEST(lock_give_up_unsent, a_release_queued_unwritten_is_queued_again_as_on_io_error_does) {
    lock l;
    configure(l, 1);
    acquire_single(l);
    ASSERT_EQ(l.release(2000), errc::ok);
    ASSERT_EQ(l.give_up_unsent(0, 2001), errc::ok);
    EXPECT_TRUE(take_events(l).empty());
    EXPECT_EQ(l.state(), lock_state::releasing);
    ASSERT_TRUE(l.has_request(0));
    const auto again = take_request(l, 0);
    EXPECT_EQ(again[1], sha(edgelock::release_script));
    EXPECT_EQ(again[4], token_a_hex);
    EXPECT_FALSE(l.has_request(0)) << "once";
    ASSERT_EQ(l.on_reply(0, integer(1), 2010), errc::ok);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].type, event_type::released);
    EXPECT_EQ(events[0].instances_released, 1);
}

TEST(lock_give_up_unsent, a_stale_cleanup_goes_again_only_while_a_key_of_ours_can_be_left) {
    lock l;
    configure(l, 1);
    ASSERT_EQ(l.acquire(0, 0, token_a), errc::ok);
    take_request(l, 0);
    ASSERT_EQ(l.on_timer(3000), errc::ok);  // acquire_failed(no_quorum): cleanup queued
    take_events(l);
    ASSERT_EQ(l.give_up_unsent(0, 3100), errc::ok);  // the acquire in flight left flight here
    ASSERT_TRUE(l.has_request(0));
    EXPECT_EQ(take_request(l, 0)[1], sha(edgelock::release_script));
    EXPECT_FALSE(l.has_request(0)) << "the lost acquire is not sent again";
    ASSERT_EQ(l.give_up_unsent(0, 3100 + 30'000 + 302 - 1),
              errc::ok);  // nothing unsent: on_io_error
    ASSERT_TRUE(l.has_request(0));
    ASSERT_EQ(l.give_up_unsent(0, 3100 + 30'000 + 302), errc::ok);
    EXPECT_FALSE(l.has_request(0)) << "a TTL and the drift after the claim no key can be left";
}

TEST(lock_give_up_unsent, only_the_named_instance_gives_up_and_the_others_still_reach_a_quorum) {
    lock l;
    configure(l, 3);
    ASSERT_EQ(l.acquire(0, 0, token_a), errc::ok);
    take_request(l, 0);  // in flight on instance 0; 1 and 2 not yet written
    ASSERT_EQ(l.give_up_unsent(1, 5), errc::ok);
    EXPECT_TRUE(take_events(l).empty());
    EXPECT_EQ(l.state(), lock_state::acquiring);
    EXPECT_TRUE(l.has_request(2));
    take_request(l, 2);
    ASSERT_EQ(l.on_reply(0, key_was_free(), 10), errc::ok);
    ASSERT_EQ(l.on_reply(2, key_was_free(), 11), errc::ok);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].type, event_type::acquired);
    EXPECT_EQ(events[0].valid_until_ms, 30'000 - 302);
    EXPECT_FALSE(l.has_request(1)) << "instance 1 never took the key: nothing to clean up";
}

TEST(lock_give_up_unsent, a_refused_call_gives_up_nothing) {
    lock unconfigured;
    EXPECT_EQ(unconfigured.give_up_unsent(0, 0), errc::invalid_state);

    lock l;
    configure(l, 1);
    acquire_single(l);
    ASSERT_EQ(l.release(2000), errc::ok);
    EXPECT_EQ(l.give_up_unsent(1, 2001), errc::invalid_instance);
    EXPECT_EQ(l.give_up_unsent(0, edgelock::now_ms_limit + 1), errc::invalid_time);
    EXPECT_TRUE(l.has_request(0));

    lock full;
    configure(full, 1);
    acquire_single(full);
    ASSERT_EQ(full.on_timer(11'000), errc::ok);  // the renewal is queued
    for (int i = 0; i < 3; ++i) ASSERT_EQ(full.acquire(11'000, 0, token_a), errc::ok);  // 3 events
    EXPECT_EQ(full.give_up_unsent(0, 11'001), errc::events_pending);
    ASSERT_TRUE(full.has_request(0)) << "the renewal still waits to be written";
    EXPECT_EQ(take_events(full).size(), 3u);
    EXPECT_EQ(take_request(full, 0)[1], sha(edgelock::renew_script));
}

// The call's whole effect is that of writing every queued request nowhere and then calling
// on_io_error (how the session gave them up before the call existed): driven alike by random
// calls, a lock that gives up either way says and writes the same from then on.
class give_up_twins {
public:
    explicit give_up_twins(const lock_config& config) {
        RC_ASSERT(written_nowhere_.configure(config) == errc::ok);
        RC_ASSERT(dropped_.configure(config) == errc::ok);
        instances_ = config.instances;
    }

    template <typename Call>
    void both(const Call& call) {
        RC_ASSERT(call(written_nowhere_) == call(dropped_));
        compare();
    }

    void give_up(std::uint8_t instance, std::int64_t now_ms) {
        std::array<char, edgelock::request_bytes_max> out{};
        for (std::size_t n = 0; n < edgelock::requests_per_instance_max; ++n) {
            if (!written_nowhere_.has_request(instance)) break;
            const auto written = written_nowhere_.write_request(instance, out.data(), out.size());
            RC_ASSERT(written.code == errc::ok);
        }
        const errc old_way = written_nowhere_.on_io_error(instance, now_ms);
        RC_ASSERT(old_way == dropped_.give_up_unsent(instance, now_ms));
        compare();
    }

    void write(std::uint8_t instance) {
        std::array<char, edgelock::request_bytes_max> one{};
        std::array<char, edgelock::request_bytes_max> other{};
        const auto a = written_nowhere_.write_request(instance, one.data(), one.size());
        const auto b = dropped_.write_request(instance, other.data(), other.size());
        RC_ASSERT(a.code == b.code);
        RC_ASSERT(std::string_view(one.data(), a.size) == std::string_view(other.data(), b.size));
        compare();
    }

    std::int64_t next_deadline_ms() const { return dropped_.next_deadline_ms(); }
    std::string token_hex() const {
        const auto hex = dropped_.token_hex();
        return std::string(hex.data(), hex.size());
    }

private:
    void compare() {
        event a;
        event b;
        for (;;) {
            const bool more = written_nowhere_.poll_event(a);
            RC_ASSERT(more == dropped_.poll_event(b));
            if (!more) break;
            RC_ASSERT(a.type == b.type);
            RC_ASSERT(a.code == b.code);
            RC_ASSERT(a.cause == b.cause);
            RC_ASSERT(a.expired_before == b.expired_before);
            RC_ASSERT(a.instances_released == b.instances_released);
            RC_ASSERT(a.fence == b.fence);
            RC_ASSERT(a.valid_until_ms == b.valid_until_ms);
            RC_ASSERT(a.guard_until_ms == b.guard_until_ms);
        }
        RC_ASSERT(written_nowhere_.state() == dropped_.state());
        RC_ASSERT(written_nowhere_.next_deadline_ms() == dropped_.next_deadline_ms());
        RC_ASSERT(written_nowhere_.valid_until_ms() == dropped_.valid_until_ms());
        RC_ASSERT(written_nowhere_.fence() == dropped_.fence());
        RC_ASSERT(written_nowhere_.hold_count() == dropped_.hold_count());
        RC_ASSERT(written_nowhere_.attempts() == dropped_.attempts());
        RC_ASSERT(written_nowhere_.last_cause() == dropped_.last_cause());
        RC_ASSERT(written_nowhere_.wants_wake_ups() == dropped_.wants_wake_ups());
        for (std::uint8_t i = 0; i < instances_; ++i) {
            RC_ASSERT(written_nowhere_.has_request(i) == dropped_.has_request(i));
        }
    }

    lock written_nowhere_;
    lock dropped_;
    std::uint8_t instances_ = 1;
};

reply_node some_reply(int which, const std::string& our_token) {
    switch (which) {
        case 0: return integer(0);
        case 1: return integer(1);
        case 2: return integer(2);
        case 3: return nil();
        case 4: return bulk(our_token);
        case 5: return bulk("ffffffffffffffffffffffffffffffff");
        case 6: return bulk("7");
        case 7: return error("NOSCRIPT No matching script.");
        case 8: return error("ERR syntax error");
        default: return error("FENCE_EXHAUSTED");
    }
}

RC_GTEST_PROP(lock_give_up_unsent, acts_as_writing_the_queue_nowhere_before_an_io_error, ()) {
    const auto instances = *rc::gen::element<std::uint8_t>(1, 3);
    lock_config config = config_for(instances, *rc::gen::arbitrary<bool>());
    config.fair = config.instances == 1 && *rc::gen::arbitrary<bool>();
    config.replicas_to_wait = *rc::gen::element<std::uint8_t>(0, 0, 1);
    config.watchdog = *rc::gen::arbitrary<bool>();
    give_up_twins twins(config);
    std::int64_t now = 0;
    std::uint8_t serial = 0;
    const int steps = *rc::gen::inRange(1, 80);
    for (int step = 0; step < steps; ++step) {
        const auto i = *rc::gen::inRange<std::uint8_t>(0, config.instances);
        const int op = *rc::gen::inRange(0, 12);
        if (op == 0) {
            edgelock::owner_token token = token_a;
            token[0] = ++serial;
            const std::int64_t wait = *rc::gen::element<std::int64_t>(0, 5'000, 40'000);
            twins.both([&](lock& l) { return l.acquire(now, wait, token); });
        } else if (op == 1) {
            twins.both([&](lock& l) { return l.release(now); });
        } else if (op <= 4) {
            twins.write(i);
        } else if (op <= 6) {
            const std::string ours = twins.token_hex();  // the reply's text views it
            const reply_node reply = some_reply(*rc::gen::inRange(0, 10), ours);
            twins.both([&](lock& l) { return l.on_reply(i, reply, now); });
        } else if (op == 7) {
            twins.both([&](lock& l) { return l.on_io_error(i, now); });
        } else if (op <= 9) {
            twins.give_up(i, now);
        } else if (op == 10) {
            edgelock::node_start start;
            start.started_ms = now - *rc::gen::inRange<std::int64_t>(0, 60'000);
            start.durable = *rc::gen::arbitrary<bool>();
            start.restarted = *rc::gen::arbitrary<bool>();
            twins.both([&](lock& l) { return l.on_node_started(i, start, now); });
        } else {
            const std::string message = *rc::gen::arbitrary<bool>() ? twins.token_hex() : "";
            twins.both([&](lock& l) { return l.on_wake(now, message); });
        }
        const int clock = *rc::gen::inRange(0, 10);
        if (clock < 6) {
            now += *rc::gen::inRange<std::int64_t>(0, 2'000);
        } else if (clock < 9 && twins.next_deadline_ms() != edgelock::no_deadline_ms) {
            now = std::max(now, twins.next_deadline_ms());  // exactly when work comes due
        } else if (clock == 9) {
            now -= *rc::gen::inRange<std::int64_t>(0, 100);  // now and then a step back
        }
    }
}

}  // namespace
