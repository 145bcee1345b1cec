// SPDX-License-Identifier: Apache-2.0
// edgelock_close() while the lock's on_lost callback acquires again, against a real
// redis-server: once edgelock_close() returns, the lock holds nothing, and the callback's
// edgelock_acquire() that came after the close began returned EDGELOCK_E_CANCELLED (or, had
// it come first, its hold was released by the close).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "edgelock.h"
#include "edgelock/testing/redis_client.hpp"
#include "edgelock/testing/redis_process.hpp"

namespace {

using namespace std::chrono_literals;
using edgelock::testing::eventually;

// What the callback shares with the test: at the first loss it waits for the gate (bounded),
// then acquires again and keeps the code.
struct reacquire {
    edgelock_lock* lock = nullptr;
    std::mutex mutex;
    std::condition_variable changed;
    bool called = false;
    bool gate_open = false;
    bool returned = false;
    int result = EDGELOCK_E_UNKNOWN;
};

extern "C" void reacquire_on_lost(int, void* user) {
    auto& shared = *static_cast<reacquire*>(user);
    std::unique_lock<std::mutex> held(shared.mutex);
    if (shared.called) return;
    shared.called = true;
    shared.changed.notify_all();
    shared.changed.wait_for(held, 20s, [&] { return shared.gate_open; });
    held.unlock();
    const int rc = edgelock_try_acquire(shared.lock, nullptr);
    held.lock();
    shared.result = rc;
    shared.returned = true;
}

TEST(CapiClose, AnAcquireFromOnLostAfterCloseBeganLeavesNothingHeld) {
    edgelock::testing::redis_server server;
    edgelock::testing::redis_client client(server.port());
    const std::string url = server.url();
    const char* const instances[] = {url.c_str()};
    reacquire shared;
    edgelock_options options;
    edgelock_options_init(&options, sizeof options);
    options.instances = instances;
    options.instance_count = 1;
    options.name = "job";
    options.ttl_ms = 10000;  // a hold left behind would still be there when the test looks
    options.renew_interval_ms = 100;
    options.on_lost = reacquire_on_lost;
    options.on_lost_user = &shared;
    ASSERT_EQ(edgelock_open(&options, &shared.lock), EDGELOCK_OK);
    ASSERT_EQ(edgelock_try_acquire(shared.lock, nullptr), EDGELOCK_OK);
    client.command({"DEL", "job"});
    {
        std::unique_lock<std::mutex> held(shared.mutex);
        ASSERT_TRUE(shared.changed.wait_for(held, 10s, [&] { return shared.called; }));
    }

    std::atomic<bool> begun{false};
    std::thread closer([&] {
        begun.store(true);
        edgelock_close(shared.lock);
    });
    ASSERT_TRUE(eventually([&] { return begun.load(); }, 5s));
    {
        std::lock_guard<std::mutex> held(shared.mutex);
        shared.gate_open = true;
        shared.changed.notify_all();
    }
    closer.join();

    std::lock_guard<std::mutex> held(shared.mutex);
    EXPECT_TRUE(shared.returned) << "edgelock_close() waited for the callback";
    if (shared.result != EDGELOCK_OK) {
        EXPECT_EQ(shared.result, EDGELOCK_E_CANCELLED) << edgelock_strerror(shared.result);
    }
    EXPECT_FALSE(client.exists("job")) << "a hold outlived edgelock_close(), until its TTL";
}

}  // namespace
