// SPDX-License-Identifier: Apache-2.0
// The simulator's side of the fault points (session/fault_points.hpp), scripted for a test:
// the one point the test reaches fires when told, with the delay it sets, and counts the calls.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>

#include "edgelock/session/fault_points.hpp"

namespace edgelock::session {

struct scripted_faults final : fault_points {
    fault_point point = fault_point::close_after_reply;  // the only point the test reaches
    bool firing = false;
    int asked = 0;
    std::int64_t delay = 0;

    explicit scripted_faults(fault_point p = fault_point::close_after_reply) : point(p) {}
    bool fire(fault_point p) noexcept override {
        EXPECT_EQ(p, point);
        ++asked;
        return firing;
    }
    std::int64_t delay_ms(fault_point p) noexcept override {
        EXPECT_EQ(p, point);
        return delay;
    }
};

}  // namespace edgelock::session
