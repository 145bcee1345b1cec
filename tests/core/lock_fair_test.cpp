// SPDX-License-Identifier: Apache-2.0
// Fair waiting (lock.hpp, "Fair waiting"): the requests a fair lock sends, how it waits for a
// wake-up and re-checks, and how it leaves the line, driven by literal timestamps.
#include "edgelock/lock.hpp"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "edgelock/scripts.hpp"
#include "lock_driving.hpp"

namespace {

using namespace lock_driving;

constexpr std::int64_t recheck = 400;
constexpr std::int64_t entry_ttl = 8000;

lock_config fair_config(bool fencing = false) {
    lock_config config = config_for(1, fencing);
    config.fair = true;
    config.recheck_ms = recheck;
    config.queue_entry_ttl_ms = entry_ttl;
    config.retry_delay_ms_min = 2000;  // far above the re-check: the re-check must cap it
    config.retry_delay_ms_max = 4000;
    return config;
}

std::vector<std::string> fair_acquire_request(std::string_view token_hex) {
    return {"EVALSHA",
            sha(edgelock::fair_acquire_script),
            "3",
            "orders:42",
            "{orders:42}:queue",
            "{orders:42}:qttl",
            std::string(token_hex),
            "30000",
            std::to_string(entry_ttl)};
}

std::vector<std::string> fair_release_request(std::string_view token_hex) {
    return {"EVALSHA",
            sha(edgelock::fair_release_script),
            "3",
            "orders:42",
            "{orders:42}:queue",
            "{orders:42}:qttl",
            std::string(token_hex)};
}

// The cleanup of a failed attempt by a waiter that goes on waiting: it keeps its place.
std::vector<std::string> staying_cleanup_request(std::string_view token_hex) {
    std::vector<std::string> request = fair_release_request(token_hex);
    request.push_back("stay");
    return request;
}

// A fair acquire() with a wait of 10 s at t=0 whose first attempt the line refuses at t=2:
// the lock is backing off until the re-check.
void wait_in_line(lock& l) {
    ASSERT_EQ(l.configure(fair_config()), errc::ok);
    ASSERT_EQ(l.acquire(0, 10'000, token_a), errc::ok);
    ASSERT_EQ(take_request(l, 0), fair_acquire_request(token_a_hex));
    ASSERT_EQ(l.on_reply(0, nil(), 2), errc::ok);
    ASSERT_EQ(l.state(), lock_state::backing_off);
    ASSERT_TRUE(take_events(l).empty());
}

TEST(lock_fair_config, needs_one_instance_and_an_entry_that_outlives_a_recheck) {
    lock l;
    lock_config config = fair_config();
    config.instances = 3;
    EXPECT_EQ(l.configure(config), errc::invalid_config)
        << "no fair order over independent masters";
    config = fair_config();
    // The attempt timeout is 3 s: a reply may take that long, and so may the next request.
    config.queue_entry_ttl_ms = recheck + 2 * 3000;
    EXPECT_EQ(l.configure(config), errc::invalid_config);
    config.queue_entry_ttl_ms = recheck + 2 * 3000 + 1;
    EXPECT_EQ(l.configure(config), errc::ok);
    config = fair_config();
    config.recheck_ms = edgelock::wait_ms_max + 1;
    EXPECT_EQ(l.configure(config), errc::invalid_config);
}

TEST(lock_fair_config, an_unfair_lock_is_not_held_to_the_fair_bounds) {
    lock l;
    lock_config config = config_for(1);
    config.ttl_ms = edgelock::ttl_ms_max;
    config.attempt_timeout_ms =
        edgelock::ttl_ms_max / 2 + 1;  // the default entry would be too long
    config.recheck_ms = edgelock::wait_ms_max + 1;
    EXPECT_EQ(l.configure(config), errc::ok);
    config.fair = true;
    EXPECT_EQ(l.configure(config), errc::invalid_config);
}

TEST(lock_fair_config, the_defaults_recheck_every_second_and_keep_an_entry_two_gaps_long) {
    lock l;
    lock_config config = config_for(1);
    config.fair = true;
    ASSERT_EQ(l.configure(config), errc::ok);
    ASSERT_EQ(l.acquire(0, 60'000, token_a), errc::ok);
    const std::vector<std::string> request = take_request(l, 0);
    ASSERT_EQ(request.size(), 9u);
    EXPECT_EQ(request[8], "8000") << "2 * (1000 ms re-check + 3000 ms attempt timeout)";
    ASSERT_EQ(l.on_reply(0, nil(), 1), errc::ok);
    EXPECT_LE(l.next_deadline_ms(), 1 + 1000);
}

TEST(lock_fair_config, names_of_another_locks_queue_keys_are_refused) {
    lock l;
    for (const char* name :
         {"{orders:42}:queue", "{orders:42}:qttl", "job{7}:queue", "{x}:fence"}) {
        lock_config config = fair_config();
        config.name = name;
        EXPECT_EQ(l.configure(config), errc::invalid_name) << name;
    }
    for (const char* name : {"db:queue", "{}:qttl", "queue", "{x}:queues"}) {
        lock_config config = fair_config();
        config.name = name;
        EXPECT_EQ(l.configure(config), errc::ok) << name;
    }
}

TEST(lock_fair_wire, acquires_with_the_queue_keys_and_releases_out_of_the_line) {
    lock l;
    ASSERT_EQ(l.configure(fair_config()), errc::ok);
    ASSERT_EQ(l.acquire(0, 0, token_a), errc::ok);
    ASSERT_EQ(take_request(l, 0), fair_acquire_request(token_a_hex)) << "never SET NX PX GET";
    ASSERT_EQ(l.on_reply(0, integer(0), 1), errc::ok);
    ASSERT_TRUE(l.held(1));
    EXPECT_FALSE(l.wants_wake_ups()) << "held: nothing to wait for";
    take_events(l);
    ASSERT_EQ(l.release(2), errc::ok);
    EXPECT_EQ(take_request(l, 0), fair_release_request(token_a_hex));
}

TEST(lock_fair_wire, renews_with_the_plain_renew_script) {
    lock l;
    ASSERT_EQ(l.configure(fair_config()), errc::ok);
    ASSERT_EQ(l.acquire(0, 0, token_a), errc::ok);
    take_request(l, 0);
    ASSERT_EQ(l.on_reply(0, integer(0), 1), errc::ok);
    ASSERT_EQ(l.on_timer(10'000), errc::ok);
    const std::vector<std::string> renew = take_request(l, 0);
    EXPECT_EQ(renew, (std::vector<std::string>{"EVALSHA", sha(edgelock::renew_script), "1",
                                               "orders:42", token_a_hex, "30000"}));
}

TEST(lock_fair_wire, with_fencing_the_fence_key_comes_fourth_and_its_counter_is_the_token) {
    lock l;
    ASSERT_EQ(l.configure(fair_config(true)), errc::ok);
    ASSERT_EQ(l.acquire(0, 0, token_a), errc::ok);
    const std::vector<std::string> request = take_request(l, 0);
    EXPECT_EQ(request, (std::vector<std::string>{"EVALSHA", sha(edgelock::fair_acquire_script), "4",
                                                 "orders:42", "{orders:42}:queue",
                                                 "{orders:42}:qttl", "{orders:42}:fence",
                                                 token_a_hex, "30000", std::to_string(entry_ttl)}));
    ASSERT_EQ(l.on_reply(0, bulk("1700000000000007"), 1), errc::ok);
    EXPECT_EQ(l.fence(), 1700000000000007);
}

TEST(lock_fair_wire, noscript_resends_the_fair_script_text) {
    lock l;
    ASSERT_EQ(l.configure(fair_config()), errc::ok);
    ASSERT_EQ(l.acquire(0, 0, token_a), errc::ok);
    take_request(l, 0);
    ASSERT_EQ(l.on_reply(0, error("NOSCRIPT No matching script. Please use EVAL."), 1), errc::ok);
    const std::vector<std::string> again = take_request(l, 0);
    EXPECT_EQ(again[0], "EVAL");
    EXPECT_EQ(again[1], std::string(edgelock::fair_acquire_script.text));
}

TEST(lock_fair_wire, eval_of_the_fair_script_with_the_longest_name_fits_request_bytes_max) {
    lock l;
    lock_config config = fair_config(true);
    const std::string name(edgelock::name_bytes_max, '}');  // the longest companion keys too
    config.name = name;
    ASSERT_EQ(l.configure(config), errc::ok);
    ASSERT_EQ(l.acquire(0, 0, token_a), errc::ok);
    take_request(l, 0);
    ASSERT_EQ(l.on_reply(0, error("NOSCRIPT No matching script. Please use EVAL."), 1), errc::ok);
    const std::vector<std::string> again = take_request(l, 0);
    EXPECT_EQ(again[0], "EVAL");
    EXPECT_EQ(again[2], "4");
    EXPECT_EQ(again[7], token_a_hex) << "every key and argument made it";
}

TEST(lock_fair_waiting, a_refusal_waits_in_line_until_the_recheck_and_sends_no_cleanup) {
    lock l;
    wait_in_line(l);
    EXPECT_FALSE(l.has_request(0)) << "a cleanup release would take us out of the line";
    EXPECT_TRUE(l.wants_wake_ups());
    EXPECT_EQ(l.next_deadline_ms(), 2 + recheck) << "the re-check caps the backoff";
    ASSERT_EQ(l.on_timer(2 + recheck), errc::ok);
    EXPECT_EQ(take_request(l, 0), fair_acquire_request(token_a_hex))
        << "the same token keeps its place";
}

TEST(lock_fair_waiting, a_wake_up_with_our_token_attempts_at_once) {
    lock l;
    wait_in_line(l);
    ASSERT_EQ(l.on_wake(50, token_a_hex), errc::ok);
    EXPECT_EQ(l.state(), lock_state::acquiring);
    EXPECT_EQ(take_request(l, 0), fair_acquire_request(token_a_hex));
    ASSERT_EQ(l.on_reply(0, integer(0), 51), errc::ok);
    EXPECT_TRUE(l.held(51));
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].type, event_type::acquired);
    EXPECT_EQ(events[0].valid_until_ms, 50 + 30'000 - 302)
        << "the lease counts from the woken attempt";
}

TEST(lock_fair_waiting, an_empty_wake_up_looks_at_once) {
    lock l;
    wait_in_line(l);
    ASSERT_EQ(l.on_wake(60, ""), errc::ok);
    EXPECT_EQ(take_request(l, 0), fair_acquire_request(token_a_hex));
}

TEST(lock_fair_waiting, a_wake_up_for_another_waiter_changes_nothing) {
    lock l;
    wait_in_line(l);
    ASSERT_EQ(l.on_wake(50, token_b_hex), errc::ok);
    ASSERT_EQ(l.on_wake(51, "0123456789abcdef001122334455667"), errc::ok);  // ours, one short
    EXPECT_EQ(l.state(), lock_state::backing_off);
    EXPECT_FALSE(l.has_request(0));
    EXPECT_EQ(l.next_deadline_ms(), 2 + recheck);
}

TEST(lock_fair_waiting, a_wake_up_during_an_attempt_retries_at_once_after_a_refusal) {
    lock l;
    wait_in_line(l);
    ASSERT_EQ(l.on_timer(2 + recheck), errc::ok);
    take_request(l, 0);
    // The release published between our script's run and its reply reaching us.
    ASSERT_EQ(l.on_wake(2 + recheck + 1, token_a_hex), errc::ok);
    EXPECT_FALSE(l.has_request(0)) << "one attempt at a time";
    ASSERT_EQ(l.on_reply(0, nil(), 2 + recheck + 2), errc::ok);
    EXPECT_EQ(l.next_deadline_ms(), 2 + recheck + 2) << "the kept wake-up: look again now";
    ASSERT_EQ(l.on_timer(2 + recheck + 2), errc::ok);
    EXPECT_EQ(take_request(l, 0), fair_acquire_request(token_a_hex));
    ASSERT_EQ(l.on_reply(0, nil(), 2 + recheck + 3), errc::ok);
    EXPECT_EQ(l.next_deadline_ms(), 2 + recheck + 3 + recheck) << "the wake-up was used once";
}

std::string grant(std::string_view token_hex, std::string_view fence) {
    return std::string(token_hex) + " " + std::string(fence);
}

// acquire() was called at t=0 and our entry lasts entry_ttl after each attempt: the granted
// key lives at least until 0 + entry_ttl on the server, so the lease counts from 0.
TEST(lock_fair_grant, a_grant_of_ours_holds_at_once_with_the_lease_from_the_acquire_call) {
    lock l;
    wait_in_line(l);
    ASSERT_EQ(l.on_wake(50, grant(token_a_hex, "0")), errc::ok);
    EXPECT_TRUE(l.held(50));
    EXPECT_FALSE(l.has_request(0)) << "no round trip";
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].type, event_type::acquired);
    EXPECT_EQ(events[0].valid_until_ms, entry_ttl - 302) << "from the call, not the message";
    EXPECT_EQ(l.fence(), 0);
    const std::int64_t first_renewal = (entry_ttl - 302) / 3;
    EXPECT_EQ(l.next_deadline_ms(), first_renewal) << "within a third of the granted lease";
    ASSERT_EQ(l.on_timer(first_renewal), errc::ok);
    EXPECT_EQ(take_request(l, 0),
              (std::vector<std::string>{"EVALSHA", sha(edgelock::renew_script), "1", "orders:42",
                                        token_a_hex, "30000"}));
    ASSERT_EQ(l.on_reply(0, integer(1), first_renewal + 1), errc::ok);
    EXPECT_EQ(l.valid_until_ms(), first_renewal + 30'000 - 302) << "the renewal restores ttl";
    ASSERT_EQ(l.release(first_renewal + 2), errc::ok);
    EXPECT_EQ(take_request(l, 0), fair_release_request(token_a_hex)) << "and leaves the line";
}

TEST(lock_fair_grant, a_fenced_grant_hands_out_its_fence_token) {
    lock l;
    ASSERT_EQ(l.configure(fair_config(true)), errc::ok);
    ASSERT_EQ(l.acquire(0, 10'000, token_a), errc::ok);
    take_request(l, 0);
    ASSERT_EQ(l.on_reply(0, nil(), 2), errc::ok);
    ASSERT_EQ(l.on_wake(50, grant(token_a_hex, "0")), errc::ok);
    EXPECT_EQ(l.state(), lock_state::acquiring) << "no fence: the attempt takes the key";
    take_request(l, 0);
    ASSERT_EQ(l.on_reply(0, nil(), 51), errc::ok);
    ASSERT_EQ(l.on_wake(60, grant(token_a_hex, "1700000000000009")), errc::ok);
    EXPECT_TRUE(l.held(60));
    EXPECT_EQ(l.fence(), 1700000000000009);
    EXPECT_EQ(take_events(l).back().fence, 1700000000000009);
}

TEST(lock_fair_grant, a_grant_that_comes_once_its_lease_may_have_ended_is_a_wake_up) {
    lock l;
    wait_in_line(l);
    ASSERT_EQ(l.on_timer(2 + recheck), errc::ok);  // re-checks keep the entry alive
    take_request(l, 0);
    ASSERT_EQ(l.on_reply(0, nil(), 3 + recheck), errc::ok);
    const std::int64_t late = entry_ttl - 302;
    ASSERT_EQ(l.on_wake(late, grant(token_a_hex, "0")), errc::ok);
    EXPECT_FALSE(l.held(late));
    EXPECT_EQ(take_request(l, 0), fair_acquire_request(token_a_hex));
}

// The cleanup of an attempt that timed out deletes the key if it holds our token, a granted
// one too, and a grant's message is not ordered with the cleanup's reply: once a cleanup went
// out, no grant of this wait is taken, even after a later refusal.
TEST(lock_fair_grant, after_a_cleanup_of_ours_every_grant_of_the_wait_is_a_wake_up) {
    lock l;
    wait_in_line(l);
    std::int64_t t = 2 + recheck;
    ASSERT_EQ(l.on_timer(t), errc::ok);
    take_request(l, 0);
    t += 3000;
    ASSERT_EQ(l.on_timer(t), errc::ok);  // timed out: its cleanup is queued
    ASSERT_EQ(l.state(), lock_state::backing_off);
    EXPECT_EQ(take_request(l, 0), staying_cleanup_request(token_a_hex));
    ASSERT_EQ(l.on_reply(0, nil(), ++t), errc::ok);       // the attempt's late refusal
    ASSERT_EQ(l.on_reply(0, integer(1), ++t), errc::ok);  // the cleanup deleted the grant
    ASSERT_EQ(l.on_timer(t + recheck), errc::ok);
    t += recheck;
    EXPECT_EQ(take_request(l, 0), fair_acquire_request(token_a_hex));
    ASSERT_EQ(l.on_reply(0, nil(), ++t), errc::ok);  // another client took the free key
    ASSERT_EQ(l.on_wake(++t, grant(token_a_hex, "0")), errc::ok);  // the deleted grant
    EXPECT_FALSE(l.held(t));
    EXPECT_EQ(take_request(l, 0), fair_acquire_request(token_a_hex)) << "a wake-up";
}

// A new connection may reach a node that restarted, whose start the lock is told of only
// when a request goes out on it: no grant of this wait is taken from then on.
TEST(lock_fair_grant, after_a_lost_connection_every_grant_of_the_wait_is_a_wake_up) {
    lock l;
    wait_in_line(l);
    ASSERT_EQ(l.on_io_error(0, 10), errc::ok);
    ASSERT_EQ(l.on_wake(50, grant(token_a_hex, "0")), errc::ok);
    EXPECT_FALSE(l.held(50));
    EXPECT_EQ(take_request(l, 0), fair_acquire_request(token_a_hex));
    ASSERT_EQ(l.on_reply(0, nil(), 51), errc::ok);
    ASSERT_EQ(l.on_wake(60, grant(token_a_hex, "0")), errc::ok);
    EXPECT_FALSE(l.held(60));
    EXPECT_EQ(take_request(l, 0), fair_acquire_request(token_a_hex));
}

// The next acquire() trusts grants again: its token is new, and so are its entries.
TEST(lock_fair_grant, a_new_acquire_trusts_grants_again) {
    lock l;
    wait_in_line(l);
    ASSERT_EQ(l.on_io_error(0, 10), errc::ok);
    ASSERT_EQ(l.release(20), errc::ok);  // cancels the wait and leaves the line
    take_events(l);
    take_request(l, 0);
    ASSERT_EQ(l.on_reply(0, integer(0), 21), errc::ok);
    ASSERT_EQ(l.acquire(30, 10'000, token_b), errc::ok);
    take_request(l, 0);
    ASSERT_EQ(l.on_reply(0, nil(), 31), errc::ok);
    ASSERT_EQ(l.on_wake(40, grant(token_b_hex, "0")), errc::ok);
    EXPECT_TRUE(l.held(40));
    EXPECT_EQ(l.valid_until_ms(), 30 + entry_ttl - 302);
}

TEST(lock_fair_grant, without_the_watchdog_or_with_wait_a_grant_is_a_wake_up) {
    for (const bool waits_for_replicas : {false, true}) {
        lock l;
        lock_config config = fair_config();
        if (waits_for_replicas) {
            config.replicas_to_wait = 1;
        } else {
            config.watchdog = false;
        }
        ASSERT_EQ(l.configure(config), errc::ok);
        ASSERT_EQ(l.acquire(0, 10'000, token_a), errc::ok);
        take_request(l, 0);
        ASSERT_EQ(l.on_reply(0, nil(), 2), errc::ok);
        ASSERT_EQ(l.on_wake(50, grant(token_a_hex, "0")), errc::ok);
        EXPECT_FALSE(l.held(50)) << waits_for_replicas;
        EXPECT_EQ(take_request(l, 0), fair_acquire_request(token_a_hex)) << waits_for_replicas;
    }
}

TEST(lock_fair_grant, a_grant_during_an_attempt_retries_at_once_after_a_refusal) {
    lock l;
    wait_in_line(l);
    ASSERT_EQ(l.on_timer(2 + recheck), errc::ok);
    take_request(l, 0);
    ASSERT_EQ(l.on_wake(2 + recheck + 1, grant(token_a_hex, "0")), errc::ok);
    EXPECT_FALSE(l.held(2 + recheck + 1)) << "the attempt in flight decides";
    ASSERT_EQ(l.on_reply(0, nil(), 2 + recheck + 2), errc::ok);
    EXPECT_EQ(l.next_deadline_ms(), 2 + recheck + 2);
}

TEST(lock_fair_grant, grants_for_others_and_malformed_ones_change_nothing) {
    lock l;
    wait_in_line(l);
    const std::string ours = token_a_hex;
    for (const std::string& message :
         {grant(token_b_hex, "0"), ours + " ", ours + " -1", ours + " 01", ours + " 1x",
          ours + "  1", ours + "x1", ours + " 99999999999999999999"}) {
        ASSERT_EQ(l.on_wake(50, message), errc::ok) << message;
        EXPECT_EQ(l.state(), lock_state::backing_off) << message;
        EXPECT_FALSE(l.has_request(0)) << message;
    }
}

TEST(lock_fair_wire, a_fenced_release_carries_the_fence_key_to_number_the_hold_it_hands_over) {
    lock l;
    ASSERT_EQ(l.configure(fair_config(true)), errc::ok);
    ASSERT_EQ(l.acquire(0, 0, token_a), errc::ok);
    take_request(l, 0);
    ASSERT_EQ(l.on_reply(0, bulk("7"), 1), errc::ok);
    ASSERT_EQ(l.release(2), errc::ok);
    EXPECT_EQ(take_request(l, 0),
              (std::vector<std::string>{"EVALSHA", sha(edgelock::fair_release_script), "4",
                                        "orders:42", "{orders:42}:queue", "{orders:42}:qttl",
                                        "{orders:42}:fence", token_a_hex}));
}

TEST(lock_fair_waiting, an_attempt_lost_with_its_connection_is_cleaned_up_keeping_our_place) {
    lock l;
    wait_in_line(l);
    ASSERT_EQ(l.on_timer(2 + recheck), errc::ok);
    take_request(l, 0);
    ASSERT_EQ(l.on_io_error(0, 2 + recheck + 5), errc::ok);  // the script may have run
    EXPECT_EQ(l.state(), lock_state::backing_off);
    EXPECT_EQ(take_request(l, 0), staying_cleanup_request(token_a_hex));
    ASSERT_EQ(
        l.on_reply(0, error("NOSCRIPT No matching script. Please use EVAL."), 2 + recheck + 6),
        errc::ok);
    const std::vector<std::string> again = take_request(l, 0);
    EXPECT_EQ(again[0], "EVAL");
    EXPECT_EQ(again.back(), "stay") << "the text form keeps the place too";
}

TEST(lock_fair_waiting, an_attempt_that_times_out_is_cleaned_up_keeping_our_place) {
    lock l;
    wait_in_line(l);
    ASSERT_EQ(l.on_timer(2 + recheck), errc::ok);
    take_request(l, 0);
    ASSERT_EQ(l.on_timer(2 + recheck + 3000), errc::ok);  // the attempt timeout
    EXPECT_EQ(l.state(), lock_state::backing_off);
    EXPECT_EQ(take_request(l, 0), staying_cleanup_request(token_a_hex));
}

TEST(lock_fair_waiting, a_cancel_lost_with_its_connection_is_sent_again_while_the_entry_may_live) {
    lock l;
    lock_config config = fair_config();
    config.ttl_ms = 1000;  // a key lasts 1012 ms; the entry 8000 ms
    config.attempt_timeout_ms = 100;
    ASSERT_EQ(l.configure(config), errc::ok);
    ASSERT_EQ(l.acquire(0, 60'000, token_a), errc::ok);
    take_request(l, 0);
    ASSERT_EQ(l.on_reply(0, nil(), 1), errc::ok);
    ASSERT_EQ(l.release(5), errc::ok);
    ASSERT_EQ(take_request(l, 0), fair_release_request(token_a_hex));
    ASSERT_EQ(l.on_io_error(0, 1100), errc::ok);
    EXPECT_EQ(take_request(l, 0), fair_release_request(token_a_hex))
        << "past the key's TTL, but our entry in the line may still be there";
    ASSERT_EQ(l.on_io_error(0, 8002), errc::ok);
    EXPECT_FALSE(l.has_request(0)) << "past the entry's TTL: nothing of ours is left";
}

// The leave-the-line release of a refused acquire() meets NOSCRIPT (the connection never ran
// the fair release) after the next acquire() took a new token: it goes again as EVAL with
// the old token, or the old entry would head the line until it expires.
TEST(lock_fair_waiting, a_leaving_release_refused_with_noscript_after_the_next_acquire_goes_again) {
    lock l;
    ASSERT_EQ(l.configure(fair_config()), errc::ok);
    ASSERT_EQ(l.acquire(0, 0, token_a), errc::ok);
    take_request(l, 0);
    ASSERT_EQ(l.on_reply(0, nil(), 1), errc::ok);
    take_events(l);
    ASSERT_EQ(take_request(l, 0), fair_release_request(token_a_hex));
    ASSERT_EQ(l.acquire(2, 10'000, token_b), errc::ok);
    ASSERT_EQ(take_request(l, 0), fair_acquire_request(token_b_hex));
    ASSERT_EQ(l.on_reply(0, error("NOSCRIPT No matching script. Please use EVAL."), 3), errc::ok);
    ASSERT_EQ(l.on_reply(0, nil(), 4), errc::ok);  // b waits in line
    const std::vector<std::string> again = take_request(l, 0);
    ASSERT_EQ(again.size(), 7u);
    EXPECT_EQ(again[0], "EVAL");
    EXPECT_EQ(again[1], std::string(edgelock::fair_release_script.text));
    EXPECT_EQ(again[6], token_a_hex) << "the old token leaves the line";
}

// Two acquire() calls later the slot holds another token: the release cannot go again (it
// would carry that token), and its entry expires by itself.
TEST(lock_fair_waiting, a_release_whose_token_slot_was_reused_is_not_sent_again) {
    lock l;
    ASSERT_EQ(l.configure(fair_config()), errc::ok);
    ASSERT_EQ(l.acquire(0, 0, token_a), errc::ok);
    take_request(l, 0);
    ASSERT_EQ(l.on_reply(0, nil(), 1), errc::ok);
    ASSERT_EQ(take_request(l, 0), fair_release_request(token_a_hex));  // in flight from here
    ASSERT_EQ(l.acquire(2, 0, token_b), errc::ok);
    ASSERT_EQ(take_request(l, 0), fair_acquire_request(token_b_hex));
    ASSERT_EQ(l.on_timer(2 + 3000), errc::ok);  // b's attempt times out: its cleanup is queued
    take_events(l);
    edgelock::owner_token token_c = token_a;
    token_c[0] = 0x99;
    ASSERT_EQ(l.acquire(3100, 0, token_c), errc::ok);  // token a's slot now holds c
    ASSERT_EQ(l.on_reply(0, error("NOSCRIPT No matching script. Please use EVAL."), 3101),
              errc::ok);
    std::vector<std::vector<std::string>> written;
    while (l.has_request(0)) written.push_back(take_request(l, 0));
    ASSERT_EQ(written.size(), 2u) << "b's cleanup and c's attempt, nothing for a";
    EXPECT_EQ(written[0], fair_release_request(token_b_hex));
    EXPECT_EQ(written[1][0], "EVALSHA");
    EXPECT_EQ(written[1][6], "99" + std::string(token_a_hex).substr(2));
}

TEST(lock_fair_waiting, giving_up_at_the_deadline_leaves_the_line) {
    lock l;
    ASSERT_EQ(l.configure(fair_config()), errc::ok);
    ASSERT_EQ(l.acquire(0, 300, token_a), errc::ok);
    take_request(l, 0);
    ASSERT_EQ(l.on_reply(0, nil(), 2), errc::ok);
    ASSERT_EQ(l.next_deadline_ms(), 300);
    ASSERT_EQ(l.on_timer(300), errc::ok);
    take_request(l, 0);
    ASSERT_EQ(l.on_reply(0, nil(), 301), errc::ok);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].code, errc::wait_timeout);
    EXPECT_FALSE(l.wants_wake_ups());
    EXPECT_EQ(take_request(l, 0), fair_release_request(token_a_hex));
}

TEST(lock_fair_waiting, cancelling_while_waiting_leaves_the_line) {
    lock l;
    wait_in_line(l);
    ASSERT_EQ(l.release(100), errc::ok);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].code, errc::cancelled);
    EXPECT_FALSE(l.wants_wake_ups());
    EXPECT_EQ(take_request(l, 0), fair_release_request(token_a_hex));
}

TEST(lock_fair_waiting, one_attempt_without_a_wait_that_is_refused_leaves_the_line) {
    lock l;
    ASSERT_EQ(l.configure(fair_config()), errc::ok);
    ASSERT_EQ(l.acquire(0, 0, token_a), errc::ok);
    EXPECT_FALSE(l.wants_wake_ups()) << "nothing will wait for a wake-up";
    take_request(l, 0);
    ASSERT_EQ(l.on_reply(0, nil(), 1), errc::ok);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].code, errc::busy);
    EXPECT_EQ(take_request(l, 0), fair_release_request(token_a_hex));
}

// The restart guard (lock.hpp, "Restarts") delays the take, not the place in line.
constexpr std::int64_t guard = 2000;

lock_config guarded_fair_config(std::int64_t guard_ms = guard) {
    lock_config config = fair_config();
    config.restart_guard_ms = guard_ms;
    return config;
}

std::vector<std::string> joining_request(std::string_view token_hex) {
    std::vector<std::string> request = fair_acquire_request(token_hex);
    request.push_back("join");
    return request;
}

TEST(lock_fair_guard, a_waiter_joins_the_line_at_once_and_takes_the_lock_when_the_guard_ends) {
    lock l;
    ASSERT_EQ(l.configure(guarded_fair_config()), errc::ok);
    ASSERT_EQ(l.on_node_started(0, edgelock::node_start{0, false, false}, 0), errc::ok);
    ASSERT_EQ(l.acquire(10, 10'000, token_a), errc::ok);
    EXPECT_EQ(take_request(l, 0), joining_request(token_a_hex)) << "in line from the start";
    ASSERT_EQ(l.on_reply(0, nil(), 12), errc::ok);
    EXPECT_TRUE(take_events(l).empty()) << "waiting";
    EXPECT_FALSE(l.has_request(0)) << "a refused join needs no cleanup";
    EXPECT_EQ(l.next_deadline_ms(), 12 + recheck) << "the entry is kept alive every re-check";
    ASSERT_EQ(l.on_wake(100, token_a_hex), errc::ok);
    EXPECT_EQ(l.next_deadline_ms(), 12 + recheck) << "a wake-up cannot help before the guard ends";
    std::int64_t now = 12 + recheck;
    while (now < guard) {
        ASSERT_EQ(l.on_timer(now), errc::ok);
        ASSERT_EQ(take_request(l, 0), joining_request(token_a_hex)) << "at " << now;
        ASSERT_EQ(l.on_reply(0, nil(), now + 1), errc::ok);
        now = std::min(now + 1 + recheck, guard);
        ASSERT_EQ(l.next_deadline_ms(), now);
    }
    ASSERT_EQ(l.on_timer(guard), errc::ok);
    EXPECT_EQ(take_request(l, 0), fair_acquire_request(token_a_hex))
        << "the guard is over: a real attempt";
    ASSERT_EQ(l.on_reply(0, integer(0), guard + 1), errc::ok);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].type, event_type::acquired);
}

TEST(lock_fair_guard, a_wait_that_ends_before_the_guard_fails_at_once_and_joins_nothing) {
    lock l;
    ASSERT_EQ(l.configure(guarded_fair_config()), errc::ok);
    ASSERT_EQ(l.on_node_started(0, edgelock::node_start{0, false, false}, 0), errc::ok);
    ASSERT_EQ(l.acquire(10, 1000, token_a), errc::ok);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].code, errc::restart_guard);
    EXPECT_EQ(events[0].guard_until_ms, guard);
    EXPECT_FALSE(l.has_request(0)) << "never in line: nothing to leave";
}

TEST(lock_fair_guard, a_waiter_in_line_that_the_guard_outlasts_leaves_the_line) {
    lock m;
    ASSERT_EQ(m.configure(guarded_fair_config(60'000)), errc::ok);
    ASSERT_EQ(m.acquire(0, 10'000, token_a), errc::ok);
    take_request(m, 0);
    ASSERT_EQ(m.on_reply(0, nil(), 2), errc::ok);  // refused: in line
    // The node restarts without persistence: it counts again only after the wait has ended.
    ASSERT_EQ(m.on_node_started(0, edgelock::node_start{50, false, true}, 50), errc::ok);
    ASSERT_EQ(m.on_timer(2 + recheck), errc::ok);
    const auto events = take_events(m);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].code, errc::restart_guard);
    EXPECT_EQ(take_request(m, 0), fair_release_request(token_a_hex)) << "its entry does not linger";
}

// A restart noticed while an attempt waits to be written fails that attempt with
// restart_guard; the waiter still stands in line: its next attempt, within recheck_ms, joins.
TEST(lock_fair_guard, a_restart_noticed_during_an_attempt_joins_the_line_within_a_recheck) {
    lock l;
    ASSERT_EQ(l.configure(fair_config()), errc::ok);  // guard: ttl + drift, 30302 ms
    ASSERT_EQ(l.acquire(0, 100'000, token_a), errc::ok);
    take_request(l, 0);
    ASSERT_EQ(l.on_reply(0, nil(), 2), errc::ok);  // in line
    ASSERT_EQ(l.on_io_error(0, 100), errc::ok);    // Redis goes away
    ASSERT_EQ(l.on_timer(2 + recheck), errc::ok);  // the re-check's attempt waits for a connection
    ASSERT_TRUE(l.has_request(0));
    // The new connection finds the node restarted without persistence at t=900.
    ASSERT_EQ(l.on_node_started(0, edgelock::node_start{900, false, true}, 1000), errc::ok);
    EXPECT_TRUE(take_events(l).empty()) << "still waiting: the guard ends within the wait";
    EXPECT_LE(l.next_deadline_ms(), 1000 + recheck) << "not the guard's end, 31202";
    ASSERT_EQ(take_request(l, 0), staying_cleanup_request(token_a_hex)) << "the failed attempt's";
    ASSERT_EQ(l.on_reply(0, integer(0), 1001), errc::ok);
    ASSERT_EQ(l.on_timer(l.next_deadline_ms()), errc::ok);
    EXPECT_EQ(take_request(l, 0), joining_request(token_a_hex));
}

TEST(lock_fair_guard, an_exhausted_fence_counter_fails_a_join_at_once) {
    lock l;
    lock_config config = guarded_fair_config();
    config.fencing = true;
    ASSERT_EQ(l.configure(config), errc::ok);
    ASSERT_EQ(l.on_node_started(0, edgelock::node_start{0, false, false}, 0), errc::ok);
    ASSERT_EQ(l.acquire(0, 60'000, token_a), errc::ok);
    const std::vector<std::string> join = take_request(l, 0);
    ASSERT_EQ(join.back(), "join");
    ASSERT_EQ(l.on_reply(0, error("FENCE_EXHAUSTED the fence counter is at 2^63-1"), 2),
              errc::error_reply);
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].code, errc::fence_exhausted) << "waiting cannot help";
    EXPECT_EQ(l.state(), lock_state::idle);
}

// The taker stands at the head of the line until its release: a hold lost because Redis no
// longer has our key still takes our token out of the line.
TEST(lock_fair_waiting, a_hold_lost_with_token_gone_leaves_the_line) {
    lock l;
    ASSERT_EQ(l.configure(fair_config()), errc::ok);
    ASSERT_EQ(l.acquire(0, 10'000, token_a), errc::ok);
    take_request(l, 0);
    ASSERT_EQ(l.on_reply(0, integer(0), 2), errc::ok);
    take_events(l);
    ASSERT_EQ(l.on_timer(10'000), errc::ok);
    take_request(l, 0);                                      // the renewal
    ASSERT_EQ(l.on_reply(0, integer(0), 10'002), errc::ok);  // the key is gone
    const auto events = take_events(l);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].code, errc::token_gone);
    EXPECT_EQ(take_request(l, 0), fair_release_request(token_a_hex));
}

// A waiter that gave up has its leave in flight when its next acquire() starts, and the
// connection drops: the leave goes again (as after NOSCRIPT), or its entry would head the line
// for up to queue_entry_ttl_ms.
TEST(lock_fair_waiting, a_leave_lost_with_its_connection_after_the_next_acquire_goes_again) {
    lock l;
    ASSERT_EQ(l.configure(fair_config()), errc::ok);
    ASSERT_EQ(l.acquire(0, 10'000, token_a), errc::ok);
    take_request(l, 0);
    ASSERT_EQ(l.on_reply(0, nil(), 1), errc::ok);  // in line
    ASSERT_EQ(l.release(5), errc::ok);             // cancelled: the leave is written
    take_events(l);
    ASSERT_EQ(take_request(l, 0), fair_release_request(token_a_hex));
    ASSERT_EQ(l.acquire(6, 10'000, token_b), errc::ok);
    ASSERT_EQ(l.on_io_error(0, 7), errc::ok);
    ASSERT_EQ(take_request(l, 0), fair_acquire_request(token_b_hex));
    ASSERT_EQ(l.on_reply(0, nil(), 8), errc::ok);
    EXPECT_EQ(take_request(l, 0), fair_release_request(token_a_hex)) << "a's leave goes again";
}

TEST(lock_fair_waiting, wake_ups_mean_nothing_to_an_unfair_lock) {
    lock l;
    configure(l, 1);
    ASSERT_EQ(l.acquire(0, 10'000, token_a), errc::ok);
    take_request(l, 0);
    ASSERT_EQ(l.on_reply(0, key_held_by(token_b_hex), 2), errc::ok);
    EXPECT_FALSE(l.wants_wake_ups());
    const std::int64_t retry_at = l.next_deadline_ms();
    ASSERT_EQ(l.on_wake(3, token_a_hex), errc::ok);
    EXPECT_EQ(l.next_deadline_ms(), retry_at);
    EXPECT_FALSE(l.has_request(0));
}

TEST(lock_fair_waiting, a_wake_up_with_bad_input_is_refused_and_changes_nothing) {
    lock l;
    wait_in_line(l);
    EXPECT_EQ(l.on_wake(-edgelock::now_ms_limit - 1, token_a_hex), errc::invalid_time);
    EXPECT_EQ(l.state(), lock_state::backing_off);
    EXPECT_FALSE(l.has_request(0));
    lock unconfigured;
    EXPECT_EQ(unconfigured.on_wake(0, ""), errc::invalid_state);
}

}  // namespace
