// SPDX-License-Identifier: Apache-2.0
// The README's asio example, built with the project so it cannot go stale: the README shows
// this file from its first #include on, and a test (tests/examples) checks that they match.
//
//   quickstart [redis://127.0.0.1:6379]
#include <cstdio>

#include "edgelock/async_client.hpp"

int main(int argc, char** argv) {
    asio::io_context io{1};
    edgelock::async::client client(io);
    edgelock::async::client_config config;
    config.instances = {argc > 1 ? argv[1] : "redis://127.0.0.1:6379"};
    if (client.open(config)) return 2;  // a malformed URL

    edgelock::lock_config daily;
    daily.name = "reports:daily";  // the Redis key
    daily.ttl_ms = 10'000;         // the lease; renewed every ttl/3 while held
    daily.fencing = true;
    edgelock::async::lock_handle lock;
    if (client.add_lock(daily, lock)) return 2;  // a name or ttl out of range

    client.async_acquire(
        lock, std::chrono::seconds(5), [&](std::error_code ec, std::int64_t fence) {
            if (ec) {  // busy, no_quorum, connection_refused, ...
                std::printf("not acquired: %s\n", ec.message().c_str());
                return client.close();
            }
            std::printf("holding reports:daily, fence token %lld\n", static_cast<long long>(fence));
            // ... the work; pass `fence` to the storage so it can refuse a stale holder ...
            client.async_release(lock, [&](std::error_code) { client.close(); });
        });
    io.run();  // returns once the client is closed
}
