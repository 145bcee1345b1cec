// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <limits>

#include "edgelock/session/cluster_route.hpp"
#include "edgelock/session/lock_metrics.hpp"

namespace {

using namespace edgelock;
using namespace edgelock::session;

node_address node_at(std::uint16_t port) {
    node_address a;
    EXPECT_TRUE(a.host.assign("127.0.0.1"));
    a.port = port;
    return a;
}

std::uint64_t acquires(const lock_metrics& m, acquire_outcome outcome) {
    return m.acquires[static_cast<std::size_t>(outcome)];
}

TEST(lock_metrics, a_sample_falls_in_the_first_bucket_whose_bound_holds_it) {
    latency_histogram h;
    h.record(0);
    h.record(1);   // on the bound: the 1 ms bucket
    h.record(2);   // the 2 ms bucket
    h.record(-5);  // a clock gone backwards counts as 0
    h.record(30'001);
    EXPECT_EQ(h.counts[0], 3u);
    EXPECT_EQ(h.counts[1], 1u);
    EXPECT_EQ(h.counts.back(), 1u) << "above the highest bound";
    EXPECT_EQ(h.count, 5u);
    EXPECT_EQ(h.sum_ms, 30'004);
}

TEST(lock_metrics, the_sum_saturates_instead_of_wrapping) {
    latency_histogram h;
    h.record(std::numeric_limits<std::int64_t>::max());
    h.record(10);
    EXPECT_EQ(h.sum_ms, std::numeric_limits<std::int64_t>::max());
    EXPECT_EQ(h.count, 2u);
}

TEST(lock_metrics, acquire_codes_fall_in_their_classes) {
    EXPECT_EQ(classify_acquire({}), acquire_outcome::acquired);
    EXPECT_EQ(classify_acquire(failure::of(errc::busy)), acquire_outcome::busy);
    EXPECT_EQ(classify_acquire(failure::of(errc::restart_guard)), acquire_outcome::restart_guard);
    EXPECT_EQ(classify_acquire(failure::of(errc::not_replicated)), acquire_outcome::not_replicated);
    EXPECT_EQ(classify_acquire(failure::of(errc::wait_timeout)), acquire_outcome::wait_timeout);
    EXPECT_EQ(classify_acquire(failure::of(transport_errc::command_timeout)),
              acquire_outcome::unreachable);
    EXPECT_EQ(classify_acquire(failure::system(ECONNREFUSED)), acquire_outcome::unreachable);
    EXPECT_EQ(classify_acquire(failure::system(ECANCELED)), acquire_outcome::cancelled);
    EXPECT_EQ(classify_acquire(failure::of(errc::error_reply)), acquire_outcome::error);
    EXPECT_STREQ(to_string(acquire_outcome::no_quorum), "no_quorum");
    EXPECT_STREQ(to_string(acquire_outcome::error), "error");
}

TEST(lock_metrics, a_first_attempt_success_is_latency_and_a_retried_one_is_wait) {
    lock_meter meter;
    meter.acquire_started(100);
    meter.acquire_ended({}, 1, 5103, 103);
    meter.acquire_started(200);
    meter.acquire_ended(failure::of(errc::busy), 4, 0, 900);
    meter.acquire_started(1000);
    meter.acquire_ended(failure::of(errc::busy), 1, 0, 1001);  // a try: neither histogram
    const lock_metrics& m = meter.counts();
    EXPECT_EQ(acquires(m, acquire_outcome::acquired), 1u);
    EXPECT_EQ(acquires(m, acquire_outcome::busy), 2u);
    EXPECT_EQ(m.acquire_latency.count, 1u);
    EXPECT_EQ(m.acquire_latency.sum_ms, 3);
    EXPECT_EQ(m.acquire_wait.count, 1u);
    EXPECT_EQ(m.acquire_wait.sum_ms, 700);
}

TEST(lock_metrics, the_handover_gap_runs_from_the_first_wake_up_to_the_hold) {
    lock_meter meter;
    meter.woken(10);  // not acquiring: ignored
    meter.acquire_started(100);
    meter.woken(400);
    meter.woken(450);  // a second message of the same acquire changes nothing
    meter.acquire_ended({}, 3, 5000, 412 + 50);
    EXPECT_EQ(meter.counts().handover_gap.count, 1u);
    EXPECT_EQ(meter.counts().handover_gap.sum_ms, 62);

    meter.acquire_started(1000);
    meter.woken(1100);
    meter.acquire_ended(failure::of(errc::busy), 2, 0, 1200);  // woken, but not acquired
    EXPECT_EQ(meter.counts().handover_gap.count, 1u);
}

TEST(lock_metrics, a_renewal_with_less_than_an_interval_left_is_late) {
    lock_meter meter;
    meter.set_renew_interval(1000);
    meter.acquire_started(0);
    meter.acquire_ended({}, 1, /*valid_until_ms=*/3000, /*now_ms=*/0);
    meter.renewed(/*valid_until_ms=*/4000, /*now_ms=*/1000);  // 2000 left: on time
    meter.renewed(5000, 3001);                                // 999 left: late
    meter.renewed(6000, 4000);                                // exactly one interval left: on time
    EXPECT_EQ(meter.counts().renewals_ok, 3u);
    EXPECT_EQ(meter.counts().renewals_late, 1u);
    EXPECT_EQ(meter.held_for_ms(4500), 4500);
}

TEST(lock_metrics, losses_releases_and_connections_are_counted_by_class) {
    lock_meter meter;
    meter.lost(errc::token_gone);
    meter.lost(errc::expired);
    meter.lost(errc::node_restarted);
    meter.released({});
    meter.released(failure::of(errc::expired));
    meter.released(failure::of(errc::no_quorum));
    link_record link;
    meter.connected(link, link_kind::followed_master, node_at(7001));
    meter.connected(link, link_kind::followed_master, node_at(7002));
    meter.renewal_failed();
    const lock_metrics& m = meter.counts();
    EXPECT_EQ(m.losses[static_cast<std::size_t>(loss_cause::token_gone)], 1u);
    EXPECT_EQ(m.losses[static_cast<std::size_t>(loss_cause::expired)], 1u);
    EXPECT_EQ(m.losses[static_cast<std::size_t>(loss_cause::node_restarted)], 1u);
    EXPECT_EQ(m.releases[static_cast<std::size_t>(release_outcome::released)], 1u);
    EXPECT_EQ(m.releases[static_cast<std::size_t>(release_outcome::expired)], 1u);
    EXPECT_EQ(m.releases[static_cast<std::size_t>(release_outcome::failed)], 1u);
    EXPECT_EQ(m.connects, 2u);
    EXPECT_EQ(m.reconnects, 1u);
    EXPECT_EQ(m.failovers, 1u);
    EXPECT_EQ(m.renewal_failures, 1u);
}

// Sentinel: the instance's link follows its master. Again at the same node is a reconnect;
// at another master a reconnect and a failover.
TEST(lock_metrics, an_instance_link_made_again_elsewhere_is_a_failover) {
    lock_meter meter;
    link_record link;
    meter.connected(link, link_kind::followed_master, node_at(7001));
    EXPECT_EQ(meter.counts().reconnects, 0u);
    meter.connected(link, link_kind::followed_master, node_at(7001));
    EXPECT_EQ(meter.counts().reconnects, 1u);
    EXPECT_EQ(meter.counts().failovers, 0u);
    meter.connected(link, link_kind::followed_master, node_at(7002));
    EXPECT_EQ(meter.counts().connects, 3u);
    EXPECT_EQ(meter.counts().reconnects, 2u);
    EXPECT_EQ(meter.counts().failovers, 1u);
}

// Cluster: a link reaches one node. An index given to another node is another link: its first
// connection is neither a reconnect nor a failover.
TEST(lock_metrics, a_node_link_given_to_another_node_starts_afresh) {
    lock_meter meter;
    link_record link;
    meter.connected(link, link_kind::node, node_at(7001));
    meter.connected(link, link_kind::node, node_at(7005));
    EXPECT_EQ(meter.counts().connects, 2u);
    EXPECT_EQ(meter.counts().reconnects, 0u);
    EXPECT_EQ(meter.counts().failovers, 0u);
    meter.connected(link, link_kind::node, node_at(7005));
    EXPECT_EQ(meter.counts().reconnects, 1u);
    EXPECT_EQ(meter.counts().failovers, 0u);
}

TEST(lock_metrics, redirects_are_counted_by_kind) {
    lock_meter meter;
    meter.redirected(redirect::kind::moved);
    meter.redirected(redirect::kind::ask);
    meter.redirected(redirect::kind::ask);
    meter.redirected(redirect::kind::none);
    EXPECT_EQ(meter.counts().redirects_moved, 1u);
    EXPECT_EQ(meter.counts().redirects_ask, 2u);
    lock_metrics total;
    total.add(meter.counts());
    EXPECT_EQ(total.redirects_ask, 2u);
}

// A cluster lock's move is a failover only off a lost node, to the slot's master.
TEST(lock_metrics, a_move_is_a_failover_only_off_a_lost_node) {
    route_step step;
    step.moved = true;
    step.left = 2;
    step.to.node = 3;
    EXPECT_TRUE(is_failover(step, true));
    EXPECT_FALSE(is_failover(step, false)) << "a MOVED from a node still reached";
    step.to.asking = true;
    EXPECT_FALSE(is_failover(step, true)) << "an ASK's hop";
    step.to.asking = false;
    step.left = slot_map::no_master;
    EXPECT_FALSE(is_failover(step, true)) << "the lock's first node";
    step.left = 2;
    step.moved = false;
    EXPECT_FALSE(is_failover(step, true));
}

TEST(lock_metrics, add_sums_every_field) {
    lock_meter a;
    a.acquire_started(0);
    a.acquire_ended({}, 1, 100, 5);
    a.renewed(200, 50);
    lock_metrics total;
    total.add(a.counts());
    total.add(a.counts());
    EXPECT_EQ(total.acquired(), 2u);
    EXPECT_EQ(total.acquire_latency.count, 2u);
    EXPECT_EQ(total.acquire_latency.sum_ms, 10);
    EXPECT_EQ(total.renewals_ok, 2u);
}

}  // namespace
