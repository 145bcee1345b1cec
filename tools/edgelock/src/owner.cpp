// SPDX-License-Identifier: Apache-2.0
#include "owner.hpp"

#include <unistd.h>

#include <array>
#include <climits>
#include <string_view>
#include <vector>

#include "edgelock/blocking_commands.hpp"
#include "edgelock/keys.hpp"
#include "edgelock/limits.hpp"
#include "nodes.hpp"

namespace edgelock::cli {
namespace {

// KEYS: lock owner. ARGV: fence host pid command ttl_ms token. The description is written
// only while the lock key holds our token (owner.hpp), with the server's clock as `since_ms`,
// so every host's status reads one clock.
constexpr std::string_view write_owner_script =
    "local token = redis.call('GET', KEYS[1])\n"
    "if token ~= ARGV[6] then return 0 end\n"
    "local now = redis.call('TIME')\n"
    "local since = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)\n"
    "redis.call('DEL', KEYS[2])\n"
    "redis.call('HSET', KEYS[2], 'token', token, 'fence', ARGV[1], 'host', ARGV[2],\n"
    "  'pid', ARGV[3], 'command', ARGV[4], 'since_ms', string.format('%d', since))\n"
    "redis.call('PEXPIRE', KEYS[2], ARGV[5])\n"
    "return 1\n";

// KEYS: set owner. ARGV: host pid command ttl_ms token. A semaphore holder's fields
// (owner.hpp), written only while its lease is live; the fields of every token without a live
// lease go first, so the hash stays as small as the set. A name that is no sorted set (a
// lock's, or gone) is left alone.
constexpr std::string_view write_permit_owner_script =
    "if redis.call('TYPE', KEYS[1]).ok ~= 'zset' then return 0 end\n"
    "local time = redis.call('TIME')\n"
    "local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)\n"
    "local function live(token)\n"
    "  local expiry = redis.call('ZSCORE', KEYS[1], token)\n"
    "  return expiry and tonumber(expiry) > now\n"
    "end\n"
    "if not live(ARGV[5]) then return 0 end\n"
    "for _, field in ipairs(redis.call('HKEYS', KEYS[2])) do\n"
    "  if string.sub(field, 33, 33) ~= ':' or not live(string.sub(field, 1, 32)) then\n"
    "    redis.call('HDEL', KEYS[2], field)\n"
    "  end\n"
    "end\n"
    "local t = ARGV[5] .. ':'\n"
    "redis.call('HSET', KEYS[2], t .. 'host', ARGV[1], t .. 'pid', ARGV[2], t .. 'command',\n"
    "  ARGV[3], t .. 'since_ms', string.format('%d', now))\n"
    "redis.call('PEXPIRE', KEYS[2], ARGV[4])\n"
    "return 1\n";
// The script cuts a field's token at 32 bytes.
static_assert(token_hex_bytes == 32, "write_permit_owner_script's token length");

// A command line longer than this is cut: the description is for a person to recognise.
constexpr std::size_t command_bytes_max = 512;

std::string companion_of(const std::string& name, companion which) {
    std::array<char, key_bytes_max> key{};
    const std::size_t size = write_companion_key(name, which, key.data(), key.size());
    return std::string(key.data(), size);
}

std::string command_line(const std::vector<std::string>& program) {
    std::string text;
    for (const std::string& arg : program) {
        if (!text.empty()) text += ' ';
        text += arg;
        if (text.size() >= command_bytes_max) return text.substr(0, command_bytes_max);
    }
    return text;
}

// What status and list show as the holder's command: CMD, or `edgelock hold` for a hold.
std::string holder_command(const options& o) {
    return o.command == command::hold ? "edgelock hold" : command_line(o.program);
}

std::string host_name() {
    std::array<char, HOST_NAME_MAX + 1> host{};
    if (::gethostname(host.data(), host.size() - 1) != 0) return "";
    return std::string(host.data());
}

// The EVAL that describes this hold: the lock's script with the fence token, or a semaphore
// holder's, which has none.
std::vector<std::string> describe_call(const options& o, const std::string& token,
                                       std::int64_t fence) {
    std::vector<std::string> args = {"EVAL", "", "2", o.name, owner_key(o.name)};
    if (o.permits == 1) {
        args[1] = std::string(write_owner_script);
        args.push_back(std::to_string(fence));
    } else {
        args[1] = std::string(write_permit_owner_script);
    }
    args.insert(args.end(), {host_name(), std::to_string(::getpid()), holder_command(o),
                             std::to_string(fence_ttl_ms), token});
    return args;
}

}  // namespace

std::string owner_key(const std::string& name) { return companion_of(name, companion::owner); }

std::string permit_field(const std::string& token, const char* what) { return token + ":" + what; }

void describe_holder(const options& o, const std::string& token, std::int64_t fence) {
    const std::vector<std::string> args = describe_call(o, token, fence);
    for (node where : nodes_of(o)) {
        blocking::command_connection c;
        command_failure ignored;
        if (!open(c, where, o, ignored)) continue;
        blocking::command_reply reply;
        (void)c.call(args, reply);  // best effort (owner.hpp)
    }
}

}  // namespace edgelock::cli
