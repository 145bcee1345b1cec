// SPDX-License-Identifier: Apache-2.0
// What both consumer programs report with: each failed expectation prints one line and is
// counted; the program's exit status is whether any failed.
#pragma once

#include <cstdio>
#include <system_error>

namespace consumer {

inline int failures = 0;

inline void expect(bool held, const char* what, std::error_code ec = {}) {
    if (!held) {
        std::printf("FAIL %s (%s)\n", what, ec.message().c_str());
        ++failures;
    }
}

}  // namespace consumer
