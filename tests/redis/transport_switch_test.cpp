// SPDX-License-Identifier: Apache-2.0
// A master the sentinels replaced while it still answers the client: both clients (the async
// client and the blocking one, so the C API too) leave it when a sentinel announces
// +switch-master, and renew the hold on the promoted replica, against real redis-server and
// redis-sentinel processes on loopback.
//
// The fault: the master stops answering the sentinels (it starts asking for a password they do
// not have, and their connections are killed), not the client, whose connection logged in
// before. The sentinels promote the replica and cannot reconfigure the old master, which goes
// on taking the client's renewals. A client that only goes back to the sentinels when its
// master fails it never learns of the new master: its renewals land on the old one, its key
// on the new master runs out, and anyone may take the lock there while it believes it holds.
// Seen failing on the blocking client before it watched +switch-master: the key gone from the
// new master two leases after the failover, the hold still believed.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <system_error>

#include "../asio/asio_test_util.hpp"
#include "edgelock/async_client.hpp"
#include "edgelock/blocking_lock.hpp"
#include "edgelock/testing/redis_client.hpp"
#include "edgelock/testing/redis_process.hpp"
#include "redis_test_util.hpp"

namespace {

using namespace std::chrono_literals;
using edgelock::testing::eventually;
using edgelock::testing::redis_client;
using edgelock::testing::sentinel_topology;

constexpr std::int64_t lease_ms = 3000;
constexpr const char* lock_name = "switch";

// One client holding one lock of a Sentinel deployment. Calls come from the test's thread.
class switch_holder {
public:
    virtual ~switch_holder() = default;
    virtual std::error_code open(sentinel_topology& topology) = 0;
    virtual std::error_code acquire() = 0;
    virtual bool held() = 0;
    // Runs `fault` on a thread of its own while the client works; returns when it is done.
    void run_while(const std::function<void()>& fault) {
        edgelock::redis_tests::run_beside(
            fault, [this](const std::function<bool()>& done, std::chrono::milliseconds timeout) {
                return wait_until(done, timeout);
            });
    }
    virtual bool wait_until(const std::function<bool()>& done,
                            std::chrono::milliseconds timeout) = 0;
};

class async_holder final : public switch_holder {
public:
    std::error_code open(sentinel_topology& topology) override {
        edgelock::async::client_config config = edgelock::asio_tests::config_for({});
        config.sentinels = topology.sentinel_urls();
        config.master_name = sentinel_topology::master_name;
        if (const std::error_code opened = client_.open(config)) return opened;
        return client_.add_lock(edgelock::asio_tests::lock_for(lock_name, lease_ms), handle_);
    }
    std::error_code acquire() override {
        return edgelock::asio_tests::acquire(client_, handle_, 5s).ec;
    }
    bool held() override { return client_.held(handle_); }
    bool wait_until(const std::function<bool()>& done, std::chrono::milliseconds timeout) override {
        return edgelock::asio_tests::run_until(io_, done, timeout);
    }

private:
    asio::io_context io_{1};
    edgelock::async::lock_handle handle_{};
    edgelock::async::client client_{io_};
};

class blocking_holder final : public switch_holder {
public:
    std::error_code open(sentinel_topology& topology) override {
        edgelock::blocking::lock_options options;
        options.name = lock_name;
        options.sentinels = topology.sentinel_urls();
        options.master_name = sentinel_topology::master_name;
        options.ttl_ms = lease_ms;
        return lock_.open(options);
    }
    std::error_code acquire() override { return lock_.try_acquire(); }
    bool held() override { return lock_.held(); }
    // The helper thread renews meanwhile: only the test's thread waits.
    bool wait_until(const std::function<bool()>& done, std::chrono::milliseconds timeout) override {
        return eventually(done, timeout);
    }

private:
    edgelock::blocking::lock lock_;
};

// The master keeps answering the client, whose connection logged in before, and stops
// answering the sentinels: it asks for a password from now on, and their connections (named
// sentinel-...) are killed, so every one they make again is refused.
void cut_off_from_the_sentinels(std::uint16_t master) {
    redis_client admin(master);
    admin.command({"CONFIG", "SET", "requirepass", "not-the-sentinels"});
    const std::string clients = admin.command({"CLIENT", "LIST"}).text;
    std::size_t at = 0;
    while ((at = clients.find("id=", at)) != std::string::npos) {
        const std::size_t end = clients.find('\n', at);
        const std::string line = clients.substr(at, end - at);
        if (line.find(" name=sentinel-") != std::string::npos) {
            const std::string id = line.substr(3, line.find(' ') - 3);
            admin.command({"CLIENT", "KILL", "ID", id});
        }
        at = end;
    }
}

struct switch_observed {
    std::error_code acquired;
    bool held_two_leases_after = false;
    bool key_on_new_master = false;  // renewed there: it would have expired otherwise
    bool taken_on_new_master = false;
};

template <typename Holder>
switch_observed run_switch() {
    switch_observed seen;
    sentinel_topology topology;
    const std::uint16_t old_master = topology.master_port();
    Holder holder;
    if (const std::error_code opened = holder.open(topology)) {
        ADD_FAILURE() << "open: " << opened.message();
        return seen;
    }
    seen.acquired = holder.acquire();
    if (seen.acquired) return seen;
    std::uint16_t new_master = 0;
    holder.run_while([&] {
        redis_client(old_master).command({"WAIT", "1", "2000"});  // the replica has the key
        cut_off_from_the_sentinels(old_master);
        new_master = topology.wait_for_failover(old_master);
    });
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(2 * lease_ms);
    holder.wait_until([&] { return std::chrono::steady_clock::now() >= until; }, 20s);
    seen.held_two_leases_after = holder.held();
    redis_client promoted(new_master);
    seen.key_on_new_master = promoted.exists(lock_name);
    const auto taken = promoted.command({"SET", lock_name, "someone-else", "NX", "PX", "1000"});
    seen.taken_on_new_master = taken.text == "OK";
    return seen;
}

void expect_kept_on_the_new_master(const char* client, const switch_observed& seen) {
    SCOPED_TRACE(client);
    EXPECT_FALSE(seen.acquired) << seen.acquired.message();
    EXPECT_TRUE(seen.held_two_leases_after);
    EXPECT_TRUE(seen.key_on_new_master) << "the renewals followed the announced master";
    EXPECT_FALSE(seen.taken_on_new_master) << "nobody else can take the lock it believes held";
}

TEST(transport_switch, a_master_the_sentinels_replaced_is_left_while_it_still_answers) {
    const switch_observed async_seen = run_switch<async_holder>();
    const switch_observed blocking_seen = run_switch<blocking_holder>();
    expect_kept_on_the_new_master("async", async_seen);
    expect_kept_on_the_new_master("blocking", blocking_seen);
}

}  // namespace
