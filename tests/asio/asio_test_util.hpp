// SPDX-License-Identifier: Apache-2.0
// Helpers for the async client's tests: run the io_context until an operation completes, and
// short timings so faults resolve quickly.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "edgelock/async_client.hpp"

namespace edgelock::asio_tests {

using namespace std::chrono_literals;

inline std::int64_t elapsed_ms(std::chrono::steady_clock::time_point since) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                 since)
        .count();
}

// Runs `io` until done() is true or `timeout` passes; returns done().
template <typename Done>
bool run_until(asio::io_context& io, Done done, std::chrono::milliseconds timeout) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (!done()) {
        if (std::chrono::steady_clock::now() >= until) return false;
        io.restart();
        io.run_one_for(5ms);
    }
    return true;
}

inline void run_for(asio::io_context& io, std::chrono::milliseconds duration) {
    run_until(
        io, [] { return false; }, duration);
}

struct outcome {
    bool done = false;
    std::error_code ec;
    std::int64_t fence = 0;
};

// The operations, run to completion (or `timeout`: then done is false). The outcome is
// shared with the handler, so a completion after the timeout writes to live memory.
inline outcome acquire(async::client& client, async::lock_handle handle,
                       std::chrono::milliseconds wait, std::chrono::milliseconds timeout = 10s) {
    auto result = std::make_shared<outcome>();
    client.async_acquire(handle, wait, [result](std::error_code ec, std::int64_t fence) {
        result->done = true;
        result->ec = ec;
        result->fence = fence;
    });
    run_until(
        client.context(), [&] { return result->done; }, timeout);
    return *result;
}

inline outcome release(async::client& client, async::lock_handle handle,
                       std::chrono::milliseconds timeout = 10s) {
    auto result = std::make_shared<outcome>();
    client.async_release(handle, [result](std::error_code ec) {
        result->done = true;
        result->ec = ec;
    });
    run_until(
        client.context(), [&] { return result->done; }, timeout);
    return *result;
}

inline outcome wait_ready(async::client& client, std::chrono::milliseconds timeout = 10s) {
    auto result = std::make_shared<outcome>();
    client.async_wait_ready([result](std::error_code ec) {
        result->done = true;
        result->ec = ec;
    });
    run_until(
        client.context(), [&] { return result->done; }, timeout);
    return *result;
}

inline async::client_config config_for(std::vector<std::string> urls) {
    async::client_config config;
    config.instances = std::move(urls);
    config.connect_timeout_ms = 500;
    config.command_timeout_ms = 500;
    config.reconnect_delay_min_ms = 10;
    config.reconnect_delay_max_ms = 100;
    return config;
}

inline lock_config lock_for(std::string_view name, std::int64_t ttl_ms = 1000) {
    lock_config config;
    config.name = name;
    config.ttl_ms = ttl_ms;
    config.retry_delay_ms_min = 5;
    config.retry_delay_ms_max = 50;
    return config;
}

}  // namespace edgelock::asio_tests
