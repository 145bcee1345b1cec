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

}  // namespace

std::string owner_key(const std::string& name) { return companion_of(name, companion::owner); }

void describe_holder(const options& o, const std::string& token, std::int64_t fence) {
    const std::vector<std::string> args = {"EVAL",
                                           std::string(write_owner_script),
                                           "2",
                                           o.name,
                                           owner_key(o.name),
                                           std::to_string(fence),
                                           host_name(),
                                           std::to_string(::getpid()),
                                           holder_command(o),
                                           std::to_string(fence_ttl_ms),
                                           token};
    for (node where : nodes_of(o)) {
        blocking::command_connection c;
        command_failure ignored;
        if (!open(c, where, o, ignored)) continue;
        blocking::command_reply reply;
        (void)c.call(args, reply);  // best effort (owner.hpp)
    }
}

}  // namespace edgelock::cli
