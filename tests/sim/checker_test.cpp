// SPDX-License-Identifier: Apache-2.0
// The history checks over hand-made histories: each passes a clean history and catches the
// violation it exists for.
#include "edgelock/sim/checker.hpp"

#include <gtest/gtest.h>

namespace {

using namespace edgelock::sim;

hold_record hold(std::uint8_t client, std::uint32_t index, std::int64_t start, std::int64_t end,
                 std::int64_t fence = 0) {
    hold_record h;
    h.client = client;
    h.index = index;
    h.start_us = start;
    h.end_us = end;
    h.fence = fence;
    h.end = hold_end::released;
    return h;
}

resource_record op(std::int64_t at, std::uint8_t client, std::uint32_t hold, bool write,
                   bool accepted = true) {
    resource_record r;
    r.at_us = at;
    r.client = client;
    r.hold = hold;
    r.write = write;
    r.accepted = accepted;
    return r;
}

history clean() {
    history h;
    h.fencing = true;
    h.holds = {hold(0, 0, 100, 200, 1), hold(1, 1, 200, 300, 2), hold(0, 2, 350, 400, 3)};
    h.resource_ops = {op(110, 0, 0, false), op(150, 0, 0, true), op(210, 1, 1, false),
                      op(290, 1, 1, true)};
    h.heal_us = 300;
    h.end_us = 1000;
    return h;
}

TEST(checker, a_clean_history_passes_every_check) {
    const verdict v = check_history(clean());
    EXPECT_TRUE(v.all_ok());
}

TEST(checker, overlap_of_two_clients_is_caught_but_touching_holds_are_fine) {
    history h = clean();
    h.holds[1].start_us = 199;
    const verdict v = check_history(h);
    EXPECT_FALSE(v.ok(check_kind::overlap));
    EXPECT_NE(v.checks[0].detail.find("c1"), std::string::npos);
    EXPECT_TRUE(v.ok(check_kind::stale));
}

// A semaphore of 3 permits: three clients believing at once are fine, a fourth is not; and a
// client's hold and action window at once count it once.
TEST(checker, a_semaphore_overlaps_only_beyond_its_permits) {
    history h;
    h.permits = 3;
    h.holds = {hold(0, 0, 100, 400), hold(1, 1, 150, 400), hold(2, 2, 200, 400),
               hold(3, 3, 400, 500)};
    h.actions = {{0, 0, 300, 390}};
    h.heal_us = 100;
    h.end_us = 1000;
    EXPECT_TRUE(check_history(h).ok(check_kind::overlap));
    h.holds[3].start_us = 399;
    const verdict v = check_history(h);
    EXPECT_FALSE(v.ok(check_kind::overlap));
    EXPECT_NE(v.checks[0].detail.find("4 clients believed they held one of the 3 permits"),
              std::string::npos)
        << v.checks[0].detail;
}

// A write that arrived after its holder's belief ended, while the three holders the resource
// served still held: four owners at the resource. Not once one of them stopped, nor for a write
// that arrived while its holder still believed (the overlap check's business).
TEST(checker, a_semaphores_stale_write_is_a_late_one_while_n_served_holders_hold) {
    history h;
    h.permits = 3;
    h.holds = {hold(0, 0, 100, 200), hold(1, 1, 110, 900), hold(2, 2, 120, 900),
               hold(3, 3, 210, 900)};
    h.resource_ops = {op(130, 1, 1, true), op(140, 2, 2, true), op(220, 3, 3, true),
                      op(250, 0, 0, true)};
    h.heal_us = 100;
    h.end_us = 1000;
    const verdict v = check_history(h);
    EXPECT_FALSE(v.ok(check_kind::stale));
    EXPECT_NE(v.checks[1].detail.find("while 3 other clients it had served still held"),
              std::string::npos)
        << v.checks[1].detail;
    h.holds[1].end_us = 240;  // one of the three stopped before the late write
    EXPECT_TRUE(check_history(h).ok(check_kind::stale));
    h.holds[1].end_us = 900;
    h.holds[0].end_us = 260;  // the write came while its holder still believed
    EXPECT_TRUE(check_history(h).ok(check_kind::stale));
    h.holds[0].end_us = 200;
    h.holds[3].client = 0;  // the writer's own later hold is not another owner
    EXPECT_TRUE(check_history(h).ok(check_kind::stale));
}

// A fenced semaphore's stale write is the lock's, per permit (as numbered): hold #0's permit 0
// passed to hold #2, and #0's write after the resource served #2 is stale; hold #1's write
// after #2 is not (another permit, held all along).
TEST(checker, a_fenced_semaphores_stale_write_is_judged_per_permit) {
    history h;
    h.permits = 3;
    h.fencing = true;
    h.holds = {hold(0, 0, 100, 200, 30), hold(1, 1, 110, 900, 31), hold(2, 2, 210, 900, 33)};
    for (hold_record& r : h.holds) r.permit = static_cast<std::uint16_t>(r.fence % 3);
    h.resource_ops = {op(130, 1, 1, true), op(220, 2, 2, true), op(230, 1, 1, true)};
    h.heal_us = 100;
    h.end_us = 1000;
    EXPECT_TRUE(check_history(h).ok(check_kind::stale)) << "permit 1's holder writes on";
    h.resource_ops.push_back(op(240, 0, 0, true));
    const verdict v = check_history(h);
    EXPECT_FALSE(v.ok(check_kind::stale));
    EXPECT_NE(v.checks[1].detail.find("after serving hold #2 of its permit 0"), std::string::npos)
        << v.checks[1].detail;
    // Tokens that do not name their permit (a wrong script's) mislead a resource, not the
    // check: it judges by the permits the server numbered.
    h.resource_ops.pop_back();
    h.holds[2].fence = 35;
    EXPECT_TRUE(check_history(h).ok(check_kind::stale));
    h.resource_ops.push_back(op(240, 0, 0, true));
    EXPECT_FALSE(check_history(h).ok(check_kind::stale)) << "hold #2 still holds permit 0";
}

// A fenced semaphore's order is judged per permit: hold #1 (permit 0) heard of its grant late,
// after hold #0 of another permit, granted later with a higher token, was over; hold #2 of
// permit 0 after it with a lower token is out of order.
TEST(checker, a_fenced_semaphores_order_is_judged_per_permit) {
    history h;
    h.permits = 3;
    h.fencing = true;
    h.holds = {hold(0, 0, 100, 200, 31), hold(1, 1, 500, 600, 30)};
    h.holds[0].permit = 1;
    h.holds[1].permit = 0;
    h.heal_us = 100;
    h.end_us = 1000;
    EXPECT_TRUE(check_history(h).ok(check_kind::order)) << "another permit's later token";
    h.holds.push_back(hold(2, 2, 700, 800, 27));
    h.holds[2].permit = 0;
    EXPECT_FALSE(check_history(h).ok(check_kind::order)) << "permit 0's token went down";
    h.holds[2].fence = 34;  // above 30, but naming permit 1 while its lease holds permit 0
    const verdict misnamed = check_history(h);
    EXPECT_FALSE(misnamed.ok(check_kind::order));
    EXPECT_NE(misnamed.checks[2].detail.find("which names permit 1, not its permit 0"),
              std::string::npos)
        << misnamed.checks[2].detail;
}

TEST(checker, acting_on_an_old_check_counts_as_believing) {
    history h = clean();
    h.actions.push_back(action_record{0, 0, 150, 250});  // checked at 150, wrote at 250
    EXPECT_FALSE(check_history(h).ok(check_kind::overlap));
    h.actions.back().send_us = 150;  // wrote right after the check: no window
    EXPECT_TRUE(check_history(h).ok(check_kind::overlap));
}

TEST(checker, the_same_client_may_hold_back_to_back) {
    history h = clean();
    h.holds[2].start_us = 150;  // client 0 again, overlapping its own earlier hold
    h.holds[2].client = 0;
    h.holds[1].start_us = 450;
    h.holds[1].end_us = 500;
    EXPECT_TRUE(check_history(h).ok(check_kind::overlap));
}

TEST(checker, a_write_after_a_later_holder_was_served_is_stale) {
    history h = clean();
    h.resource_ops.push_back(op(295, 0, 0, true));
    const verdict v = check_history(h);
    EXPECT_FALSE(v.ok(check_kind::stale));
    EXPECT_NE(v.checks[1].detail.find("hold #0"), std::string::npos);
    h.resource_ops.back().accepted = false;  // refused by fencing: fine
    EXPECT_TRUE(check_history(h).ok(check_kind::stale));
}

TEST(checker, a_late_write_before_the_next_holder_touches_the_resource_is_not_stale) {
    history h = clean();
    h.resource_ops.insert(h.resource_ops.begin() + 2, op(205, 0, 0, true));
    EXPECT_TRUE(check_history(h).ok(check_kind::stale));
}

TEST(checker, tokens_must_strictly_increase_with_fencing) {
    history h = clean();
    h.holds[2].fence = 2;
    EXPECT_FALSE(check_history(h).ok(check_kind::order));
    h.holds[2].fence = 1;
    EXPECT_FALSE(check_history(h).ok(check_kind::order)) << "compared with every earlier holder";
    h.fencing = false;
    EXPECT_TRUE(check_history(h).ok(check_kind::order)) << "without fencing there are no tokens";
}

TEST(checker, overlapping_holders_promise_no_token_order) {
    history h = clean();
    h.holds[1].start_us = 150;  // began while hold #0 still held: an overlap, not an order issue
    h.holds[1].fence = 1;
    h.holds[0].fence = 2;
    h.holds[2].fence = 3;
    const verdict v = check_history(h);
    EXPECT_TRUE(v.ok(check_kind::order));
    EXPECT_FALSE(v.ok(check_kind::overlap));
}

TEST(checker, a_late_write_keeps_its_holder_going_for_the_order_check) {
    history h = clean();
    h.holds[1].fence = 1;
    h.holds[0].fence = 1;
    EXPECT_FALSE(check_history(h).ok(check_kind::order));
    h.actions.push_back(action_record{0, 0, 190, 260});  // hold #0 still writing when #1 began
    EXPECT_TRUE(check_history(h).ok(check_kind::order));
}

// The run can end at the instant a hold began: that hold is not over before itself.
TEST(checker, a_hold_cut_off_at_its_first_instant_is_not_compared_with_itself) {
    history h = clean();
    h.holds.push_back(hold(1, 3, 500, 500, 4));
    EXPECT_TRUE(check_history(h).ok(check_kind::order));
    h.holds.push_back(hold(0, 4, 600, 650, 4));
    EXPECT_FALSE(check_history(h).ok(check_kind::order))
        << "still compared with the holds after it";
}

TEST(checker, liveness_needs_an_acquisition_after_the_heal) {
    history h = clean();
    h.heal_us = 360;
    EXPECT_FALSE(check_history(h).ok(check_kind::liveness));
    h.heal_us = 350;
    EXPECT_TRUE(check_history(h).ok(check_kind::liveness));
}

}  // namespace

