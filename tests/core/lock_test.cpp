// SPDX-License-Identifier: Apache-2.0
// Each state transition of the lock, driven by literal timestamps and scripted replies:
// configuration, acquire, fencing and WAIT (lock_hold_test.cpp has the lock once held).
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

// ---- configuration -----------------------------------------------------------------------

TEST(lock_config_test, rejects_bad_input_and_keeps_the_previous_configuration) {
    lock l;
    lock_config config = config_for(1);
    EXPECT_EQ(l.acquire(0, 0, token_a), errc::invalid_state) << "unconfigured";

    config.name = "";
    EXPECT_EQ(l.configure(config), errc::invalid_name);
    const std::string long_name(edgelock::name_bytes_max + 1, 'x');
    config.name = long_name;
    EXPECT_EQ(l.configure(config), errc::invalid_name);
    config = config_for(1);
    for (std::int64_t ttl : {std::int64_t{0}, std::int64_t{-5}, edgelock::ttl_ms_max + 1}) {
        config.ttl_ms = ttl;
        EXPECT_EQ(l.configure(config), errc::invalid_ttl) << ttl;
    }
    config = config_for(1);
    for (std::uint8_t n : {0, 2, 4, 9}) {
        config.instances = n;
        EXPECT_EQ(l.configure(config), errc::invalid_instances) << int{n};
    }
    config = config_for(1);
    config.drift_ms = 30'000;
    EXPECT_EQ(l.configure(config), errc::invalid_config) << "drift eats the whole lease";
    config = config_for(1);
    config.renew_interval_ms = 29'800;
    EXPECT_EQ(l.configure(config), errc::invalid_config) << "renewal after validity ends";
    EXPECT_EQ(l.state(), lock_state::unconfigured);

    const std::string max_name(edgelock::name_bytes_max, 'n');
    config = config_for(1);
    config.name = max_name;
    EXPECT_EQ(l.configure(config), errc::ok);
    EXPECT_EQ(l.name(), max_name);
    config.name = "";
    EXPECT_EQ(l.configure(config), errc::invalid_name);
    EXPECT_EQ(l.name(), max_name) << "a refused configure() changes nothing";
}

TEST(lock_config_test, a_name_that_is_another_locks_fence_key_is_refused) {
    // "{x}:fence" is lock "x"'s fence counter, a key with no TTL: as a lock it would look held
    // forever, and lock "x" with fencing could never take its counter again.
    lock l;
    lock_config config = config_for(1);
    for (const std::string_view name : {"{x}:fence", "jobs{eu}:nightly:fence", "{BN@B}x}y:fence"}) {
        config.name = name;
        EXPECT_EQ(l.configure(config), errc::invalid_name) << name;
    }
    EXPECT_EQ(l.state(), lock_state::unconfigured);
    for (const std::string_view name :
         {"x:fence", "db:fence", "{}:fence", "{x}:fence:2", ":fence"}) {
        config.name = name;
        EXPECT_EQ(l.configure(config), errc::ok) << name << " is no lock's fence key";
    }
}

TEST(lock_config_test, configure_is_refused_while_busy) {
    lock l;
    configure(l, 1);
    ASSERT_EQ(l.acquire(0, 0, token_a), errc::ok);
    EXPECT_EQ(l.configure(config_for(3)), errc::invalid_state);
    EXPECT_EQ(l.instance_count(), 1);
}

TEST(lock_config_test, quorum_is_a_majority) {
    for (std::uint8_t n : {1, 3, 5, 7}) {
        lock l;
        configure(l, n);
        EXPECT_EQ(l.quorum(), n / 2 + 1) << int{n};
    }
}

// ---- acquire -----------------------------------------------------------------------------

TEST(lock_acquire, single_instance_success) {
    lock l;
    configure(l, 1);
    ASSERT_EQ(l.acquire(1000, 0, token_a), errc::ok);
    EXPECT_EQ(l.state(), lock_state::acquiring);
    ASSERT_TRUE(l.has_request(0));
    EXPECT_EQ(take_request(l, 0), set_nx_request(token_a_hex));
    EXPECT_FALSE(l.has_request(0));
    EXPECT_EQ(l.next_deadline_ms(), 1000 + 3000) << "attempt timeout ttl/10";

    ASSERT_EQ(l.on_reply(0, key_was_free(), 1040), errc::ok);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].type, event_type::acquired);
    EXPECT_EQ(events[0].fence, 0);
    // Validity is measured from the instant before the request went out, not the reply.
    EXPECT_EQ(events[0].valid_until_ms, 1000 + 30'000 - 302);
    EXPECT_TRUE(l.held(1040));
    EXPECT_TRUE(l.held(30'697));
    EXPECT_FALSE(l.held(30'698));
    EXPECT_EQ(l.hold_count(), 1);
    EXPECT_EQ(l.next_deadline_ms(), 1000 + 10'000) << "first renewal at ttl/3";
}

TEST(lock_acquire, contention_fails_with_busy_and_sends_no_cleanup) {
    lock l;
    configure(l, 1);
    ASSERT_EQ(l.acquire(1000, 0, token_a), errc::ok);
    take_request(l, 0);
    ASSERT_EQ(l.on_reply(0, key_held_by(token_b_hex), 1002), errc::ok);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].type, event_type::acquire_failed);
    EXPECT_EQ(events[0].code, errc::busy);
    EXPECT_EQ(l.state(), lock_state::idle);
    EXPECT_FALSE(l.has_request(0)) << "the key holds another token: nothing to clean up";
    EXPECT_FALSE(l.held(1002));
}

TEST(lock_acquire, redlock_holds_as_soon_as_a_quorum_agrees) {
    lock l;
    configure(l, 5);
    ASSERT_EQ(l.acquire(0, 0, token_a), errc::ok);
    for (std::uint8_t i = 0; i < 5; ++i) {
        ASSERT_TRUE(l.has_request(i));
        take_request(l, i);
    }
    ASSERT_EQ(l.on_reply(0, key_was_free(), 5), errc::ok);
    ASSERT_EQ(l.on_reply(1, key_held_by(token_b_hex), 6), errc::ok);
    ASSERT_EQ(l.on_reply(2, key_was_free(), 7), errc::ok);
    EXPECT_TRUE(take_events(l).empty()) << "2 of 5 is no quorum";
    ASSERT_EQ(l.on_reply(3, key_was_free(), 9), errc::ok);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].type, event_type::acquired);
    EXPECT_EQ(events[0].valid_until_ms, 30'000 - 302);
    // The straggler's late answer changes nothing.
    ASSERT_EQ(l.on_reply(4, key_was_free(), 20), errc::ok);
    EXPECT_TRUE(take_events(l).empty());
    EXPECT_TRUE(l.held(20));
}

TEST(lock_acquire, redlock_without_quorum_releases_everywhere_it_may_have_written) {
    lock l;
    configure(l, 5);
    ASSERT_EQ(l.acquire(0, 0, token_a), errc::ok);
    for (std::uint8_t i = 0; i < 5; ++i) take_request(l, i);
    ASSERT_EQ(l.on_reply(0, key_was_free(), 5), errc::ok);
    ASSERT_EQ(l.on_reply(1, key_held_by(token_b_hex), 6), errc::ok);
    ASSERT_EQ(l.on_reply(2, key_held_by(token_b_hex), 7), errc::ok);
    ASSERT_EQ(l.on_reply(3, key_held_by(token_b_hex), 8),
              errc::ok);  // 3 refusals: quorum out of reach
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].code, errc::busy);
    // Instance 0 took our SET; instance 4 has not answered and may have. Both get a
    // compare-and-delete; the refusing ones hold someone else's token and get nothing.
    EXPECT_TRUE(l.has_request(0));
    EXPECT_TRUE(l.has_request(4));
    EXPECT_FALSE(l.has_request(1));
    EXPECT_FALSE(l.has_request(2));
    EXPECT_FALSE(l.has_request(3));
    EXPECT_EQ(take_request(l, 0),
              (std::vector<std::string>{"EVALSHA", sha(edgelock::release_script), "1", "orders:42",
                                        token_a_hex}));
}

