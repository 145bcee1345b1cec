// SPDX-License-Identifier: Apache-2.0
// edgelock: std::error_code for the core's errc and the transports' transport_errc, and the
// one mapping between the session's `failure` values and std::error_code.
//
// `std::error_code ec = edgelock::errc::busy;` works (make_error_code is found by ADL), and
// `ec == edgelock::errc::busy` compares as expected. The categories' names are "edgelock"
// and "edgelock.transport". Operating-system errors are errno values in
// std::generic_category(), so `ec == std::errc::connection_refused` holds for them.
#pragma once

#include <system_error>

#include "edgelock/errc.hpp"
#include "edgelock/session/transport_errc.hpp"

namespace edgelock {

const std::error_category& error_category() noexcept;
const std::error_category& transport_category() noexcept;

[[nodiscard]] inline std::error_code make_error_code(errc code) noexcept {
    return {static_cast<int>(code), error_category()};
}

[[nodiscard]] inline std::error_code make_error_code(transport_errc code) noexcept {
    return {static_cast<int>(code), transport_category()};
}

// The session's failure as the transports hand it out; empty for none.
[[nodiscard]] std::error_code to_error_code(const failure& f) noexcept;

// A transport's error as the session keeps it: edgelock's own codes as they are; errno
// values (generic or system category, and Asio's socket errors) as system failures; end of
// stream as transport_errc::connection_closed; a failed name lookup as unknown_host;
// anything else as errc::io_error.
failure to_failure(const std::error_code& ec) noexcept;

}  // namespace edgelock

template <>
struct std::is_error_code_enum<edgelock::errc> : std::true_type {};
template <>
struct std::is_error_code_enum<edgelock::transport_errc> : std::true_type {};