TEST(checker, a_hold_lost_without_a_reason_is_reported_by_the_kept_check) {
    history h = clean();
    EXPECT_TRUE(check_history(h).ok(check_kind::kept));
    h.kept.violations = 2;
    h.kept.first_us = 400;
    h.kept.first = "c0 lost hold #1";
    const verdict v = check_history(h);
    EXPECT_FALSE(v.ok(check_kind::kept));
    EXPECT_EQ(v.checks[static_cast<std::size_t>(check_kind::kept)].detail,
              "c0 lost hold #1 (2 hold(s) lost without a reason)");
    EXPECT_TRUE(v.ok(check_kind::oracle)) << "each judged record has its own check";
}

TEST(checker, a_hold_lost_to_a_fault_ridden_out_is_reported_by_the_available_check) {
    history h = clean();
    EXPECT_TRUE(check_history(h).ok(check_kind::available));
    h.available.violations = 1;
    h.available.first_us = 900;
    h.available.first = "c1 lost hold #3";
    const verdict v = check_history(h);
    EXPECT_FALSE(v.ok(check_kind::available));
    EXPECT_EQ(v.checks[static_cast<std::size_t>(check_kind::available)].detail,
              "c1 lost hold #3 (1 hold(s) lost, or free lock(s) not taken, through what "
              "the configuration rides out)");
    EXPECT_TRUE(v.ok(check_kind::kept)) << "a loss is judged by one of the two, not both";
}
