// SPDX-License-Identifier: Apache-2.0
// The C entry points: each checks its pointers, calls the C++ client (whose calls are
// noexcept) and maps its code. edgelock_open() copies the options into C++ strings and
// vectors: the one place here an exception (std::bad_alloc) can arise, and it is caught
// there. The C++ client's own calls allocate little (acquire() fills a hold's 32-character
// token string) and, being noexcept, end the process if the heap is exhausted there.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <new>

#include "convert.hpp"
#include "edgelock.h"
#include "error_message.hpp"
#include "edgelock/error_code.hpp"
#include "edgelock/blocking_lock.hpp"
#include "edgelock/session/lock_metrics.hpp"

#ifndef EDGELOCK_PROJECT_VERSION
#error "the build defines EDGELOCK_PROJECT_VERSION (capi/CMakeLists.txt)"
#endif

struct edgelock_lock {
    edgelock::blocking::lock lock;
};

namespace {

using edgelock::capi::to_c_code;

// Every entry point's code passes here on its way out: a failure becomes the thread's last
// error message (edgelock_last_error_message()), a success leaves it as it was.
int reported(int rc) noexcept { return rc == EDGELOCK_OK ? rc : edgelock::capi::note_failure(rc); }

#define EDGELOCK_STRINGIFY2(x) #x
#define EDGELOCK_STRINGIFY(x) EDGELOCK_STRINGIFY2(x)
#define EDGELOCK_HEADER_VERSION                \
    EDGELOCK_STRINGIFY(EDGELOCK_VERSION_MAJOR) \
    "." EDGELOCK_STRINGIFY(EDGELOCK_VERSION_MINOR) "." EDGELOCK_STRINGIFY(EDGELOCK_VERSION_PATCH)
constexpr const char header_version[] = EDGELOCK_HEADER_VERSION;

constexpr bool same_text(const char* a, const char* b) {
    return *a == *b && (*a == '\0' || same_text(a + 1, b + 1));
}
// The header's version macros are written by hand: the build's project() version checks them.
static_assert(same_text(header_version, EDGELOCK_PROJECT_VERSION),
              "edgelock.h's EDGELOCK_VERSION_* differ from CMakeLists.txt's project() version");

void to_c_hold(const edgelock::blocking::hold& from, edgelock_hold& out) noexcept {
    out.fence = from.fence;
    out.valid_until_ms = from.valid_until_ms;
    const std::size_t n = std::min(from.token.size(), sizeof out.token - 1);
    std::memcpy(out.token, from.token.data(), n);
    out.token[n] = '\0';
}

// The setting behind open()'s refusal, where the code alone cannot name it; "" otherwise, or
// when there is no memory left to say it.
std::string refusal_detail(int rc, const edgelock::blocking::lock_options& options,
                           const edgelock::blocking::lock& lock) noexcept {
    try {
        if (rc == EDGELOCK_E_INVALID_CONFIG) return edgelock::capi::address_problem(options);
        if (rc == EDGELOCK_E_TLS_FILES) return edgelock::describe(lock.tls_error());
    } catch (const std::bad_alloc&) {
        return {};
    }
    return {};
}

// Everything open() allocates: the lock object and the C++ options' strings.
int open_lock(const edgelock_options& given, edgelock_lock*& made) {
    edgelock::blocking::lock_options options;
    if (int rc = edgelock::capi::to_lock_options(given, options)) return reported(rc);
    made = new edgelock_lock;
    if (int rc = to_c_code(made->lock.open(options))) {
        const std::string detail = refusal_detail(rc, options, made->lock);
        delete made;
        made = nullptr;
        return edgelock::capi::note_failure(rc, detail);
    }
    return EDGELOCK_OK;
}

}  // namespace

