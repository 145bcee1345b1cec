// SPDX-License-Identifier: Apache-2.0
#include "edgelock/sim/script_engine.hpp"

#include <lua.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>

#include "edgelock/assert.hpp"
#include "edgelock/sim/redis_model.hpp"
#include "edgelock/sim/resp_text.hpp"
#include "edgelock/sim/script_digest.hpp"

// Lua raises errors with longjmp: the C functions below that can raise keep no object with a
// destructor alive on their own frames (the strings they need live in the engine).

namespace edgelock::sim {

static_assert(script_not_compiled == LUA_NOREF);

constexpr int hook_instructions = 1'000'000;
constexpr int reply_depth_max = 8;  // nesting of a script's reply

struct script_engine_access {
    static script_engine& of(lua_State* lua) {
        return *static_cast<script_engine*>(lua_touserdata(lua, lua_upvalueindex(1)));
    }
    static std::uint64_t& rand48(script_engine& e) { return e.rand48_; }
    static std::int64_t& budget(script_engine& e) { return e.budget_chunks_; }
    static script_host* host(script_engine& e) { return e.host_; }
    static std::string& call_reply(script_engine& e) { return e.call_reply_; }
    static std::string& number_arg(script_engine& e, std::size_t i) { return e.number_args_[i]; }
};

namespace {

using access = script_engine_access;

// {err = message}, raised (redis.call) or returned (redis.pcall).
int push_error(lua_State* lua, const char* message, std::size_t size, bool raise) {
    lua_createtable(lua, 0, 1);
    lua_pushlstring(lua, message, size);
    lua_setfield(lua, -2, "err");
    if (raise) return lua_error(lua);
    return 1;
}

int push_error(lua_State* lua, const char* message, bool raise) {
    return push_error(lua, message, std::char_traits<char>::length(message), raise);
}

// The arguments of redis.call as strings, into `request`; false (nothing pushed) when one is
// neither a string nor a number. Numbers are written as Redis 7.0 writes them ("%.17g").
bool collect_arguments(lua_State* lua, script_engine& engine, int count, request_view& request) {
    request.count = static_cast<std::size_t>(count);
    for (int i = 0; i < count; ++i) {
        const int type = lua_type(lua, i + 1);
        if (type == LUA_TNUMBER) {
            std::string& text = access::number_arg(engine, static_cast<std::size_t>(i));
            char digits[32];
            const int size = std::snprintf(digits, sizeof digits, "%.17g",
                                           static_cast<double>(lua_tonumber(lua, i + 1)));
            text.assign(digits, static_cast<std::size_t>(size));
            request.args[static_cast<std::size_t>(i)] = text;
        } else if (type == LUA_TSTRING) {
            std::size_t size = 0;
            const char* data = lua_tolstring(lua, i + 1, &size);
            request.args[static_cast<std::size_t>(i)] = std::string_view(data, size);
        } else {
            return false;
        }
    }
    return true;
}

// The model's reply at `at` (well formed: the model wrote it) pushed as Redis 7.0 hands a
// reply to a script, read here rather than with the client's RESP reader: an integer as a
// number, a bulk string as a string, nil as false, a status or an error as a table {ok = ...}
// or {err = ...}, an array as a table of its elements. Returns the offset after it.
std::size_t push_reply(lua_State* lua, std::string_view reply, std::size_t at) {
    const std::size_t end = reply.find('\r', at);
    EDGELOCK_ASSERT(at < reply.size() && end != std::string_view::npos);
    const std::string_view line = reply.substr(at + 1, end - at - 1);
    const std::size_t next = end + 2;
    if (reply[at] == '+' || reply[at] == '-') {
        lua_createtable(lua, 0, 1);
        lua_pushlstring(lua, line.data(), line.size());
        lua_setfield(lua, -2, reply[at] == '-' ? "err" : "ok");
        return next;
    }
    std::int64_t value = 0;
    const auto [stop, error] = std::from_chars(line.data(), line.data() + line.size(), value);
    EDGELOCK_ASSERT(error == std::errc{} && stop == line.data() + line.size());
    if (reply[at] == ':') {
        lua_pushnumber(lua, static_cast<lua_Number>(value));
        return next;
    }
    EDGELOCK_ASSERT(reply[at] == '$' || reply[at] == '*');
    if (value < 0) {
        lua_pushboolean(lua, 0);
        return next;
    }
    if (reply[at] == '$') {
        lua_pushlstring(lua, reply.data() + next, static_cast<std::size_t>(value));
        return next + static_cast<std::size_t>(value) + 2;
    }
    lua_createtable(lua, static_cast<int>(value), 0);
    std::size_t element = next;
    for (std::int64_t k = 1; k <= value; ++k) {
        element = push_reply(lua, reply, element);
        lua_rawseti(lua, -2, static_cast<int>(k));
    }
    return element;
}

int redis_command(lua_State* lua, bool raise) {
    script_engine& engine = access::of(lua);
    const int count = lua_gettop(lua);
    if (count == 0) {
        return push_error(lua, "ERR Please specify at least one argument for this redis lib call",
                          raise);
    }
    if (static_cast<std::size_t>(count) > request_args_max) {
        return push_error(lua, "ERR the simulated Redis takes at most 16 arguments", raise);
    }
    request_view request;
    if (!collect_arguments(lua, engine, count, request)) {
        return push_error(lua, "ERR Lua redis lib command arguments must be strings or integers",
                          raise);
    }
    std::string& reply = access::call_reply(engine);
    reply.clear();
    access::host(engine)->script_command(request, reply);
    const std::size_t read = push_reply(lua, reply, 0);
    EDGELOCK_ASSERT(read == reply.size());
    if (raise && reply[0] == '-') return lua_error(lua);
    return 1;
}

int redis_call(lua_State* lua) { return redis_command(lua, true); }
int redis_pcall(lua_State* lua) { return redis_command(lua, false); }

// redis.error_reply(text) and redis.status_reply(text): {err = text} and {ok = text}.
int table_with_field(lua_State* lua, const char* field) {
    if (lua_gettop(lua) != 1 || lua_type(lua, 1) != LUA_TSTRING) {
        return push_error(lua, "ERR wrong number or type of arguments", true);
    }
    lua_createtable(lua, 0, 1);
    lua_pushvalue(lua, 1);
    lua_setfield(lua, -2, field);
    return 1;
}

int redis_error_reply(lua_State* lua) { return table_with_field(lua, "err"); }
int redis_status_reply(lua_State* lua) { return table_with_field(lua, "ok"); }

int redis_sha1hex(lua_State* lua) {
    if (lua_gettop(lua) != 1) return luaL_error(lua, "wrong number of arguments");
    std::size_t size = 0;
    const char* text = lua_tolstring(lua, 1, &size);
    if (text == nullptr) return luaL_error(lua, "wrong type of argument");
    const std::array<char, 40> digest = server_script_digest(std::string_view(text, size));
    lua_pushlstring(lua, digest.data(), digest.size());
    return 1;
}

// Redis's rand48: a 48-bit linear congruential generator, 31 bits out.
constexpr std::uint64_t rand48_mask = (std::uint64_t{1} << 48) - 1;
std::uint64_t rand48_seeded(std::int64_t seed) {
    return ((static_cast<std::uint64_t>(seed) << 16) | 0x330e) & rand48_mask;
}

std::int32_t rand48_next(std::uint64_t& state) {
    state = (state * 0x5deece66dULL + 0xb) & rand48_mask;
    return static_cast<std::int32_t>(state >> 17);
}

// math.random([m [, n]]) over the rand48, as Lua's own: a float in [0, 1), or an integer in
// [1, m] or [m, n].
int math_random(lua_State* lua) {
    constexpr std::int32_t draw_max = std::numeric_limits<std::int32_t>::max();
    const lua_Number r =
        static_cast<lua_Number>(rand48_next(access::rand48(access::of(lua))) % draw_max) /
        static_cast<lua_Number>(draw_max);
    const int count = lua_gettop(lua);
    if (count == 0) {
        lua_pushnumber(lua, r);
        return 1;
    }
    if (count > 2) return luaL_error(lua, "wrong number of arguments");
    const int low = count == 2 ? luaL_checkint(lua, 1) : 1;
    const int high = luaL_checkint(lua, count);
    luaL_argcheck(lua, low <= high, count, "interval is empty");
    lua_pushnumber(lua, std::floor(r * (high - low + 1)) + low);
    return 1;
}

int math_randomseed(lua_State* lua) {
    access::rand48(access::of(lua)) = rand48_seeded(luaL_checkint(lua, 1));
    return 0;
}

int global_missing(lua_State* lua) {
    const char* name = lua_tostring(lua, 2);
    return luaL_error(lua, "Script attempted to access nonexistent global variable '%s'",
                      name != nullptr ? name : "?");
}

int global_write(lua_State* lua) { return luaL_error(lua, "Attempt to modify a readonly table"); }

// Every hook_instructions instructions: a script past its budget is stopped.
void count_hook(lua_State* lua, lua_Debug*) {
    lua_getfield(lua, LUA_REGISTRYINDEX, "edgelock_engine");
    script_engine& engine = *static_cast<script_engine*>(lua_touserdata(lua, -1));
    lua_pop(lua, 1);
    if (--access::budget(engine) < 0) {
        push_error(lua, "ERR the simulated Redis stopped a script that ran too long", true);
    }
}

// A value that is not an error table, as Redis's handler spells it ("ERR " and tostring).
void push_error_text(lua_State* lua) {
    const int type = lua_type(lua, 1);
    lua_pushliteral(lua, "ERR ");
    if (type == LUA_TSTRING || type == LUA_TNUMBER) {
        lua_pushvalue(lua, 1);
        lua_tostring(lua, -1);
    } else if (type == LUA_TBOOLEAN) {
        lua_pushstring(lua, lua_toboolean(lua, 1) != 0 ? "true" : "false");
    } else {
        lua_pushstring(lua, lua_typename(lua, type));  // no address: runs stay reproducible
    }
    lua_concat(lua, 2);
}

// The message handler of every call (Redis's __redis__err__handler): makes the error a
// table {err = ...} and notes where the script raised it (source, line).
int error_handler(lua_State* lua) {
    lua_Debug where;
    bool found = lua_getstack(lua, 1, &where) != 0 && lua_getinfo(lua, "Sl", &where) != 0;
    if (found && where.what != nullptr && where.what[0] == 'C') {
        found = lua_getstack(lua, 2, &where) != 0 && lua_getinfo(lua, "Sl", &where) != 0;
    }
    if (!lua_istable(lua, 1)) {
        lua_createtable(lua, 0, 3);
        push_error_text(lua);
        lua_setfield(lua, -2, "err");
        lua_replace(lua, 1);
    }
    if (found) {
        lua_pushstring(lua, where.source);
        lua_setfield(lua, 1, "source");
        lua_pushinteger(lua, where.currentline);
        lua_setfield(lua, 1, "line");
    }
    lua_settop(lua, 1);
    return 1;
}

void register_function(lua_State* lua, script_engine* engine, const char* name,
                       lua_CFunction function) {
    lua_pushlightuserdata(lua, engine);
    lua_pushcclosure(lua, function, 1);
    lua_setfield(lua, -2, name);
}

void open_library(lua_State* lua, const char* name, lua_CFunction open) {
    lua_pushcfunction(lua, open);
    lua_pushstring(lua, name);
    lua_call(lua, 1, 0);
}

void open_libraries(lua_State* lua, script_engine* engine) {
    open_library(lua, "", luaopen_base);
    open_library(lua, LUA_TABLIBNAME, luaopen_table);
    open_library(lua, LUA_STRLIBNAME, luaopen_string);
    open_library(lua, LUA_MATHLIBNAME, luaopen_math);
    for (const char* removed : {"dofile", "loadfile", "print"}) {
        lua_pushnil(lua);
        lua_setglobal(lua, removed);
    }
    lua_getglobal(lua, LUA_MATHLIBNAME);
    register_function(lua, engine, "random", math_random);
    register_function(lua, engine, "randomseed", math_randomseed);
    lua_pop(lua, 1);
    lua_createtable(lua, 0, 5);
    register_function(lua, engine, "call", redis_call);
    register_function(lua, engine, "pcall", redis_pcall);
    register_function(lua, engine, "error_reply", redis_error_reply);
    register_function(lua, engine, "status_reply", redis_status_reply);
    register_function(lua, engine, "sha1hex", redis_sha1hex);
    lua_setglobal(lua, "redis");
    lua_pushlightuserdata(lua, engine);
    lua_setfield(lua, LUA_REGISTRYINDEX, "edgelock_engine");
    // The globals read-only, and reading a missing one an error, as Redis 7.0 has them.
    lua_createtable(lua, 0, 2);
    lua_pushcfunction(lua, global_missing);
    lua_setfield(lua, -2, "__index");
    lua_pushcfunction(lua, global_write);
    lua_setfield(lua, -2, "__newindex");
    lua_setmetatable(lua, LUA_GLOBALSINDEX);
}

// Text on one line, as Redis writes error replies.
void append_one_line(std::string& reply, const char* data, std::size_t size) {
    for (std::size_t i = 0; i < size; ++i) {
        reply += (data[i] == '\r' || data[i] == '\n') ? ' ' : data[i];
    }
}

void append_error_line(std::string& reply, const char* data, std::size_t size) {
    reply += '-';
    append_one_line(reply, data, size);
}

// Redis truncates a Lua number to long long; one out of range (or NaN) becomes INT64_MIN, as
// the x86-64 conversion gives it, the same on every platform.
std::int64_t truncated(lua_Number number) {
    constexpr lua_Number limit = 9223372036854775808.0;  // 2^63
    if (!(number > -limit - 1 && number < limit)) return std::numeric_limits<std::int64_t>::min();
    return static_cast<std::int64_t>(number);
}

// The string field `name` of the table at `index`, or null.
const char* string_field(lua_State* lua, int index, const char* name, std::size_t& size) {
    lua_pushstring(lua, name);
    lua_rawget(lua, index < 0 ? index - 1 : index);
    const char* text = lua_type(lua, -1) == LUA_TSTRING ? lua_tolstring(lua, -1, &size) : nullptr;
    lua_pop(lua, 1);  // the table still holds the string
    return text;
}

}  // namespace

script_engine::script_engine() : lua_(luaL_newstate()), number_args_(request_args_max) {
    EDGELOCK_ASSERT(lua_ != nullptr);
    open_libraries(lua_, this);
    lua_pushcfunction(lua_, error_handler);
    error_handler_ = luaL_ref(lua_, LUA_REGISTRYINDEX);
}

script_engine::~script_engine() { lua_close(lua_); }

namespace {

// The scripts compiled so far on this thread, as Lua bytecode (lua_dump): every run starts
// new nodes whose engines compile the same few scripts, and loading the bytecode skips the
// parser. The function it gives is the same as the text's; only time is saved.
constexpr std::size_t precompiled_max = 64;
struct precompiled {
    std::array<char, 40> digest;
    std::string bytecode;
};
thread_local std::vector<precompiled> precompiled_scripts;

int write_bytecode(lua_State*, const void* data, std::size_t size, void* out) {
    static_cast<std::string*>(out)->append(static_cast<const char*>(data), size);
    return 0;
}

const std::string* bytecode_of(std::string_view digest) {
    for (const precompiled& p : precompiled_scripts) {
        if (std::string_view(p.digest.data(), p.digest.size()) == digest) return &p.bytecode;
    }
    return nullptr;
}

// Compiles `text` (or loads its bytecode) onto the stack; nonzero with the message there.
int compile(lua_State* lua, std::string_view digest, std::string_view text) {
    if (const std::string* bytecode = bytecode_of(digest); bytecode != nullptr) {
        return luaL_loadbuffer(lua, bytecode->data(), bytecode->size(), "@user_script");
    }
    const int failed = luaL_loadbuffer(lua, text.data(), text.size(), "@user_script");
    if (failed != 0 || precompiled_scripts.size() >= precompiled_max) return failed;
    precompiled added{};
    std::copy(digest.begin(), digest.end(), added.digest.begin());
    const int dumped = lua_dump(lua, write_bytecode, &added.bytecode);
    EDGELOCK_ASSERT(dumped == 0);
    precompiled_scripts.push_back(std::move(added));
    return 0;
}

}  // namespace

int script_engine::load(std::string_view digest, std::string_view text, std::string& reply) {
    EDGELOCK_ASSERT(digest.size() == 40);
    for (const compiled& c : compiled_) {
        if (std::string_view(c.digest.data(), c.digest.size()) == digest) return c.function;
    }
    if (compile(lua_, digest, text) != 0) {
        std::size_t size = 0;
        const char* message = lua_tolstring(lua_, -1, &size);
        reply += "-ERR Error compiling script (new function): ";
        append_one_line(reply, message, size);
        reply += "\r\n";
        lua_pop(lua_, 1);
        return script_not_compiled;
    }
    compiled added{};
    std::copy(digest.begin(), digest.end(), added.digest.begin());
    added.function = luaL_ref(lua_, LUA_REGISTRYINDEX);
    compiled_.push_back(added);
    return added.function;
}

namespace {

// KEYS or ARGV: the table the global names, its elements replaced by `items` (a script that
// changed it left only elements 1..n behind: the ones after `count` are cleared up to the
// first nil).
void set_global_array(lua_State* lua, const char* name, const std::string_view* items,
                      std::size_t count) {
    lua_pushstring(lua, name);
    lua_rawget(lua, LUA_GLOBALSINDEX);
    if (!lua_istable(lua, -1)) {
        lua_pop(lua, 1);
        lua_createtable(lua, static_cast<int>(count), 0);
        lua_pushstring(lua, name);
        lua_pushvalue(lua, -2);
        lua_rawset(lua, LUA_GLOBALSINDEX);
    }
    for (std::size_t i = 0; i < count; ++i) {
        lua_pushlstring(lua, items[i].data(), items[i].size());
        lua_rawseti(lua, -2, static_cast<int>(i + 1));
    }
    for (int i = static_cast<int>(count) + 1;; ++i) {
        lua_rawgeti(lua, -1, i);
        const bool end = lua_isnil(lua, -1);
        lua_pop(lua, 1);
        if (end) break;
        lua_pushnil(lua);
        lua_rawseti(lua, -2, i);
    }
    lua_pop(lua, 1);
}

}  // namespace

void script_engine::run(int function, std::string_view digest, const std::string_view* keys,
                        std::size_t keys_count, const std::string_view* argv,
                        std::size_t argv_count, script_host& host, std::string& reply) {
    lua_rawgeti(lua_, LUA_REGISTRYINDEX, error_handler_);
    lua_rawgeti(lua_, LUA_REGISTRYINDEX, function);
    EDGELOCK_ASSERT(lua_isfunction(lua_, -1));
    set_global_array(lua_, "KEYS", keys, keys_count);
    set_global_array(lua_, "ARGV", argv, argv_count);
    host_ = &host;
    rand48_ = rand48_seeded(0);
    budget_chunks_ = script_instructions_max / hook_instructions;
    lua_sethook(lua_, count_hook, LUA_MASKCOUNT, hook_instructions);
    const int failed = lua_pcall(lua_, 0, 1, -2);
    lua_sethook(lua_, nullptr, 0, 0);
    host_ = nullptr;
    if (failed != 0) {
        reply_from_error(digest, reply);
    } else {
        reply_from_lua(-1, 0, reply);
    }
    lua_settop(lua_, 0);
}

// The script's value as Redis 7.0 converts it to RESP2.
void script_engine::reply_from_lua(int index, int depth, std::string& reply) {
    const int at = index < 0 ? lua_gettop(lua_) + index + 1 : index;
    switch (lua_type(lua_, at)) {
        case LUA_TSTRING: {
            std::size_t size = 0;
            const char* text = lua_tolstring(lua_, at, &size);
            append_bulk(reply, std::string_view(text, size));
            return;
        }
        case LUA_TBOOLEAN: reply += lua_toboolean(lua_, at) != 0 ? ":1\r\n" : "$-1\r\n"; return;
        case LUA_TNUMBER: append_integer(reply, truncated(lua_tonumber(lua_, at))); return;
        case LUA_TTABLE: break;
        default: reply += "$-1\r\n"; return;
    }
    std::size_t size = 0;
    if (const char* err = string_field(lua_, at, "err", size); err != nullptr) {
        append_error_line(reply, err, size);
        reply += "\r\n";
        return;
    }
    if (const char* ok = string_field(lua_, at, "ok", size); ok != nullptr) {
        reply += '+';
        reply.append(ok, size);
        reply += "\r\n";
        return;
    }
    std::size_t count = 0;
    std::string elements;
    for (int i = 1;; ++i) {
        lua_rawgeti(lua_, at, i);
        const bool end = lua_isnil(lua_, -1);
        if (!end) {
            if (depth < reply_depth_max) {
                reply_from_lua(-1, depth + 1, elements);
            } else {
                elements += "$-1\r\n";
            }
            ++count;
        }
        lua_pop(lua_, 1);
        if (end) break;
    }
    reply += '*';
    reply += std::to_string(count);
    reply += "\r\n";
    reply += elements;
}

// An uncaught error: "-<err> script: <digest>, on <source>:<line>." (the handler made it a
// table).
void script_engine::reply_from_error(std::string_view digest, std::string& reply) {
    if (!lua_istable(lua_, -1)) {
        const char* message = lua_tostring(lua_, -1);
        reply += "-ERR Error running script ";
        reply += digest;
        reply += ", ";
        reply += message != nullptr ? message : "execution failure";
        reply += "\r\n";
        return;
    }
    std::size_t size = 0;
    const char* err = string_field(lua_, -1, "err", size);
    if (err != nullptr) {
        append_error_line(reply, err, size);
    } else {
        reply += "-ERR unknown error";
    }
    const char* source = string_field(lua_, -1, "source", size);
    lua_getfield(lua_, -1, "line");
    const bool has_line = lua_type(lua_, -1) == LUA_TNUMBER;
    const std::int64_t line = has_line ? truncated(lua_tonumber(lua_, -1)) : 0;
    lua_pop(lua_, 1);
    if (source != nullptr && has_line) {
        reply += " script: ";
        reply += digest;
        reply += ", on ";
        reply += source;
        reply += ':';
        reply += std::to_string(line);
        reply += '.';
    }
    reply += "\r\n";
}

}  // namespace edgelock::sim
