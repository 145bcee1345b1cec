// SPDX-License-Identifier: Apache-2.0
// The commands the conformance property draws: every command an edgelock client, the session
// or the CLI writes on the wire (core/src/lock_wire.cpp, session/src/handshake.cpp,
// session/src/pubsub.cpp, tools/edgelock/src/{admin,check,owner}.cpp), with the arguments
// they write and the ones a server may see from other clients (the lock's keys set by hand,
// wrong types, out-of-range numbers), and the pauses between them. Not drawn: the CLI's owner
// record (a script that writes a hash with HSET, a type the model does not have).
#pragma once

#include <rapidcheck.h>

#include <array>
#include <cctype>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "edgelock/keys.hpp"
#include "edgelock/limits.hpp"
#include "edgelock/scripts.hpp"

namespace edgelock::conformance {

// How a reply is compared (conformance_test.cpp, compare_replies()).
enum class rule : std::uint8_t {
    exact,     // byte for byte, but a number read from a clock (fence, queue expiry) within 1 s
    pttl,      // -1 and -2 exactly, a remaining TTL within the timing's uncertainty
    role,      // the role and the replicas' count (offsets count bytes in Redis, writes here)
    info,      // the fields the session reads, by value (run_id and uptime by form)
    time,      // the clock within 1 s
    publish,   // exact while nobody subscribes to the channel (docs/SIMULATION.md)
    cli_only,  // sent to the real server only: docs/SIMULATION.md, "Where the model differs"
    pubsub,    // the world's, not the model's: sent to the real server only (same section)
};

// Who sends a step: the two lock connections on the master, a connection to the replica,
// and a subscriber connection (SUBSCRIBE/UNSUBSCRIBE only).
inline constexpr std::uint8_t replica_client = 2;
inline constexpr std::uint8_t subscriber_client = 3;

// What a step does besides sending a command: a client reconnects (a new connection, as a
// client's reconnect makes one), or the replica's process is paused (SIGSTOP; the model's
// replica then gets and acknowledges nothing) until it resumes.
enum class action : std::uint8_t { command, reconnect, pause_replica, resume_replica };

struct step {
    action what = action::command;
    std::vector<std::string> args;
    std::uint8_t client = 0;
    rule how = rule::exact;
    std::int64_t sleep_ms = 0;  // before the step
};

inline const std::string lock_name = "lk";

inline std::string companion_of(companion which) {
    std::array<char, key_bytes_max> key{};
    const std::size_t size = write_companion_key(lock_name, which, key.data(), key.size());
    return std::string(key.data(), size);
}

// Every key a compared step may touch; their state is compared after each step.
inline const std::vector<std::string>& keys() {
    static const std::vector<std::string> all = {lock_name,
                                                 companion_of(companion::fence),
                                                 companion_of(companion::queue),
                                                 companion_of(companion::queue_ttl),
                                                 companion_of(companion::slots),
                                                 "other"};
    return all;
}

// The lock's scripts (0-5), then the semaphore's (6-10).
inline constexpr int script_count = 11;

inline const script* script_by_index(int i) {
    static const std::array<const script*, script_count> all = {&acquire_script,
                                                                &raise_script,
                                                                &renew_script,
                                                                &release_script,
                                                                &fair_acquire_script,
                                                                &fair_release_script,
                                                                &permit_acquire_script,
                                                                &permit_renew_script,
                                                                &permit_release_script,
                                                                &fair_permit_acquire_script,
                                                                &fair_permit_release_script};
    return all[static_cast<std::size_t>(i)];
}

inline const char* script_name(int i) {
    static const std::array<const char*, script_count> names = {"acquire",
                                                                "raise",
                                                                "renew",
                                                                "release",
                                                                "fair_acquire",
                                                                "fair_release",
                                                                "permit_acquire",
                                                                "permit_renew",
                                                                "permit_release",
                                                                "fair_permit_acquire",
                                                                "fair_permit_release"};
    return names[static_cast<std::size_t>(i)];
}

// Writes a step with the scripts' text shortened to their names.
inline void showValue(const step& s, std::ostream& os) {
    os << "sleep " << s.sleep_ms << " ms, ";
    if (s.what == action::pause_replica) os << "the replica pauses";
    if (s.what == action::resume_replica) os << "the replica resumes";
    if (s.what == action::pause_replica || s.what == action::resume_replica) return;
    os << "client " << int(s.client) << ":";
    if (s.what == action::reconnect) os << " (reconnects)";
    for (const std::string& a : s.args) {
        bool named = false;
        for (int i = 0; i < script_count; ++i) {
            if (a == script_by_index(i)->text) {
                os << " <" << script_name(i) << " script>";
                named = true;
            }
        }
        if (!named) os << " " << a;
    }
}

namespace gen_detail {

inline rc::Gen<std::vector<std::string>> one_of(std::vector<std::vector<std::string>> options) {
    return rc::gen::elementOf(std::move(options));
}

inline std::string token(int i) { return std::string(32, static_cast<char>('a' + i)); }

inline rc::Gen<std::string> any_key() { return rc::gen::elementOf(keys()); }
// Any key but the slots key, whose scores (permits) each side picks from its own clock.
inline rc::Gen<std::string> unnumbered_key() {
    std::vector<std::string> others;
    for (const std::string& k : keys()) {
        if (k != companion_of(companion::slots)) others.push_back(k);
    }
    return rc::gen::elementOf(others);
}
inline rc::Gen<std::string> any_token() {
    return rc::gen::map(rc::gen::inRange(0, 3), [](int i) { return token(i); });
}
// Lease lengths: short ones a step's pause outlasts, long ones no case outlasts.
inline rc::Gen<std::string> ttl_ms() {
    return rc::gen::element<std::string>("40", "90", "30000", "600000");
}
// Values a key may hold: tokens, counters (small, clock-like, at 2^63-1), text.
inline rc::Gen<std::string> value() {
    return rc::gen::oneOf(
        any_token(),
        rc::gen::element<std::string>("1", "41", "9223372036854775807", "9000000000000000", "x"));
}

// SET key value with a drawn list of options, in any order, valid or not.
inline rc::Gen<std::vector<std::string>> set_args() {
    return rc::gen::exec([] {
        std::vector<std::string> a = {"SET", *any_key(), *value()};
        const auto options = *rc::gen::container<std::vector<int>>(
            *rc::gen::inRange<std::size_t>(0, 4), rc::gen::inRange(0, 9));
        for (const int o : options) {
            switch (o) {
                case 0: a.push_back("NX"); break;
                case 1: a.push_back("XX"); break;
                case 2: a.push_back("GET"); break;
                case 3: a.push_back("KEEPTTL"); break;
                case 4:
                    a.insert(a.end(), {"EX", *rc::gen::element<std::string>("1", "100")});
                    break;
                case 5: a.insert(a.end(), {"PX", *ttl_ms()}); break;
                case 6:
                    a.insert(a.end(), {"px", *rc::gen::element<std::string>("0", "-5", "x")});
                    break;
                case 7:
                    a.insert(a.end(), {"ex", *rc::gen::element<std::string>("0", "1.5")});
                    break;
                default: a.push_back("nx"); break;
            }
        }
        return a;
    });
}

// A script's request as lock::encode() writes it (KEYS: lock, a fair lock's queue keys, the
// fence key, a fenced semaphore's slots key; ARGV: token, then the numbers: ttl, a fair acquire's
// entry ttl, a semaphore's permits for its acquires and its fair release), by EVAL, EVALSHA or
// EVALSHA in capitals.
inline rc::Gen<std::vector<std::string>> script_args() {
    return rc::gen::exec([] {
        const int which = *rc::gen::inRange(0, script_count);
        const script& s = *script_by_index(which);
        const int how = *rc::gen::inRange(0, 3);
        std::string digest(s.digest.data(), s.digest.size());
        if (how == 2) {
            for (char& c : digest) c = static_cast<char>(std::toupper(c));
        }
        std::vector<std::string> a = {how == 0 ? "EVAL" : "EVALSHA",
                                      how == 0 ? std::string(s.text) : digest};
        const bool fair = which == 4 || which == 5 || which == 9 || which == 10;
        const bool acquires = which == 0 || which == 4 || which == 6 || which == 9;
        const bool releases = which == 3 || which == 5 || which == 8 || which == 10;
        const bool fenced = which == 1 || (acquires && *rc::gen::arbitrary<bool>());
        // A fenced semaphore's acquire and renew keep its slots key, last.
        const bool numbered =
            which >= 6 && ((acquires && fenced) || (which == 7 && *rc::gen::arbitrary<bool>()));
        std::vector<std::string> k = {lock_name};
        if (fair)
            k.insert(k.end(), {companion_of(companion::queue), companion_of(companion::queue_ttl)});
        if (fenced) k.push_back(companion_of(companion::fence));
        if (numbered) k.push_back(companion_of(companion::slots));
        a.push_back(std::to_string(k.size()));
        a.insert(a.end(), k.begin(), k.end());
        a.push_back(*any_token());
        if (which == 1) {
            a.push_back(*rc::gen::element<std::string>("5", "9000000000000001", "1"));
        } else if (!releases) {
            a.push_back(*ttl_ms());
        }
        if (fair && acquires) a.push_back(*ttl_ms());
        if (which >= 6 && (acquires || which == 10))
            a.push_back(*rc::gen::element<std::string>("1", "2", "3"));
        if (which == 7 && numbered) a.push_back(*rc::gen::element<std::string>("0", "1", "2"));
        if (fair && *rc::gen::arbitrary<bool>()) a.push_back(acquires ? "join" : "stay");
        return a;
    });
}

// WAIT as lock::encode() writes it (at least one replica): with a replica, a count it reaches
// once the replica acknowledges (waiting long, as it returns then; or briefly, when the
// replica may be paused) or never (it waits out a short timeout); alone, short timeouts only.
// Not WAIT 0 with a replica: it answers how many acknowledged so far, and a running replica
// acknowledges on its own only once a second.
inline rc::Gen<std::vector<std::string>> wait_args(bool replicated) {
    if (replicated) {
        return one_of({{"WAIT", "1", "5000"}, {"WAIT", "1", "100"}, {"WAIT", "2", "100"}});
    }
    return one_of({{"WAIT", "1", "20"}, {"WAIT", "0", "0"}, {"WAIT", "2", "5"}});
}

inline rc::Gen<std::vector<std::string>> keyspace_args() {
    return rc::gen::exec([]() -> std::vector<std::string> {
        switch (*rc::gen::inRange(0, 8)) {
            case 0: return {"GET", *any_key()};
            case 1: return {"DEL", *any_key(), *any_key()};
            case 2:
                return {"PEXPIRE", *any_key(),
                        *rc::gen::oneOf(ttl_ms(), rc::gen::element<std::string>("0", "-1", "x"))};
            case 3: return {"EXISTS", *any_key()};
            case 4: return {"PERSIST", *any_key()};
            case 5:
                if (*rc::gen::arbitrary<bool>()) return {"INCR", *any_key()};
                return {"INCRBY", *any_key(),
                        *rc::gen::element<std::string>("3", "-2", "1000", "x")};
            case 6: return {"DEL", *any_key()};
            default: return {"PTTL", *any_key()};
        }
    });
}

// The fair lock's line as the scripts and the CLI's status read it. Scores are whole
// numbers: the model keeps no others (docs/SIMULATION.md, "Where the model differs").
inline rc::Gen<std::vector<std::string>> sorted_set_args() {
    return rc::gen::exec([]() -> std::vector<std::string> {
        const std::string key = *unnumbered_key();
        switch (*rc::gen::inRange(0, 7)) {
            case 0:
                return {"ZADD", key, *rc::gen::element<std::string>("5", "-3", "70"),
                        *rc::gen::oneOf(any_token(), rc::gen::just(std::string("permits")))};
            case 1: return {"ZREM", key, *any_token()};
            case 2: return {"ZSCORE", key, *any_token()};
            case 3: return {"ZRANGE", key, "0", "-1", "WITHSCORES"};
            case 4: return {"ZRANGE", key, "0", std::to_string(16 - 1)};
            case 5: return {"ZRANGEBYSCORE", key, "-inf", "(70"};
            default: return {"ZCARD", key};
        }
    });
}

// What the CLI alone sends (edgelock status, list, run's owner record): the simulator never
// does, and the model has none of it (docs/SIMULATION.md, "Where the model differs").
inline rc::Gen<std::vector<std::string>> cli_only_args() {
    return one_of(
        {{"SCAN", "0", "MATCH", "l*", "COUNT", "100"},
         {"HMGET", companion_of(companion::owner), "token", "host", "pid", "command", "since_ms"},
         {"CONFIG", "GET", "save"}});
}

}  // namespace gen_detail

inline bool is_command(const std::vector<std::string>& args, const char* name) {
    if (args.empty() || args[0].size() != std::char_traits<char>::length(name)) return false;
    for (std::size_t i = 0; i < args[0].size(); ++i) {
        if (std::toupper(static_cast<unsigned char>(args[0][i])) != name[i]) return false;
    }
    return true;
}

inline rule rule_of(const std::vector<std::string>& args) {
    if (is_command(args, "PTTL")) return rule::pttl;
    if (is_command(args, "ROLE")) return rule::role;
    if (is_command(args, "INFO")) return rule::info;
    if (is_command(args, "TIME")) return rule::time;
    if (is_command(args, "PUBLISH")) return rule::publish;
    if (is_command(args, "SUBSCRIBE") || is_command(args, "UNSUBSCRIBE")) return rule::pubsub;
    if (is_command(args, "SCAN") || is_command(args, "HMGET")) return rule::cli_only;
    if (is_command(args, "CONFIG") && args.size() == 3 && args[2] == "save") return rule::cli_only;
    return rule::exact;
}

// One step of a case (its client, rule and pause drawn with it).
inline rc::Gen<step> step_gen(bool replicated) {
    using namespace gen_detail;
    return rc::gen::exec([replicated] {
        step s;
        s.sleep_ms =
            *rc::gen::weightedElement<std::int64_t>({{72, 0}, {15, 2}, {10, 10}, {3, 120}});
        const int pick = *rc::gen::weightedElement<int>({{12, 0},
                                                         {14, 1},
                                                         {10, 2},
                                                         {4, 3},
                                                         {3, 4},
                                                         {2, 5},
                                                         {2, 6},
                                                         {3, 7},
                                                         {2, 8},
                                                         {2, 9},
                                                         {2, 10},
                                                         {2, 11},
                                                         {2, 12},
                                                         {replicated ? 2u : 0u, 13},
                                                         {replicated ? 2u : 0u, 14}});
        s.client = static_cast<std::uint8_t>(*rc::gen::weightedElement<int>(
            {{45, 0}, {35, 1}, {replicated ? 20u : 0u, replica_client}}));
        switch (pick) {
            case 0: s.args = *set_args(); break;
            case 1: s.args = *script_args(); break;
            case 2: s.args = *keyspace_args(); break;
            case 3: s.args = *sorted_set_args(); break;
            case 4: s.args = *wait_args(replicated && s.client != replica_client); break;
            case 5: {
                const script& sc = *script_by_index(*rc::gen::inRange(0, script_count));
                s.args = {"SCRIPT", "LOAD", std::string(sc.text)};
                break;
            }
            case 6: s.args = {"SCRIPT", "FLUSH"}; break;
            case 7:
                s.args = *one_of(
                    {{"PING"}, {"ROLE"}, {"INFO"}, {"TIME"}, {"CONFIG", "GET", "appendfsync"}});
                break;
            case 8:
                // SELECT 0 only: the model has one database (docs/SIMULATION.md, "Where the
                // model differs"); 16 is out of range on both.
                s.args = *one_of({{"SELECT", "0"},
                                  {"SELECT", "16"},
                                  {"AUTH", "secret"},
                                  {"AUTH", "edge", "secret"}});
                break;
            case 9: {
                // On a waiter's channel (keys.hpp, write_wake_channel), as the scripts publish.
                const std::string woken = *any_token();
                s.args = {"PUBLISH", companion_of(companion::queue) + ":" + woken, woken};
                break;
            }
            case 10:
                // Pub/sub: the world's connections (sim/src/world_pubsub.cpp), not the model.
                s.client = subscriber_client;
                s.args = {*rc::gen::element<std::string>("SUBSCRIBE", "UNSUBSCRIBE"),
                          *rc::gen::element(companion_of(companion::queue) + ":" + *any_token(),
                                            std::string("+switch-master"))};
                break;
            case 11: s.what = action::reconnect; break;
            case 13: s.what = action::pause_replica; break;
            case 14: s.what = action::resume_replica; break;
            default:
                s.args = *cli_only_args();
                s.client = 0;
                break;
        }
        s.how = rule_of(s.args);
        return s;
    });
}

}  // namespace edgelock::conformance
