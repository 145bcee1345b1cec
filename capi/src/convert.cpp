// SPDX-License-Identifier: Apache-2.0
#include "convert.hpp"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "edgelock/error_code.hpp"

namespace edgelock::capi {
namespace {

// Per thread, as errno is: the value belongs to the call that returned EDGELOCK_E_OS.
thread_local int os_error_value = 0;

constexpr int transport_offset = 100;
constexpr int errc_last = static_cast<int>(errc::permits_mismatch);
constexpr int transport_errc_last = static_cast<int>(transport_errc::too_many_masters);

// The C values are the C++ ones at fixed offsets (edgelock.h promises they never change):
// the first and last of each range, and a few in between, checked where both are visible.
static_assert(EDGELOCK_E_INVALID_NAME == -static_cast<int>(errc::invalid_name));
static_assert(EDGELOCK_E_BUSY == -static_cast<int>(errc::busy));
static_assert(EDGELOCK_E_EXPIRED == -static_cast<int>(errc::expired));
static_assert(EDGELOCK_E_IO_ERROR == -static_cast<int>(errc::io_error));
static_assert(EDGELOCK_E_FENCE_EXHAUSTED == -static_cast<int>(errc::fence_exhausted));
static_assert(EDGELOCK_E_NODE_RESTARTED == -static_cast<int>(errc::node_restarted));
static_assert(EDGELOCK_E_PERMITS_MISMATCH == -errc_last);
static_assert(EDGELOCK_E_UNKNOWN_HOST ==
              -(transport_offset + static_cast<int>(transport_errc::unknown_host)));
static_assert(EDGELOCK_E_OUT_OF_MEMORY ==
              -(transport_offset + static_cast<int>(transport_errc::out_of_memory)));
static_assert(EDGELOCK_E_TLS_FILES ==
              -(transport_offset + static_cast<int>(transport_errc::tls_files)));
static_assert(EDGELOCK_E_AUTH_REQUIRED ==
              -(transport_offset + static_cast<int>(transport_errc::auth_required)));
static_assert(EDGELOCK_E_MAX_CLIENTS ==
              -(transport_offset + static_cast<int>(transport_errc::max_clients)));
static_assert(EDGELOCK_E_NO_SLOT_MAP ==
              -(transport_offset + static_cast<int>(transport_errc::no_slot_map)));
static_assert(EDGELOCK_E_TOO_MANY_MASTERS == -(transport_offset + transport_errc_last));

static_assert(EDGELOCK_ACQUIRE_OUTCOME_COUNT == session::acquire_outcome_count);
static_assert(EDGELOCK_ACQUIRE_ERROR == static_cast<int>(session::acquire_outcome::error));
static_assert(EDGELOCK_ACQUIRE_UNREACHABLE ==
              static_cast<int>(session::acquire_outcome::unreachable));
static_assert(EDGELOCK_LOSS_CAUSE_COUNT == session::loss_cause_count);
static_assert(EDGELOCK_LOSS_CLOCK_STEPPED_BACK ==
              static_cast<int>(session::loss_cause::clock_stepped_back));
static_assert(EDGELOCK_RELEASE_OUTCOME_COUNT == session::release_outcome_count);
static_assert(EDGELOCK_RELEASE_FAILED == static_cast<int>(session::release_outcome::failed));
static_assert(EDGELOCK_LATENCY_BOUND_COUNT == session::latency_bounds_ms.size());
static_assert(EDGELOCK_EVICTION_WARN == static_cast<int>(session::eviction_check::warn));
static_assert(EDGELOCK_EVICTION_REFUSE == static_cast<int>(session::eviction_check::refuse));
static_assert(EDGELOCK_EVICTION_OFF == static_cast<int>(session::eviction_check::off));

std::string text_of(const char* given) { return given == nullptr ? std::string() : given; }

// NULL with a count is a caller's mistake; so is a NULL entry. No reserve(count): a count
// beyond what a vector can hold would throw length_error, which open() does not expect; the
// entries are copied one by one, and validate() refuses a count that no deployment allows.
int copy_urls(const char* const* given, std::size_t count, std::vector<std::string>& out) {
    if (count > 0 && given == nullptr) return EDGELOCK_E_INVALID_ARGUMENT;
    out.clear();
    for (std::size_t i = 0; i < count; ++i) {
        if (given[i] == nullptr) return EDGELOCK_E_INVALID_ARGUMENT;
        out.emplace_back(given[i]);
    }
    return EDGELOCK_OK;
}

int copy_deployment(const edgelock_options& given, deployment& out) {
    if (int rc = copy_urls(given.instances, given.instance_count, out.instances)) return rc;
    if (int rc = copy_urls(given.sentinels, given.sentinel_count, out.sentinels)) return rc;
    if (int rc = copy_urls(given.cluster, given.cluster_count, out.cluster)) return rc;
    if (given.master_db < 0 || given.master_db > UINT16_MAX) return EDGELOCK_E_INVALID_CONFIG;
    if (given.eviction < EDGELOCK_EVICTION_WARN || given.eviction > EDGELOCK_EVICTION_OFF) {
        return EDGELOCK_E_INVALID_CONFIG;
    }
    out.master_name = text_of(given.master_name);
    out.master_user = text_of(given.master_user);
    out.master_password = text_of(given.master_password);
    out.master_db = static_cast<std::uint16_t>(given.master_db);
    out.tls.ca_file = text_of(given.tls_ca_file);
    out.tls.ca_dir = text_of(given.tls_ca_dir);
    out.tls.cert_file = text_of(given.tls_cert_file);
    out.tls.key_file = text_of(given.tls_key_file);
    out.tls.server_name = text_of(given.tls_server_name);
    out.tls.insecure_skip_verification_for_tests_only =
        given.tls_insecure_skip_verification_for_tests_only != 0;
    out.connect_timeout_ms = given.connect_timeout_ms;
    out.command_timeout_ms = given.command_timeout_ms;
    out.reconnect_delay_min_ms = given.reconnect_delay_min_ms;
    out.reconnect_delay_max_ms = given.reconnect_delay_max_ms;
    out.restart_guard = given.restart_guard != 0;
    out.eviction = static_cast<session::eviction_check>(given.eviction);
    return EDGELOCK_OK;
}

void copy_histogram(const session::latency_histogram& from, edgelock_histogram& out) noexcept {
    static_assert(sizeof out.counts / sizeof out.counts[0] ==
                  std::tuple_size_v<decltype(from.counts)>);
    std::copy(from.counts.begin(), from.counts.end(), out.counts);
    out.count = from.count;
    out.sum_ms = from.sum_ms;
}

}  // namespace

int last_os_error() noexcept { return os_error_value; }

int to_c_code(const std::error_code& ec) noexcept {
    if (!ec) return EDGELOCK_OK;
    const int value = ec.value();
    if (ec.category() == error_category()) {
        if (value >= 1 && value <= errc_last) return -value;
    } else if (ec.category() == transport_category()) {
        if (value >= 1 && value <= transport_errc_last) return -(transport_offset + value);
    } else if (ec.category() == std::generic_category() ||
               ec.category() == std::system_category()) {
        os_error_value = value;
        return EDGELOCK_E_OS;
    }
    return EDGELOCK_E_UNKNOWN;
}

void default_options(edgelock_options& out) noexcept {
    const blocking::lock_options defaults;
    out.connect_timeout_ms = defaults.connect_timeout_ms;
    out.command_timeout_ms = defaults.command_timeout_ms;
    out.reconnect_delay_min_ms = defaults.reconnect_delay_min_ms;
    out.reconnect_delay_max_ms = defaults.reconnect_delay_max_ms;
    out.restart_guard = defaults.restart_guard ? 1 : 0;
    out.eviction = static_cast<int>(defaults.eviction);
    out.ttl_ms = defaults.ttl_ms;
    out.fencing = defaults.fencing ? 1 : 0;
    out.watchdog = defaults.watchdog ? 1 : 0;
    out.replicas_to_wait = defaults.replicas_to_wait;
    out.replica_wait_ms = defaults.replica_wait_ms;
    out.renew_interval_ms = defaults.renew_interval_ms;
    out.drift_ms = defaults.drift_ms;
    out.attempt_timeout_ms = defaults.attempt_timeout_ms;
    out.retry_delay_ms_min = defaults.retry_delay_ms_min;
    out.retry_delay_ms_max = defaults.retry_delay_ms_max;
    out.fair = defaults.fair ? 1 : 0;
    out.recheck_ms = defaults.recheck_ms;
    out.queue_entry_ttl_ms = defaults.queue_entry_ttl_ms;
    out.restart_guard_ms = defaults.restart_guard_ms;
    out.permits = defaults.permits;
}

int read_options(const edgelock_options* given, edgelock_options& out) noexcept {
    std::memset(&out, 0, sizeof out);
    default_options(out);
    const std::size_t size = given->struct_size;
    if (size < sizeof given->struct_size) return EDGELOCK_E_INVALID_CONFIG;
    // A newer caller's fields this library does not know: accepted only when they ask for
    // nothing (zero, as edgelock_options_init() leaves them).
    const auto* bytes = reinterpret_cast<const unsigned char*>(given);
    for (std::size_t i = sizeof(edgelock_options); i < size; ++i) {
        if (bytes[i] != 0) return EDGELOCK_E_INVALID_CONFIG;
    }
    std::memcpy(&out, given, std::min(size, sizeof out));
    out.struct_size = sizeof out;
    return EDGELOCK_OK;
}

int to_lock_options(const edgelock_options& given, blocking::lock_options& out) {
    if (int rc = copy_deployment(given, out)) return rc;
    if (given.replicas_to_wait < 0 || given.replicas_to_wait > UINT8_MAX) {
        return EDGELOCK_E_INVALID_CONFIG;
    }
    out.name = text_of(given.name);
    out.ttl_ms = given.ttl_ms;
    out.fencing = given.fencing != 0;
    out.watchdog = given.watchdog != 0;
    out.replicas_to_wait = static_cast<std::uint8_t>(given.replicas_to_wait);
    out.replica_wait_ms = given.replica_wait_ms;
    out.renew_interval_ms = given.renew_interval_ms;
    out.drift_ms = given.drift_ms;
    out.attempt_timeout_ms = given.attempt_timeout_ms;
    out.retry_delay_ms_min = given.retry_delay_ms_min;
    out.retry_delay_ms_max = given.retry_delay_ms_max;
    out.fair = given.fair != 0;
    out.recheck_ms = given.recheck_ms;
    out.queue_entry_ttl_ms = given.queue_entry_ttl_ms;
    out.restart_guard_ms = given.restart_guard_ms;
    // 0 (a caller that zeroed the struct itself) is the lock, as 1; the core checks the rest.
    if (given.permits < 0 || given.permits > UINT16_MAX) return EDGELOCK_E_INVALID_CONFIG;
    out.permits = static_cast<std::uint16_t>(given.permits == 0 ? 1 : given.permits);
    if (given.on_lost != nullptr) {
        auto* const call = given.on_lost;
        void* const user = given.on_lost_user;
        out.on_lost = [call, user](std::error_code ec) { call(to_c_code(ec), user); };
    }
    return EDGELOCK_OK;
}

void to_c_metrics(const session::lock_metrics& from, edgelock_metrics& out) noexcept {
    std::copy(from.acquires.begin(), from.acquires.end(), out.acquires);
    copy_histogram(from.acquire_latency, out.acquire_latency);
    copy_histogram(from.acquire_wait, out.acquire_wait);
    copy_histogram(from.handover_gap, out.handover_gap);
    out.renewals_ok = from.renewals_ok;
    out.renewals_late = from.renewals_late;
    out.renewal_failures = from.renewal_failures;
    std::copy(from.losses.begin(), from.losses.end(), out.losses);
    std::copy(from.releases.begin(), from.releases.end(), out.releases);
    out.connects = from.connects;
    out.reconnects = from.reconnects;
    out.failovers = from.failovers;
    out.redirects_moved = from.redirects_moved;
    out.redirects_ask = from.redirects_ask;
    out.requests_in_flight = from.requests_in_flight;
}

}  // namespace edgelock::capi