TEST(lock_acquire, timeout_fails_with_no_quorum_and_cleans_up_behind_the_request) {
    lock l;
    configure(l, 1);
    ASSERT_EQ(l.acquire(1000, 0, token_a), errc::ok);
    take_request(l, 0);
    ASSERT_EQ(l.on_timer(3999), errc::ok);
    EXPECT_TRUE(take_events(l).empty());
    ASSERT_EQ(l.on_timer(4000), errc::ok);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].type, event_type::acquire_failed);
    EXPECT_EQ(events[0].code, errc::no_quorum);
    // The SET may still land: a release follows it on the same connection.
    ASSERT_TRUE(l.has_request(0));
    EXPECT_EQ(take_request(l, 0)[1], sha(edgelock::release_script));
    // The late acquire reply is stale: it is consumed and ignored.
    ASSERT_EQ(l.on_reply(0, key_was_free(), 4100), errc::ok);
    EXPECT_TRUE(take_events(l).empty());
    EXPECT_FALSE(l.held(4100));
    ASSERT_EQ(l.on_reply(0, integer(1), 4101), errc::ok);
    EXPECT_TRUE(take_events(l).empty());
}

TEST(lock_acquire, a_quorum_that_answers_after_validity_is_not_a_hold) {
    lock_config config = config_for(1);
    config.ttl_ms = 1000;  // drift 12 ms: validity ends at t0 + 988
    config.attempt_timeout_ms = 1000;
    lock l;
    ASSERT_EQ(l.configure(config), errc::ok);
    ASSERT_EQ(l.acquire(0, 0, token_a), errc::ok);
    take_request(l, 0);
    EXPECT_EQ(l.next_deadline_ms(), 988) << "the attempt ends when validity would";
    ASSERT_EQ(l.on_reply(0, key_was_free(), 988), errc::ok);
    auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].type, event_type::acquire_failed);
    EXPECT_EQ(events[0].code, errc::validity_expired);
    EXPECT_FALSE(l.held(988));

    // One millisecond earlier, the same reply is a hold of one millisecond.
    ASSERT_EQ(l.acquire(2000, 0, token_b), errc::ok);
    take_request(l, 0);  // the cleanup release of the first attempt
    take_request(l, 0);
    ASSERT_EQ(l.on_reply(0, integer(1), 2001), errc::ok);  // the release
    ASSERT_EQ(l.on_reply(0, key_was_free(), 2987), errc::ok);
    events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].type, event_type::acquired);
    EXPECT_EQ(events[0].valid_until_ms, 2988);
}

TEST(lock_acquire, waiting_retries_with_jittered_backoff_until_the_deadline) {
    lock l;
    configure(l, 1);
    ASSERT_EQ(l.acquire(0, 500, token_a), errc::ok);
    std::int64_t now = 0;
    int attempts = 0;
    for (; attempts < 100 && l.state() != lock_state::idle; ++attempts) {
        ASSERT_TRUE(l.has_request(0));
        take_request(l, 0);
        now += 1;
        ASSERT_EQ(l.on_reply(0, key_held_by(token_b_hex), now), errc::ok);
        if (l.state() != lock_state::backing_off) break;
        const std::int64_t retry_at = l.next_deadline_ms();
        EXPECT_GT(retry_at, now);
        EXPECT_LE(retry_at, std::min<std::int64_t>(now + 1000, 500));
        now = retry_at;
        ASSERT_EQ(l.on_timer(now), errc::ok);
    }
    EXPECT_GT(attempts, 2) << "several attempts fit in 500 ms with a 50 ms base";
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].type, event_type::acquire_failed);
    EXPECT_EQ(events[0].code, errc::wait_timeout);
    EXPECT_EQ(events[0].cause, errc::busy);
    EXPECT_LE(now, 501);
}

TEST(lock_acquire, a_retry_that_wins_holds_the_lock) {
    lock l;
    configure(l, 1);
    ASSERT_EQ(l.acquire(0, 10'000, token_a), errc::ok);
    take_request(l, 0);
    ASSERT_EQ(l.on_reply(0, key_held_by(token_b_hex), 2), errc::ok);
    ASSERT_EQ(l.state(), lock_state::backing_off);
    const std::int64_t retry_at = l.next_deadline_ms();
    ASSERT_EQ(l.on_timer(retry_at), errc::ok);
    EXPECT_EQ(take_request(l, 0), set_nx_request(token_a_hex)) << "retries keep the token";
    ASSERT_EQ(l.on_reply(0, key_was_free(), retry_at + 3), errc::ok);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].type, event_type::acquired);
    EXPECT_EQ(events[0].valid_until_ms, retry_at + 30'000 - 302)
        << "validity from the winning attempt";
}

// With fencing the acquire is always the script (lock.hpp, "The acquire on the wire").
TEST(lock_acquire, noscript_resends_the_script_text) {
    lock l;
    configure(l, 1, true);
    ASSERT_EQ(l.acquire(0, 0, token_a), errc::ok);
    ASSERT_EQ(take_request(l, 0)[1], sha(edgelock::acquire_script));
    ASSERT_EQ(l.on_reply(0, error("NOSCRIPT No matching script. Please use EVAL."), 1), errc::ok);
    ASSERT_TRUE(l.has_request(0));
    const auto resent = take_request(l, 0);
    EXPECT_EQ(resent[0], "EVAL");
    EXPECT_EQ(resent[1], std::string(edgelock::acquire_script.text));
    EXPECT_EQ(resent[3], "orders:42");
    ASSERT_EQ(l.on_reply(0, bulk("1"), 2), errc::ok);
    EXPECT_TRUE(l.held(2));
}

TEST(lock_acquire, io_error_counts_as_a_failed_instance) {
    lock l;
    configure(l, 3);
    ASSERT_EQ(l.acquire(0, 0, token_a), errc::ok);
    for (std::uint8_t i = 0; i < 3; ++i) take_request(l, i);
    ASSERT_EQ(l.on_io_error(0, 1), errc::ok);
    ASSERT_EQ(l.on_reply(1, key_was_free(), 2), errc::ok);
    EXPECT_TRUE(take_events(l).empty());
    ASSERT_EQ(l.on_io_error(2, 3), errc::ok);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].code, errc::no_quorum);
    // The lost requests may have run: every instance but none gets a cleanup release.
    for (std::uint8_t i = 0; i < 3; ++i) EXPECT_TRUE(l.has_request(i)) << int{i};
}

