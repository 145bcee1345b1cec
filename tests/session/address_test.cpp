// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <string>

#include "edgelock/session/address.hpp"

namespace {

using edgelock::errc;
using edgelock::session::format_address;
using edgelock::session::node_address;
using edgelock::session::parse_node_url;

node_address parsed(const std::string& url) {
    node_address a;
    const auto r = parse_node_url(url, a);
    EXPECT_EQ(r.code, errc::ok) << url << ": " << r.problem;
    return a;
}

TEST(address, parses_every_documented_form) {
    node_address a = parsed("redis://127.0.0.1");
    EXPECT_EQ(a.host.view(), "127.0.0.1");
    EXPECT_EQ(a.port, 6379);
    EXPECT_TRUE(a.user.empty());
    EXPECT_TRUE(a.password.empty());

    a = parsed("redis://user:s3cret@cache.local:6380/2");
    EXPECT_EQ(a.user.view(), "user");
    EXPECT_EQ(a.password.view(), "s3cret");
    EXPECT_EQ(a.host.view(), "cache.local");
    EXPECT_EQ(a.port, 6380);
    EXPECT_EQ(a.db, 2);

    a = parsed("redis://:only-password@h:1");
    EXPECT_TRUE(a.user.empty());
    EXPECT_EQ(a.password.view(), "only-password");

    a = parsed("redis://secret@h");
    EXPECT_EQ(a.password.view(), "secret")
        << "a lone credential is the password, as redis-cli reads it";

    a = parsed("redis://[::1]:7000");
    EXPECT_EQ(a.host.view(), "::1");
    EXPECT_EQ(a.port, 7000);

    a = parsed("localhost:6390");
    EXPECT_EQ(a.host.view(), "localhost");
    EXPECT_EQ(a.port, 6390);

    a = parsed("redis://u:p@ss@h:2");
    EXPECT_EQ(a.password.view(), "p@ss") << "the last @ ends the credentials";
    EXPECT_FALSE(a.tls);
}

TEST(address, rediss_takes_every_form_of_redis_and_asks_for_tls) {
    node_address a = parsed("rediss://user:s3cret@cache.local:6380/2");
    EXPECT_TRUE(a.tls);
    EXPECT_EQ(a.user.view(), "user");
    EXPECT_EQ(a.password.view(), "s3cret");
    EXPECT_EQ(a.host.view(), "cache.local");
    EXPECT_EQ(a.port, 6380);
    EXPECT_EQ(a.db, 2);

    a = parsed("rediss://[::1]");
    EXPECT_TRUE(a.tls);
    EXPECT_EQ(a.host.view(), "::1");
    EXPECT_EQ(a.port, 6379) << "TLS has no port of its own in Redis: the default stays 6379";

    EXPECT_FALSE(parsed("h:1").tls) << "a bare host:port is plain";
}

TEST(address, refuses_malformed_addresses_with_a_reason) {
    for (const char* bad :
         {"", "redis://", "http://h:1", "redisss://h:1", "rediss:/h:1", "redis://h:", "redis://h:0",
          "redis://h:65536", "redis://h:12x", "redis://h:1/x", "redis://h:1/70000", "redis://[::1",
          "redis://[::1]x", "redis://:p@", "redis://h h:1", "redis://h:1/", "::1",
          "redis://fe80::1:6379"}) {
        node_address a;
        const auto r = parse_node_url(bad, a);
        EXPECT_EQ(r.code, errc::invalid_config) << bad;
        EXPECT_STRNE(r.problem, "") << bad;
    }
}

TEST(address, refuses_every_part_longer_than_its_limit) {
    using namespace edgelock::session;
    node_address a;
    const std::string host_at_limit(host_bytes_max, 'h');
    EXPECT_EQ(parse_node_url("redis://" + host_at_limit + ":1", a).code, errc::ok);
    EXPECT_EQ(a.host.size(), host_bytes_max);
    EXPECT_STREQ(parse_node_url("redis://" + host_at_limit + "h:1", a).problem,
                 "host name too long");
    const std::string user(user_bytes_max + 1, 'u');
    EXPECT_STREQ(parse_node_url("redis://" + user + ":p@h", a).problem, "user name too long");
    const std::string password(password_bytes_max + 1, 'p');
    EXPECT_STREQ(parse_node_url("redis://:" + password + "@h", a).problem, "password too long");
    const std::string url = "redis://h/" + std::string(url_bytes_max, '0');
    EXPECT_STREQ(parse_node_url(url, a).problem, "address too long");
}

TEST(address, refusals_never_repeat_the_input) {
    node_address a;
    const auto r = parse_node_url("redis://user:hunter2@h:99999", a);
    ASSERT_EQ(r.code, errc::invalid_config);
    EXPECT_EQ(std::string(r.problem).find("hunter2"), std::string::npos);
}

TEST(address, a_sentinel_named_master_keeps_the_configured_credentials) {
    node_address master = parsed("redis://app:pw@ignored:1/3");
    ASSERT_EQ(edgelock::session::set_host_port(master, "10.0.0.7", 6380).code, errc::ok);
    EXPECT_EQ(master.host.view(), "10.0.0.7");
    EXPECT_EQ(master.port, 6380);
    EXPECT_EQ(master.user.view(), "app");
    EXPECT_EQ(master.password.view(), "pw");
    EXPECT_EQ(master.db, 3);
    EXPECT_EQ(edgelock::session::set_host_port(master, "", 6380).code, errc::invalid_config);
    EXPECT_EQ(edgelock::session::set_host_port(master, "h", 0).code, errc::invalid_config);
    EXPECT_EQ(edgelock::session::set_host_port(master, "a b", 1).code, errc::invalid_config);
    EXPECT_EQ(master.host.view(), "10.0.0.7") << "a refused endpoint leaves the address as it was";
}

TEST(address, ports_are_decimal_and_in_range) {
    std::uint16_t port = 0;
    EXPECT_TRUE(edgelock::session::parse_port("1", port));
    EXPECT_EQ(port, 1);
    EXPECT_TRUE(edgelock::session::parse_port("65535", port));
    EXPECT_EQ(port, 65535);
    EXPECT_TRUE(edgelock::session::parse_port("06379", port)) << "five digits, a leading zero";
    EXPECT_EQ(port, 6379);
    for (const char* bad :
         {"", "0", "65536", "-1", "+1", "1 ", " 1", "999999", "6379x", "006379", "-0", "00000"}) {
        EXPECT_FALSE(edgelock::session::parse_port(bad, port)) << bad;
    }
}

TEST(address, endpoints_are_shown_without_credentials_and_with_brackets_for_ipv6) {
    EXPECT_EQ(format_address(parsed("redis://u:secret@cache:6380/2")).view(), "cache:6380");
    EXPECT_EQ(format_address(parsed("redis://[fe80::1]:7000")).view(), "[fe80::1]:7000");
    EXPECT_EQ(format_address(parsed("h:1")).view(), "h:1");
    const std::string longest(edgelock::session::host_bytes_max, 'h');
    EXPECT_EQ(format_address(parsed(longest + ":65535")).view(), longest + ":65535");
}

TEST(address, same_node_ignores_credentials) {
    EXPECT_TRUE(parsed("redis://a:b@h:1/2").same_node(parsed("h:1")));
    EXPECT_FALSE(parsed("h:1").same_node(parsed("h:2")));
    EXPECT_FALSE(parsed("h:1").same_node(parsed("g:1")));
}

// One server written several ways is one node (Redlock must not count it twice): seen failing
// before, when hosts were compared byte for byte.
TEST(address, same_host_compares_ips_by_value_and_names_without_case) {
    using edgelock::session::same_host;
    for (const char* alias : {"127.0.0.1", "127.1", "2130706433", "0x7f.0.0.1", "0177.0.0.1",
                              "127.0.1", "127.0.0.1."}) {
        EXPECT_TRUE(same_host("127.0.0.1", alias)) << alias;
    }
    for (const char* alias : {"::1", "0:0::1", "0:0:0:0:0:0:0:1", "0000::0001", "::0:1"}) {
        EXPECT_TRUE(same_host("::1", alias)) << alias;
    }
    EXPECT_TRUE(same_host("fe80::1:2", "FE80:0::1:2"));
    EXPECT_TRUE(same_host("localhost", "LocalHost."));
    EXPECT_TRUE(same_host("redis.example", "REDIS.example"));
    for (const char* other : {"127.0.0.2", "127.0.2", "::2", "1::", "localhost", "256.0.0.1",
                              "127.0.0.1.1", "08.0.0.1", ":::1", "1:2:3:4:5:6:7:8:9"}) {
        EXPECT_FALSE(same_host("127.0.0.1", other)) << other;
        EXPECT_FALSE(same_host("::1", other)) << other;
    }
    EXPECT_FALSE(same_host("redis-a", "redis-b"));
    EXPECT_TRUE(parsed("redis://[::1]:7000").same_node(parsed("[0:0::1]:7000")));
    EXPECT_TRUE(parsed("127.1:7000").same_node(parsed("redis://127.0.0.1:7000")));
}

}  // namespace
