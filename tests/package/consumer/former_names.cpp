// SPDX-License-Identifier: Apache-2.0
// The clients' former names, kept for one release, from the installed package: the headers
// edgelock/hiredis_lock.hpp, edgelock/hiredis_commands.hpp and edgelock/asio_client.hpp, the
// namespace edgelock::hiredis, and (in the build files) the targets edgelock::hiredis and
// edgelock::asio and the pkg-config modules edgelock-hiredis and edgelock-asio.
//
//   former_names redis://HOST:PORT
//
// Takes and releases a lock through the former names. Prints one line and exits 0 when that
// held, 1 otherwise.
#include <chrono>
#include <cstdio>
#include <system_error>
#include <type_traits>

#include "check.hpp"
#include "edgelock/asio_client.hpp"
#include "edgelock/hiredis_commands.hpp"
#include "edgelock/hiredis_lock.hpp"

static_assert(std::is_same_v<edgelock::hiredis::lock, edgelock::blocking::lock>);
static_assert(std::is_same_v<edgelock::hiredis::command_reply, edgelock::blocking::command_reply>);
static_assert(std::is_class_v<edgelock::async::client>);

using consumer::expect;
using consumer::failures;

int main(int argc, char** argv) {
    if (argc != 2) {
        std::printf("usage: former_names redis://HOST:PORT\n");
        return 2;
    }
    edgelock::hiredis::lock_options options;
    options.name = "package-test:former-names";
    options.instances = {argv[1]};
    options.ttl_ms = 5'000;
    edgelock::hiredis::lock lock;
    std::error_code ec = lock.open(options);
    expect(!ec, "open", ec);
    ec = lock.acquire(std::chrono::seconds(2));
    expect(!ec, "acquire", ec);
    ec = lock.release();
    expect(!ec, "release", ec);
    std::printf("former names: %s\n", failures == 0 ? "ok" : "FAILED");
    return failures == 0 ? 0 : 1;
}
