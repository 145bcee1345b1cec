// SPDX-License-Identifier: Apache-2.0
// After connect, steady-state lock traffic allocates nothing: this binary replaces the global
// operator new with a counting one and runs acquire/release cycles against a real Redis.
//
// Over TLS two allocators are at work, counted apart: operator new (edgelock's own code and
// Asio's, the SSL stream included) and OpenSSL's CRYPTO_malloc family, routed through
// counting functions with CRYPTO_set_mem_functions before OpenSSL allocates anything.
#include <gtest/gtest.h>
#include <openssl/crypto.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "asio_test_util.hpp"
#include "edgelock/async_client.hpp"
#include "edgelock/testing/redis_client.hpp"
#include "edgelock/keys.hpp"
#include "edgelock/testing/redis_cluster.hpp"
#include "edgelock/testing/redis_process.hpp"
#include "edgelock/testing/tls_material.hpp"

namespace {

std::atomic<bool> counting{false};
std::atomic<std::size_t> allocations{0};
std::atomic<std::size_t> allocated_bytes{0};       // operator new's, while counting
std::atomic<std::size_t> openssl_allocations{0};   // malloc and realloc by OpenSSL, while counting
std::atomic<std::int64_t> openssl_blocks_live{0};  // OpenSSL's blocks not freed yet, always

void* openssl_malloc(std::size_t size, const char*, int) {
    if (counting.load(std::memory_order_relaxed))
        openssl_allocations.fetch_add(1, std::memory_order_relaxed);
    void* block = std::malloc(size);
    if (block != nullptr) openssl_blocks_live.fetch_add(1, std::memory_order_relaxed);
    return block;
}
void* openssl_realloc(void* p, std::size_t size, const char*, int) {
    if (counting.load(std::memory_order_relaxed))
        openssl_allocations.fetch_add(1, std::memory_order_relaxed);
    void* block = std::realloc(p, size);
    if (p == nullptr && block != nullptr)
        openssl_blocks_live.fetch_add(1, std::memory_order_relaxed);
    return block;
}
void openssl_free(void* p, const char*, int) {
    if (p != nullptr) openssl_blocks_live.fetch_sub(1, std::memory_order_relaxed);
    std::free(p);
}

// Before main(), so before OpenSSL's first allocation (it refuses the functions after one).
const bool openssl_counted =
    CRYPTO_set_mem_functions(openssl_malloc, openssl_realloc, openssl_free) == 1;

void* counted_allocation(std::size_t size, std::size_t alignment) {
    if (counting.load(std::memory_order_relaxed)) {
        allocations.fetch_add(1, std::memory_order_relaxed);
        allocated_bytes.fetch_add(size, std::memory_order_relaxed);
    }
    if (size == 0) size = 1;
    void* p = alignment <= alignof(std::max_align_t)
                  ? std::malloc(size)
                  : std::aligned_alloc(alignment, (size + alignment - 1) / alignment * alignment);
    if (p == nullptr) throw std::bad_alloc();
    return p;
}

}  // namespace

