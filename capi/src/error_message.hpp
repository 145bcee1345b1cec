// SPDX-License-Identifier: Apache-2.0
// The C API's words for a failure: the OS error texts edgelock_strerror() gives for
// EDGELOCK_E_OS, and the calling thread's last error message (edgelock_last_error_message()),
// which also says what a code alone cannot: which part of which URL is wrong, which TLS file
// could not be loaded.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "edgelock/deployment.hpp"

namespace edgelock::capi {

// Room for one message, its NUL included; a longer one is cut (a URL alone may take
// session::url_bytes_max bytes).
inline constexpr std::size_t error_message_bytes_max = 512;

// The text of errno value `value` as a sentence shows it ("connection refused"): static, never
// freed or changed; nullptr for a value the system has no text for.
const char* os_error_text(int value) noexcept;

// Makes `code` (a failure) the calling thread's last error, described by `message`, or by
// edgelock_strerror(code) when `message` is empty. Returns `code`.
int note_failure(int code, std::string_view message = {}) noexcept;

// The calling thread's last error message; "" before any failure on this thread.
const char* last_error_message() noexcept;

// Why a deployment with a URL that cannot be parsed is refused, the first such URL in the
// order instances, sentinels, cluster: 'bad instances[1] address "redis://***@db1:0": bad
// port' (credentials shown as ***), or a cluster seed naming a database; "" when every URL
// is well formed.
std::string address_problem(const deployment& where);

}  // namespace edgelock::capi
