// SPDX-License-Identifier: Apache-2.0
// lock_cycle's blocking section: the blocking client's and the C API's single-lock cycle, the
// client most programs reach edgelock through (every other language comes in over the C API).
#pragma once

#include <cstdint>
#include <string>

namespace edgelock::bench {

// Acquire + release in a loop on one Redis (`url`, listening on `port`), with
// edgelock::blocking::lock and with the C API, against raw hiredis sending the same commands,
// rounds alternating: cycles/s and p50/p99 of each, `ratio blocking/raw` and `ratio capi/raw`,
// and the heap allocations (operator new) per steady-state cycle of each.
void bench_blocking(int cycles, int rounds, const std::string& url, std::uint16_t port);

}  // namespace edgelock::bench