extern "C" {

const char* edgelock_strerror(int code) noexcept {
    constexpr int transport_offset = 100;
    if (code == EDGELOCK_OK) return "ok";
    if (code <= EDGELOCK_E_INVALID_NAME && code >= EDGELOCK_E_PERMITS_MISMATCH) {
        return edgelock::to_string(static_cast<edgelock::errc>(-code));
    }
    if (code <= EDGELOCK_E_UNKNOWN_HOST && code >= EDGELOCK_E_TOO_MANY_MASTERS) {
        return edgelock::describe(static_cast<edgelock::transport_errc>(-code - transport_offset));
    }
    switch (code) {
        case EDGELOCK_E_OS: {
            // The code alone says nothing; the errno value this thread got says what failed.
            const char* text = edgelock::capi::os_error_text(edgelock::capi::last_os_error());
            return text != nullptr ? text : "operating system error (see edgelock_last_os_error)";
        }
        case EDGELOCK_E_INVALID_ARGUMENT: return "invalid argument (a NULL pointer)";
        case EDGELOCK_E_UNKNOWN: return "unknown error";
        default: return "unknown error";
    }
}

int edgelock_last_os_error(void) noexcept { return edgelock::capi::last_os_error(); }

const char* edgelock_last_error_message(void) noexcept {
    return edgelock::capi::last_error_message();
}

const char* edgelock_version(void) noexcept { return EDGELOCK_PROJECT_VERSION; }

int64_t edgelock_now_ms(void) noexcept { return edgelock::blocking::now_ms(); }

void edgelock_options_init(edgelock_options* options, size_t struct_size) noexcept {
    if (options == nullptr || struct_size < sizeof options->struct_size) return;
    std::memset(options, 0, struct_size);
    edgelock_options known;
    std::memset(&known, 0, sizeof known);
    edgelock::capi::default_options(known);
    std::memcpy(options, &known, std::min(struct_size, sizeof known));
    options->struct_size = struct_size;
}

int edgelock_open(const edgelock_options* options, edgelock_lock** out) noexcept {
    if (out == nullptr) return reported(EDGELOCK_E_INVALID_ARGUMENT);
    *out = nullptr;
    if (options == nullptr) return reported(EDGELOCK_E_INVALID_ARGUMENT);
    edgelock_options given;
    if (int rc = edgelock::capi::read_options(options, given)) return reported(rc);
    try {
        return open_lock(given, *out);  // it notes its own failures, with their detail
    } catch (const std::bad_alloc&) {
        return reported(EDGELOCK_E_OUT_OF_MEMORY);
    }
}

void edgelock_close(edgelock_lock* lock) noexcept { delete lock; }

int edgelock_try_acquire(edgelock_lock* lock, edgelock_hold* out) noexcept {
    return edgelock_acquire(lock, 0, out);
}

int edgelock_acquire(edgelock_lock* lock, int64_t wait_ms, edgelock_hold* out) noexcept {
    if (lock == nullptr) return reported(EDGELOCK_E_INVALID_ARGUMENT);
    // One per thread, reused: its token's storage outlives the call, so an acquire allocates
    // only on a thread's first (the calls of one lock may come from several threads at once).
    thread_local edgelock::blocking::hold hold;
    // The C++ client takes the wait as it is: out-of-range values are its invalid_wait.
    const int rc = to_c_code(lock->lock.acquire(std::chrono::milliseconds(wait_ms), &hold));
    if (rc == EDGELOCK_OK && out != nullptr) to_c_hold(hold, *out);
    return reported(rc);
}

void edgelock_cancel(edgelock_lock* lock) noexcept {
    if (lock != nullptr) lock->lock.cancel();
}

int edgelock_release(edgelock_lock* lock) noexcept {
    if (lock == nullptr) return reported(EDGELOCK_E_INVALID_ARGUMENT);
    return reported(to_c_code(lock->lock.release()));
}

int edgelock_held(const edgelock_lock* lock) noexcept {
    return lock != nullptr && lock->lock.held() ? 1 : 0;
}

int edgelock_lost(const edgelock_lock* lock) noexcept {
    return lock != nullptr && lock->lock.lost() ? 1 : 0;
}

int64_t edgelock_fence(const edgelock_lock* lock) noexcept {
    return lock == nullptr ? 0 : lock->lock.fence();
}

int64_t edgelock_latency_bound_ms(size_t i) noexcept {
    const auto& bounds = edgelock::session::latency_bounds_ms;
    return i < bounds.size() ? bounds[i] : -1;
}

const char* edgelock_acquire_outcome_name(size_t outcome) noexcept {
    if (outcome >= edgelock::session::acquire_outcome_count) return "";
    return edgelock::session::to_string(static_cast<edgelock::session::acquire_outcome>(outcome));
}

const char* edgelock_loss_cause_name(size_t cause) noexcept {
    if (cause >= edgelock::session::loss_cause_count) return "";
    return edgelock::session::to_string(static_cast<edgelock::session::loss_cause>(cause));
}

const char* edgelock_release_outcome_name(size_t outcome) noexcept {
    if (outcome >= edgelock::session::release_outcome_count) return "";
    return edgelock::session::to_string(static_cast<edgelock::session::release_outcome>(outcome));
}

int edgelock_metrics_snapshot(const edgelock_lock* lock, edgelock_metrics* out,
                              size_t out_bytes) noexcept {
    if (lock == nullptr || out == nullptr) return reported(EDGELOCK_E_INVALID_ARGUMENT);
    edgelock_metrics known;
    std::memset(&known, 0, sizeof known);
    edgelock::capi::to_c_metrics(lock->lock.metrics(), known);
    std::memset(out, 0, out_bytes);
    std::memcpy(out, &known, std::min(out_bytes, sizeof known));
    return EDGELOCK_OK;
}

}  // extern "C"
