// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the integration tests of the blocking client against real Redis.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>

#include "edgelock/blocking_lock.hpp"
#include "edgelock/testing/redis_client.hpp"

namespace edgelock::redis_tests {

// The storage a lock protects, fenced: a write carries the writer's fence token and is refused
// when a higher token was already seen. KEYS: resource, highest-token key. ARGV: token, value.
inline constexpr const char* fenced_write_script =
    "local highest = tonumber(redis.call('GET', KEYS[2]) or '0')\n"
    "local token = tonumber(ARGV[1])\n"
    "if token < highest then return 0 end\n"
    "redis.call('SET', KEYS[2], ARGV[1])\n"
    "redis.call('SET', KEYS[1], ARGV[2])\n"
    "return 1\n";

// 1 when the resource accepted the write, 0 when it refused a stale token.
inline long long fenced_write(testing::redis_client& client, const std::string& resource,
                              std::int64_t token, const std::string& value) {
    return client
        .command({"EVAL", fenced_write_script, "2", resource, resource + ":highest_fence",
                  std::to_string(token), value})
        .integer;
}

// Options for one lock on the given instance URLs, with short timings for tests.
inline blocking::lock_options options_for(std::string name, std::vector<std::string> urls,
                                          std::int64_t ttl_ms = 1000) {
    blocking::lock_options options;
    options.name = std::move(name);
    options.instances = std::move(urls);
    options.ttl_ms = ttl_ms;
    options.connect_timeout_ms = 500;
    options.command_timeout_ms = 500;
    options.retry_delay_ms_min = 5;
    options.retry_delay_ms_max = 50;
    return options;
}

inline std::int64_t elapsed_ms(std::chrono::steady_clock::time_point since) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                 since)
        .count();
}

// Runs `fault` on a thread of its own while `wait_until(done, timeout)` keeps a client working
// (an asio client's handlers run only inside it); returns once `fault` has.
template <typename WaitUntil>
void run_beside(const std::function<void()>& fault, WaitUntil&& wait_until) {
    std::atomic<bool> done{false};
    std::thread faulting([&] {
        fault();
        done = true;
    });
    wait_until([&] { return done.load(); }, std::chrono::seconds(60));
    faulting.join();
}

}  // namespace edgelock::redis_tests
