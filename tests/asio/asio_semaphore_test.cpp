// SPDX-License-Identifier: Apache-2.0
// The async client's locks as a semaphore (lock_config::permits, lock.hpp "Semaphores")
// against a real redis-server: N locks of one name, pipelined on one connection, hold at once
// and renew past their TTL while the next one waits for a release; a semaphore and a lock of
// one name refuse each other at once; a semaphore on a client of several instances is refused.
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <string>

#include "asio_test_util.hpp"
#include "edgelock/async_client.hpp"
#include "edgelock/testing/redis_client.hpp"
#include "edgelock/testing/redis_process.hpp"

namespace {

using namespace std::chrono_literals;
using namespace edgelock::asio_tests;
using edgelock::errc;
using edgelock::async::client;
using edgelock::async::lock_handle;
using edgelock::testing::redis_client;
using edgelock::testing::redis_server;

constexpr std::string_view name = "uplink";

edgelock::lock_config permit_lock(std::uint16_t permits = 3) {
    edgelock::lock_config config = lock_for(name, 600);
    config.permits = permits;
    return config;
}

class asio_semaphore : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_FALSE(owner.open(config_for({server.url()})));
        ASSERT_FALSE(wait_ready(owner).ec);
    }

    redis_server server;
    redis_client admin{server.port()};
    asio::io_context io{1};
    client owner{io};
};

TEST_F(asio_semaphore, n_locks_of_one_name_hold_at_once_and_the_next_waits_for_a_release) {
    std::array<lock_handle, 4> handles{};
    for (lock_handle& h : handles) ASSERT_FALSE(owner.add_lock(permit_lock(), h));
    for (std::size_t i = 0; i < 3; ++i) ASSERT_FALSE(acquire(owner, handles[i], 0ms).ec) << i;
    EXPECT_EQ(acquire(owner, handles[3], 0ms).ec, errc::busy);
    run_for(io, 1500ms);  // on purpose: past two TTLs, renewed meanwhile
    for (std::size_t i = 0; i < 3; ++i) EXPECT_TRUE(owner.held(handles[i])) << i;
    EXPECT_EQ(admin.command({"ZRANGEBYSCORE", std::string(name), "0", "+inf"}).elements.size(), 3u);
    ASSERT_FALSE(release(owner, handles[0]).ec);
    EXPECT_FALSE(acquire(owner, handles[3], 1s).ec);
    EXPECT_FALSE(owner.held(handles[0]));
}

TEST_F(asio_semaphore, a_lock_and_a_semaphore_of_one_name_refuse_each_other_at_once) {
    lock_handle semaphore;
    lock_handle plain;
    ASSERT_FALSE(owner.add_lock(permit_lock(), semaphore));
    ASSERT_FALSE(owner.add_lock(lock_for(name, 600), plain));
    ASSERT_FALSE(acquire(owner, semaphore, 0ms).ec);
    const auto asked = std::chrono::steady_clock::now();
    EXPECT_EQ(acquire(owner, plain, 2s).ec, errc::wrong_kind);
    EXPECT_LT(elapsed_ms(asked), 1000) << "no retry mends it";
    ASSERT_FALSE(release(owner, semaphore).ec);
    ASSERT_FALSE(acquire(owner, plain, 0ms).ec);
    EXPECT_EQ(acquire(owner, semaphore, 2s).ec, errc::wrong_kind);
}

TEST(asio_semaphore_config, a_semaphore_needs_one_instance_and_may_fence) {
    redis_server a;
    redis_server b;
    redis_server c;
    asio::io_context io{1};
    client redlock{io};
    ASSERT_FALSE(redlock.open(config_for({a.url(), b.url(), c.url()})));
    lock_handle handle;
    EXPECT_EQ(redlock.add_lock(permit_lock(), handle), errc::invalid_instances);
    client single{io};
    ASSERT_FALSE(single.open(config_for({a.url()})));
    edgelock::lock_config fenced = permit_lock();
    fenced.fencing = true;
    EXPECT_FALSE(single.add_lock(fenced, handle)) << "its tokens name its permits";
}

}  // namespace
