// SPDX-License-Identifier: Apache-2.0
// The async client from the installed package (built with CMake or with pkg-config), against
// a real Redis:
//
//   asio redis://127.0.0.1:PORT
//
// A takes the lock, B finds it busy, A releases, B takes it with a higher fence token.
// Prints one line and exits 0 when all of that held, 1 otherwise.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <system_error>

#include "edgelock/async_client.hpp"
#include "check.hpp"
#include "edgelock/error_code.hpp"

using consumer::expect;
using consumer::failures;

int main(int argc, char** argv) {
    if (argc != 2) {
        std::printf("usage: asio redis://HOST:PORT\n");
        return 2;
    }
    using std::chrono::seconds;
    asio::io_context io{1};
    edgelock::async::client client(io);
    edgelock::async::client_config config;
    config.instances = {argv[1]};
    std::error_code ec = client.open(config);
    expect(!ec, "open", ec);

    edgelock::lock_config shared;
    shared.name = "package-test:asio";
    shared.ttl_ms = 5'000;
    shared.fencing = true;
    edgelock::async::lock_handle a;
    edgelock::async::lock_handle b;
    expect(!client.add_lock(shared, a), "add lock A");
    expect(!client.add_lock(shared, b), "add lock B");

    std::int64_t first = 0;
    std::int64_t second = 0;
    client.async_acquire(a, seconds(2), [&](std::error_code acquired, std::int64_t fence) {
        expect(!acquired, "A acquires", acquired);
        first = fence;
        client.async_acquire(b, seconds(0), [&](std::error_code busy, std::int64_t) {
            expect(busy == edgelock::errc::busy, "B finds the lock busy while A holds it", busy);
            client.async_release(a, [&](std::error_code released) {
                expect(!released, "A releases", released);
                client.async_acquire(b, seconds(2), [&](std::error_code taken, std::int64_t fence) {
                    expect(!taken, "B acquires after A's release", taken);
                    second = fence;
                    client.async_release(b, [&](std::error_code done) {
                        expect(!done, "B releases", done);
                        client.close();
                    });
                });
            });
        });
    });
    io.run();

    expect(second > first, "B's fence token is above A's");
    std::printf("async client: %s (fence tokens %lld then %lld)\n", failures == 0 ? "ok" : "FAILED",
                static_cast<long long>(first), static_cast<long long>(second));
    return failures == 0 ? 0 : 1;
}
