// SPDX-License-Identifier: Apache-2.0
// Redlock over five independent masters through the async client.
#include <gtest/gtest.h>

#include <string>

#include "asio_test_util.hpp"
#include "edgelock/async_client.hpp"
#include "edgelock/testing/redis_client.hpp"
#include "edgelock/testing/redis_process.hpp"

namespace {

using namespace edgelock::asio_tests;
using edgelock::errc;
using edgelock::async::client;
using edgelock::async::lock_handle;
using edgelock::testing::eventually;
using edgelock::testing::redis_client;
using edgelock::testing::redis_masters;

int keys_on(redis_masters& masters, const std::string& name) {
    int count = 0;
    for (std::size_t i = 0; i < masters.size(); ++i) {
        if (!masters[i].running()) continue;
        redis_client client(masters[i].port());
        count += client.exists(name) ? 1 : 0;
    }
    return count;
}

TEST(asio_redlock, all_five_up_holds_everywhere_with_increasing_fences) {
    redis_masters masters(5);
    asio::io_context io{1};
    client owner(io);
    ASSERT_FALSE(owner.open(config_for(masters.urls())));
    ASSERT_FALSE(wait_ready(owner).ec);
    EXPECT_EQ(owner.instance_count(), 5u);
    edgelock::lock_config config = lock_for("fenced", 2000);
    config.fencing = true;
    lock_handle handle;
    ASSERT_FALSE(owner.add_lock(config, handle));
    std::int64_t previous = 0;
    for (int round = 0; round < 3; ++round) {
        const outcome got = acquire(owner, handle, 0ms);
        ASSERT_FALSE(got.ec) << got.ec.message();
        EXPECT_GT(got.fence, previous);
        previous = got.fence;
        // Held once a quorum agreed; the last masters' SETs may land a moment later. (They do
        // land because the connection loaded the scripts: were a late reply NOSCRIPT, the core
        // would not re-send it after the round, and only the quorum would hold the key.)
        EXPECT_TRUE(eventually(
            [&] {
                run_for(io, 5ms);
                return keys_on(masters, "fenced") == 5;
            },
            1s));
        ASSERT_FALSE(release(owner, handle).ec);
        EXPECT_EQ(keys_on(masters, "fenced"), 0);
    }
}

TEST(asio_redlock, two_of_five_stopped_still_acquires_and_releases) {
    redis_masters masters(5);
    asio::io_context io{1};
    client owner(io);
    ASSERT_FALSE(owner.open(config_for(masters.urls())));
    ASSERT_FALSE(wait_ready(owner).ec);
    masters[1].stop();
    masters[3].stop();
    lock_handle handle;
    ASSERT_FALSE(owner.add_lock(lock_for("two-down", 2000), handle));
    const outcome got = acquire(owner, handle, 0ms);
    ASSERT_FALSE(got.ec) << got.ec.message();
    EXPECT_TRUE(owner.held(handle));
    EXPECT_EQ(keys_on(masters, "two-down"), 3);
    EXPECT_FALSE(owner.instance_connected(1));
    EXPECT_TRUE(owner.instance_last_error(1)) << "the stopped instance's error is kept";
    const outcome released = release(owner, handle);
    EXPECT_FALSE(released.ec) << released.ec.message();
    EXPECT_EQ(keys_on(masters, "two-down"), 0);

    // A client opened while they are down is ready too: a quorum is connected.
    client late(io);
    ASSERT_FALSE(late.open(config_for(masters.urls())));
    EXPECT_FALSE(wait_ready(late).ec);
}

TEST(asio_redlock, three_of_five_stopped_fails_within_the_wait_and_leaves_no_key) {
    redis_masters masters(5);
    asio::io_context io{1};
    client owner(io);
    ASSERT_FALSE(owner.open(config_for(masters.urls())));
    ASSERT_FALSE(wait_ready(owner).ec);
    masters[0].stop();
    masters[2].stop();
    masters[4].stop();
    lock_handle handle;
    ASSERT_FALSE(owner.add_lock(lock_for("three-down", 1000), handle));
    const auto start = std::chrono::steady_clock::now();
    const outcome got = acquire(owner, handle, 800ms);
    ASSERT_TRUE(got.done);
    EXPECT_EQ(got.ec, errc::no_quorum) << "the last attempt's cause: " << got.ec.message();
    EXPECT_EQ(owner.status(handle).last_cause, errc::no_quorum);
    // The wait, one attempt timeout, and slack for a loaded machine: the point is no hang.
    EXPECT_LT(elapsed_ms(start), 800 + 100 + 600) << "the wait, one attempt timeout, slack";
    EXPECT_FALSE(owner.held(handle));
    EXPECT_TRUE(eventually(
        [&] {
            run_for(io, 10ms);
            return keys_on(masters, "three-down") == 0;
        },
        1s))
        << "the partial claims on the two live masters were deleted";

    client late(io);
    ASSERT_FALSE(late.open(config_for(masters.urls())));
    EXPECT_TRUE(wait_ready(late).ec) << "no quorum can connect";
}

}  // namespace
