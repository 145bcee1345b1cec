// SPDX-License-Identifier: Apache-2.0
// A worker process for the integration tests: mutual exclusion across processes, and a holder
// that the test can freeze with SIGSTOP.
//
//   redis_lock_worker increment <url> <lock name> <count> <locked 0|1>
//       `count` times: (acquire) GET counter, SET counter+1 (release). Prints "done".
//   redis_lock_worker holder <url> <lock name> <ttl ms> <resource>
//       Acquires with fencing, writes the resource fenced, prints "acquired <fence> <write>".
//       Then obeys stdin: "write" -> writes again with the same token (a holder that does not
//       know it was paused), waits up to 5 s for `lost`, prints
//       "write <accepted 0|1> lost <0|1> reason <reason> callback <0|1>"; "release" -> prints
//       "release <error message or ok>"; "quit" -> exits.
//   redis_lock_worker waiter <url> <lock name> <fair 0|1> <recheck ms> <entry ttl ms> <id>
//       Acquires (waiting up to 60 s), prints "acquired <id> <now_ms()>", appends <id> to the
//       list "order" while holding the lock, releases, prints "released".
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <iostream>
#include <string>
#include <thread>

#include "edgelock/blocking_lock.hpp"
#include "edgelock/session/address.hpp"
#include "edgelock/testing/redis_client.hpp"
#include "redis_test_util.hpp"

namespace {

using edgelock::redis_tests::fenced_write;
using edgelock::redis_tests::options_for;
using edgelock::testing::redis_client;

std::uint16_t port_of(const std::string& url) {
    edgelock::session::node_address address;
    // Port 0 for a URL that does not parse: the client's connection then fails, loudly.
    if (edgelock::session::parse_node_url(url, address).code != edgelock::errc::ok) return 0;
    return address.port;
}

int increment(const std::string& url, const std::string& name, int count, bool locked) {
    redis_client client(port_of(url));
    edgelock::blocking::lock lock;
    auto options = options_for(name, {url}, 2000);
    options.retry_delay_ms_min = 1;
    options.retry_delay_ms_max = 10;
    if (const auto ec = lock.open(options)) {
        std::cout << "open failed " << ec.message() << std::endl;
        return 2;
    }
    for (int i = 0; i < count; ++i) {
        if (locked) {
            if (const auto ec = lock.acquire(std::chrono::seconds(60))) {
                std::cout << "acquire failed " << ec.message() << std::endl;
                return 3;
            }
        }
        const std::string value = client.get("counter");
        const long long next = (value.empty() ? 0 : std::stoll(value)) + 1;
        std::this_thread::sleep_for(std::chrono::microseconds(200));  // widen the race window
        client.set("counter", std::to_string(next));
        if (locked) {
            if (const auto ec = lock.release()) {
                std::cout << "release failed " << ec.message() << std::endl;
                return 4;
            }
        }
    }
    std::cout << "done" << std::endl;
    return 0;
}

int holder(const std::string& url, const std::string& name, std::int64_t ttl_ms,
           const std::string& resource) {
    redis_client client(port_of(url));
    std::atomic<bool> callback_seen{false};
    edgelock::blocking::lock lock;
    auto options = options_for(name, {url}, ttl_ms);
    options.fencing = true;
    options.on_lost = [&callback_seen](std::error_code) { callback_seen = true; };
    if (const auto ec = lock.open(options)) {
        std::cout << "open failed " << ec.message() << std::endl;
        return 2;
    }
    edgelock::blocking::hold hold;
    if (const auto ec = lock.acquire(std::chrono::seconds(5), &hold)) {
        std::cout << "acquire failed " << ec.message() << std::endl;
        return 3;
    }
    const long long first = fenced_write(client, resource, hold.fence, "holder");
    std::cout << "acquired " << hold.fence << " " << first << std::endl;

    std::string command;
    while (std::getline(std::cin, command)) {
        if (command == "write") {
            const long long accepted =
                fenced_write(client, resource, hold.fence, "holder-after-pause");
            const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
            while ((!lock.lost() || !callback_seen) && std::chrono::steady_clock::now() < until) {
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
            }
            const std::error_code reason = lock.lost_reason();
            std::cout << "write " << accepted << " lost " << lock.lost() << " reason "
                      << (reason ? reason.message() : "none") << " callback "
                      << callback_seen.load() << std::endl;
        } else if (command == "release") {
            const std::error_code ec = lock.release();
            std::cout << "release " << (ec ? ec.message() : "ok") << std::endl;
        } else if (command == "quit") {
            break;
        }
    }
    return 0;
}

int waiter(const std::string& url, const std::string& name, bool fair, std::int64_t recheck_ms,
           std::int64_t entry_ttl_ms, const std::string& id) {
    redis_client client(port_of(url));
    edgelock::blocking::lock lock;
    auto options = options_for(name, {url}, 5000);
    options.fair = fair;
    options.recheck_ms = recheck_ms;
    options.queue_entry_ttl_ms = entry_ttl_ms;
    if (const auto ec = lock.open(options)) {
        std::cout << "open failed " << ec.message() << std::endl;
        return 2;
    }
    if (const auto ec = lock.acquire(std::chrono::seconds(60))) {
        std::cout << "acquire failed " << ec.message() << std::endl;
        return 3;
    }
    std::cout << "acquired " << id << " " << edgelock::blocking::now_ms() << std::endl;
    client.command({"RPUSH", "order", id});
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (const auto ec = lock.release()) {
        std::cout << "release failed " << ec.message() << std::endl;
        return 4;
    }
    std::cout << "released" << std::endl;
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "increment" && argc == 6) {
        return increment(argv[2], argv[3], std::stoi(argv[4]), std::string(argv[5]) == "1");
    }
    if (mode == "holder" && argc == 6)
        return holder(argv[2], argv[3], std::stoll(argv[4]), argv[5]);
    if (mode == "waiter" && argc == 8) {
        return waiter(argv[2], argv[3], std::string(argv[4]) == "1", std::stoll(argv[5]),
                      std::stoll(argv[6]), argv[7]);
    }
    std::cerr << "usage: redis_lock_worker increment|holder|waiter ..." << std::endl;
    return 64;
}