TEST(lock_acquire, release_while_acquiring_cancels) {
    lock l;
    configure(l, 1);
    ASSERT_EQ(l.acquire(0, 5000, token_a), errc::ok);
    take_request(l, 0);
    ASSERT_EQ(l.release(3), errc::ok);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].type, event_type::acquire_failed);
    EXPECT_EQ(events[0].code, errc::cancelled);
    EXPECT_EQ(take_request(l, 0)[1], sha(edgelock::release_script));
    ASSERT_EQ(l.on_reply(0, key_was_free(), 4), errc::ok);  // the acquire did land
    EXPECT_FALSE(l.held(4)) << "a cancelled acquire never becomes a hold";
    EXPECT_EQ(l.state(), lock_state::idle);
}

// ---- the acquire on the wire (lock.hpp, "The acquire on the wire") ---------------------------

// An EVALSHA of a one-key script carrying the token and the TTL: the acquire script without
// fencing (a server before 7.0), or the renew script.
std::vector<std::string> script_request(const edgelock::script& s, std::string_view token_hex) {
    return {"EVALSHA", sha(s), "1", "orders:42", std::string(token_hex), "30000"};
}

// The same as EVAL, with the script's text.
std::vector<std::string> script_text_request(const edgelock::script& s,
                                             std::string_view token_hex) {
    return {"EVAL", std::string(s.text), "1", "orders:42", std::string(token_hex), "30000"};
}

// How Redis before 7.0 refuses SET with both NX and GET.
reply_node syntax_error() { return error("ERR syntax error"); }

// A retry whose first attempt's reply was lost: attempt 1's SET went out and its connection
// dropped; on the next connection its cleanup found nothing (that SET, still in the server's
// input, ran later). Attempt 2 starts at `retry_at` with its SET written. Waits 100 ms.
void start_a_retry_after_a_lost_reply(lock& l, std::int64_t& retry_at) {
    configure(l, 1);
    ASSERT_EQ(l.acquire(0, 100, token_a), errc::ok);
    ASSERT_EQ(take_request(l, 0), set_nx_request(token_a_hex));
    ASSERT_EQ(l.on_io_error(0, 5), errc::ok);
    ASSERT_EQ(take_request(l, 0)[1], sha(edgelock::release_script));
    ASSERT_EQ(l.on_reply(0, integer(0), 6), errc::ok);
    ASSERT_EQ(l.state(), lock_state::backing_off);
    retry_at = l.next_deadline_ms();
    ASSERT_EQ(l.on_timer(retry_at), errc::ok);
    ASSERT_EQ(take_request(l, 0), set_nx_request(token_a_hex));
    ASSERT_TRUE(take_events(l).empty());
}

TEST(lock_native_acquire,
     without_fencing_every_instance_gets_set_nx_px_get_with_the_configured_ttl) {
    lock_config config = config_for(3);
    config.name = "jobs{eu}:nightly";
    config.ttl_ms = 1234;
    lock l;
    ASSERT_EQ(l.configure(config), errc::ok);
    ASSERT_EQ(l.acquire(0, 0, token_a), errc::ok);
    for (std::uint8_t i = 0; i < 3; ++i) {
        EXPECT_EQ(take_request(l, i),
                  (std::vector<std::string>{"SET", "jobs{eu}:nightly", token_a_hex, "NX", "PX",
                                            "1234", "GET"}))
            << int{i};
    }
}

TEST(lock_native_acquire, nil_is_the_key_taken_and_counts_at_once) {
    lock l;
    configure(l, 3);
    ASSERT_EQ(l.acquire(100, 0, token_a), errc::ok);
    for (std::uint8_t i = 0; i < 3; ++i) take_request(l, i);
    ASSERT_EQ(l.on_reply(0, key_was_free(), 110), errc::ok);
    EXPECT_TRUE(take_events(l).empty());
    ASSERT_EQ(l.on_reply(2, key_was_free(), 120), errc::ok);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].type, event_type::acquired);
    EXPECT_EQ(events[0].valid_until_ms, 100 + 30'000 - 302);
    EXPECT_FALSE(l.has_request(0)) << "nothing follows a nil";
    EXPECT_FALSE(l.has_request(2));
}

TEST(lock_native_acquire, another_value_under_the_key_is_busy_and_nothing_more_is_sent) {
    // Another owner's token, and values that only look like ours.
    for (const std::string_view found :
         {std::string_view(token_b_hex), std::string_view("0123456789abcdef0011223344556678"),
          std::string_view("0123456789abcdef001122334455667"), std::string_view("")}) {
        lock l;
        configure(l, 1);
        ASSERT_EQ(l.acquire(0, 0, token_a), errc::ok);
        take_request(l, 0);
        ASSERT_EQ(l.on_reply(0, key_held_by(found), 1), errc::ok) << '"' << found << '"';
        const auto events = take_events(l);
        ASSERT_EQ(events.size(), 1u) << '"' << found << '"';
        EXPECT_EQ(events[0].type, event_type::acquire_failed) << '"' << found << '"';
        EXPECT_EQ(events[0].code, errc::busy) << '"' << found << '"';
        EXPECT_FALSE(l.has_request(0)) << '"' << found << "\": neither a renew nor a cleanup";
    }
}

// Our own token back: the key is the first attempt's, expiring a TTL after that attempt.
// It counts once a renew has extended it from this one.
TEST(lock_native_acquire, our_own_token_back_is_renewed_and_counts_when_the_renew_answers_1) {
    lock l;
    std::int64_t retry_at = 0;
    ASSERT_NO_FATAL_FAILURE(start_a_retry_after_a_lost_reply(l, retry_at));
    ASSERT_EQ(l.on_reply(0, key_held_by(token_a_hex), retry_at + 2), errc::ok);
    EXPECT_TRUE(take_events(l).empty()) << "not counted before the renew";
    EXPECT_EQ(l.state(), lock_state::acquiring);
    EXPECT_EQ(take_request(l, 0), script_request(edgelock::renew_script, token_a_hex));
    EXPECT_FALSE(l.has_request(0));
    ASSERT_EQ(l.on_reply(0, integer(1), retry_at + 4), errc::ok);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].type, event_type::acquired);
    EXPECT_EQ(events[0].valid_until_ms, retry_at + 30'000 - 302) << "from this attempt's start";
}

