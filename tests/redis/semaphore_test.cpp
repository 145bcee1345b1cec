// SPDX-License-Identifier: Apache-2.0
// The blocking client as a semaphore (lock_options::permits, lock.hpp "Semaphores") against a
// real redis-server: N owners hold at once and the next waits for a release, renewals keep
// every lease past its TTL, a holder that stops renewing gives its permit back after its
// lease, and the lock and the semaphore refuse each other's names, as two counts for one name
// do; a semaphore over several instances, or with fencing, is refused at open().
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "edgelock/blocking_lock.hpp"
#include "edgelock/error_code.hpp"
#include "edgelock/testing/redis_client.hpp"
#include "edgelock/testing/redis_process.hpp"
#include "redis_test_util.hpp"

namespace {

using namespace std::chrono_literals;
using edgelock::redis_tests::options_for;
using edgelock::testing::redis_client;
using edgelock::testing::redis_server;

constexpr const char* name = "uplink";

edgelock::blocking::lock_options permit_options(const redis_server& server,
                                                std::uint16_t permits = 3,
                                                std::int64_t ttl_ms = 600) {
    auto options = options_for(name, {server.url()}, ttl_ms);
    options.permits = permits;
    return options;
}

std::vector<std::unique_ptr<edgelock::blocking::lock>> open_owners(const redis_server& server,
                                                                   std::size_t count,
                                                                   std::uint16_t permits = 3) {
    std::vector<std::unique_ptr<edgelock::blocking::lock>> owners;
    for (std::size_t i = 0; i < count; ++i) {
        owners.push_back(std::make_unique<edgelock::blocking::lock>());
        EXPECT_FALSE(owners.back()->open(permit_options(server, permits)));
    }
    return owners;
}

std::size_t leases(redis_client& c) {
    return c.command({"ZRANGEBYSCORE", name, "0", "+inf"}).elements.size();
}

TEST(semaphore, n_owners_hold_at_once_and_the_next_waits_for_a_release) {
    redis_server server;
    redis_client admin(server.port());
    auto owners = open_owners(server, 4);
    for (std::size_t i = 0; i < 3; ++i) ASSERT_FALSE(owners[i]->try_acquire()) << i;
    EXPECT_EQ(owners[3]->try_acquire(), edgelock::errc::busy);
    std::this_thread::sleep_for(1500ms);  // on purpose: past two TTLs, renewed meanwhile
    for (std::size_t i = 0; i < 3; ++i) EXPECT_TRUE(owners[i]->held()) << i;
    EXPECT_EQ(leases(admin), 3u);
    ASSERT_FALSE(owners[1]->release());
    ASSERT_FALSE(owners[3]->acquire(1s));
    EXPECT_FALSE(owners[1]->held());
    EXPECT_EQ(leases(admin), 3u);
}

TEST(semaphore, a_holder_that_stops_renewing_gives_its_permit_back_after_its_lease) {
    redis_server server;
    redis_client admin(server.port());
    auto owners = open_owners(server, 3, 2);
    auto quiet = permit_options(server, 2);
    quiet.watchdog = false;
    edgelock::blocking::lock silent;
    ASSERT_FALSE(silent.open(quiet));
    ASSERT_FALSE(silent.try_acquire());
    ASSERT_FALSE(owners[0]->try_acquire());
    EXPECT_EQ(owners[1]->try_acquire(), edgelock::errc::busy);
    const auto asked = std::chrono::steady_clock::now();
    EXPECT_FALSE(owners[1]->acquire(2s)) << "the silent holder's lease runs out";
    EXPECT_GE(edgelock::redis_tests::elapsed_ms(asked), 300) << "not before its lease ended";
    EXPECT_FALSE(silent.held());
    EXPECT_EQ(leases(admin), 2u);
}

// Fair waiting: a waiter stands in line and is woken by the release that frees a permit,
// long before its re-check (5 s here) would have looked again.
TEST(semaphore, a_fair_waiter_is_woken_by_the_release_that_frees_a_permit) {
    redis_server server;
    std::vector<std::unique_ptr<edgelock::blocking::lock>> owners;
    for (int i = 0; i < 3; ++i) {
        auto options = permit_options(server, 2, 2000);
        options.fair = true;
        options.recheck_ms = 5000;
        options.queue_entry_ttl_ms = 20'000;
        owners.push_back(std::make_unique<edgelock::blocking::lock>());
        ASSERT_FALSE(owners.back()->open(options));
    }
    ASSERT_FALSE(owners[0]->try_acquire());
    ASSERT_FALSE(owners[1]->try_acquire());
    std::chrono::steady_clock::time_point freed{};
    std::thread releaser([&] {
        std::this_thread::sleep_for(300ms);  // on purpose: the waiter is in line by then
        freed = std::chrono::steady_clock::now();
        EXPECT_FALSE(owners[0]->release());
    });
    const std::error_code waited = owners[2]->acquire(4s);
    const auto got = std::chrono::steady_clock::now();
    releaser.join();
    ASSERT_FALSE(waited) << waited.message();
    EXPECT_LT(std::chrono::duration_cast<std::chrono::milliseconds>(got - freed).count(), 1000)
        << "woken by the release, not by its 5 s re-check";
    EXPECT_TRUE(owners[1]->held());
}

TEST(semaphore, a_lock_and_a_semaphore_of_one_name_refuse_each_other_at_once) {
    redis_server server;
    auto owners = open_owners(server, 1);
    edgelock::blocking::lock plain;
    ASSERT_FALSE(plain.open(options_for(name, {server.url()}, 600)));
    ASSERT_FALSE(owners[0]->try_acquire());
    const auto asked = std::chrono::steady_clock::now();
    EXPECT_EQ(plain.acquire(2s), edgelock::errc::wrong_kind);
    EXPECT_LT(edgelock::redis_tests::elapsed_ms(asked), 1000) << "no retry mends it";
    ASSERT_FALSE(owners[0]->release());
    ASSERT_FALSE(plain.try_acquire());
    EXPECT_EQ(owners[0]->acquire(2s), edgelock::errc::wrong_kind);
}

TEST(semaphore, two_counts_for_one_name_are_refused_while_leases_are_held) {
    redis_server server;
    auto three = open_owners(server, 1, 3);
    auto five = open_owners(server, 1, 5);
    ASSERT_FALSE(three[0]->try_acquire());
    EXPECT_EQ(five[0]->acquire(1s), edgelock::errc::permits_mismatch);
    ASSERT_FALSE(three[0]->release());
    EXPECT_FALSE(five[0]->try_acquire()) << "no holder left: the new count stands";
}

TEST(semaphore, permits_over_several_instances_are_refused_at_open) {
    redis_server a;
    redis_server b;
    redis_server c;
    auto options = permit_options(a);
    options.instances = {a.url(), b.url(), c.url()};
    edgelock::blocking::lock lock;
    EXPECT_EQ(lock.open(options), edgelock::errc::invalid_instances);
}

// A fenced semaphore's holders get rising tokens, each naming a permit of its own
// (edgelock::permit_of): the one a holder's lease holds, passed on with a higher token.
TEST(semaphore, fenced_holders_hold_permits_of_their_own_named_by_their_tokens) {
    redis_server server;
    std::vector<std::unique_ptr<edgelock::blocking::lock>> owners;
    std::vector<edgelock::blocking::hold> holds(4);
    for (std::size_t i = 0; i < 4; ++i) {
        owners.push_back(std::make_unique<edgelock::blocking::lock>());
        auto options = permit_options(server);
        options.fencing = true;
        ASSERT_FALSE(owners.back()->open(options)) << i;
    }
    std::set<std::uint16_t> permits;
    for (std::size_t i = 0; i < 3; ++i) {
        ASSERT_FALSE(owners[i]->acquire(0ms, &holds[i])) << i;
        permits.insert(edgelock::permit_of(holds[i].fence, 3));
        if (i > 0) {
            EXPECT_GT(holds[i].fence, holds[i - 1].fence);
        }
    }
    EXPECT_EQ(permits, (std::set<std::uint16_t>{0, 1, 2})) << "a permit each";
    const std::uint16_t freed = edgelock::permit_of(holds[1].fence, 3);
    ASSERT_FALSE(owners[1]->release());
    ASSERT_FALSE(owners[3]->acquire(0ms, &holds[3]));
    EXPECT_EQ(edgelock::permit_of(holds[3].fence, 3), freed) << "the freed permit, passed on";
    EXPECT_GT(holds[3].fence, holds[2].fence);
}

}  // namespace
