// SPDX-License-Identifier: Apache-2.0
// One deployment, one check: the same bad configuration fed to both clients' open() (and,
// for a lock that does not fit its deployment, to the async client's add_lock()) gives the
// same code, the one edgelock::validate() and check_lock() document. No Redis: every row is
// refused before any connection is made (nothing listens on port 1 anyway).
#include <gtest/gtest.h>

#include <asio/io_context.hpp>

#include <functional>
#include <ostream>
#include <string>
#include <system_error>
#include <vector>

#include "edgelock/async_client.hpp"
#include "edgelock/deployment.hpp"
#include "edgelock/error_code.hpp"
#include "edgelock/blocking_commands.hpp"
#include "edgelock/blocking_lock.hpp"
#include "edgelock/lock.hpp"
#include "edgelock/session/limits.hpp"
#include "edgelock/tls_context.hpp"

namespace {

using edgelock::deployment;
using edgelock::errc;
using edgelock::lock_config;
using edgelock::transport_errc;

constexpr const char* lock_name = "orders";
const std::string nowhere = "redis://127.0.0.1:1";

struct bad_row {
    std::string name;
    std::function<void(deployment&)> where;  // unset: the good deployment
    std::function<void(lock_config&)> lock;  // unset: the good lock
    std::error_code expected;
};

void PrintTo(const bad_row& row, std::ostream* out) { *out << row.name; }

// A deployment both clients accept: one instance, short timeouts.
deployment good_deployment() {
    deployment d;
    d.instances = {nowhere};
    d.connect_timeout_ms = 500;
    d.command_timeout_ms = 500;
    return d;
}

lock_config good_lock() {
    lock_config lc;
    lc.name = lock_name;
    lc.ttl_ms = 1'000;
    return lc;
}

// The blocking client's options for the same deployment and lock.
edgelock::blocking::lock_options options_of(const deployment& d, const lock_config& lc) {
    edgelock::blocking::lock_options options;
    static_cast<deployment&>(options) = d;
    options.name = std::string(lc.name);
    options.ttl_ms = lc.ttl_ms;
    options.replicas_to_wait = lc.replicas_to_wait;
    options.replica_wait_ms = lc.replica_wait_ms;
    options.attempt_timeout_ms = lc.attempt_timeout_ms;
    options.fair = lc.fair;
    return options;
}

// The async client: open(), then add_lock() of the lock when open() accepted the deployment.
std::error_code asio_verdict(const deployment& d, const lock_config& lc) {
    asio::io_context io;
    edgelock::async::client client(io);
    edgelock::async::client_config config;
    static_cast<deployment&>(config) = d;
    if (const std::error_code ec = client.open(config)) return ec;
    edgelock::async::lock_handle handle;
    return client.add_lock(lc, handle);
}

std::error_code blocking_verdict(const deployment& d, const lock_config& lc) {
    edgelock::blocking::lock lock;
    return lock.open(options_of(d, lc));
}

std::vector<bad_row> bad_rows() {
    const std::string sentinel = "redis://127.0.0.1:2";
    return {
        {"neither_instances_nor_sentinels",
         [](deployment& d) { d.instances.clear(); },
         {},
         errc::invalid_config},
        {"instances_and_sentinels",
         [=](deployment& d) { d.sentinels = {sentinel}; },
         {},
         errc::invalid_config},
        {"instances_and_cluster",
         [](deployment& d) { d.cluster = {"redis://127.0.0.1:3"}; },
         {},
         errc::invalid_config},
        {"too_many_cluster_seeds",
         [](deployment& d) {
             d.instances.clear();
             d.cluster.assign(edgelock::session::cluster_seeds_max + 1, "redis://127.0.0.1:3");
         },
         {},
         errc::invalid_config},
        {"cluster_seed_with_a_database",
         [](deployment& d) {
             d.instances.clear();
             d.cluster = {"redis://127.0.0.1:3/2"};
         },
         {},
         errc::invalid_config},
        {"sentinels_without_master_name",
         [=](deployment& d) {
             d.instances.clear();
             d.sentinels = {sentinel};
         },
         {},
         errc::invalid_config},
        {"master_name_too_long",
         [=](deployment& d) {
             d.instances.clear();
             d.sentinels = {sentinel};
             d.master_name.assign(edgelock::session::master_name_bytes_max + 1, 'm');
         },
         {},
         errc::invalid_config},
        {"too_many_sentinels",
         [=](deployment& d) {
             d.instances.clear();
             d.sentinels.assign(edgelock::session::sentinels_max + 1, sentinel);
             d.master_name = "mymaster";
         },
         {},
         errc::invalid_config},
        {"even_instance_count",
         [](deployment& d) {
             d.instances = {nowhere, nowhere};
         },
         {},
         errc::invalid_instances},
        {"more_than_instances_max",
         [](deployment& d) { d.instances.assign(edgelock::instances_max + 2, nowhere); },
         {},
         errc::invalid_instances},
        {"one_server_three_times",
         [](deployment& d) {
             d.instances = {"redis://127.0.0.1:7001", "redis://127.0.0.1:7002",
                            "redis://:pw@127.0.0.1:7001/3"};
         },
         {},
         errc::invalid_instances},
        {"malformed_url",
         [](deployment& d) { d.instances = {"http://127.0.0.1:1"}; },
         {},
         errc::invalid_config},
        {"even_count_with_a_malformed_url",
         [](deployment& d) {
             d.instances = {nowhere, "redis://:0"};
         },
         {},
         errc::invalid_instances},
        {"connect_timeout_zero",
         [](deployment& d) { d.connect_timeout_ms = 0; },
         {},
         errc::invalid_config},
        {"command_timeout_over_a_minute",
         [](deployment& d) { d.command_timeout_ms = edgelock::session::timeout_ms_max + 1; },
         {},
         errc::invalid_config},
        {"reconnect_delay_min_zero",
         [](deployment& d) { d.reconnect_delay_min_ms = 0; },
         {},
         errc::invalid_config},
        {"reconnect_delay_max_below_min",
         [](deployment& d) { d.reconnect_delay_max_ms = d.reconnect_delay_min_ms - 1; },
         {},
         errc::invalid_config},
        {"master_password_too_long",
         [](deployment& d) {
             d.master_password.assign(edgelock::session::password_bytes_max + 1, 'p');
         },
         {},
         errc::invalid_config},
        {"tls_ca_file_missing",
         [](deployment& d) {
             d.instances = {"rediss://127.0.0.1:1"};
             d.tls.ca_file = "/nonexistent/edgelock-ca.pem";
         },
         {},
         transport_errc::tls_files},
        {"replica_wait_equal_to_command_timeout",
         {},
         [](lock_config& lc) {
             lc.replicas_to_wait = 1;
             lc.attempt_timeout_ms = 800;
             lc.replica_wait_ms = 500;  // the command timeout
         },
         errc::invalid_config},
        {"default_replica_wait_above_command_timeout",
         {},
         [](lock_config& lc) {
             lc.replicas_to_wait = 1;
             lc.ttl_ms = 20'000;  // attempt 2 s, WAIT 1 s by default
         },
         errc::invalid_config},
        {"fair_on_redlock",
         [](deployment& d) {
             d.instances = {"redis://127.0.0.1:1", "redis://127.0.0.1:2", "redis://127.0.0.1:3"};
         },
         [](lock_config& lc) { lc.fair = true; }, errc::invalid_instances},
    };
}

class deployment_check : public ::testing::TestWithParam<bad_row> {};

TEST_P(deployment_check, both_clients_return_the_documented_code) {
    const bad_row& row = GetParam();
    deployment d = good_deployment();
    lock_config lc = good_lock();
    if (row.where) row.where(d);
    if (row.lock) row.lock(lc);
    const std::error_code by_asio = asio_verdict(d, lc);
    const std::error_code by_blocking = blocking_verdict(d, lc);
    EXPECT_EQ(by_asio, row.expected) << "asio: " << by_asio.message();
    EXPECT_EQ(by_blocking, row.expected) << "blocking: " << by_blocking.message();
    EXPECT_EQ(by_asio, by_blocking);
}

INSTANTIATE_TEST_SUITE_P(rows, deployment_check, ::testing::ValuesIn(bad_rows()),
                         [](const ::testing::TestParamInfo<bad_row>& info) {
                             return info.param.name;
                         });

TEST(deployment_check, a_good_deployment_and_lock_pass_both_clients) {
    EXPECT_FALSE(asio_verdict(good_deployment(), good_lock()));
    EXPECT_FALSE(blocking_verdict(good_deployment(), good_lock()));
}

// The lock just inside the rule: a WAIT timeout one below the command timeout is accepted.
TEST(deployment_check, a_wait_just_below_the_command_timeout_passes_both_clients) {
    lock_config lc = good_lock();
    lc.replicas_to_wait = 1;
    lc.attempt_timeout_ms = 800;
    lc.replica_wait_ms = 499;
    EXPECT_FALSE(asio_verdict(good_deployment(), lc));
    EXPECT_FALSE(blocking_verdict(good_deployment(), lc));
}

TEST(deployment_check, validate_parses_the_addresses_for_the_links) {
    deployment d = good_deployment();
    d.instances = {"redis://u:p@127.0.0.1:7001/2", nowhere, "redis://127.0.0.1:7003"};
    d.eviction = edgelock::session::eviction_check::refuse;
    edgelock::validated_deployment out;
    edgelock::tls_context tls;
    ASSERT_FALSE(edgelock::validate(d, out, tls));
    EXPECT_EQ(out.instance_count, 3u);
    EXPECT_FALSE(out.by_sentinel());
    EXPECT_EQ(out.instances[0].port, 7001);
    EXPECT_EQ(out.instances[0].db, 2);
    EXPECT_EQ(out.times.command_timeout_ms, 500);
    const edgelock::session::connection_setup setup = out.instance_setup(2, 40);
    EXPECT_EQ(setup.node, &out.instances[2]);
    EXPECT_EQ(setup.seed, 40u);
    EXPECT_TRUE(setup.read_node);
    EXPECT_TRUE(setup.refuse_evicting);
    EXPECT_FALSE(tls.loaded()) << "no rediss:// address: no file is read";
}

TEST(deployment_check, behind_sentinel_there_is_one_instance_the_master) {
    deployment d;
    d.sentinels = {"redis://127.0.0.1:26379", "redis://127.0.0.1:26380"};
    d.master_name = "mymaster";
    d.master_user = "locks";
    d.master_db = 3;
    d.restart_guard = false;
    d.eviction = edgelock::session::eviction_check::off;
    edgelock::validated_deployment out;
    edgelock::tls_context tls;
    ASSERT_FALSE(edgelock::validate(d, out, tls));
    EXPECT_EQ(out.instance_count, 1u);
    const edgelock::session::connection_setup setup = out.instance_setup(0, 7);
    EXPECT_EQ(setup.node, nullptr);
    EXPECT_EQ(setup.sentinel_count, 2u);
    EXPECT_EQ(setup.master_name, "mymaster");
    EXPECT_EQ(setup.master->user.view(), "locks");
    EXPECT_EQ(setup.master->db, 3);
    EXPECT_FALSE(setup.read_node) << "no guard, no eviction check: nothing to read";
}

// The CLI's admin connection is checked by the same function before it connects.
TEST(deployment_check, the_command_connection_refuses_what_the_clients_refuse) {
    for (const bad_row& row : bad_rows()) {
        deployment d = good_deployment();
        if (row.where) row.where(d);
        edgelock::blocking::command_connection connection;
        edgelock::validated_deployment parsed;
        edgelock::tls_context tls;
        const std::error_code expected = edgelock::validate(d, parsed, tls);
        if (!expected) continue;  // a lock's row, or one the clients refuse only for the lock
        EXPECT_EQ(connection.open(d), expected) << row.name;
    }
}

}  // namespace
