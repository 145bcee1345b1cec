// SPDX-License-Identifier: Apache-2.0
// Private temporary directories for processes and generated files (not installed).
#pragma once

#include <string>

namespace edgelock::testing::detail {

// A new directory, mode 0700, under $TMPDIR (or /tmp) named edgelock-<label>-XXXXXX. Throws
// std::runtime_error on failure.
std::string make_temp_dir(const std::string& label);
// Removes `dir` and everything in it. Ignores "" and errors: destructors call it.
void remove_dir(const std::string& dir) noexcept;

}  // namespace edgelock::testing::detail
