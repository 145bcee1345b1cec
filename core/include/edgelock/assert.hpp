// SPDX-License-Identifier: Apache-2.0
// edgelock: invariant assertions that stay on in release builds.
//
// EDGELOCK_ASSERT guards internal invariants only: a failure means edgelock itself is broken,
// never that the caller passed bad input (bad input gets an errc). On failure the installed
// handler runs; the default aborts. The handler is chosen by the program, not the core, so the
// core itself prints nothing: a transport or test may install one that logs first.
#pragma once

namespace edgelock {

using assert_handler = void (*)(const char* expression, const char* file, int line);

// Installs `handler` (null restores the default, which calls std::abort) and returns the
// previous one. Meant to be called once at start-up, before any lock exists.
assert_handler set_assert_handler(assert_handler handler) noexcept;

namespace detail {
[[noreturn]] void assert_failed(const char* expression, const char* file, int line) noexcept;
}  // namespace detail

}  // namespace edgelock

#define EDGELOCK_ASSERT(condition)                                             \
    do {                                                                       \
        if (!(condition)) {                                                    \
            ::edgelock::detail::assert_failed(#condition, __FILE__, __LINE__); \
        }                                                                      \
    } while (false)
