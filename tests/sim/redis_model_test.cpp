// SPDX-License-Identifier: Apache-2.0
// The Redis model: the six scripts' documented semantics (the fair ones with their line of
// waiters, its expiry by the node's clock and their PUBLISH), SET NX PX GET (and its refusal by
// a server before 7.0), NOSCRIPT, expiry by the node's
// wall clock, persistence on crash and restart, replication and WAIT, and the session's
// handshake (PING, ROLE, SCRIPT LOAD) as the real session writes and checks it.
#include "edgelock/sim/redis_model.hpp"

#include <gtest/gtest.h>

#include <array>
#include <initializer_list>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "edgelock/limits.hpp"
#include "edgelock/resp_reader.hpp"
#include "edgelock/resp_writer.hpp"
#include "edgelock/scripts.hpp"
#include "edgelock/session/handshake.hpp"
#include "model_node.hpp"

namespace {

using namespace edgelock::sim;

const std::string token_a(32, 'a');
const std::string token_b(32, 'b');
const std::string token_c(32, 'c');

using fixtures::command;

std::string digest(const edgelock::script& s) {
    return std::string(s.digest.data(), s.digest.size());
}

std::string eval_request(const edgelock::script& s, std::initializer_list<std::string> rest) {
    std::vector<std::string> all{"EVAL", std::string(s.text)};
    all.insert(all.end(), rest);
    char buffer[edgelock::request_bytes_max];
    edgelock::resp_writer w(buffer, sizeof buffer);
    w.array(all.size());
    for (const std::string& a : all) w.bulk(a);
    return std::string(buffer, w.size());
}

struct node_fixture : fixtures::model_node {
    std::string eval(const edgelock::script& s, std::initializer_list<std::string> rest) {
        return send(eval_request(s, rest));
    }
    std::string acquire(const std::string& token, std::int64_t ttl = 1000) {
        return eval(edgelock::acquire_script, {"1", "lock", token, std::to_string(ttl)});
    }
};

TEST_F(node_fixture, evalsha_needs_the_script_text_first) {
    EXPECT_EQ(
        send(command({"EVALSHA", digest(edgelock::acquire_script), "1", "lock", token_a, "1000"})),
        "-NOSCRIPT No matching script. Please use EVAL.\r\n");
    EXPECT_EQ(acquire(token_a), ":0\r\n");
    EXPECT_EQ(send(command({"EVALSHA", digest(edgelock::release_script), "1", "lock", token_a})),
              "-NOSCRIPT No matching script. Please use EVAL.\r\n")
        << "each script is cached on its own";
    EXPECT_EQ(
        send(command({"EVALSHA", digest(edgelock::acquire_script), "1", "lock", token_a, "1000"})),
        ":0\r\n");
}

TEST_F(node_fixture, acquire_is_set_nx_px_and_refreshes_its_own_token) {
    EXPECT_EQ(acquire(token_a), ":0\r\n");
    EXPECT_EQ(acquire(token_b), "$-1\r\n");
    wall_ms += 600;
    EXPECT_EQ(acquire(token_a), ":0\r\n")
        << "a retried acquire of the same token refreshes the TTL";
    wall_ms += 600;
    ASSERT_NE(node.peek("lock", wall_ms), nullptr) << "the refresh moved the expiry";
    EXPECT_EQ(node.peek("lock", wall_ms)->value, token_a);
}

// The lock's native acquire (lock.hpp, "The acquire on the wire"): the old value comes back,
// and NX leaves an existing key, its value and its expiry alone, ours included.
TEST_F(node_fixture, set_nx_px_get_answers_the_old_value_and_sets_only_a_free_key) {
    const std::string set_a = command({"SET", "lock", token_a, "NX", "PX", "1000", "GET"});
    EXPECT_EQ(send(set_a), "$-1\r\n") << "free: set, and nil for the old value";
    EXPECT_EQ(send(command({"SET", "lock", token_b, "NX", "PX", "1000", "GET"})),
              "$32\r\n" + token_a + "\r\n");
    wall_ms += 600;
    EXPECT_EQ(send(set_a), "$32\r\n" + token_a + "\r\n") << "our own key: answered, not refreshed";
    wall_ms += 401;
    EXPECT_EQ(node.peek("lock", wall_ms), nullptr) << "the expiry is still the first SET's";
    EXPECT_EQ(send(command({"SET", "lock", token_b, "NX", "PX", "1000"})), "+OK\r\n");
    EXPECT_EQ(send(command({"SET", "lock", token_a, "NX", "PX", "1000"})), "$-1\r\n");
    EXPECT_EQ(send(command({"SET", "lock", token_a, "NX", "PX", "0", "GET"})),
              "-ERR invalid expire time in 'set' command\r\n");
}

TEST_F(node_fixture, a_server_before_7_refuses_set_with_nx_and_get_and_changes_nothing) {
    node.behave_as_redis_6();
    EXPECT_EQ(send(command({"SET", "lock", token_a, "NX", "PX", "1000", "GET"})),
              "-ERR syntax error\r\n");
    EXPECT_EQ(node.peek("lock", wall_ms), nullptr);
    EXPECT_EQ(acquire(token_a), ":0\r\n") << "the script still runs";
}

TEST_F(node_fixture, a_server_before_7_refuses_info_with_several_sections_but_answers_info) {
    node.behave_as_redis_6();
    EXPECT_EQ(send(command({"INFO", "server", "persistence"})), "-ERR syntax error\r\n");
    const std::string info = send(command({"INFO"}));
    EXPECT_NE(info.find("redis_version:6."), std::string::npos) << info;
    EXPECT_NE(info.find("uptime_in_seconds:"), std::string::npos) << info;
}

TEST_F(node_fixture, keys_expire_by_the_wall_clock_once_it_passes_the_expiry) {
    EXPECT_EQ(acquire(token_a, 1000), ":0\r\n");
    wall_ms += 1000;
    EXPECT_NE(node.peek("lock", wall_ms), nullptr) << "Redis expires when now > when";
    wall_ms += 1;
    EXPECT_EQ(node.peek("lock", wall_ms), nullptr);
    EXPECT_EQ(acquire(token_b), ":0\r\n");
}

// The counter starts from the node's clock in microseconds and never falls behind it
// (scripts.hpp); within one millisecond it counts on by one.
TEST_F(node_fixture, fence_counter_is_incremented_by_a_successful_acquire_only) {
    EXPECT_EQ(eval(edgelock::acquire_script, {"2", "lock", "{lock}:fence", token_a, "1000"}),
              "$10\r\n1000000000\r\n");
    EXPECT_EQ(eval(edgelock::acquire_script, {"2", "lock", "{lock}:fence", token_b, "1000"}),
              "$-1\r\n");
    EXPECT_EQ(eval(edgelock::acquire_script, {"2", "lock", "{lock}:fence", token_a, "1000"}),
              "$10\r\n1000000001\r\n");
    wall_ms += 5;
    EXPECT_EQ(eval(edgelock::acquire_script, {"2", "lock", "{lock}:fence", token_a, "1000"}),
              "$10\r\n1000005000\r\n");
}

TEST_F(node_fixture,
       info_tells_a_new_run_id_and_the_uptime_after_a_restart_and_config_get_the_fsync_policy) {
    node.set_started(wall_ms - 90'500);
    const std::string before = send(command({"INFO", "server", "persistence", "memory"}));
    EXPECT_NE(before.find("uptime_in_seconds:91\r\n"), std::string::npos)
        << "whole seconds, as Redis counts: " << before;
    EXPECT_NE(before.find("aof_enabled:0\r\n"), std::string::npos);
    node.crash(now_us);
    node.restart(now_us + 1000, wall_ms + 3'000);
    wall_ms += 5'200;
    const std::string after = send(command({"INFO", "server", "persistence", "memory"}));
    EXPECT_NE(after.find("uptime_in_seconds:2\r\n"), std::string::npos) << after;
    const auto run_id = [](const std::string& info) {
        return info.substr(info.find("run_id:"), 47);
    };
    EXPECT_NE(run_id(before), run_id(after));
    EXPECT_EQ(send(command({"CONFIG", "GET", "appendfsync"})),
              "*2\r\n$11\r\nappendfsync\r\n$8\r\neverysec\r\n");
    node.refuse_config_get();
    EXPECT_EQ(send(command({"CONFIG", "GET", "appendfsync"})).rfind("-NOPERM", 0), 0u);
}

// The real scripts hand fence values back as GET's string (scripts.hpp); so does the model,
// exactly, up to the counter's last value.
TEST_F(node_fixture, fence_values_are_exact_up_to_the_counter_maximum_then_acquire_is_refused) {
    const auto acquire_fenced = [&](const std::string& token) {
        return eval(edgelock::acquire_script, {"2", "lock", "{lock}:fence", token, "1000"});
    };
    const auto raise_and_release = [&](const std::string& token, const std::string& value) {
        EXPECT_EQ(eval(edgelock::raise_script, {"2", "lock", "{lock}:fence", token, value}),
                  ":1\r\n");
        EXPECT_EQ(eval(edgelock::release_script, {"1", "lock", token}), ":1\r\n");
    };
    acquire_fenced(token_a);
    raise_and_release(token_a, "9007199254740993");
    EXPECT_EQ(acquire_fenced(token_b), "$16\r\n9007199254740994\r\n");
    raise_and_release(token_b, "9223372036854775806");
    EXPECT_EQ(acquire_fenced(token_a), "$19\r\n9223372036854775807\r\n");
    EXPECT_EQ(eval(edgelock::release_script, {"1", "lock", token_a}), ":1\r\n");
    EXPECT_EQ(acquire_fenced(token_b), "-FENCE_EXHAUSTED the fence counter is at 2^63-1\r\n");
    EXPECT_EQ(node.peek("lock", wall_ms), nullptr)
        << "an exhausted counter leaves the lock key alone";
    EXPECT_EQ(node.peek("{lock}:fence", wall_ms)->value, "9223372036854775807");
    EXPECT_EQ(node.peek("{lock}:fence", wall_ms)->expire_at_ms, -1)
        << "it persists, as PERSIST does";
}

// The renew script's PEXPIRE reads its TTL as Redis's string2ll does; its error stops the
// script, with the script's digest and line, as Redis 7.0 writes it.
TEST_F(node_fixture, numeric_arguments_are_parsed_as_redis_string2ll_does) {
    acquire(token_a);
    const std::string refused =
        "-ERR value is not an integer or out of range script: " + digest(edgelock::renew_script) +
        ", on @user_script:2.\r\n";
    for (const char* bad : {"9223372036854775808", "99999999999999999999", "-0", "007", "+7", "",
                            " 7", "7 ", "7x", "-", "--7", "-9223372036854775809"}) {
        EXPECT_EQ(eval(edgelock::renew_script, {"1", "lock", token_a, bad}), refused) << bad;
    }
    EXPECT_EQ(eval(edgelock::renew_script, {"1", "lock", token_a, "2000"}), ":1\r\n");
}

TEST_F(node_fixture, raise_only_moves_the_counter_up_and_only_for_the_owner) {
    acquire(token_a);
    EXPECT_EQ(eval(edgelock::raise_script, {"2", "lock", "{lock}:fence", token_a, "7"}), ":1\r\n");
    EXPECT_EQ(node.peek("{lock}:fence", wall_ms)->value, "7");
    EXPECT_EQ(eval(edgelock::raise_script, {"2", "lock", "{lock}:fence", token_a, "3"}), ":1\r\n");
    EXPECT_EQ(node.peek("{lock}:fence", wall_ms)->value, "7");
    EXPECT_EQ(eval(edgelock::raise_script, {"2", "lock", "{lock}:fence", token_b, "9"}), ":0\r\n");
    EXPECT_EQ(node.peek("{lock}:fence", wall_ms)->value, "7");
}

// The semaphore's renew on the model, as on a real server (permit_scripts_test): it extends a
// live lease of ours and nothing else, neither a token it never held nor one whose lease ran
// out (and went to another owner meanwhile).
TEST_F(node_fixture, a_permit_renew_extends_only_a_live_lease_of_ours) {
    const auto take = [&](const std::string& token) {
        return eval(edgelock::permit_acquire_script, {"1", "sem", token, "1000", "1"});
    };
    const auto renew = [&](const std::string& token) {
        return eval(edgelock::permit_renew_script, {"1", "sem", token, "1000"});
    };
    EXPECT_EQ(take(token_a), ":0\r\n");
    EXPECT_EQ(renew(token_b), ":0\r\n") << "never held";
    wall_ms += 1001;
    EXPECT_EQ(take(token_b), ":0\r\n") << "a's lease ran out: its permit is b's";
    EXPECT_EQ(renew(token_a), ":0\r\n") << "a's lease is not brought back";
    EXPECT_EQ(take(token_a), "$-1\r\n") << "one permit, held by b";
    EXPECT_EQ(renew(token_b), ":1\r\n");
}

// The fenced semaphore on the model, as on a real server (permit_scripts_test): each lease
// holds a permit no other live lease holds, its token is the first above the counter whose
// remainder by N is a free permit, and a retried acquire keeps its permit.
TEST_F(node_fixture, fenced_leases_hold_permits_of_their_own_and_tokens_name_them) {
    const auto take = [&](const std::string& token) {
        const std::string reply =
            eval(edgelock::permit_acquire_script,
                 {"3", "sem", "{sem}:fence", "{sem}:slots", token, "1000", "3"});
        EXPECT_EQ(reply[0], '$') << reply;
        return std::stoll(reply.substr(reply.find("\r\n") + 2));
    };
    const std::string token_d(32, 'd');
    const std::int64_t a = take(token_a);
    const std::int64_t b = take(token_b);
    const std::int64_t c = take(token_c);
    EXPECT_EQ((std::set<std::int64_t>{a % 3, b % 3, c % 3}).size(), 3u) << "a permit each";
    EXPECT_EQ(b, a + 1) << "the nearest free permit: the counter moves by one";
    EXPECT_EQ(c, b + 1);
    EXPECT_EQ(eval(edgelock::permit_release_script, {"1", "sem", token_b}), ":1\r\n");
    const std::int64_t d = take(token_d);
    EXPECT_EQ(d % 3, b % 3) << "b's permit, the one free";
    EXPECT_GT(d, c);
    const std::int64_t again = take(token_a);
    EXPECT_EQ(again % 3, a % 3) << "a retried acquire keeps its permit";
    EXPECT_GT(again, d);
}

// As the real scripts do (scripts.hpp): every write of the counter sets its expiry to
// fence_ttl_ms, which INCR would otherwise keep and SET would clear.
TEST_F(node_fixture, acquire_and_raise_give_the_counter_the_fence_expiry) {
    const auto fence_expiry = [&] { return node.peek("{lock}:fence", wall_ms)->expire_at_ms; };
    eval(edgelock::acquire_script, {"2", "lock", "{lock}:fence", token_a, "1000"});
    EXPECT_EQ(fence_expiry(), wall_ms + edgelock::fence_ttl_ms);
    wall_ms += 10;
    EXPECT_EQ(
        eval(edgelock::raise_script, {"2", "lock", "{lock}:fence", token_a, "9007199254740993"}),
        ":1\r\n");
    EXPECT_EQ(fence_expiry(), wall_ms + edgelock::fence_ttl_ms);
    wall_ms += 10;
    EXPECT_EQ(eval(edgelock::raise_script, {"2", "lock", "{lock}:fence", token_a, "3"}), ":1\r\n");
    EXPECT_EQ(fence_expiry(), wall_ms + edgelock::fence_ttl_ms)
        << "a raise that moves nothing still refreshes";
    wall_ms += edgelock::fence_ttl_ms + 1;
    EXPECT_EQ(node.peek("{lock}:fence", wall_ms), nullptr);
    EXPECT_EQ(eval(edgelock::acquire_script, {"2", "lock", "{lock}:fence", token_b, "1000"}),
              "$12\r\n" + std::to_string(wall_ms * 1000) + "\r\n")
        << "an expired counter restarts from the clock";
}

TEST_F(node_fixture, renew_and_release_compare_the_token) {
    acquire(token_a);
    EXPECT_EQ(eval(edgelock::renew_script, {"1", "lock", token_b, "1000"}), ":0\r\n");
    wall_ms += 900;
    EXPECT_EQ(eval(edgelock::renew_script, {"1", "lock", token_a, "1000"}), ":1\r\n");
    wall_ms += 900;
    EXPECT_NE(node.peek("lock", wall_ms), nullptr);
    EXPECT_EQ(eval(edgelock::release_script, {"1", "lock", token_b}), ":0\r\n");
    EXPECT_EQ(eval(edgelock::release_script, {"1", "lock", token_a}), ":1\r\n");
    EXPECT_EQ(eval(edgelock::release_script, {"1", "lock", token_a}), ":0\r\n");
    EXPECT_EQ(send(command({"DEL", "lock"})), ":0\r\n");
}

TEST_F(node_fixture, unknown_commands_and_scripts_are_errors) {
    EXPECT_EQ(send(command({"FLUSHALL"}))[0], '-');
    EXPECT_EQ(send(command({"EVAL", "return redis.call('FLUSHALL')", "0"}))[0], '-');
    EXPECT_EQ(eval(edgelock::acquire_script, {"1", "lock", token_a, "soon"})[0], '-');
}

struct fair_fixture : node_fixture {
    // The lock's fair acquire and release as the core sends them: KEYS lock queue qttl.
    std::string fair_acquire(const std::string& token, std::int64_t ttl = 1000,
                             std::int64_t entry_ttl = 500) {
        return eval(edgelock::fair_acquire_script,
                    {"3", "lock", "{lock}:queue", "{lock}:qttl", token, std::to_string(ttl),
                     std::to_string(entry_ttl)});
    }
    std::string join_line(const std::string& token) {
        return eval(edgelock::fair_acquire_script,
                    {"3", "lock", "{lock}:queue", "{lock}:qttl", token, "1000", "500", "join"});
    }
    std::string fair_release(const std::string& token, bool stay = false) {
        if (stay)
            return eval(edgelock::fair_release_script,
                        {"3", "lock", "{lock}:queue", "{lock}:qttl", token, "stay"});
        return eval(edgelock::fair_release_script,
                    {"3", "lock", "{lock}:queue", "{lock}:qttl", token});
    }
    std::vector<std::string> line() const {
        std::vector<std::string> members;
        const redis_entry* e = node.peek("{lock}:queue", wall_ms);
        if (e == nullptr) return members;
        for (const zset_member& m : decode_zset(e->value)) members.push_back(m.member);
        return members;
    }
    // Each message: a waiter's token (a wake-up), or its token and fence (a grant).
    std::vector<std::string> published() const {
        std::vector<std::string> messages;
        for (const node_output::publication& p : out.published) {
            EXPECT_EQ(p.channel, "{lock}:queue:" + p.message.substr(0, p.message.find(' ')))
                << "the woken waiter's own channel";
            messages.push_back(p.message);
        }
        return messages;
    }
};

TEST_F(fair_fixture,
       a_free_lock_with_an_empty_line_is_taken_and_a_busy_one_queues_in_arrival_order) {
    EXPECT_EQ(fair_acquire(token_a), ":0\r\n");
    ASSERT_EQ(out.grants.size(), 1u);
    EXPECT_TRUE(out.grants[0].fair);
    EXPECT_EQ(out.grants[0].queued_score, -1);
    EXPECT_EQ(fair_acquire(token_b), "$-1\r\n");
    EXPECT_TRUE(published().empty()) << "the lock is held: nobody to wake";
    EXPECT_TRUE(out.grants.empty());
    ++wall_ms;
    EXPECT_EQ(fair_acquire(token_c), "$-1\r\n");
    EXPECT_EQ(fair_acquire(token_b), "$-1\r\n") << "b keeps its place";
    EXPECT_EQ(line(), (std::vector<std::string>{token_a, token_b, token_c})) << "the holder first";
    EXPECT_EQ(fair_acquire(token_a, 2000), ":0\r\n") << "the holder's own token renews";
    EXPECT_EQ(node.peek("lock", wall_ms)->expire_at_ms, wall_ms + 2000);
}

TEST_F(fair_fixture, a_release_hands_the_lock_to_the_head_until_its_entry_would_expire) {
    fair_acquire(token_a);
    fair_acquire(token_b);
    fair_acquire(token_c);
    wall_ms += 100;
    EXPECT_EQ(fair_release(token_a), ":1\r\n");
    EXPECT_EQ(published(), (std::vector<std::string>{token_b + " 0"})) << "a grant, unfenced";
    ASSERT_EQ(out.grants.size(), 1u) << "the fifo check judges it";
    EXPECT_TRUE(out.grants[0].fair);
    EXPECT_EQ(out.grants[0].token, token_b);
    ASSERT_NE(node.peek("lock", wall_ms), nullptr);
    EXPECT_EQ(node.peek("lock", wall_ms)->value, token_b);
    EXPECT_EQ(node.peek("lock", wall_ms)->expire_at_ms, wall_ms - 100 + 500)
        << "it ends with b's entry in the line";
    EXPECT_EQ(fair_acquire(token_c), "$-1\r\n") << "c is not at the head";
    EXPECT_TRUE(published().empty()) << "the lock is not free: nobody is woken again";
    EXPECT_EQ(fair_acquire(token_b), ":0\r\n") << "b's attempt takes its key";
    EXPECT_EQ(node.peek("lock", wall_ms)->expire_at_ms, wall_ms + 1000) << "for its own ttl";
    EXPECT_EQ(line(), (std::vector<std::string>{token_b, token_c})) << "the taker heads the line";
    EXPECT_NE(node.peek("{lock}:qttl", wall_ms)->value.find(token_b), std::string::npos);
    EXPECT_EQ(fair_release(token_a), ":0\r\n") << "not the holder: the lock stays";
    EXPECT_TRUE(published().empty()) << "the lock is held";
}

TEST_F(fair_fixture, waiters_whose_entry_expired_leave_the_line_by_the_nodes_clock) {
    fair_acquire(token_a);
    fair_acquire(token_b, 1000, 100);
    wall_ms += 50;
    fair_acquire(token_c, 1000, 500);
    EXPECT_EQ(line(), (std::vector<std::string>{token_a, token_b, token_c}));
    wall_ms += 50;  // b's entry expires at this very instant: the purge takes score <= now
    EXPECT_EQ(fair_release(token_a), ":1\r\n");
    EXPECT_EQ(published(), (std::vector<std::string>{token_c + " 0"}));
    EXPECT_EQ(line(), (std::vector<std::string>{token_c}));
    wall_ms += 1000;  // both queue keys expire with the last entry, and the grant with them
    EXPECT_EQ(node.peek("{lock}:queue", wall_ms), nullptr);
    EXPECT_EQ(node.peek("{lock}:qttl", wall_ms), nullptr);
    EXPECT_EQ(node.peek("lock", wall_ms), nullptr);
    EXPECT_EQ(fair_acquire(token_b), ":0\r\n") << "an empty line: anyone takes the free lock";
}

TEST_F(fair_fixture, the_queue_keys_live_at_least_an_entry_ttl_and_a_later_arrival_is_behind) {
    fair_acquire(token_a, 1000, 50);
    fair_acquire(token_b, 1000, 300);
    EXPECT_EQ(node.peek("{lock}:queue", wall_ms)->expire_at_ms, wall_ms + 300);
    fair_acquire(token_c, 1000, 100);
    EXPECT_EQ(node.peek("{lock}:queue", wall_ms)->expire_at_ms, wall_ms + 300) << "never shortened";
    const std::vector<zset_member> members = decode_zset(node.peek("{lock}:queue", wall_ms)->value);
    ASSERT_EQ(members.size(), 3u);
    EXPECT_EQ(members[0].score, wall_ms) << "the holder, who found the line empty";
    EXPECT_EQ(members[1].score, wall_ms + 1) << "same millisecond: one after the last";
    EXPECT_EQ(members[2].score, wall_ms + 2);
}

TEST_F(fair_fixture, a_release_by_a_waiter_leaving_the_line_wakes_the_next_one) {
    fair_acquire(token_a);
    fair_acquire(token_b);
    fair_acquire(token_c);
    EXPECT_EQ(fair_release(token_b), ":0\r\n");
    EXPECT_TRUE(published().empty()) << "the lock is still held";
    EXPECT_EQ(line(), (std::vector<std::string>{token_a, token_c}));
    EXPECT_EQ(fair_release(token_a), ":1\r\n");
    EXPECT_EQ(published(), (std::vector<std::string>{token_c + " 0"}));
}

TEST_F(fair_fixture, a_cleanup_that_stays_frees_the_lock_and_keeps_the_waiters_place) {
    fair_acquire(token_a);
    fair_acquire(token_b);
    fair_acquire(token_c);
    EXPECT_EQ(fair_release(token_b, true), ":0\r\n");
    EXPECT_EQ(line(), (std::vector<std::string>{token_a, token_b, token_c})) << "b keeps its place";
    EXPECT_EQ(fair_release(token_a), ":1\r\n");
    EXPECT_EQ(published(), (std::vector<std::string>{token_b + " 0"}));
    EXPECT_EQ(fair_acquire(token_b), ":0\r\n");
    EXPECT_EQ(fair_release(token_b, true), ":1\r\n") << "a key the attempt took is deleted";
    EXPECT_EQ(published(), (std::vector<std::string>{token_b}))
        << "b, whose answer was lost, is still first";
    EXPECT_EQ(line(), (std::vector<std::string>{token_b, token_c}));
    EXPECT_EQ(fair_acquire(token_c), "$-1\r\n");
    EXPECT_EQ(fair_acquire(token_b), ":0\r\n");
}

// The fair semaphore (2 permits) on the model: each new lease is a grant the fifo check
// judges (a renewal is none), and a release wakes as many waiters that hold no lease as
// permits are free, from the head of the line.
TEST_F(fair_fixture, a_permit_release_wakes_a_waiter_per_free_permit_and_each_lease_is_a_grant) {
    const auto take = [&](const std::string& token) {
        return eval(edgelock::fair_permit_acquire_script,
                    {"3", "sem", "{sem}:queue", "{sem}:qttl", token, "1000", "500", "2"});
    };
    const auto give_back = [&](const std::string& token) {
        return eval(edgelock::fair_permit_release_script,
                    {"3", "sem", "{sem}:queue", "{sem}:qttl", token, "2"});
    };
    const auto woken = [&] {
        std::vector<std::string> messages;
        for (const node_output::publication& p : out.published) messages.push_back(p.message);
        return messages;
    };
    const std::string token_d(32, 'd');
    EXPECT_EQ(take(token_a), ":0\r\n");
    ASSERT_EQ(out.grants.size(), 1u);
    EXPECT_EQ(out.grants[0].token, token_a);
    EXPECT_TRUE(out.grants[0].fair);
    EXPECT_EQ(take(token_b), ":0\r\n");
    EXPECT_EQ(out.grants.size(), 1u);
    EXPECT_EQ(take(token_a), ":0\r\n") << "a renews its own lease";
    EXPECT_TRUE(out.grants.empty()) << "a renewal grants nothing";
    ++wall_ms;
    EXPECT_EQ(take(token_c), "$-1\r\n");
    ++wall_ms;
    EXPECT_EQ(take(token_d), "$-1\r\n");
    EXPECT_EQ(give_back(token_a), ":1\r\n");
    EXPECT_EQ(woken(), (std::vector<std::string>{token_c})) << "one permit free: the head";
    EXPECT_EQ(give_back(token_b), ":1\r\n");
    EXPECT_EQ(woken(), (std::vector<std::string>{token_c, token_d})) << "two free: both waiters";
    EXPECT_EQ(take(token_c), ":0\r\n");
    ASSERT_EQ(out.grants.size(), 1u);
    EXPECT_GE(out.grants[0].queued_score, 0) << "c took its permit from its place in line";
}

TEST_F(fair_fixture, a_head_without_an_expiry_entry_drops_out) {
    fair_acquire(token_a);
    fair_acquire(token_b);
    fair_acquire(token_c);
    // b's entry goes, as an eviction or a DEL would take it.
    EXPECT_EQ(send(command({"ZREM", "{lock}:qttl", token_b})), ":1\r\n");
    EXPECT_EQ(fair_release(token_a), ":1\r\n");
    EXPECT_EQ(published(), (std::vector<std::string>{token_c + " 0"}));
    EXPECT_EQ(line(), (std::vector<std::string>{token_c}));
}

TEST_F(fair_fixture, a_waiter_that_only_joins_takes_its_place_but_never_the_lock) {
    EXPECT_EQ(join_line(token_a), "$-1\r\n");
    EXPECT_EQ(node.peek("lock", wall_ms), nullptr);
    EXPECT_TRUE(published().empty());
    EXPECT_EQ(join_line(token_b), "$-1\r\n");
    EXPECT_EQ(published(), (std::vector<std::string>{token_a}));
    EXPECT_EQ(join_line(token_a), "$-1\r\n");
    EXPECT_TRUE(published().empty()) << "the head does not wake itself";
    EXPECT_EQ(fair_acquire(token_b), "$-1\r\n");
    EXPECT_EQ(fair_acquire(token_a), ":0\r\n");
}

TEST_F(fair_fixture, fair_scripts_run_by_digest_once_loaded_and_fence_as_the_acquire_does) {
    EXPECT_EQ(send(command({"SCRIPT", "LOAD", std::string(edgelock::fair_acquire_script.text)})),
              "$40\r\n" + digest(edgelock::fair_acquire_script) + "\r\n");
    const std::string reply =
        send(command({"EVALSHA", digest(edgelock::fair_acquire_script), "4", "lock", "{lock}:queue",
                      "{lock}:qttl", "{lock}:fence", token_a, "1000", "500"}));
    EXPECT_EQ(reply, "$10\r\n" + std::to_string(wall_ms * 1000) + "\r\n");
    EXPECT_EQ(classify_request(
                  eval_request(edgelock::fair_release_script, {"3", "a", "b", "c", token_a})),
              script_id::fair_release);
    EXPECT_EQ(send(command({"EVALSHA", digest(edgelock::fair_release_script), "3", "lock", "q", "t",
                            token_a})),
              "-NOSCRIPT No matching script. Please use EVAL.\r\n");
}

TEST_F(fair_fixture, a_fenced_fair_acquire_gives_the_counter_the_fence_expiry) {
    eval(edgelock::fair_acquire_script,
         {"4", "lock", "{lock}:queue", "{lock}:qttl", "{lock}:fence", token_a, "1000", "500"});
    EXPECT_EQ(node.peek("{lock}:fence", wall_ms)->expire_at_ms, wall_ms + edgelock::fence_ttl_ms);
}

TEST_F(fair_fixture, the_line_replicates_and_survives_a_restart_as_any_key) {
    redis_node replica{1, persistence::none, 0};
    replica.follow(node, now_us);
    fair_acquire(token_a);
    fair_acquire(token_b);
    std::int64_t offset = node.offset() - static_cast<std::int64_t>(out.effects.size());
    for (const repl_op& op : out.effects) replica.apply(op, ++offset, now_us);
    const redis_entry* copy = replica.peek("{lock}:queue", wall_ms);
    ASSERT_NE(copy, nullptr);
    EXPECT_EQ(decode_zset(copy->value).back().member, token_b);
}

TEST_F(node_fixture, restart_without_persistence_forgets_everything_and_the_script_cache) {
    acquire(token_a);
    node.crash(now_us);
    EXPECT_FALSE(node.up());
    node.restart(now_us + 1000, 0);
    EXPECT_EQ(node.peek("lock", wall_ms), nullptr);
    EXPECT_EQ(
        send(command({"EVALSHA", digest(edgelock::acquire_script), "1", "lock", token_b, "1000"})),
        "-NOSCRIPT No matching script. Please use EVAL.\r\n");
}

TEST(redis_model_persistence, everysec_loses_what_came_after_the_last_fsync) {
    redis_node node(0, persistence::everysec, 0);
    node_output out;
    auto set = [&](const std::string& key, std::int64_t now_us) {
        char buffer[2048];
        edgelock::resp_writer w(buffer, sizeof buffer);
        w.array(6);
        w.bulk("EVAL");
        w.bulk(edgelock::acquire_script.text);
        w.bulk("1");
        w.bulk(key);
        w.bulk(token_a);
        w.bulk("100000");
        out.clear();
        node.receive(0, 1, std::string(buffer, w.size()), 0, now_us, out);
    };
    set("a", 500'000);    // before the fsync at 1 s
    set("b", 1'200'000);  // after it
    node.crash(1'900'000);
    node.restart(2'000'000, 0);
    EXPECT_NE(node.peek("a", 0), nullptr);
    EXPECT_EQ(node.peek("b", 0), nullptr);

    set("c", 2'100'000);
    node.crash(3'000'000);  // the fsync at 3 s runs before the crash at the same instant
    node.restart(3'500'000, 0);
    EXPECT_NE(node.peek("c", 0), nullptr);
}

TEST(redis_model_persistence, always_keeps_everything_with_its_expiry) {
    redis_node node(0, persistence::always, 0);
    node_output out;
    char buffer[2048];
    edgelock::resp_writer w(buffer, sizeof buffer);
    w.array(6);
    w.bulk("EVAL");
    w.bulk(edgelock::acquire_script.text);
    w.bulk("1");
    w.bulk("lock");
    w.bulk(token_a);
    w.bulk("1000");
    node.receive(0, 1, std::string(buffer, w.size()), 50'000, 1'000, out);
    node.crash(2'000);
    node.restart(3'000, 0);
    EXPECT_NE(node.peek("lock", 50'999), nullptr);
    EXPECT_EQ(node.peek("lock", 51'001), nullptr) << "the absolute expiry survives the restart";
}

// volatile-* takes keys with a TTL (the lock key, not the counter); allkeys-* takes both. A
// master sends the evictions on as DELs; a replica does not evict by itself.
TEST(redis_model_eviction, a_policy_evicts_its_keys_from_a_master_and_info_reports_it) {
    for (const eviction_policy policy :
         {eviction_policy::volatile_keys, eviction_policy::all_keys}) {
        redis_node master(0, persistence::none, 0);
        redis_node replica(1, persistence::none, 0);
        replica.follow(master, 0);
        master.set_eviction(policy);
        replica.set_eviction(policy);
        node_output out;
        master.receive(
            0, 1,
            eval_request(edgelock::acquire_script, {"2", "lock", "{lock}:fence", token_a, "1000"}),
            10'000, 0, out);
        for (const repl_op& op : out.effects) replica.apply(op, master.offset(), 0);
        const bool all = policy == eviction_policy::all_keys;

        std::vector<repl_op> evicted;
        replica.evict(0, evicted);
        EXPECT_TRUE(evicted.empty()) << "replicas leave eviction to their master";
        master.evict(0, evicted);
        // The fence counter has an expiry (fence_ttl_ms), so a volatile-* policy may take it
        // as well; it then restarts from the clock, as an expired one does.
        ASSERT_EQ(evicted.size(), 2u);
        EXPECT_TRUE(evicted[0].del);
        EXPECT_EQ(master.peek("lock", 10'000), nullptr);
        EXPECT_EQ(master.peek("{lock}:fence", 10'000), nullptr);
        for (const repl_op& op : evicted) replica.apply(op, master.offset(), 0);
        EXPECT_EQ(replica.peek("lock", 10'000), nullptr) << "the replica follows";

        out.clear();
        master.receive(0, 1, command({"INFO", "server", "persistence", "memory"}), 10'000, 0, out);
        EXPECT_NE(out.replies[0].bytes.find(all ? "maxmemory_policy:allkeys-lru"
                                                : "maxmemory_policy:volatile-lru"),
                  std::string::npos);
        EXPECT_EQ(out.replies[0].bytes.find("maxmemory:0\r\n"), std::string::npos);
    }
    redis_node plain(0, persistence::none, 0);
    std::vector<repl_op> evicted;
    plain.evict(0, evicted);
    EXPECT_TRUE(evicted.empty()) << "noeviction, the default";
}

TEST(redis_model_replication, replicas_apply_effects_in_order_and_refuse_writes) {
    redis_node master(0, persistence::none, 0);
    redis_node replica(1, persistence::none, 0);
    replica.follow(master, 0);
    EXPECT_FALSE(replica.is_master());
    node_output out;
    char buffer[2048];
    edgelock::resp_writer w(buffer, sizeof buffer);
    w.array(6);
    w.bulk("EVAL");
    w.bulk(edgelock::acquire_script.text);
    w.bulk("1");
    w.bulk("lock");
    w.bulk(token_a);
    w.bulk("1000");
    const std::string request(buffer, w.size());
    master.receive(0, 1, request, 10'000, 0, out);
    ASSERT_EQ(out.effects.size(), 1u);
    EXPECT_EQ(out.effects[0].expire_at_ms, 11'000) << "replicated with its absolute expiry";
    replica.apply(out.effects[0], master.offset(), 0);
    replica.apply(out.effects[0], master.offset(), 0);  // a duplicate is ignored
    ASSERT_NE(replica.peek("lock", 10'500), nullptr);
    EXPECT_EQ(replica.peek("lock", 11'001), nullptr) << "judged by the replica's own wall clock";
    out.clear();
    replica.receive(0, 1, request, 10'000, 0, out);
    EXPECT_EQ(out.replies[0].bytes.substr(0, 9), "-READONLY");
}

// Redis 7.0's gates before a command runs. A node loading its data set after a start answers
// LOADING to all but the commands flagged for it, the handshake's PING included, and serves
// once the loading is over.
TEST_F(node_fixture, a_loading_node_answers_loading_until_it_has_loaded) {
    const std::string loading = "-LOADING Redis is loading the dataset in memory\r\n";
    node.load_until(now_us + 1000);
    EXPECT_EQ(send(command({"PING"})), loading);
    EXPECT_EQ(send(command({"SET", "lock", token_a, "NX", "PX", "1000"})), loading);
    EXPECT_EQ(acquire(token_a), loading);
    EXPECT_EQ(send(command({"WAIT", "1", "50"})), loading);
    EXPECT_EQ(send(command({"SCRIPT", "LOAD", std::string(edgelock::acquire_script.text)})),
              loading);
    EXPECT_EQ(send(command({"ROLE"})).substr(0, 10), "*3\r\n$6\r\nma");
    EXPECT_EQ(send(command({"INFO"})).substr(0, 1), "$");
    now_us += 1000;
    EXPECT_EQ(send(command({"PING"})), "+PONG\r\n");
    EXPECT_EQ(acquire(token_a), ":0\r\n");
}

// replica-serve-stale-data no: a replica whose link to its master is down answers MASTERDOWN
// to reads, scripts and PING, but READONLY to a write (Redis checks that first, before
// LOADING too), and ROLE and INFO as ever. With the link up, or with stale data served (the
// default), it answers.
TEST(redis_model_gates, a_replica_without_its_master_answers_masterdown_if_told_so) {
    redis_node master(0, persistence::none, 0);
    redis_node replica(1, persistence::none, 0);
    replica.follow(master, 0);
    node_output out;
    const auto send = [&](const std::string& bytes) {
        out.clear();
        replica.receive(0, 1, bytes, 10'000, 0, out);
        return out.replies.at(0).bytes;
    };
    const std::string masterdown =
        "-MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.\r\n";
    replica.set_master_link(false);
    EXPECT_EQ(send(command({"GET", "lock"})), "$-1\r\n") << "stale data served by default";
    replica.refuse_stale_data();
    EXPECT_EQ(send(command({"GET", "lock"})), masterdown);
    EXPECT_EQ(send(command({"PING"})), masterdown);
    EXPECT_EQ(send(eval_request(edgelock::renew_script, {"1", "lock", token_a, "1000"})),
              masterdown);
    EXPECT_EQ(send(command({"SET", "lock", token_a, "NX", "PX", "1000"})).substr(0, 9),
              "-READONLY");
    EXPECT_EQ(send(command({"ROLE"})).substr(0, 10), "*5\r\n$5\r\nsl");
    replica.load_until(1000);
    EXPECT_EQ(send(command({"SET", "lock", token_a, "NX", "PX", "1000"})).substr(0, 9), "-READONLY")
        << "loading or not";
    replica.load_until(0);
    replica.set_master_link(true);
    EXPECT_EQ(send(command({"PING"})), "+PONG\r\n");
}

TEST(redis_model_wait, wait_counts_replicas_that_acknowledged_the_last_write) {
    redis_node master(0, persistence::none, 0);
    redis_node r1(1, persistence::none, 0);
    redis_node r2(2, persistence::none, 0);
    r1.follow(master, 0);
    r2.follow(master, 0);
    node_output out;
    EXPECT_EQ((master.receive(0, 1, command({"WAIT", "1", "50"}), 0, 0, out), out.replies[0].bytes),
              ":2\r\n")
        << "no write yet: every replica is up to date";
    out.clear();
    char buffer[2048];
    edgelock::resp_writer w(buffer, sizeof buffer);
    w.array(6);
    w.bulk("EVAL");
    w.bulk(edgelock::acquire_script.text);
    w.bulk("1");
    w.bulk("lock");
    w.bulk(token_a);
    w.bulk("1000");
    master.receive(0, 1, std::string(buffer, w.size()), 0, 0, out);
    out.clear();
    master.receive(0, 1, command({"WAIT", "1", "50"}), 0, 1'000, out);
    EXPECT_TRUE(out.replies.empty()) << "blocked until an ack or the timeout";
    EXPECT_EQ(out.wait_deadline_us, 51'000);
    out.clear();
    master.receive(0, 1, command({"WAIT", "1", "50"}), 0, 2'000, out);
    EXPECT_TRUE(out.replies.empty()) << "queued behind the blocked WAIT";
    master.on_ack(1, master.offset(), 0, 3'000, out);
    ASSERT_EQ(out.replies.size(), 2u);
    EXPECT_EQ(out.replies[0].bytes, ":1\r\n");
    EXPECT_EQ(out.replies[1].bytes, ":1\r\n");
    out.clear();

    master.receive(1, 1, command({"WAIT", "3", "50"}), 0, 10'000, out);
    EXPECT_TRUE(out.replies.empty());
    master.on_wait_deadline(0, 59'999, out);
    EXPECT_TRUE(out.replies.empty());
    master.on_wait_deadline(0, 60'000, out);
    ASSERT_EQ(out.replies.size(), 1u);
    EXPECT_EQ(out.replies[0].bytes, ":2\r\n")
        << "at the timeout, the count so far (client 1 wrote nothing)";
}

TEST(redis_model_requests, classify_matches_a_full_parse) {
    const std::string sha =
        command({"EVALSHA", digest(edgelock::renew_script), "1", "lock", token_a, "9"});
    const std::string text =
        command({"EVAL", std::string(edgelock::release_script.text), "1", "lock", token_a});
    EXPECT_EQ(classify_request(sha), script_id::renew);
    EXPECT_EQ(classify_request(text), script_id::release);
    EXPECT_EQ(classify_request(command({"WAIT", "1", "5"})), script_id::none);
    EXPECT_EQ(classify_request(command({"SET", "lock", token_a, "NX", "PX", "9", "GET"})),
              script_id::acquire)
        << "the native form is the lock's acquire too";
    request_view r;
    ASSERT_TRUE(parse_request(sha.data(), sha.size(), r));
    EXPECT_EQ(request_script(r), script_id::renew);
    EXPECT_FALSE(parse_request(sha.data(), sha.size() - 1, r)) << "incomplete";
}

TEST(redis_model_requests, a_pipelined_write_splits_into_its_requests_in_order) {
    const std::string ping = command({"PING"});
    const std::string wait = command({"WAIT", "1", "5"});
    const std::string written = ping + wait + ping;  // the views point into it
    std::vector<std::string_view> parts;
    ASSERT_TRUE(split_pipeline(written, parts));
    ASSERT_EQ(parts.size(), 3u);
    EXPECT_EQ(parts[0], ping);
    EXPECT_EQ(parts[1], wait);
    EXPECT_EQ(parts[2], ping);
    parts.clear();
    const std::string cut = ping + wait.substr(0, wait.size() - 1);
    EXPECT_FALSE(split_pipeline(cut, parts)) << "a request cut short is no request";
}

// The model reads requests with its own multibulk reader: what is not one whole request is
// refused, whatever its bulk lengths claim (2^32 and more wrapped on a 32-bit build once).
TEST(redis_model_requests, what_is_not_a_whole_request_is_refused) {
    request_view r;
    const auto parses = [&](const std::string& bytes) {
        return parse_request(bytes.data(), bytes.size(), r);
    };
    EXPECT_TRUE(parses("*1\r\n$4\r\nPING\r\n"));
    EXPECT_FALSE(parses("*0\r\n")) << "no arguments";
    EXPECT_FALSE(parses("*-1\r\n"));
    EXPECT_FALSE(parses("*1\r\n$-1\r\n")) << "a nil is no argument";
    EXPECT_FALSE(parses("*1\r\n$4294967299\r\nfoo\r\n"));
    EXPECT_FALSE(parses("*1\r\n$4294967294\r\n"));
    EXPECT_FALSE(parses("*1\r\n$18446744073709551615\r\nfoo\r\n"));
    EXPECT_FALSE(parses("*1\r\n$4\r\nPINGXY")) << "no CRLF after the bytes";
    EXPECT_FALSE(parses("*1\r\n$04\r\nPING\r\n")) << "a leading zero";
    EXPECT_FALSE(parses("+PING\r\n"));
    std::string many = "*17\r\n";
    for (int i = 0; i < 17; ++i) many += "$1\r\nx\r\n";
    EXPECT_FALSE(parses(many)) << "more than request_args_max arguments";
    // An empty request in a pipeline is its own part, answered on its own.
    const std::string ping = "*1\r\n$4\r\nPING\r\n";
    const std::string written = ping + "*0\r\n" + ping;
    std::vector<std::string_view> parts;
    ASSERT_TRUE(split_pipeline(written, parts));
    ASSERT_EQ(parts.size(), 3u);
    EXPECT_EQ(parts[1], "*0\r\n");
}

TEST_F(node_fixture, script_load_caches_the_script_and_answers_its_digest) {
    EXPECT_EQ(send(command({"SCRIPT", "LOAD", std::string(edgelock::renew_script.text)})),
              "$40\r\n" + digest(edgelock::renew_script) + "\r\n");
    EXPECT_EQ(
        send(command({"EVALSHA", digest(edgelock::renew_script), "1", "lock", token_a, "1000"})),
        ":0\r\n")
        << "runs by digest at once: no NOSCRIPT";
    EXPECT_EQ(
        send(command({"EVALSHA", digest(edgelock::acquire_script), "1", "lock", token_a, "1000"})),
        "-NOSCRIPT No matching script. Please use EVAL.\r\n")
        << "only the script loaded";
    EXPECT_EQ(send(command({"SCRIPT", "LOAD", "return +"})).substr(0, 36),
              "-ERR Error compiling script (new fun")
        << "a script that does not compile is refused";
    EXPECT_EQ(send(command({"PING"})), "+PONG\r\n");
}

TEST_F(node_fixture, an_acl_without_script_load_leaves_the_lock_to_fall_back_to_eval) {
    node.refuse_script_load();
    EXPECT_EQ(
        send(command({"SCRIPT", "LOAD", std::string(edgelock::acquire_script.text)})).substr(0, 7),
        "-NOPERM");
    EXPECT_EQ(
        send(command({"EVALSHA", digest(edgelock::acquire_script), "1", "lock", token_a, "1000"})),
        "-NOSCRIPT No matching script. Please use EVAL.\r\n");
    EXPECT_EQ(acquire(token_a), ":0\r\n") << "EVAL stays allowed, and caches the script";
    EXPECT_EQ(
        send(command({"EVALSHA", digest(edgelock::acquire_script), "1", "lock", token_a, "1000"})),
        ":0\r\n");
}

// Parses one reply and hands it to the session's check of handshake step `step`.
edgelock::failure check_step(edgelock::session::handshake_step step, const std::string& reply) {
    std::array<edgelock::reply_node, 32> nodes{};
    const edgelock::parse_result parsed =
        edgelock::parse_reply(reply.data(), reply.size(), nodes.data(), nodes.size());
    EXPECT_EQ(parsed.code, edgelock::errc::ok) << reply;
    edgelock::session::node_address master;
    return edgelock::session::check_handshake_reply(step, nodes.data(), parsed.nodes, master);
}

// The handshake exactly as a connection writes it to a server a sentinel named (PING, ROLE, four
// SCRIPT LOADs, in one write): every answer passes the session's checks on a master (also
// when an ACL refuses SCRIPT LOAD: that step is best effort), and ROLE fails them on a replica.
TEST(redis_model_handshake, the_session_handshake_passes_on_a_master_and_role_fails_on_a_replica) {
    using namespace edgelock::session;
    redis_node master(0, persistence::none, 0);
    redis_node replica(1, persistence::none, 0);
    replica.follow(master, 0);
    node_address to;
    ASSERT_EQ(set_host_port(to, "n0", 6379).code, edgelock::errc::ok);
    handshake_request request;
    request.kind = connection_kind::lock_traffic;
    request.to = &to;
    request.check_role = true;
    char buffer[8192];
    const handshake_write written = write_handshake(request, buffer, sizeof buffer);
    ASSERT_EQ(written.code, edgelock::errc::ok);
    std::vector<std::string_view> requests;
    ASSERT_TRUE(split_pipeline(std::string_view(buffer, written.size), requests));
    ASSERT_EQ(requests.size(), written.plan.count);
    redis_node refusing(2, persistence::none, 0);
    refusing.refuse_script_load();
    for (redis_node* node : {&master, &replica, &refusing}) {
        node_output out;
        for (const std::string_view r : requests) node->receive(0, 1, r, 0, 0, out);
        ASSERT_EQ(out.replies.size(), requests.size());
        for (std::size_t i = 0; i < requests.size(); ++i) {
            const handshake_step step = written.plan.steps[i];
            const bool refused = static_cast<bool>(check_step(step, out.replies[i].bytes));
            EXPECT_EQ(refused, node == &replica && step == handshake_step::role)
                << out.replies[i].bytes;
        }
    }
}

TEST(redis_model_handshake, role_has_redis_7_shape) {
    redis_node master(0, persistence::none, 0);
    redis_node r1(1, persistence::none, 0);
    r1.follow(master, 0);
    node_output out;
    master.receive(0, 1, command({"ROLE"}), 0, 0, out);
    r1.receive(0, 1, command({"ROLE"}), 0, 0, out);
    redis_node alone(2, persistence::none, 0);
    alone.receive(0, 1, command({"ROLE"}), 0, 0, out);
    ASSERT_EQ(out.replies.size(), 3u);
    EXPECT_EQ(out.replies[2].bytes, "*3\r\n$6\r\nmaster\r\n:0\r\n*0\r\n");
    EXPECT_FALSE(check_step(edgelock::session::handshake_step::role, out.replies[2].bytes))
        << "a master without replicas is a master too";
    EXPECT_EQ(out.replies[0].bytes,
              "*3\r\n$6\r\nmaster\r\n:0\r\n*1\r\n*3\r\n$2\r\nn1\r\n$4\r\n6379\r\n$1\r\n0\r\n");
    EXPECT_EQ(out.replies[1].bytes,
              "*5\r\n$5\r\nslave\r\n$2\r\nn0\r\n:6379\r\n$9\r\nconnected\r\n:0\r\n");
}

}  // namespace
