// SPDX-License-Identifier: Apache-2.0
// What a node says of its process: INFO's fields, CONFIG GET appendfsync, and the start the
// lock is told.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "edgelock/limits.hpp"
#include "edgelock/session/node_facts.hpp"

namespace {

using namespace edgelock;
using namespace edgelock::session;

const std::string run_id_a = "8f4a1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b";

// INFO server persistence memory as redis-server 7.0 answers it (trimmed).
std::string info_text(const std::string& uptime, const std::string& aof,
                      const std::string& policy) {
    return "# Server\r\nredis_version:7.0.15\r\nrun_id:" + run_id_a +
           "\r\ntcp_port:6379\r\n"
           "uptime_in_seconds:" +
           uptime +
           "\r\nuptime_in_days:0\r\n\r\n"
           "# Persistence\r\nloading:0\r\naof_enabled:" +
           aof +
           "\r\n\r\n"
           "# Memory\r\nused_memory:1000000\r\nmaxmemory:1048576\r\nmaxmemory_policy:" +
           policy + "\r\n";
}

std::vector<reply_node> parsed(const std::string& resp) {
    std::vector<reply_node> nodes(nodes_max);
    const parse_result r = parse_reply(resp.data(), resp.size(), nodes.data(), nodes.size());
    EXPECT_EQ(r.code, errc::ok) << resp;
    nodes.resize(r.nodes);
    return nodes;
}

fsync_policy fsync_of(const std::string& resp) {
    const std::vector<reply_node> nodes = parsed(resp);
    return parse_fsync_policy(nodes.data(), nodes.size());
}

TEST(node_facts, info_gives_uptime_run_id_version_persistence_and_memory) {
    const node_facts facts = parse_info(info_text("3600", "1", "allkeys-lru"));
    EXPECT_EQ(facts.uptime_s, 3600);
    EXPECT_EQ(facts.run_id.view(), run_id_a);
    EXPECT_EQ(facts.version.view(), "7.0.15");
    EXPECT_TRUE(facts.aof_enabled);
    EXPECT_EQ(facts.maxmemory_bytes, 1048576);
    EXPECT_EQ(facts.maxmemory_policy.view(), "allkeys-lru");
    EXPECT_TRUE(facts.may_evict());
    EXPECT_FALSE(facts.durable()) << "AOF without a known fsync policy";
}

TEST(node_facts, bad_values_are_ignored_and_leave_the_defaults) {
    std::string text = info_text("-5", "yes", "noeviction");
    text.replace(text.find(run_id_a), run_id_a.size(), "not-a-run-id");
    const node_facts facts = parse_info(text);
    EXPECT_EQ(facts.uptime_s, 0) << "a negative uptime is taken as just started";
    EXPECT_TRUE(facts.run_id.empty());
    EXPECT_FALSE(facts.aof_enabled);
    EXPECT_FALSE(facts.may_evict()) << "noeviction";
    EXPECT_EQ(parse_info("garbage\nno colon here\n:\n").uptime_s, 0);
    EXPECT_EQ(parse_info("uptime_in_seconds:99999999999999999999\n").uptime_s, 0) << "too large";
    EXPECT_EQ(
        parse_info("uptime_in_seconds:12\nmaxmemory:0\nmaxmemory_policy:allkeys-lru").uptime_s, 12)
        << "LF lines and no final newline";
    EXPECT_FALSE(parse_info("maxmemory:0\nmaxmemory_policy:allkeys-lru").may_evict())
        << "no memory limit";
}

// A number is decimal digits only, within its bound: anything else leaves the default.
TEST(node_facts, a_number_is_plain_digits_within_its_bound) {
    const auto uptime = [](const std::string& value) {
        return parse_info("uptime_in_seconds:" + value + "\r\n").uptime_s;
    };
    EXPECT_EQ(uptime("007"), 7) << "leading zeros are digits";
    EXPECT_EQ(uptime("0000000000000000012"), 12) << "19 digits";
    EXPECT_EQ(uptime("00000000000000000012"), 0) << "more than 19 digits";
    EXPECT_EQ(uptime("+5"), 0);
    EXPECT_EQ(uptime(" 5"), 0);
    EXPECT_EQ(uptime("5 "), 0);
    EXPECT_EQ(uptime("5s"), 0);
    EXPECT_EQ(uptime(""), 0);
    EXPECT_EQ(uptime("-0"), 0);
    const std::int64_t century_s = std::int64_t{100} * 366 * 24 * 3600;
    EXPECT_EQ(uptime(std::to_string(century_s)), century_s) << "the bound itself";
    EXPECT_EQ(uptime(std::to_string(century_s + 1)), 0) << "past it";
    EXPECT_EQ(parse_info("maxmemory:4611686018427387904\n").maxmemory_bytes, std::int64_t{1} << 62);
    EXPECT_EQ(parse_info("maxmemory:4611686018427387905\n").maxmemory_bytes, 0);
    EXPECT_EQ(parse_info("maxmemory:18446744073709551616\n").maxmemory_bytes, 0) << "past 2^64";
    EXPECT_EQ(parse_info("maxmemory:9999999999999999999\n").maxmemory_bytes, 0)
        << "19 digits past 2^63: refused, not wrapped";
}

// INFO replication of a master with two replicas, as redis-server 7.0 answers it.
TEST(node_facts, info_gives_a_masters_replicas_and_their_largest_lag) {
    const node_facts facts = parse_info(
        "# Replication\r\nrole:master\r\nconnected_slaves:2\r\n"
        "slave0:ip=10.0.0.2,port=6380,state=online,offset=4100,lag=7\r\n"
        "slave1:ip=10.0.0.3,port=6381,state=online,offset=4242,lag=0\r\n"
        "master_failover_state:no-failover\r\nmaster_repl_offset:4242\r\n");
    EXPECT_EQ(facts.role.view(), "master");
    EXPECT_EQ(facts.replicas, 2);
    EXPECT_EQ(facts.replica_lag_s_max, 7);
    EXPECT_TRUE(facts.master_host.empty());
    EXPECT_EQ(facts.master_port, 0);
    EXPECT_EQ(parse_info("role:master\nconnected_slaves:0\n").replica_lag_s_max, 0);
    EXPECT_EQ(parse_info("slave0:ip=a,lag=-3\nslave1:ip=b,lag=x\nslave:lag=9\nslave2x:lag=9\n")
                  .replica_lag_s_max,
              0)
        << "a lag that is not a count, or a line not slaveN, is not a lag";
    EXPECT_EQ(parse_info("slave0:ip=a,offset=4,lag=12\n").replica_lag_s_max, 12);
    EXPECT_EQ(parse_info("slave0:ip=a,xlag=12,lag=3\n").replica_lag_s_max, 3) << "lag= itself";
    EXPECT_EQ(parse_info("connected_slaves:-1\n").replicas, 0);
}

TEST(node_facts, info_gives_a_replicas_master) {
    const node_facts facts = parse_info(
        "# Replication\r\nrole:slave\r\nmaster_host:10.0.0.1\r\nmaster_port:6379\r\n"
        "master_link_status:up\r\nconnected_slaves:0\r\n");
    EXPECT_EQ(facts.role.view(), "slave");
    EXPECT_EQ(facts.master_host.view(), "10.0.0.1");
    EXPECT_EQ(facts.master_port, 6379);
    EXPECT_EQ(facts.replicas, 0);
    EXPECT_EQ(parse_info("master_port:65535\n").master_port, 65535);
    EXPECT_EQ(parse_info("master_port:65536\n").master_port, 0) << "not a port";
    EXPECT_TRUE(parse_info("role:" + std::string(role_bytes_max + 1, 'r') + "\n").role.empty())
        << "too long to be a role";
}

TEST(node_facts, config_get_appendfsync_gives_the_policy_and_anything_else_is_unknown) {
    EXPECT_EQ(fsync_of("*2\r\n$11\r\nappendfsync\r\n$6\r\nalways\r\n"), fsync_policy::always);
    EXPECT_EQ(fsync_of("*2\r\n$11\r\nappendfsync\r\n$8\r\neverysec\r\n"), fsync_policy::everysec);
    EXPECT_EQ(fsync_of("*2\r\n$11\r\nappendfsync\r\n$2\r\nno\r\n"), fsync_policy::no);
    EXPECT_EQ(fsync_of("-NOPERM this user has no permissions to run the 'config|get' command\r\n"),
              fsync_policy::unknown);
    EXPECT_EQ(fsync_of("*0\r\n"), fsync_policy::unknown);
    EXPECT_EQ(fsync_of("*2\r\n$11\r\nappendfsync\r\n$5\r\nweird\r\n"), fsync_policy::unknown);
    EXPECT_EQ(parse_fsync_policy("always"), fsync_policy::always);
    EXPECT_EQ(parse_fsync_policy("everysec"), fsync_policy::everysec);
    EXPECT_EQ(parse_fsync_policy("no"), fsync_policy::no);
    EXPECT_EQ(parse_fsync_policy("Always"), fsync_policy::unknown);
    EXPECT_EQ(parse_fsync_policy(""), fsync_policy::unknown);
}

TEST(node_facts, the_eviction_warning_names_the_limit_the_policy_and_the_fix) {
    const node_facts facts = parse_info(info_text("10", "0", "volatile-lru"));
    EXPECT_TRUE(facts.may_evict()) << "volatile-* evicts keys with a TTL: every key of a lock";
    EXPECT_EQ(eviction_warning(facts).view(),
              "maxmemory 1048576 bytes with maxmemory-policy volatile-lru may evict lock keys, "
              "fence counters and waiting lines; set maxmemory-policy noeviction");
    EXPECT_EQ(eviction_warning(parse_info(info_text("10", "0", "allkeys-random"))).view(),
              "maxmemory 1048576 bytes with maxmemory-policy allkeys-random may evict lock keys, "
              "fence counters and waiting lines; set maxmemory-policy noeviction");
}

TEST(node_facts, only_aof_with_fsync_always_is_durable) {
    node_facts facts = parse_info(info_text("10", "1", "noeviction"));
    facts.fsync = fsync_policy::always;
    EXPECT_TRUE(facts.durable());
    facts.fsync = fsync_policy::everysec;
    EXPECT_FALSE(facts.durable());
    facts = parse_info(info_text("10", "0", "noeviction"));
    facts.fsync = fsync_policy::always;
    EXPECT_FALSE(facts.durable()) << "the policy without AOF enabled";
}

TEST(node_facts, the_start_is_the_reading_less_the_uptime_less_a_second_of_rounding) {
    node_facts facts;
    facts.uptime_s = 30;
    EXPECT_EQ(node_start_of(facts, 100'000, false).started_ms, 100'000 - 29'000);
    facts.uptime_s = 0;
    EXPECT_EQ(node_start_of(facts, 100'000, false).started_ms, 100'000);
    facts.uptime_s = 1;
    EXPECT_EQ(node_start_of(facts, 100'000, false).started_ms, 100'000);
    EXPECT_TRUE(node_start_of(facts, 100'000, true).restarted);
    facts.uptime_s = 100LL * 366 * 24 * 3600;
    EXPECT_GE(node_start_of(facts, -now_ms_limit + 5, false).started_ms, -now_ms_limit)
        << "clamped";
}

// A new run_id at the same address with a long uptime is another server (a moved VIP): it
// never had our keys, so it starts now for the guard, not days ago.
TEST(node_facts, a_changed_run_id_starts_at_the_reading_whatever_the_uptime) {
    node_facts facts;
    facts.uptime_s = 3 * 24 * 3600;
    EXPECT_EQ(node_start_of(facts, 100'000, true).started_ms, 100'000);
    EXPECT_LT(node_start_of(facts, 100'000, false).started_ms, 100'000 - 24 * 3600 * 1000);
}

}  // namespace
