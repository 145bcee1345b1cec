// SPDX-License-Identifier: Apache-2.0
// peer_cycle: edgelock's acquire + release cycle, one at a time, over the Redis URLs given (one
// URL: a single instance; five: Redlock's masters), for bench/peers.sh to set beside other lock
// clients on the same servers. Prints "<cycles> cycles in <seconds> s".
//
// Usage: peer_cycle async|blocking CYCLES URL...
#include <asio/io_context.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "edgelock/async_client.hpp"
#include "edgelock/blocking_lock.hpp"

namespace {

using clock_type = std::chrono::steady_clock;
constexpr const char* lock_name = "bench:edgelock-peer";
constexpr std::int64_t ttl_ms = 30'000;

// Runs `cycle` for a warm-up, then `cycles` times; returns the seconds the latter took.
double timed(int cycles, const std::function<void()>& cycle) {
    for (int i = 0; i < std::min(2000, cycles); ++i) cycle();
    const auto start = clock_type::now();
    for (int i = 0; i < cycles; ++i) cycle();
    return std::chrono::duration<double>(clock_type::now() - start).count();
}

// `count` cycles chained inside the io_context, which stops after the last.
void run_async(edgelock::async::client& client, edgelock::async::lock_handle handle, int count) {
    int done = 0;
    std::error_code failed;
    std::function<void()> next = [&] {
        client.async_acquire(handle, std::chrono::milliseconds(0),
                             [&](std::error_code ec, std::int64_t) {
                                 if (ec) {
                                     failed = ec;
                                     return client.context().stop();
                                 }
                                 client.async_release(handle, [&](std::error_code released) {
                                     failed = released;
                                     if (failed || ++done == count) return client.context().stop();
                                     next();
                                 });
                             });
    };
    next();
    client.context().restart();
    client.context().run();
    if (failed) throw std::runtime_error("cycle: " + failed.message());
}

double async_cycles(int cycles, const std::vector<std::string>& urls) {
    asio::io_context io{1};
    edgelock::async::client client(io);
    edgelock::async::client_config config;
    config.instances = urls;
    config.restart_guard = false;  // fresh volatile servers would keep it out for a TTL
    if (const std::error_code opened = client.open(config))
        throw std::runtime_error("open: " + opened.message());
    edgelock::lock_config lock;
    lock.name = lock_name;
    lock.ttl_ms = ttl_ms;
    edgelock::async::lock_handle handle;
    if (const std::error_code added = client.add_lock(lock, handle))
        throw std::runtime_error("add_lock: " + added.message());
    run_async(client, handle, std::min(2000, cycles));  // warm-up: connected, scripts loaded
    const auto start = clock_type::now();
    run_async(client, handle, cycles);
    return std::chrono::duration<double>(clock_type::now() - start).count();
}

double blocking_cycles(int cycles, const std::vector<std::string>& urls) {
    edgelock::blocking::lock_options options;
    options.name = lock_name;
    options.instances = urls;
    options.ttl_ms = ttl_ms;
    options.restart_guard = false;
    edgelock::blocking::lock lock;
    if (const std::error_code opened = lock.open(options))
        throw std::runtime_error("open: " + opened.message());
    return timed(cycles, [&] {
        if (const std::error_code ec = lock.acquire(std::chrono::milliseconds(0)))
            throw std::runtime_error("acquire: " + ec.message());
        if (const std::error_code ec = lock.release())
            throw std::runtime_error("release: " + ec.message());
    });
}

}  // namespace

int main(int argc, char** argv) {
    try {
        if (argc < 4) throw std::runtime_error("usage: peer_cycle async|blocking CYCLES URL...");
        const std::string kind = argv[1];
        const int cycles = std::atoi(argv[2]);
        const std::vector<std::string> urls(argv + 3, argv + argc);
        if (cycles <= 0) throw std::runtime_error("CYCLES must be positive");
        double seconds = 0;
        if (kind == "async") {
            seconds = async_cycles(cycles, urls);
        } else if (kind == "blocking") {
            seconds = blocking_cycles(cycles, urls);
        } else {
            throw std::runtime_error("the client is async or blocking, not " + kind);
        }
        std::printf("%d cycles in %.3f s\n", cycles, seconds);
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "peer_cycle: %s\n", e.what());
        return 1;
    }
}
