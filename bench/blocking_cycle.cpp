// SPDX-License-Identifier: Apache-2.0
#include "blocking_cycle.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "cycle_measure.hpp"
#include "edgelock.h"
#include "edgelock/blocking_lock.hpp"
#include "edgelock/testing/redis_client.hpp"

// Every operator new of the process is counted (lock_cycle's other sections too; only this
// one reads the count): a steady-state cycle that allocates shows here.
namespace {

std::atomic<std::uint64_t> allocations{0};

void* counted_allocation(std::size_t size) {
    allocations.fetch_add(1, std::memory_order_relaxed);
    if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
    throw std::bad_alloc();
}

}  // namespace

void* operator new(std::size_t size) { return counted_allocation(size); }
void* operator new[](std::size_t size) { return counted_allocation(size); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

namespace edgelock::bench {
namespace {

constexpr std::int64_t ttl_ms = 30'000;

// One measured round of `cycle` (an acquire and a release), its allocations added to `allocs`.
template <typename Cycle>
round_result timed_round(int cycles, latencies& lat, std::uint64_t& allocs, Cycle&& cycle) {
    const cpu_meter cpu(measured_server);
    const std::uint64_t before = allocations.load(std::memory_order_relaxed);
    const auto start = clock_type::now();
    for (int i = 0; i < cycles; ++i) {
        const auto t0 = clock_type::now();
        cycle();
        lat.us.push_back(std::chrono::duration<double, std::micro>(clock_type::now() - t0).count());
    }
    const double elapsed = seconds_since(start);
    allocs += allocations.load(std::memory_order_relaxed) - before;
    return {cycles / elapsed, cpu.own_us() / cycles, cpu.server_us() / cycles,
            cpu.server_sleeps() / cycles};
}

void open_blocking(blocking::lock& lock, const std::string& url) {
    blocking::lock_options options;
    options.name = "bench:blocking";
    options.instances = {url};
    options.ttl_ms = ttl_ms;
    options.restart_guard = false;  // a fresh volatile server would keep it out for a TTL
    if (const std::error_code ec = lock.open(options))
        throw std::runtime_error("blocking open: " + ec.message());
}

edgelock_lock* open_capi(const std::string& url) {
    edgelock_options options;
    edgelock_options_init(&options, sizeof options);
    const char* instances[] = {url.c_str()};
    options.instances = instances;
    options.instance_count = 1;
    options.name = "bench:capi";
    options.ttl_ms = ttl_ms;
    options.restart_guard = 0;
    edgelock_lock* lock = nullptr;
    if (edgelock_open(&options, &lock) != EDGELOCK_OK)
        throw std::runtime_error(std::string("edgelock_open: ") + edgelock_last_error_message());
    return lock;
}

void blocking_cycle(blocking::lock& lock) {
    if (const std::error_code ec = lock.acquire(std::chrono::milliseconds(0)))
        throw std::runtime_error("blocking acquire: " + ec.message());
    if (const std::error_code ec = lock.release())
        throw std::runtime_error("blocking release: " + ec.message());
}

void capi_cycle(edgelock_lock* lock) {
    edgelock_hold hold;
    if (const int rc = edgelock_acquire(lock, 0, &hold); rc != EDGELOCK_OK)
        throw std::runtime_error(std::string("edgelock_acquire: ") + edgelock_strerror(rc));
    if (const int rc = edgelock_release(lock); rc != EDGELOCK_OK)
        throw std::runtime_error(std::string("edgelock_release: ") + edgelock_strerror(rc));
}

// The commands the server has run so far (the INFO asking is one of them).
double commands_run(std::uint16_t port) {
    return std::stod(testing::redis_client(port).info_field("stats", "total_commands_processed"));
}

struct counted_series {
    series s;
    std::uint64_t allocs = 0;
    double commands = 0;  // the server's, over every round
    double allocs_per_cycle(int cycles, int rounds) const {
        return static_cast<double>(allocs) / (static_cast<double>(cycles) * rounds);
    }
};

}  // namespace

void bench_blocking(int cycles, int rounds, const std::string& url, std::uint16_t port) {
    raw_connection raw(port);
    blocking::lock lock;
    open_blocking(lock, url);
    edgelock_lock* c_lock = open_capi(url);
    latencies warm;
    warm.reserve(6000);
    std::uint64_t ignored = 0;
    raw_round(raw, 2000, warm, true);
    timed_round(2000, warm, ignored, [&] { blocking_cycle(lock); });
    timed_round(2000, warm, ignored, [&] { capi_cycle(c_lock); });
    counted_series raw_s{{"raw hiredis SET NX PX GET + EVALSHA del", {}, {}}};
    counted_series blocking_s{{"edgelock blocking acquire + release", {}, {}}};
    counted_series capi_s{{"edgelock C API acquire + release", {}, {}}};
    for (counted_series* c : {&raw_s, &blocking_s, &capi_s})
        c->s.lat.reserve(static_cast<std::size_t>(cycles) * static_cast<std::size_t>(rounds));
    for (int r = 0; r < rounds; ++r) {
        double before = commands_run(port);
        raw_s.s.rounds.push_back(raw_round(raw, cycles, raw_s.s.lat, true));
        raw_s.commands += commands_run(port) - before - 1;
        before = commands_run(port);
        blocking_s.s.rounds.push_back(timed_round(cycles, blocking_s.s.lat, blocking_s.allocs,
                                                  [&] { blocking_cycle(lock); }));
        blocking_s.commands += commands_run(port) - before - 1;
        before = commands_run(port);
        capi_s.s.rounds.push_back(
            timed_round(cycles, capi_s.s.lat, capi_s.allocs, [&] { capi_cycle(c_lock); }));
        capi_s.commands += commands_run(port) - before - 1;
    }
    edgelock_close(c_lock);
    std::printf(
        "blocking client and C API, single lock, one connection, %d rounds x %d cycles "
        "(median round):\n",
        rounds, cycles);
    for (const counted_series* c : {&raw_s, &blocking_s, &capi_s}) {
        std::printf("  %-44s %9.0f cycles/s   p50 %6.1f us   p99 %7.1f us\n", c->s.label,
                    c->s.median().cycles_per_s, c->s.lat.percentile(0.50),
                    c->s.lat.percentile(0.99));
    }
    // The raw rounds' own count is the benchmark's tokens (hiredis allocates with malloc).
    std::printf("heap allocations (operator new) per cycle: blocking %.3f, C API %.3f\n",
                blocking_s.allocs_per_cycle(cycles, rounds),
                capi_s.allocs_per_cycle(cycles, rounds));
    const double raw_rate = raw_s.s.median().cycles_per_s;
    std::printf("ratio blocking/raw-same-commands = %.2f\n",
                blocking_s.s.median().cycles_per_s / raw_rate);
    std::printf("ratio capi/raw-same-commands = %.2f\n", capi_s.s.median().cycles_per_s / raw_rate);
    std::printf("CPU per cycle (median round), client + server, and the server's commands:\n");
    for (const counted_series* c : {&raw_s, &blocking_s, &capi_s}) {
        std::printf("  %-44s client %5.1f us   server %5.1f us   %4.2f commands\n", c->s.label,
                    c->s.median().client_cpu_us, c->s.median().server_cpu_us,
                    c->commands / (static_cast<double>(cycles) * rounds));
    }
}

}  // namespace edgelock::bench
