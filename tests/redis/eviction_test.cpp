// SPDX-License-Identifier: Apache-2.0
// Nodes that may evict lock keys, against real redis-server processes: a memory limit with an
// eviction policy is reported through the warning hook, refused when the client asks for
// that, and noeviction says nothing.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "edgelock/error_code.hpp"
#include "edgelock/blocking_lock.hpp"
#include "edgelock/testing/redis_client.hpp"
#include "edgelock/testing/redis_process.hpp"
#include "redis_test_util.hpp"

namespace {

using edgelock::redis_tests::options_for;
using edgelock::session::eviction_check;
using edgelock::testing::redis_server;

// A limit far above what the test uses: nothing is evicted, but the policy allows it.
const std::vector<std::string> evicting = {"--maxmemory", "100mb", "--maxmemory-policy",
                                           "allkeys-lru"};

struct warnings {
    std::vector<std::string> lines;
    std::vector<std::size_t> instances;
};

edgelock::blocking::lock_options watched(const redis_server& server, warnings& seen) {
    auto options = options_for("job", {server.url()}, 2000);
    options.on_warning = [&seen](std::size_t instance, std::string_view line) {
        seen.instances.push_back(instance);
        seen.lines.emplace_back(line);
    };
    return options;
}

TEST(eviction, a_node_that_may_evict_is_reported_once_per_connection_and_still_used) {
    redis_server server(evicting);
    warnings seen;
    edgelock::blocking::lock lock;
    ASSERT_FALSE(lock.open(watched(server, seen)));
    const std::error_code acquired = lock.try_acquire();
    ASSERT_FALSE(acquired) << acquired.message();
    const std::error_code released = lock.release();
    EXPECT_FALSE(released) << released.message();
    ASSERT_EQ(seen.lines.size(), 1u);
    EXPECT_EQ(seen.instances.at(0), 0u);
    EXPECT_EQ(seen.lines[0],
              "maxmemory 104857600 bytes with maxmemory-policy allkeys-lru may evict lock keys, "
              "fence counters and waiting lines; set maxmemory-policy noeviction");
}

// Why it is reported: once Redis needs memory, volatile-ttl evicts keys with a TTL, and the
// lock key is the only one here: the holder learns at its release that it was not kept.
TEST(eviction, under_memory_pressure_the_lock_key_is_evicted) {
    redis_server server({"--maxmemory", "4mb", "--maxmemory-policy", "volatile-ttl"});
    edgelock::testing::redis_client admin(server.port());
    warnings seen;
    edgelock::blocking::lock lock;
    ASSERT_FALSE(lock.open(watched(server, seen)));
    const std::error_code acquired = lock.try_acquire();
    ASSERT_FALSE(acquired) << acquired.message();
    ASSERT_TRUE(admin.exists("job"));
    const std::string block(256 * 1024, 'x');
    for (int i = 0; i < 32 && admin.exists("job"); ++i) {
        try {
            admin.set("filler:" + std::to_string(i), block);
        } catch (const std::exception&) {
            break;  // OOM: nothing evictable is left, the lock key included
        }
    }
    EXPECT_FALSE(admin.exists("job")) << "the lock key was evicted";
    EXPECT_EQ(lock.release(), edgelock::errc::expired) << "the holder finds it gone";
    EXPECT_EQ(seen.lines.size(), 1u);
}

TEST(eviction, refuse_fails_the_connection_with_evicting_node) {
    redis_server server(evicting);
    warnings seen;
    auto options = watched(server, seen);
    options.eviction = eviction_check::refuse;
    edgelock::blocking::lock lock;
    ASSERT_FALSE(lock.open(options));
    EXPECT_EQ(lock.try_acquire(), edgelock::transport_errc::evicting_node);
    EXPECT_TRUE(seen.lines.empty()) << "refused, not warned";
}

TEST(eviction, noeviction_and_no_limit_say_nothing) {
    redis_server limited({"--maxmemory", "1mb", "--maxmemory-policy", "noeviction"});
    redis_server unlimited({"--maxmemory-policy", "allkeys-lru"});
    for (const redis_server* server : {&limited, &unlimited}) {
        warnings seen;
        auto options = watched(*server, seen);
        options.eviction = eviction_check::refuse;
        edgelock::blocking::lock lock;
        ASSERT_FALSE(lock.open(options));
        EXPECT_FALSE(lock.try_acquire());
        EXPECT_FALSE(lock.release());
        EXPECT_TRUE(seen.lines.empty());
    }
}

}  // namespace
