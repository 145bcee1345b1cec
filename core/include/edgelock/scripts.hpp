// edgelock: the Lua scripts the lock sends, with their SHA-1 digests.
//
// Every lock operation is one script so that the check and the change happen atomically on
// the server. The core sends EVALSHA with the digest below and falls back to EVAL with the
// text when Redis answers NOSCRIPT (a restarted or flushed server has an empty script cache).
//
//   acquire  KEYS: lock [fence]   ARGV: token ttl_ms
//            SET lock token NX PX ttl. If the key already holds our own token (a retried
//            acquire whose reply was lost), its TTL is refreshed instead. With a fence key,
//            INCR it. Returns the fence value, 0 without a fence key, nil when another token
//            holds the lock.
//   raise    KEYS: lock fence     ARGV: token fence_value
//            If the lock still holds our token, raise the fence counter to at least
//            fence_value. Returns 1, or 0 when the lock is no longer ours.
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
    "if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then\n"
    "  if redis.call('GET', KEYS[1]) ~= ARGV[1] then return false end\n"
    "  redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
    "end\n"
    "if #KEYS > 1 then return redis.call('INCR', KEYS[2]) end\n"
    "return 0\n";

inline constexpr std::string_view raise_script_text =
    "if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end\n"
    "local current = tonumber(redis.call('GET', KEYS[2]) or '0')\n"
    "if current < tonumber(ARGV[2]) then redis.call('SET', KEYS[2], ARGV[2]) end\n"
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
