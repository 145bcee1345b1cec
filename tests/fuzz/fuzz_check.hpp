// SPDX-License-Identifier: Apache-2.0
// edgelock fuzz targets: the one way they report a broken property.
#pragma once

#include <cstdio>
#include <cstdlib>

// Prints what broke, on one line, and aborts: libFuzzer saves the input as a crash.
#define EDGELOCK_FUZZ_CHECK(condition, what)                                                   \
    do {                                                                                       \
        if (!(condition)) {                                                                    \
            std::fprintf(stderr, "fuzz check failed: %s (%s:%d)\n", what, __FILE__, __LINE__); \
            std::abort();                                                                      \
        }                                                                                      \
    } while (false)