TEST(lock_native_acquire, our_own_token_back_is_refused_when_the_renew_answers_0) {
    lock l;
    std::int64_t retry_at = 0;
    ASSERT_NO_FATAL_FAILURE(start_a_retry_after_a_lost_reply(l, retry_at));
    ASSERT_EQ(l.on_reply(0, key_held_by(token_a_hex), retry_at + 2), errc::ok);
    ASSERT_EQ(take_request(l, 0)[1], sha(edgelock::renew_script));
    // The key expired in between, or moved on: it is not ours. The wait (100 ms) is over.
    ASSERT_EQ(l.on_reply(0, integer(0), 200), errc::ok);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].type, event_type::acquire_failed);
    EXPECT_EQ(events[0].code, errc::wait_timeout);
    EXPECT_EQ(events[0].cause, errc::busy);
    EXPECT_FALSE(l.has_request(0)) << "the key is not ours: no cleanup";
}

// While the renew is out, the key is ours: an attempt that ends then must delete it.
TEST(lock_native_acquire, our_own_key_whose_renew_goes_unanswered_is_cleaned_up) {
    lock l;
    std::int64_t retry_at = 0;
    ASSERT_NO_FATAL_FAILURE(start_a_retry_after_a_lost_reply(l, retry_at));
    ASSERT_EQ(l.on_reply(0, key_held_by(token_a_hex), retry_at + 2), errc::ok);
    take_request(l, 0);  // the renew
    ASSERT_EQ(l.on_timer(retry_at + 3000), errc::ok);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].code, errc::wait_timeout);
    EXPECT_EQ(events[0].cause, errc::no_quorum);
    const auto cleanup = take_request(l, 0);
    EXPECT_EQ(cleanup[1], sha(edgelock::release_script));
    EXPECT_EQ(cleanup[4], token_a_hex);
}

TEST(lock_native_acquire, our_own_token_in_a_late_answer_sends_no_renew) {
    lock l;
    std::int64_t retry_at = 0;
    ASSERT_NO_FATAL_FAILURE(start_a_retry_after_a_lost_reply(l, retry_at));
    ASSERT_EQ(l.on_timer(retry_at + 3000), errc::ok);  // attempt 2 times out: its cleanup is queued
    ASSERT_EQ(take_events(l).size(), 1u);              // the wait is over
    ASSERT_EQ(l.on_reply(0, key_held_by(token_a_hex), retry_at + 3001), errc::ok);
    EXPECT_TRUE(take_events(l).empty());
    EXPECT_EQ(l.state(), lock_state::idle);
    ASSERT_TRUE(l.has_request(0));
    EXPECT_EQ(take_request(l, 0)[1], sha(edgelock::release_script));
    EXPECT_FALSE(l.has_request(0)) << "the round is retired: the cleanup only, no renew";
}

