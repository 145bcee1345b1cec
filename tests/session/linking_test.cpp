// SPDX-License-Identifier: Apache-2.0
// When an instance's link connects, eager (the async client) or on demand (the blocking
// client): a real connection driven by hand, literal timestamps.
#include <gtest/gtest.h>

#include <array>

#include "edgelock/session/linking.hpp"

namespace {

using namespace edgelock;
using namespace edgelock::session;

class linking_test : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_EQ(parse_node_url("h:1", server).code, errc::ok);
        connection_setup s;
        s.node = &server;
        s.in_flight_storage = storage.data();
        s.in_flight_capacity = storage.size();
        s.seed = 1;
        ASSERT_EQ(link.setup(s), errc::ok);
    }
    // An attempt refused at `now`: the link is idle in its reconnect delay.
    void refused_at(std::int64_t now) {
        ASSERT_NE(link.start(now), nullptr);
        link.on_io_error(failure::system(111), now);
        link.on_closed(now, [](const in_flight&) {});
    }

    node_address server;
    std::array<in_flight, 16> storage{};
    connection link;
};

TEST(linking, an_eager_link_is_always_wanted_an_on_demand_one_only_for_queued_requests) {
    EXPECT_TRUE(link_wanted(linking::eager, false));
    EXPECT_TRUE(link_wanted(linking::eager, true));
    EXPECT_FALSE(link_wanted(linking::on_demand, false));
    EXPECT_TRUE(link_wanted(linking::on_demand, true));
    EXPECT_TRUE(opens_by_itself(linking::eager));
    EXPECT_FALSE(opens_by_itself(linking::on_demand)) << "only step_for_queued's connect";
}

TEST_F(linking_test, an_idle_on_demand_link_connects_for_queued_requests) {
    EXPECT_EQ(step_for_queued(linking::on_demand, link, 0), queued_step::connect);
    EXPECT_EQ(step_for_queued(linking::eager, link, 0), queued_step::write)
        << "an eager link connects by itself: its requests wait on it";
}

TEST_F(linking_test, inside_its_reconnect_delay_an_on_demand_link_gives_its_requests_up) {
    refused_at(5);
    ASSERT_GT(link.start_not_before_ms(), 5);
    EXPECT_EQ(step_for_queued(linking::on_demand, link, 5), queued_step::give_up);
    EXPECT_EQ(step_for_queued(linking::eager, link, 5), queued_step::write);
    EXPECT_EQ(step_for_queued(linking::on_demand, link, link.start_not_before_ms()),
              queued_step::connect)
        << "the delay ended";
}

TEST_F(linking_test, a_users_call_lifts_the_delay_of_a_link_made_on_demand_only) {
    refused_at(5);
    on_user_call(linking::eager, link);
    EXPECT_FALSE(link.may_start(5)) << "an eager link keeps its delay";
    on_user_call(linking::on_demand, link);
    EXPECT_TRUE(link.may_start(5));
    EXPECT_EQ(step_for_queued(linking::on_demand, link, 5), queued_step::connect);
}

TEST_F(linking_test, a_link_connecting_or_up_takes_the_requests_whatever_the_linking) {
    ASSERT_NE(link.start(0), nullptr);
    EXPECT_EQ(step_for_queued(linking::on_demand, link, 0), queued_step::write);
    EXPECT_EQ(step_for_queued(linking::eager, link, 0), queued_step::write);
}

}  // namespace
