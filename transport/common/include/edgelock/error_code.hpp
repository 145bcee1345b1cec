// edgelock: std::error_code for the core's errc, for the transports' completion handlers.
//
// `std::error_code ec = edgelock::errc::busy;` works (make_error_code is found by ADL), and
// `ec == edgelock::errc::busy` compares as expected. The category's name is "edgelock".
#pragma once

#include <system_error>

#include "edgelock/errc.hpp"

namespace edgelock {

const std::error_category& error_category() noexcept;

inline std::error_code make_error_code(errc code) noexcept {
    return {static_cast<int>(code), error_category()};
}

}  // namespace edgelock

template <>
struct std::is_error_code_enum<edgelock::errc> : std::true_type {};