TEST(lock_native_acquire, a_syntax_error_sends_the_script_now_and_for_the_next_attempts) {
    lock l;
    configure(l, 1);
    ASSERT_EQ(l.acquire(0, 10'000, token_a), errc::ok);
    ASSERT_EQ(take_request(l, 0), set_nx_request(token_a_hex));
    EXPECT_EQ(l.on_reply(0, syntax_error(), 2), errc::ok)
        << "an answer about the form, not a failure";
    EXPECT_TRUE(take_events(l).empty());
    EXPECT_EQ(l.state(), lock_state::acquiring) << "the same attempt goes on";
    EXPECT_EQ(take_request(l, 0), script_text_request(edgelock::acquire_script, token_a_hex))
        << "its own retry: the script's text";
    ASSERT_EQ(l.on_reply(0, nil(), 3), errc::ok);  // the script's refusal: another owner
    ASSERT_EQ(l.state(), lock_state::backing_off);
    EXPECT_FALSE(l.has_request(0)) << "refused: no cleanup";

    const std::int64_t retry_at = l.next_deadline_ms();
    ASSERT_EQ(l.on_timer(retry_at), errc::ok);
    EXPECT_EQ(take_request(l, 0), script_request(edgelock::acquire_script, token_a_hex))
        << "the next attempt does not ask again";
    ASSERT_EQ(l.on_reply(0, integer(0), retry_at + 1), errc::ok);
    ASSERT_EQ(take_events(l).at(0).type, event_type::acquired);
    ASSERT_EQ(l.release(retry_at + 2), errc::ok);
    take_request(l, 0);
    ASSERT_EQ(l.on_reply(0, integer(1), retry_at + 3), errc::ok);
    ASSERT_EQ(take_events(l).at(0).type, event_type::released);

    ASSERT_EQ(l.acquire(retry_at + 4, 0, token_b), errc::ok);
    EXPECT_EQ(take_request(l, 0), script_request(edgelock::acquire_script, token_b_hex))
        << "nor does the next acquire() on the same connection";
}

// The mark belongs to one instance's connection: another instance keeps SET NX PX GET, and
// only a change of that instance's own connection asks again.
TEST(lock_native_acquire, a_new_connection_is_asked_set_nx_px_get_again) {
    lock l;
    configure(l, 3);
    ASSERT_EQ(l.acquire(0, 0, token_a), errc::ok);
    for (std::uint8_t i = 0; i < 3; ++i) take_request(l, i);
    ASSERT_EQ(l.on_reply(1, syntax_error(), 1), errc::ok);
    EXPECT_EQ(take_request(l, 1), script_text_request(edgelock::acquire_script, token_a_hex));
    ASSERT_EQ(l.on_reply(0, key_was_free(), 2), errc::ok);
    ASSERT_EQ(l.on_reply(2, key_was_free(), 2), errc::ok);
    ASSERT_EQ(take_events(l).at(0).type, event_type::acquired);
    ASSERT_EQ(l.on_reply(1, integer(0), 3), errc::ok);  // late: the quorum was there already
    ASSERT_EQ(l.release(4), errc::ok);
    for (std::uint8_t i = 0; i < 3; ++i) take_request(l, i);
    for (std::uint8_t i = 0; i < 3; ++i) ASSERT_EQ(l.on_reply(i, integer(1), 5), errc::ok);
    ASSERT_EQ(take_events(l).at(0).type, event_type::released);

    ASSERT_EQ(l.on_io_error(0, 6), errc::ok);  // instance 0's connection changes, idle
    ASSERT_EQ(l.acquire(7, 0, token_b), errc::ok);
    EXPECT_EQ(take_request(l, 0), set_nx_request(token_b_hex));
    EXPECT_EQ(take_request(l, 1), script_request(edgelock::acquire_script, token_b_hex))
        << "instance 1 is still on the connection that refused the form";
    EXPECT_EQ(take_request(l, 2), set_nx_request(token_b_hex));
    for (std::uint8_t i : {0, 2}) ASSERT_EQ(l.on_reply(i, key_was_free(), 8), errc::ok);
    ASSERT_EQ(l.on_reply(1, integer(0), 8), errc::ok);
    ASSERT_EQ(take_events(l).at(0).type, event_type::acquired);
    ASSERT_EQ(l.release(9), errc::ok);
    for (std::uint8_t i = 0; i < 3; ++i) take_request(l, i);
    for (std::uint8_t i = 0; i < 3; ++i) ASSERT_EQ(l.on_reply(i, integer(1), 10), errc::ok);
    ASSERT_EQ(take_events(l).at(0).type, event_type::released);

    ASSERT_EQ(l.on_io_error(1, 11), errc::ok);  // now instance 1's connection changes
    ASSERT_EQ(l.acquire(12, 0, token_a), errc::ok);
    for (std::uint8_t i = 0; i < 3; ++i)
        EXPECT_EQ(take_request(l, i), set_nx_request(token_a_hex)) << int{i};
}

// Redis Cluster with a slot moving to a node running a server before 7.0: the claim went to
// the slot's owner, an ASK sent it to that node, which refused the form; the lock then moves
// back to the owner (the client tells the core of the change of connection) before the retry
// is written. The retry is the script all the same: asked SET NX PX GET on the owner's
// connection again, it would be sent back to the node that refuses it, for as long as the
// slot moves.
TEST(lock_native_acquire, the_retry_after_a_syntax_error_is_the_script_on_any_connection) {
    lock l;
    configure(l, 1);
    ASSERT_EQ(l.acquire(0, 10'000, token_a), errc::ok);
    ASSERT_EQ(take_request(l, 0), set_nx_request(token_a_hex));
    ASSERT_EQ(l.on_reply(0, syntax_error(), 1), errc::ok);
    ASSERT_EQ(l.on_io_error(0, 2), errc::ok);  // the move back to the slot's owner
    EXPECT_EQ(take_request(l, 0), script_text_request(edgelock::acquire_script, token_a_hex));
    ASSERT_EQ(l.on_reply(0, integer(0), 3), errc::ok);
    EXPECT_TRUE(l.held(3));
}

// A slow server: attempt 1 timed out and attempt 2 is queued behind its cleanup, unwritten,
// when attempt 1's syntax error comes. The form is chosen when a request is written.
TEST(lock_native_acquire,
     a_late_syntax_error_queues_no_claim_and_the_next_claim_written_is_the_script) {
    lock l;
    configure(l, 1);
    ASSERT_EQ(l.acquire(0, 10'000, token_a), errc::ok);
    take_request(l, 0);
    ASSERT_EQ(l.on_timer(3000), errc::ok);  // the attempt times out: its cleanup is queued
    ASSERT_EQ(l.state(), lock_state::backing_off);
    const std::int64_t retry_at = l.next_deadline_ms();
    ASSERT_EQ(l.on_timer(retry_at), errc::ok);  // attempt 2's claim is queued
    ASSERT_EQ(l.state(), lock_state::acquiring);
    ASSERT_EQ(l.on_reply(0, syntax_error(), retry_at + 1), errc::ok);
    EXPECT_EQ(take_request(l, 0)[1], sha(edgelock::release_script));
    EXPECT_EQ(take_request(l, 0), script_request(edgelock::acquire_script, token_a_hex));
    EXPECT_FALSE(l.has_request(0)) << "attempt 1 is over: its claim is not queued again";
}

// A script-only instance's next attempt after its refusal: the cached script (EVALSHA), which
// the server, having lost its cache, refuses with NOSCRIPT. `retry_at`: when it went out.
void refuse_the_form_then_lose_the_script(lock& l, std::int64_t& retry_at) {
    configure(l, 1);
    ASSERT_EQ(l.acquire(0, 10'000, token_a), errc::ok);
    take_request(l, 0);
    ASSERT_EQ(l.on_reply(0, syntax_error(), 1), errc::ok);
    take_request(l, 0);
    ASSERT_EQ(l.on_reply(0, nil(), 2), errc::ok);  // busy: the attempt is over
    retry_at = l.next_deadline_ms();
    ASSERT_EQ(l.on_timer(retry_at), errc::ok);
    ASSERT_EQ(take_request(l, 0), script_request(edgelock::acquire_script, token_a_hex));
    ASSERT_EQ(l.on_reply(0, error("NOSCRIPT No matching script. Please use EVAL."), retry_at + 1),
              errc::ok);
}

TEST(lock_native_acquire, a_script_only_instance_without_the_script_cached_gets_its_text) {
    lock l;
    std::int64_t retry_at = 0;
    refuse_the_form_then_lose_the_script(l, retry_at);
    const auto resent = take_request(l, 0);
    EXPECT_EQ(resent[0], "EVAL");
    EXPECT_EQ(resent[1], std::string(edgelock::acquire_script.text));
    EXPECT_EQ(resent[4], token_a_hex);
    ASSERT_EQ(l.on_reply(0, integer(0), retry_at + 2), errc::ok);
    EXPECT_TRUE(l.held(retry_at + 2));
}

// The form is chosen when a request is written, but an EVAL re-send is the script's text
// whatever the connection it goes out on.
TEST(lock_native_acquire, an_eval_resend_stays_the_script_on_the_next_connection) {
    lock l;
    std::int64_t retry_at = 0;
    refuse_the_form_then_lose_the_script(l, retry_at);
    ASSERT_EQ(l.on_io_error(0, retry_at + 2), errc::ok);  // before the EVAL was written
    EXPECT_EQ(take_request(l, 0)[0], "EVAL");
    ASSERT_EQ(l.on_reply(0, integer(0), retry_at + 3), errc::ok);
    EXPECT_TRUE(l.held(retry_at + 3));
}

TEST(lock_native_acquire, with_fencing_the_acquire_is_always_the_script) {
    lock l;
    configure(l, 3, true);
    ASSERT_EQ(l.acquire(0, 0, token_a), errc::ok);
    for (std::uint8_t i = 0; i < 3; ++i) {
        EXPECT_EQ(take_request(l, i), (std::vector<std::string>{
                                          "EVALSHA", sha(edgelock::acquire_script), "2",
                                          "orders:42", "{orders:42}:fence", token_a_hex, "30000"}))
            << int{i};
    }
}

// Only nil, a bulk string and the syntax error are SET NX PX GET's answers. Anything else
// fails the instance; NOSCRIPT included (SET is no script: nothing to re-send).
TEST(lock_native_acquire, any_other_answer_fails_the_instance) {
    lock l;
    configure(l, 7);  // quorum 4: the fourth failure ends the attempt
    ASSERT_EQ(l.acquire(0, 0, token_a), errc::ok);
    for (std::uint8_t i = 0; i < 7; ++i) take_request(l, i);
    EXPECT_EQ(l.on_reply(0, error("NOSCRIPT No matching script."), 1), errc::error_reply);
    EXPECT_FALSE(l.has_request(0));
    EXPECT_EQ(l.on_reply(1, integer(0), 1), errc::unexpected_reply)
        << "the script's OK is not SET's";
    EXPECT_EQ(l.on_reply(2, status("OK"), 1), errc::unexpected_reply) << "SET without GET's answer";
    EXPECT_TRUE(take_events(l).empty());
    EXPECT_EQ(l.on_reply(3, error("ERR wrong number of arguments for 'set' command"), 1),
              errc::error_reply);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].code, errc::no_quorum) << "failures, not refusals";
}

// ---- fencing -----------------------------------------------------------------------------

TEST(lock_fencing, single_instance_hands_out_the_counter) {
    lock l;
    configure(l, 1, true);
    ASSERT_EQ(l.acquire(0, 0, token_a), errc::ok);
    EXPECT_EQ(take_request(l, 0),
              (std::vector<std::string>{"EVALSHA", sha(edgelock::acquire_script), "2", "orders:42",
                                        "{orders:42}:fence", token_a_hex, "30000"}));
    ASSERT_EQ(l.on_reply(0, bulk("7"), 1), errc::ok);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].fence, 7);
    EXPECT_EQ(l.fence(), 7);
}

TEST(lock_fencing, a_fenced_acquire_must_return_a_counter_in_1_to_2_pow_63_minus_1) {
    for (const std::string_view bad :
         {"0", "-3", "007", "+7", "7x", "", "9223372036854775808", "18446744073709551623",
          "99999999999999999999", " 7", "7 ", "-0", "00"}) {
        lock l;
        configure(l, 1, true);
        ASSERT_EQ(l.acquire(0, 0, token_a), errc::ok);
        take_request(l, 0);
        EXPECT_EQ(l.on_reply(0, bulk(bad), 1), errc::unexpected_reply) << '"' << bad << '"';
        EXPECT_FALSE(l.held(1)) << '"' << bad << '"';
    }
    lock l;
    configure(l, 1, true);
    ASSERT_EQ(l.acquire(0, 0, token_a), errc::ok);
    take_request(l, 0);
    EXPECT_EQ(l.on_reply(0, integer(7), 1), errc::unexpected_reply)
        << "a counter that went through a Lua number may have been rounded";
}

// Lua numbers are doubles: a counter past 2^53 that took that path came back rounded, and
// two holders could get the same token. The string keeps every digit, up to 2^63-1.
TEST(lock_fencing, fence_values_stay_exact_up_to_2_pow_63_minus_1) {
    for (const auto& [text, value] :
         {std::pair<std::string_view, std::int64_t>{"9007199254740993", 9007199254740993},
          {"9007199254740995", 9007199254740995},
          {"9223372036854775807", std::numeric_limits<std::int64_t>::max()}}) {
        lock l;
        configure(l, 1, true);
        ASSERT_EQ(l.acquire(0, 0, token_a), errc::ok);
        take_request(l, 0);
        ASSERT_EQ(l.on_reply(0, bulk(text), 1), errc::ok);
        EXPECT_EQ(l.fence(), value) << text;
    }
}

TEST(lock_fencing, redlock_raises_exact_values_past_2_pow_53) {
    lock l;
    configure(l, 3, true);
    ASSERT_EQ(l.acquire(0, 0, token_a), errc::ok);
    for (std::uint8_t i = 0; i < 3; ++i) take_request(l, i);
    ASSERT_EQ(l.on_reply(0, bulk("9007199254740993"), 1), errc::ok);
    ASSERT_EQ(l.on_reply(1, bulk("9007199254740992"), 1), errc::ok);
    EXPECT_EQ(take_request(l, 0).back(), "9007199254740993") << "the raise carries every digit";
}

TEST(lock_fencing, an_exhausted_counter_fails_the_attempt_with_its_own_code) {
    lock l;
    configure(l, 1, true);
    ASSERT_EQ(l.acquire(0, 0, token_a), errc::ok);
    take_request(l, 0);
    EXPECT_EQ(l.on_reply(0, error("FENCE_EXHAUSTED the fence counter is at 2^63-1"), 1),
              errc::error_reply);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].type, event_type::acquire_failed);
    EXPECT_EQ(events[0].code, errc::fence_exhausted);
    EXPECT_FALSE(l.held(1));
}

TEST(lock_fencing, an_exhausted_counter_ends_a_waiting_acquire_at_once) {
    lock l;
    configure(l, 1, true);
    ASSERT_EQ(l.acquire(0, 10'000, token_a), errc::ok);
    take_request(l, 0);
    EXPECT_EQ(l.on_reply(0, error("FENCE_EXHAUSTED the fence counter is at 2^63-1"), 1),
              errc::error_reply);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].code, errc::fence_exhausted)
        << "no retry can succeed: no wait_timeout later";
    EXPECT_EQ(l.state(), lock_state::idle);
}

TEST(lock_fencing, redlock_reports_exhausted_counters_once_they_leave_no_quorum) {
    lock l;
    configure(l, 3, true);
    ASSERT_EQ(l.acquire(0, 10'000, token_a), errc::ok);
    for (std::uint8_t i = 0; i < 3; ++i) take_request(l, i);
    const reply_node exhausted = error("FENCE_EXHAUSTED the fence counter is at 2^63-1");
    EXPECT_EQ(l.on_reply(0, exhausted, 1), errc::error_reply);
    EXPECT_TRUE(take_events(l).empty()) << "instances 1 and 2 can still make a quorum";
    EXPECT_EQ(l.on_reply(1, exhausted, 1), errc::error_reply);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].code, errc::fence_exhausted)
        << "an operator must act: said before busy, no retry";
}

// One exhausted counter among three leaves a quorum of the others possible: once the owner
// lets go, a retry can win. It fails like a busy attempt and backs off.
TEST(lock_fencing, a_minority_of_exhausted_counters_does_not_end_a_wait) {
    lock l;
    configure(l, 3, true);
    ASSERT_EQ(l.acquire(0, 10'000, token_a), errc::ok);
    for (std::uint8_t i = 0; i < 3; ++i) take_request(l, i);
    EXPECT_EQ(l.on_reply(0, error("FENCE_EXHAUSTED the fence counter is at 2^63-1"), 1),
              errc::error_reply);
    ASSERT_EQ(l.on_reply(1, nil(), 1), errc::ok);
    EXPECT_TRUE(take_events(l).empty());
    EXPECT_EQ(l.state(), lock_state::backing_off);
}

TEST(lock_fencing, redlock_raises_the_quorum_to_the_maximum_before_handing_it_out) {
    lock l;
    configure(l, 3, true);
    ASSERT_EQ(l.acquire(0, 0, token_a), errc::ok);
    for (std::uint8_t i = 0; i < 3; ++i) take_request(l, i);
    ASSERT_EQ(l.on_reply(0, bulk("5"), 2), errc::ok);
    ASSERT_EQ(l.on_reply(2, bulk("9"), 3), errc::ok);
    EXPECT_TRUE(take_events(l).empty()) << "no token before the raise";
    EXPECT_EQ(l.state(), lock_state::confirming);
    for (std::uint8_t i : {0, 2}) {
        EXPECT_EQ(take_request(l, i),
                  (std::vector<std::string>{"EVALSHA", sha(edgelock::raise_script), "2",
                                            "orders:42", "{orders:42}:fence", token_a_hex, "9"}));
    }
    EXPECT_FALSE(l.has_request(1)) << "instance 1 has not answered the acquire yet";
    ASSERT_EQ(l.on_reply(0, integer(1), 5), errc::ok);
    ASSERT_EQ(l.on_reply(2, integer(1), 6), errc::ok);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].type, event_type::acquired);
    EXPECT_EQ(events[0].fence, 9);
    EXPECT_EQ(events[0].valid_until_ms, 30'000 - 302) << "the raise is paid from the same validity";
}

TEST(lock_fencing, a_raise_refused_by_the_quorum_fails_the_attempt) {
    lock l;
    configure(l, 3, true);
    ASSERT_EQ(l.acquire(0, 0, token_a), errc::ok);
    for (std::uint8_t i = 0; i < 3; ++i) take_request(l, i);
    ASSERT_EQ(l.on_reply(0, bulk("5"), 2), errc::ok);
    ASSERT_EQ(l.on_reply(1, bulk("4"), 3), errc::ok);
    take_request(l, 0);
    take_request(l, 1);
    ASSERT_EQ(l.on_reply(0, integer(0), 4), errc::ok);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].code, errc::token_gone);
    EXPECT_FALSE(l.held(4));
}

TEST(lock_fencing, the_fence_key_shares_the_names_cluster_slot) {
    lock_config config = config_for(1, true);
    config.name = "jobs{eu}:nightly";
    lock l;
    ASSERT_EQ(l.configure(config), errc::ok);
    ASSERT_EQ(l.acquire(0, 0, token_a), errc::ok);
    EXPECT_EQ(take_request(l, 0)[4], "jobs{eu}:nightly:fence");
}

// ---- WAIT for replicas (Sentinel) -----------------------------------------------------------

lock_config config_waiting_for(std::uint8_t replicas) {
    lock_config config = config_for(1);
    config.replicas_to_wait = replicas;  // attempt timeout 3 s, WAIT timeout 1.5 s by default
    return config;
}

TEST(lock_replicas, the_hold_starts_only_after_wait_confirms_the_replicas) {
    lock l;
    ASSERT_EQ(l.configure(config_waiting_for(1)), errc::ok);
    ASSERT_EQ(l.acquire(0, 0, token_a), errc::ok);
    take_request(l, 0);
    ASSERT_EQ(l.on_reply(0, key_was_free(), 2), errc::ok);
    EXPECT_TRUE(take_events(l).empty());
    EXPECT_EQ(l.state(), lock_state::confirming);
    EXPECT_EQ(take_request(l, 0), (std::vector<std::string>{"WAIT", "1", "1500"}));
    ASSERT_EQ(l.on_reply(0, integer(2), 5), errc::ok);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].type, event_type::acquired);
    EXPECT_EQ(events[0].valid_until_ms, 30'000 - 302)
        << "validity still counts from the first send";
}