void* operator new(std::size_t size) { return counted_allocation(size, 0); }
void* operator new[](std::size_t size) { return counted_allocation(size, 0); }
void* operator new(std::size_t size, std::align_val_t a) {
    return counted_allocation(size, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t size, std::align_val_t a) {
    return counted_allocation(size, static_cast<std::size_t>(a));
}
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
    try {
        return counted_allocation(size, 0);
    } catch (...) {
        return nullptr;
    }
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
    try {
        return counted_allocation(size, 0);
    } catch (...) {
        return nullptr;
    }
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

namespace {

using namespace edgelock::asio_tests;
using edgelock::async::client;
using edgelock::async::lock_handle;
using edgelock::testing::redis_server;

// Drives `cycles` acquire+release cycles on each lock from inside the io_context (each
// completion starts the next operation), counting allocations after `warm_up` cycles.
struct cycler {
    client* owner = nullptr;
    lock_handle handle;
    int warm_up = 0;
    int cycles = 0;
    int done = 0;
    int* running = nullptr;
    bool observe = false;  // read the client's metrics after every cycle
    edgelock::session::lock_metrics seen;
    std::error_code error;

    void next() {
        owner->async_acquire(handle, std::chrono::milliseconds(0),
                             [this](std::error_code ec, std::int64_t) {
                                 if (ec) return finish(ec);
                                 owner->async_release(handle, [this](std::error_code ec2) {
                                     if (ec2) return finish(ec2);
                                     ++done;
                                     if (observe) seen = owner->metrics();
                                     if (done == warm_up) counting = true;
                                     if (done == warm_up + cycles) return finish({});
                                     next();
                                 });
                             });
    }
    void finish(std::error_code ec) {
        error = ec;
        if (--*running == 0) owner->context().stop();
    }
};

enum class driver { run, run_one };

std::size_t run_cycles(client& owner, asio::io_context& io, std::vector<lock_handle>& handles,
                       int warm_up, int cycles, driver how = driver::run, bool observe = false) {
    std::vector<cycler> cyclers(handles.size());
    int running = static_cast<int>(handles.size());
    for (std::size_t i = 0; i < handles.size(); ++i) {
        cyclers[i].owner = &owner;
        cyclers[i].handle = handles[i];
        cyclers[i].warm_up = warm_up;
        cyclers[i].cycles = cycles;
        cyclers[i].running = &running;
        cyclers[i].observe = observe;
    }
    allocations = 0;
    openssl_allocations = 0;
    for (cycler& c : cyclers) c.next();
    // io_context::run(), as a program runs it. (A loop of run_one() calls would not do:
    // Asio keeps its recycled handler memory in per-call thread state, so every run_one()
    // starts with an empty cache and allocates.)
    io.restart();
    if (how == driver::run) {
        io.run();
    } else {
        while (running > 0 && io.run_one() > 0) {
        }
    }
    counting = false;
    for (const cycler& c : cyclers) {
        EXPECT_FALSE(c.error) << c.error.message();
        EXPECT_EQ(c.done, warm_up + cycles);
    }
    return allocations.load();
}

TEST(asio_allocation, the_counter_counts) {
    allocations = 0;
    counting = true;
    auto probe = std::make_unique<int>(7);
    std::vector<char> buffer(100);
    counting = false;
    EXPECT_EQ(allocations.load(), 2u) << "the replaced operator new is the one in use";
    EXPECT_EQ(*probe + buffer.size(), 107u);
}

// With the metrics read after every cycle and the event hook set: counting, telling and
// reading them allocate nothing either.
TEST(asio_allocation, connecting_allocates_and_ten_thousand_cycles_allocate_nothing) {
    redis_server server;
    asio::io_context io{1};
    client owner(io);
    std::uint64_t events = 0;
    auto config = config_for({server.url()});
    config.on_event = [&events](const edgelock::lock_event&) { ++events; };
    allocations = 0;
    counting = true;
    ASSERT_FALSE(owner.open(config));
    counting = false;
    EXPECT_GT(allocations.load(), 0u) << "open() builds the tables: the counter sees it";
    ASSERT_FALSE(wait_ready(owner).ec);
    std::vector<lock_handle> handles(1);
    ASSERT_FALSE(owner.add_lock(lock_for("steady", 30'000), handles[0]));

    const std::size_t counted = run_cycles(owner, io, handles, 1000, 10'000, driver::run, true);
    EXPECT_EQ(counted, 0u) << "allocations during 10,000 steady-state acquire+release cycles";
    EXPECT_EQ(owner.metrics().acquired(), 11'000u);
    EXPECT_GE(events, 22'000u) << "an attempt and a release event per cycle";
}

// A semaphore's cycles (the permit scripts, answered by EVAL once after each NOSCRIPT of the
// warm-up) allocate nothing either, two of its three permits taken by two locks at once.
TEST(asio_allocation, semaphore_cycles_allocate_nothing_either) {
    redis_server server;
    asio::io_context io{1};
    client owner(io);
    ASSERT_FALSE(owner.open(config_for({server.url()})));
    ASSERT_FALSE(wait_ready(owner).ec);
    std::vector<lock_handle> handles(2);
    for (lock_handle& h : handles) {
        edgelock::lock_config config = lock_for("steady:permits", 30'000);
        config.permits = 3;
        ASSERT_FALSE(owner.add_lock(config, h));
    }
    const std::size_t counted = run_cycles(owner, io, handles, 1000, 10'000, driver::run, true);
    EXPECT_EQ(counted, 0u) << "allocations during 10,000 steady-state semaphore cycles";
}

TEST(asio_allocation, the_same_cycles_under_run_one_do_allocate_and_are_counted) {
    // The counter sees allocations made deep inside the client's completions: driven by
    // run_one() calls, Asio's handler memory is not recycled and every completion allocates.
    redis_server server;
    asio::io_context io{1};
    client owner(io);
    ASSERT_FALSE(owner.open(config_for({server.url()})));
    ASSERT_FALSE(wait_ready(owner).ec);
    std::vector<lock_handle> handles(1);
    ASSERT_FALSE(owner.add_lock(lock_for("counted", 30'000), handles[0]));
    const std::size_t counted = run_cycles(owner, io, handles, 100, 1000, driver::run_one);
    EXPECT_GE(counted, 1000u);
}

TEST(asio_allocation, a_hundred_pipelined_locks_allocate_nothing_either) {
    redis_server server;
    asio::io_context io{1};
    client owner(io);
    auto config = config_for({server.url()});
    config.locks_max = 100;
    ASSERT_FALSE(owner.open(config));
    ASSERT_FALSE(wait_ready(owner).ec);
    std::vector<std::string> names;
    for (int i = 0; i < 100; ++i) names.push_back("pipelined:" + std::to_string(i));
    std::vector<lock_handle> handles(100);
    for (int i = 0; i < 100; ++i)
        ASSERT_FALSE(owner.add_lock(lock_for(names[i], 30'000), handles[i]));

    const std::size_t counted = run_cycles(owner, io, handles, 100, 200);
    EXPECT_EQ(counted, 0u) << "allocations during 100 x 200 pipelined cycles";
}

// Redis Cluster: locks on every master, each link made on first use during the warm-up; then
// the steady state allocates nothing, whichever node a lock's slot lives on.
TEST(asio_allocation, locks_over_a_three_master_cluster_allocate_nothing_either) {
    edgelock::testing::redis_cluster cluster;
    asio::io_context io{1};
    client owner(io);
    auto config = config_for({});
    config.instances.clear();
    config.cluster = {"redis://127.0.0.1:" + std::to_string(cluster.node(0).port())};
    config.restart_guard = false;  // seconds-old volatile nodes (see asio_cluster_test)
    config.locks_max = 30;
    ASSERT_FALSE(owner.open(config));
    ASSERT_FALSE(wait_ready(owner).ec);
    std::vector<std::string> names;
    std::vector<lock_handle> handles(30);
    for (int i = 0; i < 30; ++i) names.push_back("sharded:" + std::to_string(i));
    for (int i = 0; i < 30; ++i)
        ASSERT_FALSE(owner.add_lock(lock_for(names[i], 30'000), handles[i]));
    std::vector<bool> master_used(cluster.masters_at_start());
    for (const std::string& name : names)
        master_used.at(cluster.owner_of(edgelock::cluster_slot(name))) = true;
    for (std::size_t m = 0; m < master_used.size(); ++m) ASSERT_TRUE(master_used[m]) << m;

    const std::size_t counted = run_cycles(owner, io, handles, 100, 300);
    EXPECT_EQ(counted, 0u) << "allocations during 30 x 300 cycles over three masters";
}

// What async_client.hpp says a fair lock costs: the first one of a client allocates the
// subscriber's connection and the channel table (about 73 KiB plus about 470 bytes per lock
// of locks_max, two channels each, a channel's name room for the queue key and a token:
// 107,128 bytes with 64 when measured), and nothing is allocated for the next ones.
TEST(asio_allocation, the_first_fair_lock_allocates_the_subscriber_and_the_next_ones_nothing) {
    redis_server server;
    asio::io_context io{1};
    client owner(io);
    auto config = config_for({server.url()});
    config.locks_max = 64;
    ASSERT_FALSE(owner.open(config));
    ASSERT_FALSE(wait_ready(owner).ec);
    edgelock::lock_config fair = lock_for("cost:fair", 30'000);
    fair.fair = true;
    lock_handle plain;
    lock_handle first;
    lock_handle second;

    allocations = 0;
    counting = true;
    ASSERT_FALSE(owner.add_lock(lock_for("cost:plain", 30'000), plain));
    counting = false;
    EXPECT_EQ(allocations.load(), 0u) << "a plain lock takes a slot of the table";

    allocations = 0;
    allocated_bytes = 0;
    counting = true;
    ASSERT_FALSE(owner.add_lock(fair, first));
    counting = false;
    const std::size_t first_bytes = allocated_bytes.load();
    std::printf("[ measured ] the first fair lock (locks_max 64): %zu bytes in %zu allocations\n",
                first_bytes, allocations.load());
    EXPECT_GT(first_bytes, 64u * 1024) << "the subscriber's read buffer holds a whole reply";
    EXPECT_LE(first_bytes, 75u * 1024 + 64u * 480);

    allocations = 0;
    counting = true;
    fair.name = "cost:other";
    ASSERT_FALSE(owner.add_lock(fair, second));
    counting = false;
    EXPECT_EQ(allocations.load(), 0u) << "the next fair locks share the subscriber";
}

// Two fair locks of one name hand the lock over, again and again: the waiter's acquire goes
// out before the holder's release on the shared connection, so it is refused and joins the
// line, its channel is subscribed, the release's message (or the subscription's confirmation)
// wakes it, and its channel is unsubscribed once it holds the lock. None of it allocates.
// How often the server ran `command` (INFO commandstats: "calls=N,usec=...").
long long calls_of(edgelock::testing::redis_client& admin, const std::string& command) {
    const std::string stats = admin.info_field("commandstats", "cmdstat_" + command);
    return stats.rfind("calls=", 0) == 0 ? std::stoll(stats.substr(6)) : 0;
}

struct fair_handover {
    client* owner = nullptr;
    lock_handle holder;
    lock_handle waiter;
    int warm_up = 0;
    int cycles = 0;
    int done = 0;
    std::error_code error;

    void next() {
        owner->async_acquire(
            holder, std::chrono::milliseconds(0), [this](std::error_code ec, std::int64_t) {
                if (ec) return finish(ec);
                owner->async_acquire(waiter, std::chrono::seconds(10),
                                     [this](std::error_code ec2, std::int64_t) {
                                         if (ec2) return finish(ec2);
                                         owner->async_release(waiter, [this](std::error_code ec3) {
                                             if (ec3) return finish(ec3);
                                             ++done;
                                             if (done == warm_up) counting = true;
                                             if (done == warm_up + cycles) return finish({});
                                             next();
                                         });
                                     });
                owner->async_release(holder, [this](std::error_code ec2) {
                    if (ec2) finish(ec2);
                });
            });
    }
    void finish(std::error_code ec) {
        error = ec;
        owner->context().stop();
    }
};

TEST(asio_allocation, fair_handovers_through_the_subscriber_allocate_nothing) {
    redis_server server;
    edgelock::testing::redis_client admin(server.port());
    asio::io_context io{1};
    client owner(io);
    ASSERT_FALSE(owner.open(config_for({server.url()})));
    ASSERT_FALSE(wait_ready(owner).ec);
    edgelock::lock_config fair = lock_for("steady:fair", 30'000);
    fair.fair = true;
    fair.recheck_ms = 5000;
    fair_handover run;
    run.owner = &owner;
    ASSERT_FALSE(owner.add_lock(fair, run.holder));
    ASSERT_FALSE(owner.add_lock(fair, run.waiter));
    run.warm_up = 100;
    run.cycles = 1000;
    const long long subscribed_before = calls_of(admin, "subscribe");

    allocations = 0;
    run.next();
    io.restart();
    io.run();
    counting = false;
    EXPECT_FALSE(run.error) << run.error.message();
    EXPECT_EQ(run.done, run.warm_up + run.cycles);
    EXPECT_EQ(allocations.load(), 0u) << "allocations during 1,000 fair handovers";
    EXPECT_GE(calls_of(admin, "subscribe") - subscribed_before, run.warm_up + run.cycles)
        << "every handover went through a subscription";
}

// OpenSSL 3.0's record layer allocates small blocks for each record it writes (its WPACKET
// sub-packets) and frees them before SSL_write returns: counted apart, bounded per record, and
// none left behind.
TEST(asio_allocation, over_tls_edgelock_and_asio_allocate_nothing_and_openssl_nothing_that_stays) {
    ASSERT_TRUE(openssl_counted) << "OpenSSL took the counting functions";
    edgelock::testing::tls_material material;
    redis_server server(material);
    asio::io_context io{1};
    client owner(io);
    auto config = config_for({server.url()});
    config.tls.ca_file = material.ca_file();
    allocations = 0;
    openssl_allocations = 0;
    counting = true;
    ASSERT_FALSE(owner.open(config));
    ASSERT_FALSE(wait_ready(owner).ec);
    counting = false;
    EXPECT_GT(openssl_allocations.load(), 0u)
        << "loading the CA and the handshake allocate: the counter sees OpenSSL";
    std::vector<lock_handle> handles(1);
    ASSERT_FALSE(owner.add_lock(lock_for("steady:tls", 30'000), handles[0]));

    const std::int64_t live_before = openssl_blocks_live.load();
    const std::size_t counted = run_cycles(owner, io, handles, 1000, 10'000);
    EXPECT_EQ(counted, 0u)
        << "operator new during 10,000 steady-state acquire+release cycles over TLS";
    constexpr std::size_t records_per_cycle = 2;  // the acquire's request and the release's
    constexpr std::size_t openssl_per_record_max = 4;
    EXPECT_LE(openssl_allocations.load(), 10'000 * records_per_cycle * openssl_per_record_max);
    EXPECT_EQ(openssl_blocks_live.load(), live_before)
        << "OpenSSL holds no more blocks than before the cycles";
    std::printf("[ measured ] OpenSSL allocations per lock cycle: %.2f\n",
                openssl_allocations.load() / 10'000.0);
}

}  // namespace
