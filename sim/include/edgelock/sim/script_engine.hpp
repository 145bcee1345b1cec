// SPDX-License-Identifier: Apache-2.0
// edgelock sim: the Lua 5.1 interpreter a simulated Redis runs scripts in, as Redis 7.0 does.
//
// One engine per running node (Redis has one lua_State per server); a restart drops it with
// the script cache. What it reproduces of Redis 7.0's scripting (script_lua.c, eval.c):
// - the text is compiled once as the chunk "@user_script" and kept in the registry (by
//   reference, where Redis names it f_<digest>); a compile error answers "ERR Error
//   compiling script (new function): ...";
// - KEYS and ARGV are fresh tables of strings for each call; the globals are read-only and
//   reading an undefined one is an error ("Script attempted to access nonexistent global
//   variable ...");
// - libraries: base (without dofile, loadfile and print: no files, no output), table,
//   string, math; math.random and math.randomseed are Redis's: a rand48 seeded with 0 at the
//   start of every call, so a script's draws are the same on every node and platform. Not
//   loaded: os, io, package, debug, cjson, cmsgpack, struct, bit (the scripts use none);
// - redis.call and redis.pcall go to the node's commands (script_host) with the arguments as
//   strings (a number as "%.17g" prints it; anything else: "ERR Lua redis lib command
//   arguments must be strings or integers"), and the reply comes back converted as Redis
//   converts RESP2: integer -> number, bulk -> string, nil -> false, status -> {ok=...},
//   error -> {err=...}, array -> table. redis.call raises the error table, redis.pcall
//   returns it; redis.error_reply, redis.status_reply and redis.sha1hex as Redis has them;
// - the script's value goes back as Redis converts it: number -> integer (truncated),
//   string -> bulk, true -> 1, false and nil -> nil, {err=...} -> error, {ok=...} -> status,
//   other tables -> an array of their elements 1..n up to the first nil;
// - an uncaught error answers "-<err> script: <digest>, on @user_script:<line>." and a
//   Lua runtime error gets "ERR user_script:<line>: " in front, as Redis 7.0 writes them.
// Not reproduced: RESP3 (redis.setresp), redis.log, redis.set_repl, script flags (the
// shebang line), EVAL_RO, SCRIPT KILL and the time limit: instead a script is stopped after
// script_instructions_max instructions with an error (a simulated Redis never hangs).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

struct lua_State;

namespace edgelock::sim {

struct request_view;

// What redis.call reaches: one command of the node, run as from a script (Redis's error
// texts for a script's calls), its RESP reply appended to `reply`.
class script_host {
public:
    virtual void script_command(const request_view& request, std::string& reply) = 0;

protected:
    ~script_host() = default;
};

// A script runs at most this many Lua instructions (Redis's lua-time-limit has no meaning
// in simulated time; a mutant that loops forever ends with an error instead).
inline constexpr std::int64_t script_instructions_max = 100'000'000;
// What load() answers for a script that does not compile (LUA_NOREF).
inline constexpr int script_not_compiled = -2;

class script_engine {
public:
    script_engine();
    ~script_engine();
    script_engine(const script_engine&) = delete;
    script_engine& operator=(const script_engine&) = delete;

    // The compiled function of the script `text` whose SHA-1 is `digest`, compiled now if
    // this engine has not seen it (a reference into the registry). script_not_compiled, with
    // Redis's error reply appended to `reply`, when it does not compile.
    int load(std::string_view digest, std::string_view text, std::string& reply);
    // Runs `function` (from load()) with KEYS and ARGV, appending its reply; `digest` names
    // it in error replies.
    void run(int function, std::string_view digest, const std::string_view* keys,
             std::size_t keys_count, const std::string_view* argv, std::size_t argv_count,
             script_host& host, std::string& reply);

private:
    friend struct script_engine_access;
    struct compiled {
        std::array<char, 40> digest;
        int function;
    };
    void reply_from_lua(int index, int depth, std::string& reply);
    void reply_from_error(std::string_view digest, std::string& reply);

    lua_State* lua_ = nullptr;
    int error_handler_ = 0;        // the message handler of every call, in the registry
    script_host* host_ = nullptr;  // while a script runs
    std::uint64_t rand48_ = 0;     // math.random's state, reset at every call
    std::int64_t budget_chunks_ = 0;
    std::vector<compiled> compiled_;
    std::string call_reply_;                // a redis.call's reply, reused
    std::vector<std::string> number_args_;  // numbers given to redis.call, as text
};

}  // namespace edgelock::sim
