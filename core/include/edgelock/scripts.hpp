// edgelock: the Lua scripts the lock sends, with their SHA-1 digests.
//
// Every lock operation is one script so that the check and the change happen atomically on
// the server, but the acquire without fencing on Redis 7.0 and later, which is Redis's own
// SET NX PX GET (lock.hpp, "The acquire on the wire"). The core sends EVALSHA with the digest
// below and falls back to EVAL with the text when Redis answers NOSCRIPT (a restarted or
// flushed server has an empty script cache).
//
//   acquire  KEYS: lock [fence]   ARGV: token ttl_ms
//            SET lock token NX PX ttl. If the key already holds our own token (a retried
//            acquire whose reply was lost), its TTL is refreshed instead. With a fence key,
//            INCR it, and raise it to the server's clock in microseconds (TIME: seconds, then
//            6 digits of microseconds) when it is below that. So the counter never falls
//            behind the clock: one that a restart set back (lost, or restored from a snapshot
//            a second old) resumes above every token handed out before, as long as fewer
//            than 10^6 tokens a second were handed out and the node's clock did not step
//            back. Tokens stay below 2^53 (exact in a double, as a fenced resource in Lua or
//            JavaScript may compare them) until the year 2255; the comparison in the script
//            is of doubles, exact below 2^53, and a counter above that is above the clock.
//            Returns the fence value as a decimal bulk string, 0 without a fence
//            key, nil when another token holds the lock. A fence counter already at
//            2^63-1 (INCR would fail) answers the error "FENCE_EXHAUSTED ..." before the SET,
//            so the key is left untouched.
//   raise    KEYS: lock fence     ARGV: token fence_value
//            If the lock still holds our token, raise the fence counter to at least
//            fence_value. Returns 1, or 0 when the lock is no longer ours.
//
// Fence values never pass through a Lua number: Redis 7.0's Lua numbers are doubles, exact
// only to 2^53. The counter goes back as GET's string, and the raise compares decimal
// strings (shorter is smaller; equal lengths compare digit by digit, without the locale).
//   renew    KEYS: lock           ARGV: token ttl_ms
//            PEXPIRE only if the lock holds our token. Returns 1, or 0.
//   release  KEYS: lock           ARGV: token
//            DEL only if the lock holds our token. Returns 1, or 0.
#pragma once

#include <string_view>

#include "edgelock/sha1.hpp"

namespace edgelock {

struct script {
    std::string_view text;
    sha1_hex digest;
};

inline constexpr std::string_view acquire_script_text =
    "if #KEYS > 1 and redis.call('GET', KEYS[2]) == '9223372036854775807' then\n"
    "  return redis.error_reply('FENCE_EXHAUSTED the fence counter is at 2^63-1')\n"
    "end\n"
    "if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then\n"
    "  if redis.call('GET', KEYS[1]) ~= ARGV[1] then return false end\n"
    "  redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
    "end\n"
    "if #KEYS == 1 then return 0 end\n"
    "local now = redis.call('TIME')\n"
    "local clock = now[1] .. string.format('%06d', tonumber(now[2]))\n"
    "if redis.call('INCR', KEYS[2]) < tonumber(clock) then redis.call('SET', KEYS[2], clock) end\n"
    "return redis.call('GET', KEYS[2])\n";

inline constexpr std::string_view raise_script_text =
    "if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end\n"
    "local current, wanted = redis.call('GET', KEYS[2]) or '0', ARGV[2]\n"
    "local below = #current < #wanted\n"
    "if #current == #wanted then\n"
    "  for i = 1, #wanted do\n"
    "    local c, w = string.byte(current, i), string.byte(wanted, i)\n"
    "    if c ~= w then below = c < w break end\n"
    "  end\n"
    "end\n"
    "if below then redis.call('SET', KEYS[2], wanted) end\n"
    "return 1\n";

inline constexpr std::string_view renew_script_text =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then\n"
    "  return redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
    "end\n"
    "return 0\n";

inline constexpr std::string_view release_script_text =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then\n"
    "  return redis.call('DEL', KEYS[1])\n"
    "end\n"
    "return 0\n";

inline constexpr script acquire_script{acquire_script_text, sha1(acquire_script_text)};
inline constexpr script raise_script{raise_script_text, sha1(raise_script_text)};
inline constexpr script renew_script{renew_script_text, sha1(renew_script_text)};
inline constexpr script release_script{release_script_text, sha1(release_script_text)};

}  // namespace edgelock
