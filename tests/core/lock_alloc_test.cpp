// SPDX-License-Identifier: Apache-2.0
// Steady-state lock traffic allocates nothing.
//
// This binary replaces every global operator new and delete with counting ones, and counts
// malloc, calloc, realloc and aligned_alloc through the linker's --wrap (the core is a static
// library linked into this binary, so a call to malloc from the core would go through the
// wrap too). The first tests show the counters see a deliberate allocation; the last drive
// the core through 10,000 acquire/renew/release cycles per configuration and require that
// none of the counters moved. gtest assertions allocate, so the measured loops count their
// mismatches in plain integers and everything is checked after the loop.
#include "edgelock/lock.hpp"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <string>
#include <string_view>

#include "edgelock/errc.hpp"
#include "edgelock/limits.hpp"
#include "edgelock/resp_reader.hpp"
#include "edgelock/scripts.hpp"

namespace {

std::atomic<std::size_t> new_calls{0};
std::atomic<std::size_t> delete_calls{0};
std::atomic<std::size_t> malloc_calls{0};

// Stores a pointer where the optimizer must assume it is read, so that an allocation made
// only to be counted is not elided.
void* volatile escape_sink = nullptr;

void escape(void* pointer) { escape_sink = pointer; }

void* counted_new(std::size_t size) {
    new_calls.fetch_add(1, std::memory_order_relaxed);
    void* pointer = std::malloc(size == 0 ? 1 : size);
    if (pointer == nullptr) throw std::bad_alloc();
    return pointer;
}

void* counted_new(std::size_t size, std::align_val_t alignment) {
    new_calls.fetch_add(1, std::memory_order_relaxed);
    const auto align = static_cast<std::size_t>(alignment);
    // aligned_alloc wants a size that is a multiple of the alignment.
    const std::size_t rounded = size == 0 ? align : (size + align - 1) / align * align;
    void* pointer = std::aligned_alloc(align, rounded);
    if (pointer == nullptr) throw std::bad_alloc();
    return pointer;
}

void* counted_new_nothrow(std::size_t size) noexcept {
    try {
        return counted_new(size);
    } catch (const std::bad_alloc&) {
        return nullptr;
    }
}

void* counted_new_nothrow(std::size_t size, std::align_val_t alignment) noexcept {
    try {
        return counted_new(size, alignment);
    } catch (const std::bad_alloc&) {
        return nullptr;
    }
}

void counted_delete(void* pointer) noexcept {
    if (pointer == nullptr) return;
    delete_calls.fetch_add(1, std::memory_order_relaxed);
    std::free(pointer);
}

}  // namespace

// ---- the replaced global allocation functions ---------------------------------------------

void* operator new(std::size_t size) { return counted_new(size); }
void* operator new[](std::size_t size) { return counted_new(size); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
    return counted_new_nothrow(size);
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
    return counted_new_nothrow(size);
}
void* operator new(std::size_t size, std::align_val_t alignment) {
    return counted_new(size, alignment);
}
void* operator new[](std::size_t size, std::align_val_t alignment) {
    return counted_new(size, alignment);
}
void* operator new(std::size_t size, std::align_val_t alignment, const std::nothrow_t&) noexcept {
    return counted_new_nothrow(size, alignment);
}
void* operator new[](std::size_t size, std::align_val_t alignment, const std::nothrow_t&) noexcept {
    return counted_new_nothrow(size, alignment);
}

void operator delete(void* pointer) noexcept { counted_delete(pointer); }
void operator delete[](void* pointer) noexcept { counted_delete(pointer); }
void operator delete(void* pointer, std::size_t) noexcept { counted_delete(pointer); }
void operator delete[](void* pointer, std::size_t) noexcept { counted_delete(pointer); }
void operator delete(void* pointer, const std::nothrow_t&) noexcept { counted_delete(pointer); }
void operator delete[](void* pointer, const std::nothrow_t&) noexcept { counted_delete(pointer); }
void operator delete(void* pointer, std::align_val_t) noexcept { counted_delete(pointer); }
void operator delete[](void* pointer, std::align_val_t) noexcept { counted_delete(pointer); }
void operator delete(void* pointer, std::size_t, std::align_val_t) noexcept {
    counted_delete(pointer);
}
void operator delete[](void* pointer, std::size_t, std::align_val_t) noexcept {
    counted_delete(pointer);
}
void operator delete(void* pointer, std::align_val_t, const std::nothrow_t&) noexcept {
    counted_delete(pointer);
}
void operator delete[](void* pointer, std::align_val_t, const std::nothrow_t&) noexcept {
    counted_delete(pointer);
}

// ---- malloc and friends, through -Wl,--wrap=... (see tests/core/CMakeLists.txt) -----------

