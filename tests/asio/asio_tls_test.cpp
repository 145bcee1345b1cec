// SPDX-License-Identifier: Apache-2.0
// The async client over TLS (rediss://) against real TLS-only redis-server and redis-sentinel
// processes: a lock held, renewed and released; Redlock over TLS masters; a Sentinel
// deployment whose sentinels and servers speak only TLS, followed through a failover;
// records without data (TLS 1.3 key updates, session tickets) from the server, through a TLS
// front for a plain server. The failures (untrusted, wrong name, expired, no client certificate,
// the wrong port) are rows of tests/redis/transport_table_test.cpp, run through both clients.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <system_error>
#include <vector>

#include "asio_test_util.hpp"
#include "edgelock/async_client.hpp"
#include "edgelock/testing/redis_client.hpp"
#include "edgelock/testing/redis_process.hpp"
#include "edgelock/testing/tls_front.hpp"
#include "edgelock/testing/tls_material.hpp"

namespace {

using namespace edgelock::asio_tests;
using edgelock::async::client;
using edgelock::async::client_config;
using edgelock::async::lock_handle;
using edgelock::testing::client_tls;
using edgelock::testing::redis_client;
using edgelock::testing::redis_masters;
using edgelock::testing::redis_server;
using edgelock::testing::sentinel_topology;
using edgelock::testing::tls_front;
using edgelock::testing::tls_material;

client_config verified_by(const tls_material& material, std::vector<std::string> urls) {
    client_config config = config_for(std::move(urls));
    config.tls.ca_file = material.ca_file();
    return config;
}

TEST(asio_tls, a_lock_is_held_renewed_and_released_over_tls) {
    tls_material material;
    redis_server server(material);
    ASSERT_EQ(server.url().rfind("rediss://", 0), 0u);
    asio::io_context io{1};
    client owner(io);
    ASSERT_FALSE(owner.open(verified_by(material, {server.url()})));
    lock_handle handle;
    edgelock::lock_config config = lock_for("tls:job", 600);
    config.fencing = true;
    ASSERT_FALSE(owner.add_lock(config, handle));
    const outcome got = acquire(owner, handle, 1s);
    ASSERT_FALSE(got.ec) << got.ec.message();
    EXPECT_GT(got.fence, 0);

    redis_client admin(server.port(), client_tls::with_client_cert(material));
    EXPECT_TRUE(admin.exists("tls:job"));
    run_for(io, 1500ms);  // 2.5 leases: only renewals over TLS keep it
    EXPECT_TRUE(owner.held(handle));
    EXPECT_GT(admin.pttl("tls:job"), 0);
    EXPECT_FALSE(release(owner, handle).ec);
    EXPECT_FALSE(admin.exists("tls:job"));
    EXPECT_FALSE(owner.instance_last_error(0)) << owner.instance_last_error(0).message();
}

TEST(asio_tls, redlock_over_three_tls_masters) {
    tls_material material;
    std::vector<std::unique_ptr<redis_server>> masters;
    std::vector<std::string> urls;
    for (int i = 0; i < 3; ++i) {
        masters.push_back(std::make_unique<redis_server>(material));
        urls.push_back(masters.back()->url());
    }
    asio::io_context io{1};
    client owner(io);
    ASSERT_FALSE(owner.open(verified_by(material, urls)));
    lock_handle handle;
    ASSERT_FALSE(owner.add_lock(lock_for("tls:redlock", 2000), handle));
    ASSERT_FALSE(acquire(owner, handle, 1s).ec);
    // The acquire completes at a quorum: the third master's answer may still be on its way.
    int holding = 0;
    for (const auto& master : masters) {
        holding += redis_client(master->port(), client_tls::with_client_cert(material))
                           .exists("tls:redlock")
                       ? 1
                       : 0;
    }
    EXPECT_GE(holding, 2) << "a quorum of the three TLS masters holds the key";
    EXPECT_FALSE(release(owner, handle).ec);
}

TEST(asio_tls, a_tls_sentinel_deployment_is_followed_through_a_failover) {
    tls_material material;
    sentinel_topology topology(material);
    const std::uint16_t old_master = topology.master_port();
    asio::io_context io{1};
    client owner(io);
    client_config config;
    config.sentinels = topology.sentinel_urls();
    config.master_name = sentinel_topology::master_name;
    config.tls.ca_file = material.ca_file();
    config.connect_timeout_ms = 300;
    config.command_timeout_ms = 500;
    config.reconnect_delay_min_ms = 20;
    config.reconnect_delay_max_ms = 200;
    ASSERT_FALSE(owner.open(config));
    ASSERT_FALSE(wait_ready(owner).ec);
    EXPECT_EQ(owner.instance_endpoint(0), "127.0.0.1:" + std::to_string(old_master))
        << "the master, over TLS";
    lock_handle before;
    ASSERT_FALSE(owner.add_lock(lock_for("tls:before", 2000), before));
    ASSERT_FALSE(acquire(owner, before, 0ms).ec);
    EXPECT_TRUE(
        redis_client(old_master, client_tls::with_client_cert(material)).exists("tls:before"));
    EXPECT_FALSE(release(owner, before).ec);

    topology.primary().freeze();
    const std::uint16_t new_master = topology.wait_for_failover(old_master);
    const std::string new_endpoint = "127.0.0.1:" + std::to_string(new_master);
    EXPECT_TRUE(run_until(
        io,
        [&] { return owner.instance_connected(0) && owner.instance_endpoint(0) == new_endpoint; },
        8s))
        << "the client found the new master: " << owner.instance_endpoint(0);
    lock_handle after;
    ASSERT_FALSE(owner.add_lock(lock_for("tls:after", 2000), after));
    const outcome got = acquire(owner, after, 3s);
    ASSERT_FALSE(got.ec) << got.ec.message();
    EXPECT_TRUE(
        redis_client(new_master, client_tls::with_client_cert(material)).exists("tls:after"));
    EXPECT_FALSE(release(owner, after).ec);
    topology.primary().thaw();
}

// A TLS server may send records that carry no data for the client at any time after the
// handshake (a TLS 1.3 KeyUpdate or NewSessionTicket; tests/redis/tls_test.cpp has the
// blocking client's case): the client reads them as they come and goes on, its renewals on
// time and a new acquire at once.
TEST(asio_tls, records_without_data_from_the_server_stall_nothing) {
    tls_material material;
    redis_server server;  // plain: the front speaks TLS for it
    tls_front front(material, server.port());
    asio::io_context io{1};
    client owner(io);
    client_config config = verified_by(material, {front.url()});
    config.command_timeout_ms = 2000;
    ASSERT_FALSE(owner.open(config));
    lock_handle holder;
    ASSERT_FALSE(owner.add_lock(lock_for("tls:records", 2500), holder));
    bool lost = false;
    ASSERT_FALSE(owner.set_lost_handler(holder, [&lost](std::error_code) { lost = true; }));
    ASSERT_FALSE(acquire(owner, holder, 1s).ec);
    ASSERT_EQ(front.connections_established(), 1u);

    // About 3 s, more than the TTL: a key update and a session ticket in turn every 500 ms.
    for (int i = 0; i < 6; ++i) {
        EXPECT_EQ(i % 2 == 0 ? front.send_key_update() : front.send_session_ticket(), 1u)
            << "record " << i;
        run_for(io, 500ms);
        EXPECT_TRUE(owner.held(holder)) << "after record " << i;
    }
    EXPECT_FALSE(lost);
    EXPECT_GE(owner.status(holder).renewals, 2u);

    lock_handle second;
    ASSERT_FALSE(owner.add_lock(lock_for("tls:records:second", 2500), second));
    EXPECT_EQ(front.send_key_update(), 1u);
    EXPECT_EQ(front.send_session_ticket(), 1u);
    const auto start = std::chrono::steady_clock::now();
    const outcome got = acquire(owner, second, 0ms);
    EXPECT_FALSE(got.ec) << got.ec.message();
    EXPECT_LT(elapsed_ms(start), 300) << "acquire took, in ms";
    redis_client admin(server.port());
    EXPECT_TRUE(admin.exists("tls:records"));
    EXPECT_TRUE(admin.exists("tls:records:second"));
    EXPECT_FALSE(release(owner, second).ec);
    EXPECT_FALSE(release(owner, holder).ec);
    EXPECT_FALSE(owner.instance_last_error(0)) << owner.instance_last_error(0).message();
    EXPECT_EQ(front.connections_accepted(), 1u) << "no connection was lost and made again";
}

}  // namespace
