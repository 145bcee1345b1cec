// SPDX-License-Identifier: Apache-2.0
// The blocking client from the installed package (built with CMake or with pkg-config),
// against a real Redis:
//
//   blocking redis://127.0.0.1:PORT
//
// A takes the lock, B finds it busy, A releases, B takes it with a higher fence token.
// Prints one line and exits 0 when all of that held, 1 otherwise.
#include <chrono>
#include <cstdio>
#include <system_error>

#include "check.hpp"
#include "edgelock/error_code.hpp"
#include "edgelock/blocking_lock.hpp"

using consumer::expect;
using consumer::failures;

int main(int argc, char** argv) {
    if (argc != 2) {
        std::printf("usage: blocking redis://HOST:PORT\n");
        return 2;
    }
    edgelock::blocking::lock_options options;
    options.name = "package-test:blocking";
    options.instances = {argv[1]};
    options.ttl_ms = 5'000;
    options.fencing = true;

    edgelock::blocking::lock a;
    edgelock::blocking::lock b;
    std::error_code ec = a.open(options);
    expect(!ec, "open A", ec);
    ec = b.open(options);
    expect(!ec, "open B", ec);

    edgelock::blocking::hold first;
    ec = a.acquire(std::chrono::seconds(2), &first);
    expect(!ec, "A acquires", ec);
    ec = b.try_acquire();
    expect(ec == edgelock::errc::busy, "B finds the lock busy while A holds it", ec);
    ec = a.release();
    expect(!ec, "A releases", ec);

    edgelock::blocking::hold second;
    ec = b.acquire(std::chrono::seconds(2), &second);
    expect(!ec, "B acquires after A's release", ec);
    expect(second.fence > first.fence, "B's fence token is above A's");
    ec = b.release();
    expect(!ec, "B releases", ec);

    std::printf("blocking client: %s (fence tokens %lld then %lld)\n",
                failures == 0 ? "ok" : "FAILED", static_cast<long long>(first.fence),
                static_cast<long long>(second.fence));
    return failures == 0 ? 0 : 1;
}
