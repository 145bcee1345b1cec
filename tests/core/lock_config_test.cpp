// SPDX-License-Identifier: Apache-2.0
// resolve(): the lock's defaults, read from the one place that computes them.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "edgelock/lock.hpp"

namespace {

using edgelock::errc;
using edgelock::lock_config;
using edgelock::resolve;

constexpr std::int64_t int64_max = std::numeric_limits<std::int64_t>::max();

lock_config named(std::int64_t ttl_ms) {
    lock_config config;
    config.name = "job";
    config.ttl_ms = ttl_ms;
    return config;
}

TEST(lock_config_resolve, fills_every_default_from_the_ttl) {
    const lock_config r = resolve(named(30'000));
    EXPECT_EQ(r.drift_ms, 30'000 / 100 + 2);
    EXPECT_EQ(r.renew_interval_ms, 10'000);
    EXPECT_EQ(r.attempt_timeout_ms, 3'000);
    EXPECT_EQ(r.retry_delay_ms_min, 50);
    EXPECT_EQ(r.retry_delay_ms_max, 1'000);
    EXPECT_EQ(r.replica_wait_ms, 1'500) << "half the attempt, even without replicas_to_wait";
    EXPECT_EQ(r.restart_guard_ms, 30'000 + 302) << "ttl + drift";
    EXPECT_EQ(r.recheck_ms, 1'000);
    EXPECT_EQ(r.queue_entry_ttl_ms, 2 * (1'000 + 3'000));
    EXPECT_EQ(r.ttl_ms, 30'000);
    EXPECT_EQ(r.name, "job");
}

TEST(lock_config_resolve, the_attempt_timeout_is_at_least_a_millisecond) {
    const lock_config r = resolve(named(5));
    EXPECT_EQ(r.attempt_timeout_ms, 1);
    EXPECT_EQ(r.replica_wait_ms, 0) << "half of 1 ms: configure() refuses it with replicas";
    EXPECT_EQ(r.drift_ms, 2);
}

TEST(lock_config_resolve, keeps_what_was_given) {
    lock_config given = named(30'000);
    given.drift_ms = 0;  // no allowance at all: not the default
    given.renew_interval_ms = 7;
    given.attempt_timeout_ms = 400;
    given.retry_delay_ms_min = 2'000;  // above the default cap: the cap follows
    given.replica_wait_ms = 300;
    given.restart_guard_ms = 0;  // the guard off: not the default
    given.recheck_ms = 250;
    const lock_config r = resolve(given);
    EXPECT_EQ(r.drift_ms, 0);
    EXPECT_EQ(r.renew_interval_ms, 7);
    EXPECT_EQ(r.attempt_timeout_ms, 400);
    EXPECT_EQ(r.retry_delay_ms_min, 2'000);
    EXPECT_EQ(r.retry_delay_ms_max, 2'000);
    EXPECT_EQ(r.replica_wait_ms, 300);
    EXPECT_EQ(r.restart_guard_ms, 0);
    EXPECT_EQ(r.recheck_ms, 250);
    EXPECT_EQ(r.queue_entry_ttl_ms, 2 * (250 + 400)) << "from the values given";
}

TEST(lock_config_resolve, is_idempotent) {
    for (const std::int64_t ttl :
         {std::int64_t{1}, std::int64_t{19}, std::int64_t{1'500}, edgelock::ttl_ms_max}) {
        const lock_config once = resolve(named(ttl));
        const lock_config twice = resolve(once);
        EXPECT_EQ(twice.drift_ms, once.drift_ms) << ttl;
        EXPECT_EQ(twice.renew_interval_ms, once.renew_interval_ms) << ttl;
        EXPECT_EQ(twice.attempt_timeout_ms, once.attempt_timeout_ms) << ttl;
        EXPECT_EQ(twice.retry_delay_ms_max, once.retry_delay_ms_max) << ttl;
        EXPECT_EQ(twice.replica_wait_ms, once.replica_wait_ms) << ttl;
        EXPECT_EQ(twice.restart_guard_ms, once.restart_guard_ms) << ttl;
        EXPECT_EQ(twice.queue_entry_ttl_ms, once.queue_entry_ttl_ms) << ttl;
    }
}

TEST(lock_config_resolve, out_of_range_inputs_saturate_and_configure_refuses_them) {
    lock_config given = named(30'000);
    given.fair = true;
    given.recheck_ms = int64_max;
    given.drift_ms = int64_max;
    const lock_config r = resolve(given);
    EXPECT_EQ(r.queue_entry_ttl_ms, int64_max);
    EXPECT_EQ(r.restart_guard_ms, int64_max);
    edgelock::lock l;
    EXPECT_EQ(l.configure(given), errc::invalid_config);
}

// What configure() runs with is what resolve() says: a lock configured with the resolved
// values behaves as one left to its defaults (its first deadline is the attempt timeout).
TEST(lock_config_resolve, configure_runs_with_the_resolved_values) {
    const lock_config defaults = named(30'000);
    const lock_config resolved = resolve(defaults);
    edgelock::lock by_default;
    edgelock::lock explicit_values;
    ASSERT_EQ(by_default.configure(defaults), errc::ok);
    ASSERT_EQ(explicit_values.configure(resolved), errc::ok);
    const edgelock::owner_token token{1, 2, 3};
    ASSERT_EQ(by_default.acquire(1'000, 0, token), errc::ok);
    ASSERT_EQ(explicit_values.acquire(1'000, 0, token), errc::ok);
    EXPECT_EQ(by_default.next_deadline_ms(), 1'000 + resolved.attempt_timeout_ms);
    EXPECT_EQ(explicit_values.next_deadline_ms(), by_default.next_deadline_ms());
}

}  // namespace
