// SPDX-License-Identifier: Apache-2.0
// The scripts' digests are the ones Redis computes, and an empty script cache (a restart,
// SCRIPT FLUSH) only costs one NOSCRIPT round trip: EVALSHA falls back to EVAL.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "edgelock/blocking_lock.hpp"
#include "edgelock/scripts.hpp"
#include "edgelock/testing/redis_client.hpp"
#include "edgelock/testing/redis_process.hpp"
#include "redis_test_util.hpp"

namespace {

using namespace std::chrono_literals;
using edgelock::redis_tests::options_for;
using edgelock::testing::redis_client;
using edgelock::testing::redis_server;

// How often the server ran `command` since the last CONFIG RESETSTAT.
long long calls_of(redis_client& client, const std::string& command) {
    const std::string stats = client.info_field("commandstats", "cmdstat_" + command);
    const std::size_t at = stats.find("calls=");
    return at == std::string::npos ? 0 : std::stoll(stats.substr(at + 6));
}

long long eval_calls(redis_client& client) { return calls_of(client, "eval"); }

// One acquire and release, then the server's script cache emptied and its counts reset.
void cycle_then_flush(edgelock::blocking::lock& lock, redis_client& client) {
    ASSERT_FALSE(lock.try_acquire());
    ASSERT_FALSE(lock.release());
    client.command({"SCRIPT", "FLUSH"});
    client.command({"CONFIG", "RESETSTAT"});
}

TEST(script_cache, digests_equal_what_redis_computes) {
    redis_server server;
    redis_client client(server.port());
    for (const edgelock::script* s :
         {&edgelock::acquire_script, &edgelock::raise_script, &edgelock::renew_script,
          &edgelock::release_script, &edgelock::fair_acquire_script,
          &edgelock::fair_release_script}) {
        const auto reply = client.command({"SCRIPT", "LOAD", std::string(s->text)});
        EXPECT_EQ(reply.text, std::string(s->digest.data(), s->digest.size()));
    }
}

TEST(script_cache, a_restarted_server_gets_the_script_text_and_locking_goes_on) {
    redis_server server;
    edgelock::blocking::lock lock;
    ASSERT_FALSE(lock.open(options_for("cache", {server.url()})));
    ASSERT_FALSE(lock.try_acquire());
    ASSERT_FALSE(lock.release());

    server.restart();
    redis_client client(server.port());
    ASSERT_FALSE(lock.try_acquire())
        << "the stale connection is replaced, the scripts loaded again";
    EXPECT_TRUE(client.exists("cache"));
    EXPECT_EQ(
        client
            .command({"SCRIPT", "EXISTS", std::string(edgelock::release_script.digest.data(), 40)})
            .elements.at(0)
            .integer,
        1);
    EXPECT_FALSE(lock.release());
    EXPECT_FALSE(client.exists("cache"));
}

// Without fencing the acquire is SET NX PX GET and needs no script; the release does.
TEST(script_cache, after_script_flush_evalsha_falls_back_to_eval) {
    redis_server server;
    redis_client client(server.port());
    edgelock::blocking::lock lock;
    ASSERT_FALSE(lock.open(options_for("cache", {server.url()})));
    ASSERT_NO_FATAL_FAILURE(cycle_then_flush(lock, client));
    ASSERT_FALSE(lock.try_acquire()) << "same connection, empty cache: the acquire is no script";
    EXPECT_EQ(calls_of(client, "set"), 1);
    EXPECT_EQ(eval_calls(client), 0);
    EXPECT_TRUE(client.exists("cache"));
    EXPECT_FALSE(lock.release());
    EXPECT_EQ(eval_calls(client), 1) << "the release script was not cached: NOSCRIPT, then EVAL";
    EXPECT_FALSE(client.exists("cache"));
}

// With fencing the acquire is the script, and falls back to EVAL like the release.
TEST(script_cache, after_script_flush_a_fenced_acquire_falls_back_to_eval) {
    redis_server server;
    redis_client client(server.port());
    edgelock::blocking::lock lock;
    edgelock::blocking::lock_options options = options_for("cache", {server.url()});
    options.fencing = true;
    ASSERT_FALSE(lock.open(options));
    ASSERT_NO_FATAL_FAILURE(cycle_then_flush(lock, client));
    ASSERT_FALSE(lock.try_acquire()) << "same connection, empty cache: NOSCRIPT, then EVAL";
    EXPECT_EQ(eval_calls(client), 1);
    EXPECT_TRUE(client.exists("cache"));
    EXPECT_FALSE(lock.release());
    EXPECT_EQ(eval_calls(client), 2) << "the release script was not cached either";
    EXPECT_FALSE(client.exists("cache"));
}

TEST(script_cache, script_flush_during_a_hold_does_not_stop_renewal) {
    redis_server server;
    redis_client client(server.port());
    edgelock::blocking::lock lock;
    ASSERT_FALSE(lock.open(options_for("cache", {server.url()}, 300)));
    edgelock::blocking::hold first;
    ASSERT_FALSE(lock.try_acquire(&first));
    client.command({"SCRIPT", "FLUSH"});
    client.command({"CONFIG", "RESETSTAT"});
    // Renewed through EVAL (the flush emptied the script cache) until a lease after the first.
    const std::int64_t second_lease_over_ms = first.valid_until_ms + 300;
    EXPECT_TRUE(edgelock::testing::eventually(
        [&] {
            return eval_calls(client) >= 1 && edgelock::blocking::now_ms() > second_lease_over_ms;
        },
        5s));
    EXPECT_TRUE(lock.held());
    EXPECT_FALSE(lock.lost());
    EXPECT_GE(eval_calls(client), 1) << "the renewal fell back to EVAL";
    client.command({"SCRIPT", "FLUSH"});
    EXPECT_FALSE(lock.release());
    EXPECT_FALSE(client.exists("cache"));
}

}  // namespace