TEST(lock_replicas, too_few_replicas_fail_the_attempt_and_release) {
    lock l;
    ASSERT_EQ(l.configure(config_waiting_for(2)), errc::ok);
    ASSERT_EQ(l.acquire(0, 0, token_a), errc::ok);
    take_request(l, 0);
    ASSERT_EQ(l.on_reply(0, key_was_free(), 2), errc::ok);
    take_request(l, 0);
    ASSERT_EQ(l.on_reply(0, integer(1), 1502), errc::ok);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].type, event_type::acquire_failed);
    EXPECT_EQ(events[0].code, errc::not_replicated);
    EXPECT_EQ(take_request(l, 0)[1], sha(edgelock::release_script))
        << "the unreplicated key is removed";
}

TEST(lock_replicas, fenced_redlock_raises_then_waits) {
    lock_config config = config_for(3, true);
    config.replicas_to_wait = 1;
    lock l;
    ASSERT_EQ(l.configure(config), errc::ok);
    ASSERT_EQ(l.acquire(0, 0, token_a), errc::ok);
    for (std::uint8_t i = 0; i < 3; ++i) take_request(l, i);
    ASSERT_EQ(l.on_reply(0, bulk("3"), 1), errc::ok);
    ASSERT_EQ(l.on_reply(2, bulk("5"), 1), errc::ok);
    // Each confirmation round goes to the previous round's quorum: instances 0 and 2.
    for (std::uint8_t i : {0, 2}) EXPECT_EQ(take_request(l, i)[1], sha(edgelock::raise_script));
    for (std::uint8_t i : {0, 2}) ASSERT_EQ(l.on_reply(i, integer(1), 2), errc::ok);
    for (std::uint8_t i : {0, 2}) EXPECT_EQ(take_request(l, i)[0], "WAIT");
    EXPECT_TRUE(take_events(l).empty());
    for (std::uint8_t i : {0, 2}) ASSERT_EQ(l.on_reply(i, integer(1), 3), errc::ok);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].type, event_type::acquired);
    EXPECT_EQ(events[0].fence, 5);
}

