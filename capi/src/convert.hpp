// SPDX-License-Identifier: Apache-2.0
// The C API's conversions between its plain C values and the C++ client's: error codes,
// options, metrics. Separate from the entry points so that tests (tests/capi) check each
// mapping against the C++ enumerations without a Redis, and without the shared library's
// export list in the way (they link the static library).
#pragma once

#include <system_error>

#include "edgelock.h"
#include "edgelock/blocking_lock.hpp"
#include "edgelock/session/lock_metrics.hpp"

namespace edgelock::capi {

// The C code of a C++ client's error: EDGELOCK_OK for none; errc and transport_errc by their
// fixed offsets; an errno value (generic or system category) as EDGELOCK_E_OS, keeping the
// value for edgelock_last_os_error() on this thread; EDGELOCK_E_UNKNOWN for anything else.
int to_c_code(const std::error_code& ec) noexcept;

// The errno value the latest EDGELOCK_E_OS of this thread carried.
int last_os_error() noexcept;

// The defaults of every field edgelock_options has, read from the C++ client's.
void default_options(edgelock_options& out) noexcept;

// The caller's options as this library's struct: given->struct_size bytes of them, the
// defaults for fields the caller does not know; EDGELOCK_E_INVALID_CONFIG for a struct_size
// below its own field, or fields beyond this library's that are not zero.
int read_options(const edgelock_options* given, edgelock_options& out) noexcept;

// The C++ options for the caller's C options, whose struct_size the caller set. Returns
// EDGELOCK_OK or EDGELOCK_E_INVALID_ARGUMENT / EDGELOCK_E_INVALID_CONFIG (see edgelock_open);
// allocates, so it may throw std::bad_alloc (the caller catches it).
int to_lock_options(const edgelock_options& given, blocking::lock_options& out);

// The C struct's copy of the counters, field by field.
void to_c_metrics(const session::lock_metrics& from, edgelock_metrics& out) noexcept;

}  // namespace edgelock::capi
