// SPDX-License-Identifier: Apache-2.0
// edgelock CLI: the --help texts. docs/CLI.md says the same at more length.
#pragma once

#include <string_view>

namespace edgelock::cli {

// The help for `topic`: "" (the overview), "run", "status", "release" or "sim".
std::string_view help_text(std::string_view topic);

// The exit-code table, as printed at the end of the overview and of `run --help`.
std::string_view exit_code_table();

}  // namespace edgelock::cli
