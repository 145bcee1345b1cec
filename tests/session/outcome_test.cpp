// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include "edgelock/session/outcome.hpp"

namespace {

using namespace edgelock;
using edgelock::session::acquire_result;
using edgelock::session::release_result;

event failed(errc code, errc cause = errc::ok) {
    event e;
    e.type = event_type::acquire_failed;
    e.code = code;
    e.cause = cause;
    return e;
}

event released(std::uint8_t count, bool expired = false) {
    event e;
    e.type = event_type::released;
    e.instances_released = count;
    e.expired_before = expired;
    return e;
}

const failure refused = failure::system(111);

TEST(outcome, an_acquire_reports_why_its_last_attempt_failed) {
    EXPECT_EQ(acquire_result(failed(errc::busy), 1, {}), failure::of(errc::busy));
    EXPECT_EQ(acquire_result(failed(errc::wait_timeout, errc::busy), 1, {}),
              failure::of(errc::busy))
        << "a wait that ran out says why";
    EXPECT_EQ(acquire_result(failed(errc::wait_timeout, errc::no_quorum), 1, refused), refused);
    EXPECT_EQ(acquire_result(failed(errc::wait_timeout), 1, {}), failure::of(errc::wait_timeout))
        << "no attempt finished: the wait itself is the reason";
    EXPECT_EQ(acquire_result(failed(errc::fence_exhausted), 5, refused),
              failure::of(errc::fence_exhausted));
}

TEST(outcome, no_quorum_of_one_instance_is_that_instance_failure) {
    EXPECT_EQ(acquire_result(failed(errc::no_quorum), 1, refused), refused);
    EXPECT_EQ(acquire_result(failed(errc::no_quorum), 1, {}), failure::of(errc::no_quorum));
    EXPECT_EQ(acquire_result(failed(errc::no_quorum), 3, refused), failure::of(errc::no_quorum))
        << "with several instances, one instance's failure is not the reason";
}

TEST(outcome, a_release_succeeds_on_a_quorum) {
    EXPECT_FALSE(release_result(released(1), 1, {}));
    EXPECT_FALSE(release_result(released(3), 5, {}));
    EXPECT_EQ(release_result(released(2), 5, {}), failure::of(errc::no_quorum));
    EXPECT_EQ(release_result(released(0), 1, refused), refused);
    EXPECT_EQ(release_result(released(0), 1, {}), failure::of(errc::no_quorum));
    EXPECT_EQ(release_result(released(5, true), 5, {}), failure::of(errc::expired));
}

}  // namespace
