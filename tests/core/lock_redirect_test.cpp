// SPDX-License-Identifier: Apache-2.0
// lock::on_redirect: a request Redis Cluster redirected (MOVED, ASK) did not run, so it goes
// again, for whichever node the caller routes it to, and its round keeps its start.
#include <gtest/gtest.h>

#include "lock_driving.hpp"

namespace {

using namespace lock_driving;

TEST(lock_redirect, the_acquire_goes_again_and_validity_counts_from_the_first_send) {
    lock l;
    configure(l, 1);
    ASSERT_EQ(l.acquire(1000, 0, token_a), errc::ok);
    EXPECT_EQ(take_request(l, 0), set_nx_request(token_a_hex));
    EXPECT_EQ(l.requests_in_flight(0), 1);
    ASSERT_EQ(l.on_redirect(0, 1400), errc::ok);
    EXPECT_EQ(l.requests_in_flight(0), 0);
    EXPECT_TRUE(take_events(l).empty()) << "a redirect decides nothing";
    ASSERT_TRUE(l.has_request(0));
    EXPECT_EQ(take_request(l, 0), set_nx_request(token_a_hex)) << "the same request, same token";
    ASSERT_EQ(l.on_reply(0, key_was_free(), 1500), errc::ok);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].type, event_type::acquired);
    EXPECT_EQ(events[0].valid_until_ms, 1000 + 30'000 - 302) << "from before the first send";
}

TEST(lock_redirect, a_script_goes_again_in_the_form_it_was_sent) {
    lock l;
    configure(l, 1, true);
    ASSERT_EQ(l.acquire(0, 0, token_a), errc::ok);
    ASSERT_EQ(take_request(l, 0)[1], sha(edgelock::acquire_script));
    ASSERT_EQ(l.on_redirect(0, 1), errc::ok);
    const auto resent = take_request(l, 0);
    EXPECT_EQ(resent[0], "EVALSHA") << "the new node may have the script: NOSCRIPT decides";
    EXPECT_EQ(resent[1], sha(edgelock::acquire_script));
    ASSERT_EQ(l.on_reply(0, bulk("1"), 2), errc::ok);
    EXPECT_TRUE(l.held(2));
}

// A cancelled attempt's acquire did not run and no longer matters: only its cleanup goes
// again, which deletes nothing but our token.
TEST(lock_redirect, a_cancelled_acquire_is_dropped_and_its_cleanup_goes_again) {
    lock l;
    configure(l, 1);
    ASSERT_EQ(l.acquire(0, 0, token_a), errc::ok);
    take_request(l, 0);
    ASSERT_EQ(l.release(10), errc::ok);  // cancels: the cleanup follows the acquire
    take_events(l);
    const auto cleanup = take_request(l, 0);
    ASSERT_EQ(cleanup[1], sha(edgelock::release_script));
    ASSERT_EQ(l.requests_in_flight(0), 2);
    ASSERT_EQ(l.on_redirect(0, 20), errc::ok);
    EXPECT_FALSE(l.has_request(0)) << "the cancelled acquire is not sent again";
    ASSERT_EQ(l.on_redirect(0, 20), errc::ok);
    EXPECT_EQ(take_request(l, 0), cleanup);
    EXPECT_FALSE(l.has_request(0));
}

TEST(lock_redirect, renewal_and_release_go_again) {
    lock l;
    configure(l, 1);
    acquire_single(l);
    ASSERT_EQ(l.on_timer(11'000), errc::ok);
    const auto renew = take_request(l, 0);
    ASSERT_EQ(renew[1], sha(edgelock::renew_script));
    ASSERT_EQ(l.on_redirect(0, 11'010), errc::ok);
    EXPECT_EQ(take_request(l, 0), renew);
    ASSERT_EQ(l.on_reply(0, integer(1), 11'020), errc::ok);
    const auto renewed = take_events(l);
    ASSERT_EQ(renewed.size(), 1u);
    EXPECT_EQ(renewed[0].type, event_type::renewed);
    EXPECT_EQ(renewed[0].valid_until_ms, 11'000 + 30'000 - 302) << "from the renewal's first send";

    ASSERT_EQ(l.release(12'000), errc::ok);
    const auto release = take_request(l, 0);
    ASSERT_EQ(l.on_redirect(0, 12'010), errc::ok);
    EXPECT_EQ(take_request(l, 0), release);
    ASSERT_EQ(l.on_reply(0, integer(1), 12'020), errc::ok);
    const auto released = take_events(l);
    ASSERT_EQ(released.size(), 1u);
    EXPECT_EQ(released[0].type, event_type::released);
}

// A cleanup of an earlier acquire() whose token slot a later acquire() took meanwhile cannot
// be told from a newer claim any more: re-sent, it could delete the newer key.
TEST(lock_redirect, a_stale_cleanup_is_not_resent_behind_a_newer_claim_of_the_same_token) {
    lock l;
    configure(l, 1);
    ASSERT_EQ(l.acquire(0, 5000, token_a), errc::ok);
    take_request(l, 0);
    ASSERT_EQ(l.on_timer(3000), errc::ok);  // attempt 1 times out: cleanup queued
    take_request(l, 0);                     // the cleanup goes out
    ASSERT_EQ(l.on_timer(l.next_deadline_ms()), errc::ok);
    take_request(l, 0);                           // attempt 2, same token, behind the cleanup
    ASSERT_EQ(l.on_redirect(0, 3200), errc::ok);  // attempt 1's acquire: not current, dropped
    ASSERT_EQ(l.on_redirect(0, 3201), errc::ok);  // the cleanup
    EXPECT_FALSE(l.has_request(0)) << "behind attempt 2's SET it would delete attempt 2's key";
}

TEST(lock_redirect, refused_without_a_request_in_flight_or_for_a_bad_instance) {
    lock l;
    EXPECT_EQ(l.on_redirect(0, 0), errc::invalid_state) << "unconfigured";
    configure(l, 1);
    EXPECT_EQ(l.on_redirect(0, 0), errc::unexpected_reply);
    EXPECT_EQ(l.on_redirect(1, 0), errc::invalid_instance);
    EXPECT_EQ(l.requests_in_flight(1), 0);
    ASSERT_EQ(l.acquire(10, 0, token_a), errc::ok);
    EXPECT_EQ(l.on_redirect(0, edgelock::now_ms_limit + 1), errc::invalid_time);
    EXPECT_EQ(l.requests_in_flight(0), 0) << "queued, not yet written";
}

// A lock whose event queue is full takes no input: the redirected request stays in flight,
// and is queued again once the caller drained the events and hands the redirect over again.
TEST(lock_redirect, refused_while_events_are_pending_and_takes_nothing) {
    lock l;
    configure(l, 1);
    acquire_single(l);
    ASSERT_EQ(l.on_timer(11'000), errc::ok);
    const auto renew = take_request(l, 0);
    for (int i = 0; i < 3; ++i) ASSERT_EQ(l.acquire(11'001, 0, token_a), errc::ok);  // 3 events
    EXPECT_EQ(l.on_redirect(0, 11'002), errc::events_pending);
    EXPECT_EQ(l.requests_in_flight(0), 1);
    EXPECT_FALSE(l.has_request(0));
    EXPECT_EQ(take_events(l).size(), 3u);
    ASSERT_EQ(l.on_redirect(0, 11'003), errc::ok);
    EXPECT_EQ(l.requests_in_flight(0), 0);
    EXPECT_EQ(take_request(l, 0), renew);
}

}  // namespace
