// SPDX-License-Identifier: Apache-2.0
// The simulated Redis's scripting against Redis 7.0.15's own answers: each expected reply
// below is what a real redis-server 7.0.15 answered to the same request (digests included,
// which checks the SHA-1 of arbitrary text too): the Lua<->RESP conversions, the error texts
// of a failing redis.call, a Lua error, a compile error, a missing or written global, and
// redis.pcall's error table; WRONGTYPE on the model's sorted sets; a script on a replica;
// the script cache across a restart; math.random's fixed seed; and the instruction limit.
#include "edgelock/sim/script_engine.hpp"

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

#include "edgelock/resp_writer.hpp"
#include "edgelock/sim/redis_model.hpp"
#include "model_node.hpp"

namespace {

using namespace edgelock::sim;

using script_fixture = fixtures::model_node;
using fixtures::command;

TEST_F(script_fixture, a_scripts_value_converts_as_redis_converts_it) {
    EXPECT_EQ(send({"EVAL", "return {1, 2.7, 'x', false, true, {err='bad'}}", "0"}),
              "*6\r\n:1\r\n:2\r\n$1\r\nx\r\n$-1\r\n:1\r\n-bad\r\n");
    EXPECT_EQ(send({"EVAL", "return -3.9", "0"}), ":-3\r\n") << "truncated toward zero";
    EXPECT_EQ(send({"EVAL", "return {1,nil,3}", "0"}), "*1\r\n:1\r\n") << "up to the first nil";
    EXPECT_EQ(send({"EVAL", "return {ok='FINE'}", "0"}), "+FINE\r\n");
    EXPECT_EQ(send({"EVAL", "return redis.error_reply('FENCE_EXHAUSTED x')", "0"}),
              "-FENCE_EXHAUSTED x\r\n");
    EXPECT_EQ(send({"EVAL", "return nil", "0"}), "$-1\r\n");
}

TEST_F(script_fixture, redis_call_converts_replies_and_numbers_as_redis_does) {
    EXPECT_EQ(send({"EVAL", "redis.call('SET', KEYS[1], 0.1) return redis.call('GET', KEYS[1])",
                    "1", "f"}),
              "$19\r\n0.10000000000000001\r\n")
        << "a number argument is written with %.17g";
    EXPECT_EQ(send({"EVAL", "return type(redis.call('SET', KEYS[1], 'v', 'NX'))", "1", "f"}),
              "$7\r\nboolean\r\n")
        << "nil comes back as false";
    EXPECT_EQ(send({"EVAL", "return redis.call('SET', KEYS[1], 'v')['ok']", "1", "f"}),
              "$2\r\nOK\r\n")
        << "a status is a table {ok=...}";
    EXPECT_EQ(send({"EVAL", "return redis.call('INCR', KEYS[1])", "1", "n"}), ":1\r\n");
}

TEST_F(script_fixture, errors_carry_redis_texts_digests_and_lines) {
    EXPECT_EQ(send({"EVAL", "return nil + 1", "0"}),
              "-ERR user_script:1: attempt to perform arithmetic on a nil value script: "
              "d13bc48d895ba57f297c4db70c1d256548a54e2d, on @user_script:1.\r\n");
    EXPECT_EQ(send({"EVAL", "return nosuch()", "0"}),
              "-ERR user_script:1: Script attempted to access nonexistent global variable "
              "'nosuch' script: c843e952e50a3cb0d663a5593c03b89bbafb6aeb, on @user_script:1.\r\n");
    EXPECT_EQ(send({"EVAL", "x = 1 return 1", "0"}),
              "-ERR user_script:1: Attempt to modify a readonly table script: "
              "a9510e78cfea4842ff709c1b51e9d001e7d13797, on @user_script:1.\r\n");
    EXPECT_EQ(
        send({"EVAL", "error({err='MINE boom'})", "0"}),
        "-MINE boom script: 0777ede52146e90186f516026fc55cd4153d1d3e, on @user_script:1.\r\n");
    EXPECT_EQ(send({"EVAL", "return redis.call('NOSUCH')", "0"}),
              "-ERR Unknown Redis command called from script script: "
              "7ae0187b9ac91447963709e3bfd83c5935fec648, on @user_script:1.\r\n");
    EXPECT_EQ(send({"EVAL", "return redis.call('GET', {})", "0"}),
              "-ERR Lua redis lib command arguments must be strings or integers script: "
              "1343dc154e60f8f7264d986cb42bf48ba973e527, on @user_script:1.\r\n");
    EXPECT_EQ(send({"EVAL", "return syntax error here", "0"}),
              "-ERR Error compiling script (new function): user_script:1: '<eof>' expected near "
              "'error'\r\n");
    EXPECT_EQ(send({"EVAL", "return 1", "-1"}), "-ERR Number of keys can't be negative\r\n");
    EXPECT_EQ(send({"EVAL", "return 1", "5", "a"}),
              "-ERR Number of keys can't be greater than number of args\r\n");
}

TEST_F(script_fixture, a_sorted_set_is_the_wrong_type_for_get_and_pcall_returns_the_error) {
    EXPECT_EQ(send({"ZADD", "z", "1", "a"}), ":1\r\n");
    EXPECT_EQ(send({"EVAL", "return redis.call('GET', KEYS[1])", "1", "z"}),
              "-WRONGTYPE Operation against a key holding the wrong kind of value script: "
              "d3c21d0c2b9ca22f82737626a27bcaf5d288f99f, on @user_script:1.\r\n");
    EXPECT_EQ(send({"EVAL", "return redis.pcall('GET', KEYS[1])", "1", "z"}),
              "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n");
    EXPECT_EQ(send({"EVAL", "return redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')", "1", "z"}),
              "*2\r\n$1\r\na\r\n$1\r\n1\r\n");
    EXPECT_EQ(send({"SET", "s", "v"}), "+OK\r\n");
    EXPECT_EQ(send({"ZADD", "s", "1", "a"}),
              "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n");
}

TEST_F(script_fixture, evalsha_finds_a_loaded_script_by_its_digest_in_either_case) {
    EXPECT_EQ(send({"EVALSHA", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "0"}),
              "-NOSCRIPT No matching script. Please use EVAL.\r\n");
    EXPECT_EQ(send({"SCRIPT", "LOAD", "return 1"}),
              "$40\r\ne0e1f9fabfc9d4800c877a703b823ac0578ff8db\r\n");
    EXPECT_EQ(send({"EVALSHA", "E0E1F9FABFC9D4800C877A703B823AC0578FF8DB", "0"}), ":1\r\n");
    node.crash(now_us);
    node.restart(now_us, wall_ms);
    EXPECT_EQ(send({"EVALSHA", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "0"}),
              "-NOSCRIPT No matching script. Please use EVAL.\r\n")
        << "a restart forgets the script cache";
}

// A replica runs a script (EVAL is not a write command) until its first write.
TEST_F(script_fixture, a_replica_runs_a_script_until_it_writes) {
    redis_node master{1, persistence::none, 0};
    node.follow(master, now_us);
    EXPECT_EQ(send({"EVAL", "if redis.call('GET', KEYS[1]) == ARGV[1] then return 1 end return 0",
                    "1", "k", "v"}),
              ":0\r\n");
    EXPECT_EQ(send({"EVAL", "redis.call('SET', KEYS[1], 'x') return 1", "1", "k"}),
              "-READONLY You can't write against a read only replica. script: "
              "82cdd3d7ab6b96f9a5947917c9f163ca06cc907a, on @user_script:1.\r\n");
}

TEST_F(script_fixture, math_random_starts_from_the_same_seed_at_every_call) {
    const std::string first = send({"EVAL", "return tostring(math.random())", "0"});
    EXPECT_EQ(send({"EVAL", "return tostring(math.random())", "0"}), first);
    EXPECT_EQ(send({"EVAL", "return dofile", "0"}).substr(0, 60),
              "-ERR user_script:1: Script attempted to access nonexistent g");
}

TEST_F(script_fixture, a_script_that_never_ends_is_stopped) {
    EXPECT_EQ(send({"EVAL", "while true do end", "0"}).substr(0, 45),
              "-ERR the simulated Redis stopped a script tha");
    EXPECT_EQ(send({"EVAL", "return 1", "0"}), ":1\r\n") << "and the node goes on";
}

}  // namespace
