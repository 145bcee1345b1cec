// SPDX-License-Identifier: Apache-2.0
// The blocking client over TLS (rediss://) against real TLS-only redis-server and
// redis-sentinel processes: a lock held, renewed by the helper thread and released; mutual
// TLS; a Sentinel deployment whose sentinels and servers speak only TLS, followed through a
// failover; records without data (TLS 1.3 key updates, session tickets) sent by the server
// while connections are idle, through a TLS front for a plain server. The failures are rows
// of transport_table_test.cpp, run through both clients.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "edgelock/blocking_lock.hpp"
#include "edgelock/testing/redis_client.hpp"
#include "edgelock/testing/redis_process.hpp"
#include "edgelock/testing/tls_front.hpp"
#include "edgelock/testing/tls_material.hpp"
#include "redis_test_util.hpp"

namespace {

using namespace std::chrono_literals;
using edgelock::redis_tests::options_for;
using edgelock::testing::client_tls;
using edgelock::testing::eventually;
using edgelock::testing::redis_client;
using edgelock::testing::redis_server;
using edgelock::testing::sentinel_topology;
using edgelock::testing::tls_front;
using edgelock::testing::tls_material;
using edgelock::testing::tls_setup;

edgelock::blocking::lock_options verified_by(const tls_material& material, const std::string& name,
                                             std::vector<std::string> urls,
                                             std::int64_t ttl_ms = 1000) {
    auto options = options_for(name, std::move(urls), ttl_ms);
    options.tls.ca_file = material.ca_file();
    return options;
}

// The TTL of tests whose first attempt makes the TLS connection: the attempt (a tenth of it)
// must cover the handshake, which takes about 100 ms on an emulated ARM CPU (qemu-user).
constexpr std::int64_t handshake_ttl_ms = 10'000;

TEST(tls, a_lock_is_held_renewed_and_released_over_tls) {
    tls_material material;
    redis_server server(material);
    auto options = verified_by(material, "tls:job", {server.url()}, 600);
    options.fencing = true;
    std::atomic<int> renewals{0};
    options.on_event = [&](const edgelock::blocking::lock_event& e) {
        if (e.kind == edgelock::blocking::lock_event_kind::renewed) ++renewals;
    };
    edgelock::blocking::lock lock;
    ASSERT_FALSE(lock.open(options));
    edgelock::blocking::hold first;
    ASSERT_FALSE(lock.acquire(1s, &first));
    EXPECT_GT(lock.fence(), 0);
    redis_client admin(server.port(), client_tls::with_client_cert(material));
    EXPECT_TRUE(admin.exists("tls:job"));
    // Only the helper's renewals keep it past its first lease: three of them, and then the
    // first lease long over.
    const std::int64_t first_lease_over_ms = first.valid_until_ms + options.ttl_ms;
    EXPECT_TRUE(eventually(
        [&] { return renewals >= 3 && edgelock::blocking::now_ms() > first_lease_over_ms; }, 5s))
        << renewals << " renewals";
    EXPECT_TRUE(lock.held());
    EXPECT_FALSE(lock.lost());
    EXPECT_GT(admin.pttl("tls:job"), 0);
    EXPECT_FALSE(lock.release());
    EXPECT_FALSE(admin.exists("tls:job"));
    EXPECT_FALSE(lock.instance_error(0)) << lock.instance_error(0).message();
}

// Fair waiting over TLS: the waiter's subscriber connection is made with the same TLS settings,
// and the release wakes it (its own backoff and re-check are a minute, so polling cannot).
TEST(tls, a_fair_waiter_subscribes_over_tls_and_is_woken_by_the_release) {
    tls_material material;
    redis_server server(material);
    auto fair = [&](std::int64_t recheck) {
        auto options = verified_by(material, "tls:line", {server.url()}, 5000);
        options.fair = true;
        options.recheck_ms = recheck;
        options.queue_entry_ttl_ms = 2 * (recheck + 500);
        options.retry_delay_ms_min = recheck;
        options.retry_delay_ms_max = recheck;
        return options;
    };
    edgelock::blocking::lock holder;
    ASSERT_FALSE(holder.open(fair(200)));
    ASSERT_FALSE(holder.try_acquire());
    edgelock::blocking::lock waiter;
    ASSERT_FALSE(waiter.open(fair(60'000)));
    std::error_code result = make_error_code(edgelock::errc::busy);
    std::thread waiting([&] { result = waiter.acquire(8s); });
    redis_client admin(server.port(), client_tls::with_client_cert(material));
    EXPECT_TRUE(eventually(
        [&] {
            // The waiter's own channel: the queue key, ":" and its token.
            return admin.command({"PUBSUB", "CHANNELS", "{tls:line}:queue:*"}).elements.size() == 1;
        },
        5s))
        << "the waiter's subscriber";
    EXPECT_FALSE(holder.release());
    EXPECT_TRUE(eventually([&] { return waiter.held(); }, 3s)) << "woken by the release";
    waiting.join();
    EXPECT_FALSE(result) << result.message();
    if (!result) {
        EXPECT_FALSE(waiter.release());
    }
}

TEST(tls, mutual_tls_shows_the_client_certificate) {
    tls_material material;
    tls_setup asks(material);
    asks.require_client_cert = true;
    redis_server server(asks);
    auto options = verified_by(material, "tls:mutual", {server.url()}, handshake_ttl_ms);
    edgelock::blocking::lock without;
    ASSERT_FALSE(without.open(options));
    EXPECT_EQ(without.try_acquire(), edgelock::transport_errc::tls_client_certificate_required);
    options.tls.cert_file = material.client_cert();
    options.tls.key_file = material.client_key();
    edgelock::blocking::lock with;
    ASSERT_FALSE(with.open(options));
    EXPECT_FALSE(with.try_acquire());
    EXPECT_FALSE(with.release());
}

// The test-only opt-out does what its name says, and nothing less is needed to get past a
// certificate that names another host: verification is on unless it is set.
TEST(tls, only_the_test_switch_skips_verification) {
    tls_material material;
    tls_setup wrong_name(material);
    wrong_name.presents = tls_setup::certificate::wrong_name;
    redis_server server(wrong_name);
    auto options = verified_by(material, "tls:insecure", {server.url()}, handshake_ttl_ms);
    edgelock::blocking::lock verifying;
    ASSERT_FALSE(verifying.open(options));
    EXPECT_EQ(verifying.try_acquire(), edgelock::transport_errc::tls_name_mismatch);
    options.tls.ca_file.clear();
    options.tls.insecure_skip_verification_for_tests_only = true;
    edgelock::blocking::lock skipping;
    ASSERT_FALSE(skipping.open(options));
    EXPECT_FALSE(skipping.try_acquire())
        << "neither the name nor the (system store's) trust is checked";
    EXPECT_FALSE(skipping.release());
}

TEST(tls, files_that_cannot_be_loaded_fail_open) {
    tls_material material;
    redis_server server(material);
    auto options = verified_by(material, "tls:files", {server.url()});
    options.tls.ca_file = material.dir() + "/no-such-ca.crt";
    edgelock::blocking::lock missing_ca;
    EXPECT_EQ(missing_ca.open(options), edgelock::transport_errc::tls_files);
    options.tls.ca_file = material.ca_file();
    options.tls.cert_file = material.client_cert();
    options.tls.key_file = material.server_key();  // not the certificate's key
    edgelock::blocking::lock mismatched;
    EXPECT_EQ(mismatched.open(options), edgelock::transport_errc::tls_files);
}

TEST(tls, a_tls_sentinel_deployment_is_followed_through_a_failover) {
    tls_material material;
    sentinel_topology topology(material);
    const std::uint16_t old_master = topology.master_port();
    auto options = verified_by(material, "tls:before", {}, 2000);
    options.instances.clear();
    options.sentinels = topology.sentinel_urls();
    options.master_name = sentinel_topology::master_name;
    options.connect_timeout_ms = 300;
    edgelock::blocking::lock before;
    ASSERT_FALSE(before.open(options));
    ASSERT_FALSE(before.acquire(1s));
    EXPECT_TRUE(
        redis_client(old_master, client_tls::with_client_cert(material)).exists("tls:before"));
    EXPECT_FALSE(before.release());

    topology.primary().freeze();
    const std::uint16_t new_master = topology.wait_for_failover(old_master);
    options.name = "tls:after";
    edgelock::blocking::lock after;
    ASSERT_FALSE(after.open(options));
    const std::error_code got = after.acquire(5s);
    ASSERT_FALSE(got) << got.message();
    EXPECT_TRUE(
        redis_client(new_master, client_tls::with_client_cert(material)).exists("tls:after"));
    EXPECT_FALSE(after.release());
    EXPECT_FALSE(before.acquire(5s)) << "the first lock follows the failover too";
    EXPECT_FALSE(before.release());
    topology.primary().thaw();
}

// A TLS server may send, at any time after the handshake, records that carry no data for
// the client: a TLS 1.3 KeyUpdate or NewSessionTicket. Arriving on an idle connection, such a
// record makes the socket readable with nothing to read after it. The client must take it in
// and go on at once: a read that waited for data there would hold the client's mutex for the
// command timeout, stalling held(), the renewals (the lock lost, expired, on a healthy server)
// and any call on another idle connection (no_quorum after the command timeout).
using inject_record = std::size_t (tls_front::*)();

void records_without_data_stall_nothing(inject_record inject, const std::string& name) {
    using clock_type = std::chrono::steady_clock;
    using std::chrono::duration_cast;
    using std::chrono::milliseconds;
    tls_material material;
    redis_server server;  // plain: the front speaks TLS for it
    tls_front front(material, server.port());
    auto options = verified_by(material, name, {front.url()}, 2500);
    options.command_timeout_ms = 2000;  // how long a read that waits for data would stall
    // Both ends of each handshake run in this process. Emulated (qemu-user, which translates
    // OpenSSL again once the first lock starts its thread) on a loaded machine, one can take
    // longer than the tests' 500 ms: the connection made again for that would be counted
    // below as one a record broke.
    options.connect_timeout_ms = 2000;
    edgelock::blocking::lock holder;
    ASSERT_FALSE(holder.open(options));
    ASSERT_FALSE(holder.acquire(1s));
    options.name = name + ":other";
    edgelock::blocking::lock other;
    ASSERT_FALSE(other.open(options));
    ASSERT_FALSE(other.try_acquire());
    ASSERT_FALSE(other.release());  // its connection stays open, idle from now on
    ASSERT_EQ(front.connections_established(), 2u);
    ASSERT_EQ(front.connections_accepted(), 2u) << "each lock connected at its first try";

    // About 3 s, more than the TTL and three renewal intervals (ttl/3), with a record on both
    // connections every 500 ms; held() is asked every 10 ms all along.
    const auto start = clock_type::now();
    auto next_record = start;
    int records = 0;
    int calls = 0;
    int not_held = 0;
    milliseconds slowest{0};
    while (clock_type::now() - start < 3s) {
        if (clock_type::now() >= next_record) {
            EXPECT_EQ((front.*inject)(), 2u) << "record " << records << " reaches both connections";
            ++records;
            next_record += 500ms;
        }
        const auto before = clock_type::now();
        if (!holder.held()) ++not_held;
        slowest = std::max(slowest, duration_cast<milliseconds>(clock_type::now() - before));
        ++calls;
        std::this_thread::sleep_for(10ms);  // the sampling period: nothing is waited for
    }
    EXPECT_GE(records, 6);
    EXPECT_EQ(not_held, 0) << "of " << calls << " held() calls";
    EXPECT_LT(slowest.count(), 200) << "the slowest of " << calls << " held() calls, in ms";
    EXPECT_FALSE(holder.lost()) << holder.lost_reason().message();
    redis_client admin(server.port());
    EXPECT_GT(admin.pttl(name), 0) << "renewed all along";

    // A new attempt on the other lock, whose idle connection just got a record (and the six
    // before it, never read yet).
    ASSERT_EQ((front.*inject)(), 2u);
    ASSERT_TRUE(eventually([&] { return front.bytes_unacknowledged() == 0; }, 2s))
        << "the record is in the clients' sockets";
    const auto before = clock_type::now();
    const std::error_code got = other.try_acquire();
    const auto took = duration_cast<milliseconds>(clock_type::now() - before);
    EXPECT_FALSE(got) << got.message();
    EXPECT_LT(took.count(), 300) << "try_acquire() took, in ms";
    EXPECT_TRUE(admin.exists(name + ":other"));
    EXPECT_FALSE(other.release());

    EXPECT_TRUE(holder.held());
    EXPECT_FALSE(holder.release());
    EXPECT_FALSE(admin.exists(name));
    EXPECT_FALSE(holder.instance_error(0)) << holder.instance_error(0).message();
    EXPECT_FALSE(other.instance_error(0)) << other.instance_error(0).message();
    EXPECT_EQ(front.connections_accepted(), 2u) << "no connection was lost and made again";
}

TEST(tls, a_key_update_from_the_server_stalls_neither_a_held_lock_nor_a_new_acquire) {
    records_without_data_stall_nothing(&tls_front::send_key_update, "tls:key-update");
}

TEST(tls, a_session_ticket_from_the_server_stalls_neither_a_held_lock_nor_a_new_acquire) {
    records_without_data_stall_nothing(&tls_front::send_session_ticket, "tls:session-ticket");
}

}  // namespace
