// The blocking client over TLS (rediss://) against real TLS-only redis-server and
// redis-sentinel processes: a lock held, renewed by the helper thread and released; mutual
// TLS; a Sentinel deployment whose sentinels and servers speak only TLS, followed through a
// failover. The failures are rows of transport_table_test.cpp, run through both clients.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "edgelock/hiredis_lock.hpp"
#include "edgelock/testing/redis_client.hpp"
#include "edgelock/testing/redis_process.hpp"
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
using edgelock::testing::tls_material;
using edgelock::testing::tls_setup;

edgelock::hiredis::lock_options verified_by(const tls_material& material, const std::string& name,
                                            std::vector<std::string> urls, std::int64_t ttl_ms = 1000) {
    auto options = options_for(name, std::move(urls), ttl_ms);
    options.tls.ca_file = material.ca_file();
    return options;
}

TEST(tls, a_lock_is_held_renewed_and_released_over_tls) {
    tls_material material;
    redis_server server(material);
    auto options = verified_by(material, "tls:job", {server.url()}, 600);
    options.fencing = true;
    edgelock::hiredis::lock lock;
    ASSERT_FALSE(lock.open(options));
    ASSERT_FALSE(lock.acquire(1s));
    EXPECT_GT(lock.fence(), 0);
    redis_client admin(server.port(), client_tls::with_client_cert(material));
    EXPECT_TRUE(admin.exists("tls:job"));
    std::this_thread::sleep_for(1500ms);  // 2.5 leases: only the helper's renewals keep it
    EXPECT_TRUE(lock.held());
    EXPECT_FALSE(lock.lost());
    EXPECT_GT(admin.pttl("tls:job"), 0);
    EXPECT_FALSE(lock.release());
    EXPECT_FALSE(admin.exists("tls:job"));
    EXPECT_FALSE(lock.instance_error(0)) << lock.instance_error(0).message();
}

TEST(tls, mutual_tls_shows_the_client_certificate) {
    tls_material material;
    tls_setup asks(material);
    asks.require_client_cert = true;
    redis_server server(asks);
    auto options = verified_by(material, "tls:mutual", {server.url()});
    edgelock::hiredis::lock without;
    ASSERT_FALSE(without.open(options));
    EXPECT_EQ(without.try_acquire(), edgelock::transport_errc::tls_client_certificate_required);
    options.tls.cert_file = material.client_cert();
    options.tls.key_file = material.client_key();
    edgelock::hiredis::lock with;
    ASSERT_FALSE(with.open(options));
    EXPECT_FALSE(with.try_acquire());
    EXPECT_FALSE(with.release());
}

TEST(tls, files_that_cannot_be_loaded_fail_open) {
    tls_material material;
    redis_server server(material);
    auto options = verified_by(material, "tls:files", {server.url()});
    options.tls.ca_file = material.dir() + "/no-such-ca.crt";
    edgelock::hiredis::lock missing_ca;
    EXPECT_EQ(missing_ca.open(options), edgelock::transport_errc::tls_files);
    options.tls.ca_file = material.ca_file();
    options.tls.cert_file = material.client_cert();
    options.tls.key_file = material.server_key();  // not the certificate's key
    edgelock::hiredis::lock mismatched;
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
    edgelock::hiredis::lock before;
    ASSERT_FALSE(before.open(options));
    ASSERT_FALSE(before.acquire(1s));
    EXPECT_TRUE(redis_client(old_master, client_tls::with_client_cert(material)).exists("tls:before"));
    EXPECT_FALSE(before.release());

    topology.primary().freeze();
    const std::uint16_t new_master = topology.wait_for_failover(old_master);
    options.name = "tls:after";
    edgelock::hiredis::lock after;
    ASSERT_FALSE(after.open(options));
    const std::error_code got = after.acquire(5s);
    ASSERT_FALSE(got) << got.message();
    EXPECT_TRUE(redis_client(new_master, client_tls::with_client_cert(material)).exists("tls:after"));
    EXPECT_FALSE(after.release());
    EXPECT_FALSE(before.acquire(5s)) << "the first lock follows the failover too";
    EXPECT_FALSE(before.release());
    topology.primary().thaw();
}

}  // namespace
