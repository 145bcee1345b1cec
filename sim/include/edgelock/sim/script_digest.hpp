// SPDX-License-Identifier: Apache-2.0
// The digest the simulated Redis gives a script (SCRIPT LOAD's answer, EVALSHA's key): SHA-1
// of its text in lowercase hex, computed here from FIPS 180-4 and shared with nothing the
// clients run (they carry their scripts' digests from core's constexpr SHA-1, scripts.hpp):
// a client whose digest is wrong must meet NOSCRIPT, as from a real server, not a model that
// agrees because it is the same function. The conformance test holds the model's SCRIPT LOAD
// answers to a real server's.
#pragma once

#include <array>
#include <string_view>

namespace edgelock::sim {

// The 40 lowercase hex digits of SHA-1(text).
std::array<char, 40> server_script_digest(std::string_view text) noexcept;

}  // namespace edgelock::sim
