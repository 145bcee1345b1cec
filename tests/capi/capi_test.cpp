// SPDX-License-Identifier: Apache-2.0
// The C API's conversions, without a Redis: every C++ code has its own C code and a name;
// options come out as the C++ client's (defaults included) whatever size of struct the
// caller knew; the metrics copy moves every counter to its place; edgelock_open() refuses
// bad input with the documented codes and leaves *out NULL.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <set>
#include <string>

#include "convert.hpp"
#include "edgelock.h"
#include "edgelock/error_code.hpp"

namespace {

using edgelock::errc;
using edgelock::transport_errc;

constexpr int errc_last = static_cast<int>(errc::permits_mismatch);
constexpr int transport_errc_last = static_cast<int>(transport_errc::too_many_masters);

TEST(CapiCodes, EveryCodeMapsToItsOwnNamedCCode) {
    std::set<int> seen;
    for (int v = 1; v <= errc_last; ++v) {
        const int c = edgelock::capi::to_c_code(static_cast<errc>(v));
        EXPECT_EQ(c, -v);
        EXPECT_STREQ(edgelock_strerror(c), edgelock::to_string(static_cast<errc>(v)));
        EXPECT_TRUE(seen.insert(c).second) << c;
    }
    for (int v = 1; v <= transport_errc_last; ++v) {
        const int c = edgelock::capi::to_c_code(static_cast<transport_errc>(v));
        EXPECT_EQ(c, -(100 + v));
        EXPECT_STREQ(edgelock_strerror(c), edgelock::describe(static_cast<transport_errc>(v)));
        EXPECT_TRUE(seen.insert(c).second) << c;
    }
    EXPECT_EQ(edgelock::capi::to_c_code({}), EDGELOCK_OK);
    // One past the last of each is no code: a value added to the C++ enumerations without
    // its C twin shows here.
    EXPECT_EQ(edgelock::capi::to_c_code(static_cast<errc>(errc_last + 1)), EDGELOCK_E_UNKNOWN);
    EXPECT_EQ(edgelock::capi::to_c_code(static_cast<transport_errc>(transport_errc_last + 1)),
              EDGELOCK_E_UNKNOWN);
}

TEST(CapiCodes, OsErrorsKeepTheirErrnoOnTheCallingThread) {
    const std::error_code refused = std::make_error_code(std::errc::connection_refused);
    EXPECT_EQ(edgelock::capi::to_c_code(refused), EDGELOCK_E_OS);
    EXPECT_EQ(edgelock_last_os_error(), ECONNREFUSED);
    EXPECT_EQ(edgelock::capi::to_c_code(std::error_code(ETIMEDOUT, std::system_category())),
              EDGELOCK_E_OS);
    EXPECT_EQ(edgelock_last_os_error(), ETIMEDOUT);
}

TEST(CapiCodes, StrerrorNeverReturnsNull) {
    for (int c = -300; c <= 300; ++c) {
        ASSERT_NE(edgelock_strerror(c), nullptr) << c;
        EXPECT_GT(std::strlen(edgelock_strerror(c)), 0u) << c;
    }
    EXPECT_STREQ(edgelock_strerror(EDGELOCK_E_BUSY), "busy");
    EXPECT_STREQ(edgelock_strerror(12345), "unknown error");
}

TEST(CapiOptions, DefaultsAreTheCppClients) {
    edgelock_options o;
    std::memset(&o, 0xab, sizeof o);
    edgelock_options_init(&o, sizeof o);
    EXPECT_EQ(o.struct_size, sizeof o);
    EXPECT_EQ(o.instances, nullptr);
    EXPECT_EQ(o.on_lost, nullptr);
    edgelock::blocking::lock_options converted;
    converted.ttl_ms = 1;  // overwritten below with the C default
    ASSERT_EQ(edgelock::capi::to_lock_options(o, converted), EDGELOCK_OK);
    const edgelock::blocking::lock_options defaults;
    EXPECT_EQ(converted.ttl_ms, defaults.ttl_ms);
    EXPECT_EQ(converted.connect_timeout_ms, defaults.connect_timeout_ms);
    EXPECT_EQ(converted.command_timeout_ms, defaults.command_timeout_ms);
    EXPECT_EQ(converted.reconnect_delay_max_ms, defaults.reconnect_delay_max_ms);
    EXPECT_EQ(converted.restart_guard, defaults.restart_guard);
    EXPECT_EQ(converted.eviction, defaults.eviction);
    EXPECT_EQ(converted.watchdog, defaults.watchdog);
    EXPECT_EQ(converted.drift_ms, defaults.drift_ms);
    EXPECT_EQ(converted.restart_guard_ms, defaults.restart_guard_ms);
    EXPECT_EQ(o.permits, 1);
    EXPECT_EQ(converted.permits, defaults.permits);
    EXPECT_FALSE(converted.on_lost);
}

// A semaphore's count reaches the C++ options; 0 (a struct zeroed by hand) is the lock, and a
// count no uint16 holds is refused before the core sees it.
TEST(CapiOptions, PermitsReachTheCppOptions) {
    edgelock_options o;
    edgelock_options_init(&o, sizeof o);
    edgelock::blocking::lock_options c;
    o.permits = 3;
    ASSERT_EQ(edgelock::capi::to_lock_options(o, c), EDGELOCK_OK);
    EXPECT_EQ(c.permits, 3);
    o.permits = 0;
    ASSERT_EQ(edgelock::capi::to_lock_options(o, c), EDGELOCK_OK);
    EXPECT_EQ(c.permits, 1);
    for (const int bad : {-1, 65536}) {
        o.permits = bad;
        EXPECT_EQ(edgelock::capi::to_lock_options(o, c), EDGELOCK_E_INVALID_CONFIG) << bad;
    }
}

TEST(CapiOptions, FieldsReachTheCppOptions) {
    edgelock_options o;
    edgelock_options_init(&o, sizeof o);
    const char* const sentinels[] = {"redis://10.0.0.1:26379", "redis://10.0.0.2:26379"};
    o.sentinels = sentinels;
    o.sentinel_count = 2;
    o.master_name = "mymaster";
    o.master_db = 3;
    o.tls_server_name = "redis.example";
    o.name = "orders:42";
    o.ttl_ms = 1234;
    o.fencing = 1;
    o.replicas_to_wait = 2;
    o.eviction = EDGELOCK_EVICTION_REFUSE;
    edgelock::blocking::lock_options c;
    ASSERT_EQ(edgelock::capi::to_lock_options(o, c), EDGELOCK_OK);
    EXPECT_EQ(c.sentinels, (std::vector<std::string>{sentinels[0], sentinels[1]}));
    EXPECT_TRUE(c.instances.empty());
    EXPECT_EQ(c.master_name, "mymaster");
    EXPECT_EQ(c.master_db, 3);
    EXPECT_EQ(c.tls.server_name, "redis.example");
    EXPECT_EQ(c.name, "orders:42");
    EXPECT_EQ(c.ttl_ms, 1234);
    EXPECT_TRUE(c.fencing);
    EXPECT_EQ(c.replicas_to_wait, 2);
    EXPECT_EQ(c.eviction, edgelock::session::eviction_check::refuse);
}

TEST(CapiOptions, OutOfRangeAndNullEntriesAreRefused) {
    edgelock_options o;
    edgelock_options_init(&o, sizeof o);
    edgelock::blocking::lock_options c;
    o.replicas_to_wait = 256;
    EXPECT_EQ(edgelock::capi::to_lock_options(o, c), EDGELOCK_E_INVALID_CONFIG);
    o.replicas_to_wait = 0;
    o.master_db = -1;
    EXPECT_EQ(edgelock::capi::to_lock_options(o, c), EDGELOCK_E_INVALID_CONFIG);
    o.master_db = 0;
    o.eviction = 3;
    EXPECT_EQ(edgelock::capi::to_lock_options(o, c), EDGELOCK_E_INVALID_CONFIG);
    o.eviction = EDGELOCK_EVICTION_WARN;
    const char* const with_null[] = {nullptr};
    o.instances = with_null;
    o.instance_count = 1;
    EXPECT_EQ(edgelock::capi::to_lock_options(o, c), EDGELOCK_E_INVALID_ARGUMENT);
    o.instances = nullptr;
    EXPECT_EQ(edgelock::capi::to_lock_options(o, c), EDGELOCK_E_INVALID_ARGUMENT);
}

// A caller compiled against a newer edgelock.h: its struct is longer than this library's.
struct newer_options {
    edgelock_options known;
    std::int64_t unknown_field;
};

TEST(CapiOptions, StructSizeOfOlderAndNewerCallers) {
    edgelock_options read;
    // Older: a caller that knew only the fields up to `name`; the rest are the defaults.
    edgelock_options older;
    std::memset(&older, 0, sizeof older);
    const std::size_t older_size = offsetof(edgelock_options, ttl_ms);
    edgelock_options_init(&older, older_size);
    older.ttl_ms = 77;  // beyond what that caller knows: never read
    ASSERT_EQ(edgelock::capi::read_options(&older, read), EDGELOCK_OK);
    EXPECT_EQ(read.struct_size, sizeof read);
    EXPECT_EQ(read.ttl_ms, edgelock::blocking::lock_options{}.ttl_ms);
    // Newer: accepted while its unknown fields are zero, refused once one asks for something.
    newer_options newer;
    edgelock_options_init(&newer.known, sizeof newer);
    EXPECT_EQ(newer.unknown_field, 0);
    EXPECT_EQ(edgelock::capi::read_options(&newer.known, read), EDGELOCK_OK);
    newer.unknown_field = 1;
    EXPECT_EQ(edgelock::capi::read_options(&newer.known, read), EDGELOCK_E_INVALID_CONFIG);
    // Too small to hold its own size.
    older.struct_size = 1;
    EXPECT_EQ(edgelock::capi::read_options(&older, read), EDGELOCK_E_INVALID_CONFIG);
}

TEST(CapiOpen, BadInputIsACodeAndNoLock) {
    edgelock_lock* lock = reinterpret_cast<edgelock_lock*>(&lock);
    EXPECT_EQ(edgelock_open(nullptr, &lock), EDGELOCK_E_INVALID_ARGUMENT);
    EXPECT_EQ(lock, nullptr);
    edgelock_options o;
    edgelock_options_init(&o, sizeof o);
    EXPECT_EQ(edgelock_open(&o, nullptr), EDGELOCK_E_INVALID_ARGUMENT);
    EXPECT_EQ(edgelock_open(&o, &lock), EDGELOCK_E_INVALID_CONFIG);  // no instances
    const char* const two[] = {"redis://127.0.0.1:1", "redis://127.0.0.1:2"};
    o.instances = two;
    o.instance_count = 2;
    o.name = "x";
    EXPECT_EQ(edgelock_open(&o, &lock), EDGELOCK_E_INVALID_INSTANCES);
    o.instance_count = 1;
    o.name = "";
    EXPECT_EQ(edgelock_open(&o, &lock), EDGELOCK_E_INVALID_NAME);
    o.name = "x";
    o.ttl_ms = 0;
    EXPECT_EQ(edgelock_open(&o, &lock), EDGELOCK_E_INVALID_TTL);
    EXPECT_EQ(lock, nullptr);
    o.ttl_ms = 1000;
    ASSERT_EQ(edgelock_open(&o, &lock), EDGELOCK_OK);
    EXPECT_EQ(edgelock_held(lock), 0);
    EXPECT_EQ(edgelock_release(lock), EDGELOCK_E_NOT_HELD);
    EXPECT_EQ(edgelock_acquire(lock, -1, nullptr), EDGELOCK_E_INVALID_WAIT);
    edgelock_close(lock);
    EXPECT_EQ(edgelock_release(nullptr), EDGELOCK_E_INVALID_ARGUMENT);
    EXPECT_EQ(edgelock_fence(nullptr), 0);
    edgelock_close(nullptr);
}

TEST(CapiMetrics, EveryCounterIsCopiedToItsPlace) {
    edgelock::session::lock_metrics m;
    std::uint64_t next = 1;
    for (auto& v : m.acquires) v = next++;
    for (auto* h : {&m.acquire_latency, &m.acquire_wait, &m.handover_gap}) {
        for (auto& v : h->counts) v = next++;
        h->count = next++;
        h->sum_ms = static_cast<std::int64_t>(next++);
    }
    m.renewals_ok = next++;
    m.renewals_late = next++;
    m.renewal_failures = next++;
    for (auto& v : m.losses) v = next++;
    for (auto& v : m.releases) v = next++;
    m.connects = next++;
    m.reconnects = next++;
    m.failovers = next++;
    m.requests_in_flight = next++;
    m.redirects_moved = next++;
    m.redirects_ask = next++;
    edgelock_metrics c;
    std::memset(&c, 0, sizeof c);
    edgelock::capi::to_c_metrics(m, c);
    // The C struct is all uint64_t/int64_t in the C++ struct's order: read back as one
    // sequence, it must be 1, 2, 3, ... with nothing missed or swapped.
    static_assert(sizeof c % sizeof(std::uint64_t) == 0);
    std::uint64_t words[sizeof c / sizeof(std::uint64_t)];
    std::memcpy(words, &c, sizeof c);
    ASSERT_EQ(std::size(words), next - 1);
    for (std::size_t i = 0; i < std::size(words); ++i) EXPECT_EQ(words[i], i + 1) << i;
}

TEST(CapiMetrics, NamesAndBounds) {
    EXPECT_STREQ(edgelock_acquire_outcome_name(EDGELOCK_ACQUIRE_ACQUIRED), "acquired");
    EXPECT_STREQ(edgelock_acquire_outcome_name(EDGELOCK_ACQUIRE_BUSY), "busy");
    EXPECT_STREQ(edgelock_acquire_outcome_name(EDGELOCK_ACQUIRE_OUTCOME_COUNT), "");
    EXPECT_STREQ(edgelock_loss_cause_name(EDGELOCK_LOSS_TOKEN_GONE), "token_gone");
    EXPECT_STREQ(edgelock_loss_cause_name(EDGELOCK_LOSS_CAUSE_COUNT), "");
    EXPECT_STREQ(edgelock_release_outcome_name(EDGELOCK_RELEASE_RELEASED), "released");
    EXPECT_STREQ(edgelock_release_outcome_name(EDGELOCK_RELEASE_OUTCOME_COUNT), "");
    EXPECT_EQ(edgelock_latency_bound_ms(0), 1);
    EXPECT_EQ(edgelock_latency_bound_ms(EDGELOCK_LATENCY_BOUND_COUNT - 1), 30'000);
    EXPECT_EQ(edgelock_latency_bound_ms(EDGELOCK_LATENCY_BOUND_COUNT), -1);
}

TEST(CapiVersion, LibraryMatchesHeader) {
    const std::string expected = std::to_string(EDGELOCK_VERSION_MAJOR) + "." +
                                 std::to_string(EDGELOCK_VERSION_MINOR) + "." +
                                 std::to_string(EDGELOCK_VERSION_PATCH);
    EXPECT_EQ(edgelock_version(), expected);
}

}  // namespace