TEST(lock_replicas, a_wait_timeout_that_cannot_answer_in_time_is_refused) {
    lock_config config = config_waiting_for(1);
    config.replica_wait_ms = 3000;  // equal to the attempt timeout
    lock l;
    EXPECT_EQ(l.configure(config), errc::invalid_config);
}

// Holds a single-instance lock acquired at t=0 with WAIT for `replicas` (validity 29'698).
void acquire_waiting_for(lock& l, std::uint8_t replicas) {
    ASSERT_EQ(l.configure(config_waiting_for(replicas)), errc::ok);
    ASSERT_EQ(l.acquire(0, 0, token_a), errc::ok);
    take_request(l, 0);
    ASSERT_EQ(l.on_reply(0, key_was_free(), 2), errc::ok);
    take_request(l, 0);
    ASSERT_EQ(l.on_reply(0, integer(replicas), 5), errc::ok);
    ASSERT_EQ(take_events(l).size(), 1u);
}

// A renewal the replicas have not confirmed must not extend the belief: a failover may
// promote a replica that still carries the acquire's expiry.
TEST(lock_replicas, a_renewal_extends_validity_only_after_wait_confirms_it) {
    lock l;
    acquire_waiting_for(l, 1);
    ASSERT_EQ(l.on_timer(10'000), errc::ok);
    EXPECT_EQ(take_request(l, 0)[1], sha(edgelock::renew_script));
    ASSERT_EQ(l.on_reply(0, integer(1), 10'010), errc::ok);
    EXPECT_TRUE(take_events(l).empty()) << "the master's OK alone is not a renewal";
    EXPECT_EQ(l.valid_until_ms(), 30'000 - 302);
    EXPECT_EQ(take_request(l, 0), (std::vector<std::string>{"WAIT", "1", "1500"}));
    ASSERT_EQ(l.on_reply(0, integer(1), 10'020), errc::ok);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].type, event_type::renewed);
    EXPECT_EQ(events[0].valid_until_ms, 10'000 + 30'000 - 302) << "from the renewal's start";
}

TEST(lock_replicas, a_renewal_the_replicas_miss_is_retried_and_the_lease_runs_out) {
    lock l;
    acquire_waiting_for(l, 2);
    ASSERT_EQ(l.on_timer(10'000), errc::ok);
    take_request(l, 0);
    ASSERT_EQ(l.on_reply(0, integer(1), 10'010), errc::ok);
    take_request(l, 0);
    ASSERT_EQ(l.on_reply(0, integer(1), 11'510), errc::ok);  // one replica of two
    EXPECT_TRUE(take_events(l).empty());
    EXPECT_EQ(l.state(), lock_state::held);
    EXPECT_EQ(l.next_deadline_ms(), 11'510 + 50) << "retried like a failed renewal";
    ASSERT_EQ(l.on_timer(11'560), errc::ok);
    EXPECT_EQ(take_request(l, 0)[1], sha(edgelock::renew_script));
    ASSERT_EQ(l.on_timer(29'698), errc::ok);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].type, event_type::lost);
    EXPECT_EQ(events[0].code, errc::expired);
}

// WAIT confirms only its own connection's writes: a renewal whose connection dropped before
// its WAIT was written is not confirmed by a WAIT on the next connection.
TEST(lock_replicas, a_wait_left_unwritten_when_its_connection_drops_confirms_nothing) {
    lock l;
    acquire_waiting_for(l, 1);
    ASSERT_EQ(l.on_timer(10'000), errc::ok);
    take_request(l, 0);
    ASSERT_EQ(l.on_reply(0, integer(1), 10'010), errc::ok);  // renewed; the WAIT is queued
    ASSERT_EQ(l.on_io_error(0, 10'011), errc::ok);           // before it was written
    EXPECT_FALSE(l.has_request(0)) << "the WAIT would go out on a connection that wrote nothing";
    EXPECT_EQ(l.valid_until_ms(), 30'000 - 302);
    EXPECT_EQ(l.next_deadline_ms(), 10'011 + 50) << "retried like a failed renewal";
    EXPECT_TRUE(take_events(l).empty());
}

TEST(lock_replicas,
     a_redlock_renewal_confirmed_on_a_connection_that_then_dropped_is_not_waited_elsewhere) {
    lock_config config = config_for(3);
    config.replicas_to_wait = 1;
    lock l;
    ASSERT_EQ(l.configure(config), errc::ok);
    ASSERT_EQ(l.acquire(0, 0, token_a), errc::ok);
    for (std::uint8_t i = 0; i < 3; ++i) take_request(l, i);
    ASSERT_EQ(l.on_reply(0, key_was_free(), 1), errc::ok);
    ASSERT_EQ(l.on_reply(1, key_was_free(), 1), errc::ok);
    for (std::uint8_t i : {0, 1}) take_request(l, i);  // WAIT
    for (std::uint8_t i : {0, 1}) ASSERT_EQ(l.on_reply(i, integer(1), 2), errc::ok);
    ASSERT_EQ(take_events(l).size(), 1u);  // acquired, valid until 29'698
    ASSERT_EQ(l.on_reply(2, key_was_free(), 3), errc::ok);
    while (l.has_request(2)) {
        take_request(l, 2);
        ASSERT_EQ(l.on_reply(2, integer(1), 4), errc::ok);
    }
    ASSERT_EQ(l.on_timer(10'000), errc::ok);  // the renewal
    for (std::uint8_t i = 0; i < 3; ++i) take_request(l, i);
    ASSERT_EQ(l.on_reply(0, integer(1), 10'005), errc::ok);  // instance 0 renewed...
    ASSERT_EQ(l.on_io_error(0, 10'006), errc::ok);           // ...then its connection dropped
    ASSERT_EQ(l.on_io_error(2, 10'007), errc::ok);
    ASSERT_EQ(l.on_reply(1, integer(1), 10'010), errc::ok);
    EXPECT_FALSE(l.has_request(0)) << "no WAIT for instance 0 on its new connection";
    EXPECT_EQ(l.valid_until_ms(), 30'000 - 302);
    EXPECT_EQ(l.state(), lock_state::held);
    EXPECT_TRUE(take_events(l).empty());
}

// A round decided while a WAIT of it was still unwritten (its connection not ready yet, the
// attempt timed out) drops that WAIT: written later, perhaps on the instance's next
// connection, it would confirm nothing and hold back what follows it for its whole timeout.
TEST(lock_replicas, a_wait_still_unwritten_when_its_round_is_decided_is_dropped) {
    lock l;
    ASSERT_EQ(l.configure(config_waiting_for(1)), errc::ok);
    ASSERT_EQ(l.acquire(0, 0, token_a), errc::ok);
    take_request(l, 0);
    ASSERT_EQ(l.on_reply(0, key_was_free(), 2), errc::ok);  // SET done; WAIT queued, unwritten
    ASSERT_EQ(l.on_timer(l.next_deadline_ms()), errc::ok);  // the attempt times out
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].type, event_type::acquire_failed);
    ASSERT_TRUE(l.has_request(0));
    EXPECT_EQ(take_request(l, 0)[1], sha(edgelock::release_script))
        << "the cleanup goes first: the decided round's WAIT is not written any more";
    EXPECT_FALSE(l.has_request(0));
}

TEST(lock_replicas, an_acquire_whose_connection_drops_before_its_wait_fails) {
    lock l;
    ASSERT_EQ(l.configure(config_waiting_for(1)), errc::ok);
    ASSERT_EQ(l.acquire(0, 0, token_a), errc::ok);
    take_request(l, 0);
    ASSERT_EQ(l.on_reply(0, key_was_free(), 2), errc::ok);  // SET done; WAIT queued
    ASSERT_EQ(l.on_io_error(0, 3), errc::ok);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].type, event_type::acquire_failed);
    EXPECT_EQ(events[0].code, errc::no_quorum);
    EXPECT_EQ(take_request(l, 0)[1], sha(edgelock::release_script))
        << "the unconfirmed key is removed";
}

}  // namespace