extern "C" {
void* __real_malloc(std::size_t size);
void* __real_calloc(std::size_t count, std::size_t size);
void* __real_realloc(void* pointer, std::size_t size);
void* __real_aligned_alloc(std::size_t alignment, std::size_t size);

void* __wrap_malloc(std::size_t size) {
    malloc_calls.fetch_add(1, std::memory_order_relaxed);
    return __real_malloc(size);
}

void* __wrap_calloc(std::size_t count, std::size_t size) {
    malloc_calls.fetch_add(1, std::memory_order_relaxed);
    return __real_calloc(count, size);
}

void* __wrap_realloc(void* pointer, std::size_t size) {
    malloc_calls.fetch_add(1, std::memory_order_relaxed);
    return __real_realloc(pointer, size);
}

void* __wrap_aligned_alloc(std::size_t alignment, std::size_t size) {
    malloc_calls.fetch_add(1, std::memory_order_relaxed);
    return __real_aligned_alloc(alignment, size);
}
}

namespace {

using edgelock::errc;
using edgelock::event;
using edgelock::event_type;

struct counters {
    std::size_t news = 0;
    std::size_t deletes = 0;
    std::size_t mallocs = 0;
};

counters read_counters() {
    counters c;
    c.news = new_calls.load(std::memory_order_relaxed);
    c.deletes = delete_calls.load(std::memory_order_relaxed);
    c.mallocs = malloc_calls.load(std::memory_order_relaxed);
    return c;
}

// ---- the counters work --------------------------------------------------------------------

TEST(lock_alloc, counts_a_deliberate_new) {
    const counters before = read_counters();
    int* value = new int(42);
    escape(value);
    delete value;
    const counters after = read_counters();
    EXPECT_EQ(after.news - before.news, 1u);
    EXPECT_EQ(after.deletes - before.deletes, 1u);
    EXPECT_GE(after.mallocs - before.mallocs, 1u) << "operator new allocates through malloc";
}

TEST(lock_alloc, counts_arrays_and_over_aligned_objects) {
    struct alignas(64) wide {
        char bytes[64];
    };
    const counters before = read_counters();
    char* array = new char[10];
    escape(array);
    delete[] array;
    wide* aligned = new wide;
    escape(aligned);
    delete aligned;
    const counters after = read_counters();
    EXPECT_EQ(after.news - before.news, 2u);
    EXPECT_EQ(after.deletes - before.deletes, 2u);
}

TEST(lock_alloc, counts_a_string_of_100_characters) {
    const counters before = read_counters();
    {
        const std::string text(100, 'x');  // beyond any small-string buffer
        escape(const_cast<char*>(text.data()));
    }
    const counters after = read_counters();
    EXPECT_GE(after.news - before.news, 1u);
    EXPECT_EQ(after.news - before.news, after.deletes - before.deletes);
}

TEST(lock_alloc, counts_a_deliberate_malloc) {
    const counters before = read_counters();
    void* block = std::malloc(100);
    escape(block);
    std::free(block);
    void* zeroed = std::calloc(10, 10);
    escape(zeroed);
    std::free(zeroed);
    const counters after = read_counters();
    EXPECT_EQ(after.mallocs - before.mallocs, 2u);
    EXPECT_EQ(after.news - before.news, 0u);
}

// ---- steady-state cycles --------------------------------------------------------------------

constexpr int cycles = 10'000;
constexpr std::int64_t ttl_ms = 30'000;
constexpr std::int64_t renew_interval_ms = ttl_ms / 3;  // lock_config's default
constexpr int pump_rounds_max = 8;  // acquire, raise, WAIT: three rounds at most

// What the measured loop saw, in plain integers (no gtest inside the loop).
struct tally {
    int acquired = 0;
    int renewed = 0;
    int released = 0;
    int other_events = 0;
    int bad_codes = 0;
    int unsettled = 0;  // a pump that did not finish within pump_rounds_max
};

// The success reply for a written request: SET NX PX GET (the acquire without fencing)
// answers nil; the acquire script answers its fence counter ("1" as a bulk string) with a
// fence key, 0 without; every other script and WAIT answer 1 (a confirmation, one replica).
std::string_view success_reply_for(const char* request, std::size_t size) {
    std::array<edgelock::reply_node, 16> args;
    const edgelock::parse_result parsed =
        edgelock::parse_reply(request, size, args.data(), args.size());
    if (parsed.code == errc::ok && parsed.nodes > 1 && args[1].text == "SET") return "$-1\r\n";
    const std::string_view digest(edgelock::acquire_script.digest.data(),
                                  edgelock::acquire_script.digest.size());
    const bool acquire = parsed.code == errc::ok && parsed.nodes > 3 && args[2].text == digest;
    if (!acquire) return ":1\r\n";
    return args[3].text == "2" ? "$1\r\n1\r\n" : ":0\r\n";
}

// Writes every queued request into a stack buffer, then answers each with its success reply
// (success_reply_for), until nothing is queued or in flight.
void pump(edgelock::lock& l, std::int64_t now_ms, tally& t) {
    std::array<char, edgelock::request_bytes_max> buffer;
    std::array<std::array<std::string_view, edgelock::requests_per_instance_max>,
               edgelock::instances_max>
        replies{};
    std::array<int, edgelock::instances_max> in_flight{};
    for (int round = 0; round < pump_rounds_max; ++round) {
        bool wrote = false;
        for (std::uint8_t i = 0; i < l.instance_count(); ++i) {
            while (l.has_request(i)) {
                const edgelock::write_result written =
                    l.write_request(i, buffer.data(), buffer.size());
                if (written.code != errc::ok) {
                    ++t.bad_codes;
                    return;
                }
                replies[i][static_cast<std::size_t>(in_flight[i]++)] =
                    success_reply_for(buffer.data(), written.size);
                wrote = true;
            }
        }
        if (!wrote) return;
        for (std::uint8_t i = 0; i < l.instance_count(); ++i) {
            for (int n = 0; n < in_flight[i]; ++n) {
                const std::string_view bytes = replies[i][static_cast<std::size_t>(n)];
                std::array<edgelock::reply_node, 4> nodes;
                const edgelock::parse_result parsed =
                    edgelock::parse_reply(bytes.data(), bytes.size(), nodes.data(), nodes.size());
                if (parsed.code != errc::ok || l.on_reply(i, nodes[0], now_ms) != errc::ok)
                    ++t.bad_codes;
            }
            in_flight[i] = 0;
        }
    }
    ++t.unsettled;
}

void drain(edgelock::lock& l, tally& t) {
    event e;
    while (l.poll_event(e)) {
        switch (e.type) {
            case event_type::acquired: ++t.acquired; break;
            case event_type::renewed: ++t.renewed; break;
            case event_type::released: ++t.released; break;
            default: ++t.other_events; break;
        }
    }
}

// One lock, configured once, through `cycles` acquire/renew/release cycles.
void run_cycles(edgelock::lock& l, tally& t) {
    std::int64_t now_ms = 1'000;
    for (int cycle = 0; cycle < cycles; ++cycle) {
        edgelock::owner_token token{};
        for (std::size_t i = 0; i < 4; ++i) token[i] = static_cast<std::uint8_t>(cycle >> (8 * i));
        token[15] = 0x5a;

        if (l.acquire(now_ms, 0, token) != errc::ok) ++t.bad_codes;
        pump(l, now_ms + 1, t);
        drain(l, t);

        const std::int64_t renewal_ms = now_ms + renew_interval_ms;
        if (l.on_timer(renewal_ms) != errc::ok) ++t.bad_codes;
        pump(l, renewal_ms + 1, t);
        drain(l, t);

        if (l.release(renewal_ms + 2) != errc::ok) ++t.bad_codes;
        pump(l, renewal_ms + 3, t);
        drain(l, t);

        now_ms = renewal_ms + 10;
    }
}

void expect_no_allocation_in_cycles(const edgelock::lock_config& config) {
    edgelock::lock l;
    ASSERT_EQ(l.configure(config), errc::ok);
    tally t;

    const counters before = read_counters();
    run_cycles(l, t);
    const counters after = read_counters();

    EXPECT_EQ(t.bad_codes, 0);
    EXPECT_EQ(t.unsettled, 0);
    EXPECT_EQ(t.other_events, 0);
    EXPECT_EQ(t.acquired, cycles);
    EXPECT_EQ(t.renewed, cycles);
    EXPECT_EQ(t.released, cycles);
    EXPECT_EQ(after.news - before.news, 0u) << "operator new during the cycles";
    EXPECT_EQ(after.deletes - before.deletes, 0u) << "operator delete during the cycles";
    EXPECT_EQ(after.mallocs - before.mallocs, 0u) << "malloc during the cycles";
}

edgelock::lock_config config_for(std::uint8_t instances, bool fencing) {
    edgelock::lock_config config;
    config.name = "orders:42";
    config.ttl_ms = ttl_ms;
    config.instances = instances;
    config.fencing = fencing;
    return config;
}

TEST(lock_alloc, single_instance_cycles_allocate_nothing) {
    expect_no_allocation_in_cycles(config_for(1, false));
}

TEST(lock_alloc, five_instance_fenced_cycles_allocate_nothing) {
    expect_no_allocation_in_cycles(config_for(5, true));
}

TEST(lock_alloc, three_instance_fenced_cycles_with_wait_allocate_nothing) {
    edgelock::lock_config config = config_for(3, true);
    config.replicas_to_wait = 1;
    expect_no_allocation_in_cycles(config);
}

}  // namespace
