// SPDX-License-Identifier: Apache-2.0
// Fault schedules: the text form round-trips (replay commands depend on it) and bad text is
// refused with a reason.
#include "edgelock/sim/schedule.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

namespace {

using namespace edgelock::sim;

TEST(schedule, text_form_reads_back) {
    const std::string text =
        "pause.c0@c0.checked#1+0,d=2500;partition.c0@t0,to=n3n4,d=4000;"
        "crash.n2@c1.acquired#2+20,d=50,p=everysec;slow_link.c1@c1.checked#1+0,to=R,d=1,x=2500;"
        "drop_reply.c2@c2.release_called#1+0,to=n0,k=2,rst=1;clock_rate.c0@t0,x=-80000,wall=1;"
        "wall_step.n1@t100,x=-3000;repl_lag.n0@t0,to=n1n2,d=100,x=40;"
        "loss.c0@t5,to=n0n1,d=10,x=5000;evict.n0@c1.acquired#2+30,x=1";
    schedule s;
    std::string error;
    ASSERT_TRUE(parse_schedule(text, s, error)) << error;
    ASSERT_EQ(s.size(), 10u);
    EXPECT_EQ(to_text(s), text);
    EXPECT_EQ(s[0].kind, fault_kind::pause);
    EXPECT_TRUE(s[0].when.at_point);
    EXPECT_EQ(s[0].when.where, point::checked);
    EXPECT_EQ(s[1].nodes, 0b11000);
    EXPECT_EQ(s[2].persist, persistence::everysec);
    EXPECT_TRUE(s[3].resource);
    EXPECT_EQ(s[4].count, 2);
    EXPECT_TRUE(s[4].reset);
    EXPECT_TRUE(s[5].wall);
    EXPECT_EQ(s[6].amount, -3000);
    EXPECT_EQ(s[9].kind, fault_kind::evict);
    EXPECT_EQ(s[9].amount, 1);
}

TEST(schedule, empty_text_is_no_faults) {
    schedule s{fault{}};
    std::string error;
    ASSERT_TRUE(parse_schedule("", s, error));
    EXPECT_TRUE(s.empty());
}

TEST(schedule, bad_text_is_refused_with_a_reason) {
    for (const char* text : {"nap.c0@t0", "pause.x0@t0", "pause.c0", "pause.c0@c0.lunch#1+0",
                             "pause.c0@c0.checked#0+0", "pause.c0@t0,d=", "pause.c0@t0,q=1",
                             "crash.n0@t0,p=sometimes", "pause.c0@t0,d=-5", "evict.n0@t0,x=2"}) {
        schedule s;
        std::string error;
        EXPECT_FALSE(parse_schedule(text, s, error)) << text;
        EXPECT_FALSE(error.empty()) << text;
    }
}

// A number is an optional sign and at most 15 digits: a '+' reads as no sign.
TEST(schedule, numbers_take_a_sign_and_at_most_15_digits) {
    const auto amount = [](const std::string& x) {
        schedule s;
        std::string error;
        EXPECT_TRUE(parse_schedule("wall_step.n1@t100,x=" + x, s, error)) << x << ": " << error;
        return s.empty() ? std::int64_t{-1} : s[0].amount;
    };
    EXPECT_EQ(amount("+3000"), 3000);
    EXPECT_EQ(amount("-3000"), -3000);
    EXPECT_EQ(amount("007"), 7);
    EXPECT_EQ(amount("999999999999999"), 999'999'999'999'999);
    EXPECT_EQ(amount("-999999999999999"), -999'999'999'999'999);
    for (const char* x : {"9999999999999999", "+-5", "-+5", "++5", "--5", "+", "-", " 5"}) {
        schedule s;
        std::string error;
        EXPECT_FALSE(parse_schedule(std::string("wall_step.n1@t100,x=") + x, s, error)) << x;
    }
}

RC_GTEST_PROP(schedule, any_fault_round_trips_through_text, ()) {
    fault f;
    f.kind = static_cast<fault_kind>(*rc::gen::inRange(0, 9));
    f.on_node = *rc::gen::arbitrary<bool>();
    f.target = static_cast<std::uint8_t>(*rc::gen::inRange(0, 8));
    f.when.at_point = *rc::gen::arbitrary<bool>();
    if (f.when.at_point) {
        f.when.client = static_cast<std::uint8_t>(*rc::gen::inRange(0, 4));
        f.when.where = static_cast<point>(*rc::gen::inRange<int>(0, point_count));
        f.when.nth = static_cast<std::uint16_t>(*rc::gen::inRange(1, 100));
        f.when.offset_ms = *rc::gen::inRange<std::int64_t>(0, 10'000);
    } else {
        f.when.at_ms = *rc::gen::inRange<std::int64_t>(0, 100'000);
    }
    // Only the fields the kind uses survive the text form; set exactly those.
    const bool peers = f.kind == fault_kind::slow_link || f.kind == fault_kind::partition ||
                       f.kind == fault_kind::drop_reply || f.kind == fault_kind::loss ||
                       f.kind == fault_kind::repl_lag;
    if (peers) f.nodes = static_cast<std::uint8_t>(*rc::gen::inRange(0, 32));
    if (peers) f.resource = *rc::gen::arbitrary<bool>();
    const bool duration = f.kind == fault_kind::pause || f.kind == fault_kind::slow_link ||
                          f.kind == fault_kind::partition || f.kind == fault_kind::loss ||
                          f.kind == fault_kind::crash || f.kind == fault_kind::repl_lag;
    if (duration) f.duration_ms = *rc::gen::inRange<std::int64_t>(0, 100'000);
    if (f.kind != fault_kind::pause && f.kind != fault_kind::partition &&
        f.kind != fault_kind::drop_reply && f.kind != fault_kind::crash) {
        f.amount = *rc::gen::inRange<std::int64_t>(-1'000'000, 1'000'000);
    }
    if (f.kind == fault_kind::crash) f.persist = static_cast<persistence>(*rc::gen::inRange(0, 3));
    if (f.kind == fault_kind::drop_reply)
        f.count = static_cast<std::uint16_t>(*rc::gen::inRange(1, 10));
    if (f.kind == fault_kind::clock_rate) f.wall = *rc::gen::arbitrary<bool>();
    if (f.kind == fault_kind::partition || f.kind == fault_kind::drop_reply ||
        f.kind == fault_kind::loss) {
        f.reset = *rc::gen::arbitrary<bool>();
    }
    schedule parsed;
    std::string error;
    RC_ASSERT(parse_schedule(to_text(f), parsed, error));
    RC_ASSERT(parsed.size() == 1u);
    RC_ASSERT(parsed[0] == f);
}

}  // namespace
