// SPDX-License-Identifier: Apache-2.0
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
//            The counter then expires fence_ttl_ms (limits.hpp) later: PEXPIRE after the
//            write, as SET clears a key's TTL and SET KEEPTTL needs Redis 6.0. The same
//            floor makes the expiry safe: a counter that expired (a week after the last
//            acquire or raise of its name) restarts from the clock, which ran on by that
//            week meanwhile, so it resumes above every earlier token as long as the counter
//            was never that far ahead of the clock (fewer than 10^6 tokens a second) and
//            the clock did not step back by that much (lock.hpp, "Fence counters expire").
//            Returns the fence value as a decimal bulk string, 0 without a fence
//            key, nil when another token holds the lock. A fence counter already at
//            2^63-1 (INCR would fail) answers the error "FENCE_EXHAUSTED ..." before the SET,
//            so the lock key is left untouched, and makes the counter persist: an exhausted
//            counter must not expire and restart below the tokens it handed out (an operator
//            resets it).
//   raise    KEYS: lock fence     ARGV: token fence_value
//            If the lock still holds our token, raise the fence counter to at least
//            fence_value, and give it the fence expiry as acquire does (also when it was
//            high enough already). Returns 1, or 0 when the lock is no longer ours.
//
// Fence values never pass through a Lua number: Redis 7.0's Lua numbers are doubles, exact
// only to 2^53. The counter goes back as GET's string, and the raise compares decimal
// strings (shorter is smaller; equal lengths compare digit by digit, without the locale).
//   renew    KEYS: lock           ARGV: token ttl_ms
//            PEXPIRE only if the lock holds our token. Returns 1, or 0.
//   release  KEYS: lock           ARGV: token
//            DEL only if the lock holds our token. Returns 1, or 0.
//
// A fair lock (lock.hpp, "Fair waiting") acquires and releases with two more scripts that
// keep its line of waiters: KEYS[2] (queue) holds the waiters' tokens scored by arrival, and
// KEYS[3] (qttl) each one's expiry on the server's clock in milliseconds. Both first drop
// the waiters whose expiry has passed (a waiter that died or gave up without a word), and
// then any head of the line without an expiry (its entry deleted or evicted: it could never
// expire and would block the line for good). A waiter is woken by its token published on its
// own channel, the queue key, ":" and the token (keys.hpp, write_wake_channel): a release
// hands the lock to the waiter whose turn it is (a grant), and wakes no other.
//   fair_acquire  KEYS: lock queue qttl [fence]   ARGV: token ttl_ms entry_ttl_ms ["join"]
//            Takes the lock as acquire does, but only when it is free and the queue is empty
//            or has our token at its head, and "join" is not given (a waiter the restart
//            guard keeps from taking the lock still takes its place in line). Otherwise puts
//            our token at the tail (once: a waiter keeps its place) and answers nil, as
//            acquire does for a busy lock; when
//            the lock is free but another waiter heads the queue, it publishes that waiter's
//            token on its channel (its wake-up may have been lost). Either way our
//            token's expiry is set to now + entry_ttl_ms and both queue keys live at least
//            that long. The taker stays at the head of the line (put there if it was not in
//            it) until its release: if the answer is lost, the cleanup that deletes the key
//            leaves it first in line, and it takes the lock again at its next attempt.
//            Fence handling and answers as acquire's.
//   fair_release  KEYS: lock queue qttl [fence]   ARGV: token ["stay"]
//            Deletes the lock if it holds our token (first, so that a queue key of the wrong
//            type cannot keep the lock), removes our token from the queue unless "stay" is
//            given (the cleanup of a failed attempt by a waiter that goes on waiting keeps
//            its place), and then, when the lock is free and someone waits, hands it to the
//            head waiter: sets the lock to its token, to expire when its entry in the line
//            does, moves the fence counter as acquire does (with the fence key; not once it
//            is exhausted) and publishes "<token> <fence>" on its channel (fence 0 without
//            the key). With "stay", or an exhausted counter, it hands nothing over and
//            publishes the head's token alone, a wake-up. Returns 1 when it deleted the
//            lock, or 0.
//
// A semaphore (lock.hpp, "Semaphores") keeps its leases in a sorted set under the name: each
// holder's token scored by its lease's expiry on the server's clock in ms, and one member
// "permits" scored -N. Each script first drops the leases whose expiry has passed. A key of
// another type under the name (a lock's string) fails the first command that touches it with
// WRONGTYPE, as the set fails the lock's SET ... GET: each refuses the other's names.
//   permit_acquire  KEYS: set [fence permits]   ARGV: token ttl_ms permits
//            Takes a lease when fewer than N are held, or refreshes ours (a retried acquire
//            whose reply was lost), and stores N with the leases. While leases are held, an
//            N that differs answers the error "PERMITS_MISMATCH ..." and changes nothing. The
//            set lives at least as long as its longest lease. Returns 0, or nil when N others
//            hold leases. With the fence and permits keys (fencing: lock.hpp, "Semaphores"),
//            the lease is numbered with a permit p in 0..N-1 that no other live lease holds
//            (its own, for a retried acquire), kept in the permits key (a sorted set of
//            tokens scored by their permit, living as long as the leases), and the answer is
//            the fence token: the first value above the fence counter (or above the server's
//            clock in microseconds, when the counter lags it) whose remainder by N is such a
//            p, now the counter; "FENCE_EXHAUSTED ..." when that would pass 2^63-1.
//   permit_renew    KEYS: set [permits]  ARGV: token ttl_ms [permit]
//            Extends our lease if it is still live (and the permits key with it). Fenced,
//            our permit's entry is put back when it is missing (the key evicted or flushed),
//            and the renewal fails when another live lease holds that permit. Returns 1,
//            or 0.
//   permit_release  KEYS: set           ARGV: token
//            Removes our lease, and the set once no lease is left. Returns 1 when our lease
//            was live, or 0.
//   fair_permit_acquire  KEYS: set queue qttl [fence permits]
//                        ARGV: token ttl_ms entry_ttl_ms permits ["join"]
//            fair_acquire with permits: a waiter takes a lease only when fewer waiters that
//            hold none are ahead of it in the line than permits are free, and otherwise
//            wakes those waiters (their wake-ups may have been lost). Fenced as
//            permit_acquire is, with the same two keys last.
//   fair_permit_release  KEYS: set queue qttl   ARGV: token permits ["stay"]
//            Leaves the line unless "stay" is given (first: a waiter leaves it even when the
//            name turned out to hold a lock, whose WRONGTYPE then ends the script), then
//            permit_release, the line as fair_release keeps it, and then as many waiters that
//            hold no lease as permits are free are woken, from the head of the line (N comes
//            with the call: the set and its N may have gone with the last lease). The fair
//            lock's release, unchanged on the wire, touches the lock key first: a fair lock's
//            waiter that meets a semaphore's name keeps its entry until it expires.
#pragma once

#include <cstdint>
#include <string_view>

#include "edgelock/limits.hpp"
#include "edgelock/sha1.hpp"

// fence_ttl_ms (limits.hpp) as the scripts' text spells it; checked equal below.
#define EDGELOCK_FENCE_TTL_MS "604800000"

namespace edgelock {

namespace detail {
constexpr std::int64_t decimal_value(std::string_view digits) noexcept {
    std::int64_t value = 0;
    for (const char c : digits) value = value * 10 + (c - '0');
    return value;
}
}  // namespace detail
static_assert(detail::decimal_value(EDGELOCK_FENCE_TTL_MS) == fence_ttl_ms,
              "the scripts set the fence counter's expiry to fence_ttl_ms");

struct script {
    std::string_view text;
    sha1_hex digest;
};

inline constexpr std::string_view acquire_script_text =
    "if #KEYS > 1 and redis.call('GET', KEYS[2]) == '9223372036854775807' then\n"
    "  redis.call('PERSIST', KEYS[2])\n"
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
    "redis.call('PEXPIRE', KEYS[2], '" EDGELOCK_FENCE_TTL_MS
    "')\n"
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
    "redis.call('PEXPIRE', KEYS[2], '" EDGELOCK_FENCE_TTL_MS
    "')\n"
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

// The queue's housekeeping, shared by both fair scripts: `now` on the server's clock in ms,
// the waiters whose entry expired dropped from both keys, and then heads that have no entry
// at all (deleted, or evicted by a volatile-* policy) dropped too, as they could never expire.
#define EDGELOCK_SERVER_NOW             \
    "local time = redis.call('TIME')\n" \
    "local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)\n"
#define EDGELOCK_LINE_CLEANUP                                                       \
    "for _, gone in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now)) do\n" \
    "  redis.call('ZREM', KEYS[2], gone)\n"                                         \
    "end\n"                                                                         \
    "redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)\n"                        \
    "local first = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')\n"             \
    "while first[1] and not redis.call('ZSCORE', KEYS[3], first[1]) do\n"           \
    "  redis.call('ZREM', KEYS[2], first[1])\n"                                     \
    "  first = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')\n"                 \
    "end\n"
#define EDGELOCK_FAIR_PROLOGUE EDGELOCK_SERVER_NOW EDGELOCK_LINE_CLEANUP

// A fair acquire's entry in the line: it expires ARGV[3] ms from now, and both line keys
// live at least that long.
#define EDGELOCK_LINE_ENTRY                                   \
    "local entry_ttl = tonumber(ARGV[3])\n"                   \
    "redis.call('ZADD', KEYS[3], now + entry_ttl, ARGV[1])\n" \
    "for i = 2, 3 do\n"                                       \
    "  if redis.call('PTTL', KEYS[i]) < entry_ttl then "      \
    "redis.call('PEXPIRE', KEYS[i], entry_ttl) end\n"         \
    "end\n"

// The fair scripts' next fence token (KEYS[4], the counter), as the acquire script moves it.
#define EDGELOCK_FAIR_FENCE_NEXT                                          \
    "local clock = time[1] .. string.format('%06d', tonumber(time[2]))\n" \
    "if redis.call('INCR', KEYS[4]) < tonumber(clock) then "              \
    "redis.call('SET', KEYS[4], clock) end\n"                             \
    "redis.call('PEXPIRE', KEYS[4], '" EDGELOCK_FENCE_TTL_MS "')\n"

inline constexpr std::string_view fair_acquire_script_text =
    "if #KEYS > 3 and redis.call('GET', KEYS[4]) == '9223372036854775807' then\n"
    "  redis.call('PERSIST', KEYS[4])\n"
    "  return redis.error_reply('FENCE_EXHAUSTED the fence counter is at 2^63-1')\n"
    "end\n" EDGELOCK_FAIR_PROLOGUE
    "local holder = redis.call('GET', KEYS[1])\n"
    "local head = first[1]\n"
    "local took = ARGV[4] ~= 'join' and (holder == ARGV[1] or not (holder or "
    "(head and head ~= ARGV[1])))\n"
    "if took and holder == ARGV[1] then\n"
    "  redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
    "elseif took then\n"
    "  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])\n"
    "elseif not redis.call('ZSCORE', KEYS[2], ARGV[1]) then\n"
    "  local last = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')[2]\n"
    "  redis.call('ZADD', KEYS[2], math.max(now, (tonumber(last) or 0) + 1), ARGV[1])\n"
    "end\n"
    "if took and head ~= ARGV[1] then\n"
    "  redis.call('ZADD', KEYS[2], (tonumber(first[2]) or now + 1) - 1, ARGV[1])\n"
    "end\n" EDGELOCK_LINE_ENTRY
    "if not took then\n"
    "  if not holder and head and head ~= ARGV[1] then\n"
    "    redis.call('PUBLISH', KEYS[2] .. ':' .. head, head)\n"
    "  end\n"
    "  return false\n"
    "end\n"
    "if #KEYS == 3 then return 0 end\n" EDGELOCK_FAIR_FENCE_NEXT
    "return redis.call('GET', KEYS[4])\n";

inline constexpr std::string_view fair_release_script_text =
    "local released = 0\n"
    "if redis.call('GET', KEYS[1]) == ARGV[1] then released = redis.call('DEL', KEYS[1]) end\n"
    "if ARGV[2] ~= 'stay' then\n"
    "  redis.call('ZREM', KEYS[2], ARGV[1])\n"
    "  redis.call('ZREM', KEYS[3], ARGV[1])\n"
    "end\n" EDGELOCK_FAIR_PROLOGUE
    "if not first[1] or redis.call('EXISTS', KEYS[1]) == 1 then return released end\n"
    "local message = first[1]\n"
    "local exhausted = #KEYS > 3 and redis.call('GET', KEYS[4]) == '9223372036854775807'\n"
    "if ARGV[2] ~= 'stay' and not exhausted then\n"
    "  local ends = tonumber(redis.call('ZSCORE', KEYS[3], first[1]))\n"
    "  redis.call('SET', KEYS[1], first[1], 'PX', ends - now)\n"
    "  local fence = '0'\n"
    "  if #KEYS > 3 then\n" EDGELOCK_FAIR_FENCE_NEXT
    "    fence = redis.call('GET', KEYS[4])\n"
    "  end\n"
    "  message = first[1] .. ' ' .. fence\n"
    "end\n"
    "redis.call('PUBLISH', KEYS[2] .. ':' .. first[1], message)\n"
    "return released\n";

// The semaphore's leases (lock_config::permits > 1): KEYS[1] is a sorted set whose members are
// the holders' tokens, each scored by its lease's expiry on the server's clock in ms, and one
// member "permits" scored -N. Expired leases go first; `limit` is that member's score, `held`
// the leases left.
#define EDGELOCK_SEM_LEASES                                    \
    "redis.call('ZREMRANGEBYSCORE', KEYS[1], 0, now)\n"        \
    "local limit = redis.call('ZSCORE', KEYS[1], 'permits')\n" \
    "local held = redis.call('ZCARD', KEYS[1]) - (limit and 1 or 0)\n"
// Two callers that disagree about N while leases are held get an error, not a mix.
#define EDGELOCK_SEM_AGREE                                                                \
    "if held > 0 and limit and -tonumber(limit) ~= permits then\n"                        \
    "  return redis.error_reply('PERMITS_MISMATCH the name has ' .. -tonumber(limit) .. " \
    "' permits, not ' .. permits)\n"                                                      \
    "end\n"
// Our lease (new or refreshed) expires ARGV[2] ms from now; the set lives at least as long.
#define EDGELOCK_SEM_EXTEND                                           \
    "redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])\n" \
    "if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then "        \
    "redis.call('PEXPIRE', KEYS[1], ARGV[2]) end\n"
#define EDGELOCK_SEM_TAKE "redis.call('ZADD', KEYS[1], -permits, 'permits')\n" EDGELOCK_SEM_EXTEND
// Our lease removed (`released` 1 when it was live); an empty set goes with its N.
#define EDGELOCK_SEM_GIVE_BACK                                \
    "local released = redis.call('ZREM', KEYS[1], ARGV[1])\n" \
    "held = held - released\n"                                \
    "if held == 0 then redis.call('DEL', KEYS[1]) end\n"

// A fenced semaphore's permit numbers (the last key: a sorted set of the holders' tokens, each
// scored by its permit, 0..N-1): `taken`, those of the other live leases, and `permit`, ours
// when our lease holds one (a retried acquire). Entries of leases gone are dropped on the way.
#define EDGELOCK_SEM_PERMIT                                                                \
    "local taken, numbered = {}, redis.call('ZRANGE', KEYS[#KEYS], 0, -1, 'WITHSCORES')\n" \
    "for i = 1, #numbered, 2 do\n"                                                         \
    "  local t, p = numbered[i], tonumber(numbered[i + 1])\n"                              \
    "  if not redis.call('ZSCORE', KEYS[1], t) then redis.call('ZREM', KEYS[#KEYS], t)\n"  \
    "  elseif t == ARGV[1] then permit = p\n"                                              \
    "  else taken[p] = true end\n"                                                         \
    "end\n"
// The next fence token (the counter is the key before the last): the first value above the
// counter, or above the server's clock in microseconds when the counter lags it (as the
// lock's), whose remainder by N is a permit no other live lease holds (ours, on a retry): the
// nearest, so the counter moves by one for a lone taker and by at most N, as little as it can.
// `base` and `step` in exact decimal, as Lua's numbers are not past 2^53. Refused when it would
// pass 2^63-1.
#define EDGELOCK_SEM_FENCE_CHECK                                                               \
    "base = redis.call('GET', KEYS[#KEYS - 1]) or '0'\n"                                       \
    "local clock = time[1] .. string.format('%06d', tonumber(time[2]))\n"                      \
    "if #clock > #base or (#clock == #base and clock > base) then base = clock end\n"          \
    "local rest = 0\n"                                                                         \
    "for i = 1, #base do rest = (rest * 10 + string.byte(base, i) - 48) % permits end\n"       \
    "for k = 1, permits do\n"                                                                  \
    "  if permit then break end\n"                                                             \
    "  if not taken[(rest + k) % permits] then permit = (rest + k) % permits end\n"            \
    "end\n"                                                                                    \
    "step = (permit - rest - 1) % permits + 1\n"                                               \
    "if #base == 19 and base > '9223372036854' .. string.format('%06d', 775807 - step) then\n" \
    "  redis.call('PERSIST', KEYS[#KEYS - 1])\n"                                               \
    "  return redis.error_reply('FENCE_EXHAUSTED no fence token of this permit is left')\n"    \
    "end\n"
// Takes the token, numbers our lease (the numbers live as long as the leases), and answers it.
#define EDGELOCK_SEM_FENCE_TAKE                                      \
    "redis.call('SET', KEYS[#KEYS - 1], base)\n"                     \
    "redis.call('INCRBY', KEYS[#KEYS - 1], step)\n"                  \
    "redis.call('PEXPIRE', KEYS[#KEYS - 1], '" EDGELOCK_FENCE_TTL_MS \
    "')\n"                                                           \
    "redis.call('ZADD', KEYS[#KEYS], permit, ARGV[1])\n"             \
    "if redis.call('PTTL', KEYS[#KEYS]) < tonumber(ARGV[2]) then "   \
    "redis.call('PEXPIRE', KEYS[#KEYS], ARGV[2]) end\n"              \
    "return redis.call('GET', KEYS[#KEYS - 1])\n"

inline constexpr std::string_view permit_acquire_script_text =
    EDGELOCK_SERVER_NOW EDGELOCK_SEM_LEASES
    "local permits = tonumber(ARGV[3])\n" EDGELOCK_SEM_AGREE
    "if held >= permits and not redis.call('ZSCORE', KEYS[1], ARGV[1]) then\n"
    "  return false\n"
    "end\n"
    "local permit, base, step\n"
    "if #KEYS > 1 then\n" EDGELOCK_SEM_PERMIT EDGELOCK_SEM_FENCE_CHECK "end\n" EDGELOCK_SEM_TAKE
    "if #KEYS == 1 then return 0 end\n" EDGELOCK_SEM_FENCE_TAKE;

// A fenced renewal keeps our permit's number: put back when the numbers were lost (evicted,
// flushed), unless another live lease has taken that permit meanwhile, which loses ours.
inline constexpr std::string_view permit_renew_script_text = EDGELOCK_SERVER_NOW
    "redis.call('ZREMRANGEBYSCORE', KEYS[1], 0, now)\n"
    "if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then return 0 end\n"
    "if #KEYS > 1 and not redis.call('ZSCORE', KEYS[2], ARGV[1]) then\n"
    "  for _, t in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], ARGV[3], ARGV[3])) do\n"
    "    if redis.call('ZSCORE', KEYS[1], t) then return 0 end\n"
    "  end\n"
    "  redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])\n"
    "end\n" EDGELOCK_SEM_EXTEND
    "if #KEYS > 1 and redis.call('PTTL', KEYS[2]) < tonumber(ARGV[2]) then\n"
    "  redis.call('PEXPIRE', KEYS[2], ARGV[2])\n"
    "end\n"
    "return 1\n";

inline constexpr std::string_view permit_release_script_text =
    EDGELOCK_SERVER_NOW EDGELOCK_SEM_LEASES EDGELOCK_SEM_GIVE_BACK "return released\n";

// The fair semaphore: a free permit goes to a waiter only when fewer waiters that hold none
// are ahead of it in the line than permits are free (`wake`, the ones ahead, are woken when
// it may not take). A taker keeps its place in the line (or is put at its head) until its
// release, as the fair lock's taker does.
inline constexpr std::string_view fair_permit_acquire_script_text =
    EDGELOCK_FAIR_PROLOGUE EDGELOCK_SEM_LEASES
    "local permits = tonumber(ARGV[4])\n" EDGELOCK_SEM_AGREE
    "local mine = redis.call('ZSCORE', KEYS[1], ARGV[1])\n"
    "local wake = {}\n"
    "for _, w in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do\n"
    "  if w == ARGV[1] or #wake >= permits - held then break end\n"
    "  if not redis.call('ZSCORE', KEYS[1], w) then wake[#wake + 1] = w end\n"
    "end\n"
    "local took = ARGV[5] ~= 'join' and (mine or #wake < permits - held)\n"
    "local permit, base, step\n"
    "if took and #KEYS > 3 then\n" EDGELOCK_SEM_PERMIT EDGELOCK_SEM_FENCE_CHECK
    "end\n"
    "if took then\n" EDGELOCK_SEM_TAKE
    "  if not redis.call('ZSCORE', KEYS[2], ARGV[1]) then\n"
    "    redis.call('ZADD', KEYS[2], (tonumber(first[2]) or now + 1) - 1, ARGV[1])\n"
    "  end\n"
    "elseif not redis.call('ZSCORE', KEYS[2], ARGV[1]) then\n"
    "  local last = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')[2]\n"
    "  redis.call('ZADD', KEYS[2], math.max(now, (tonumber(last) or 0) + 1), ARGV[1])\n"
    "end\n" EDGELOCK_LINE_ENTRY
    "if not took then\n"
    "  for _, w in ipairs(wake) do redis.call('PUBLISH', KEYS[2] .. ':' .. w, w) end\n"
    "  return false\n"
    "end\n"
    "if #KEYS == 3 then return 0 end\n" EDGELOCK_SEM_FENCE_TAKE;

inline constexpr std::string_view fair_permit_release_script_text = EDGELOCK_SERVER_NOW
    "if ARGV[3] ~= 'stay' then\n"
    "  redis.call('ZREM', KEYS[2], ARGV[1])\n"
    "  redis.call('ZREM', KEYS[3], ARGV[1])\n"
    "end\n" EDGELOCK_SEM_LEASES EDGELOCK_SEM_GIVE_BACK EDGELOCK_LINE_CLEANUP
    "local free = tonumber(ARGV[2]) - held\n"
    "for _, w in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do\n"
    "  if free <= 0 then break end\n"
    "  if w ~= ARGV[1] and not redis.call('ZSCORE', KEYS[1], w) then\n"
    "    redis.call('PUBLISH', KEYS[2] .. ':' .. w, w)\n"
    "    free = free - 1\n"
    "  end\n"
    "end\n"
    "return released\n";

#undef EDGELOCK_SEM_FENCE_TAKE
#undef EDGELOCK_SEM_FENCE_CHECK
#undef EDGELOCK_SEM_PERMIT
#undef EDGELOCK_SEM_GIVE_BACK
#undef EDGELOCK_SEM_TAKE
#undef EDGELOCK_SEM_EXTEND
#undef EDGELOCK_SEM_AGREE
#undef EDGELOCK_SEM_LEASES
#undef EDGELOCK_LINE_ENTRY
#undef EDGELOCK_FAIR_PROLOGUE
#undef EDGELOCK_LINE_CLEANUP
#undef EDGELOCK_SERVER_NOW
#undef EDGELOCK_FENCE_TTL_MS

inline constexpr script acquire_script{acquire_script_text, sha1(acquire_script_text)};
inline constexpr script raise_script{raise_script_text, sha1(raise_script_text)};
inline constexpr script renew_script{renew_script_text, sha1(renew_script_text)};
inline constexpr script release_script{release_script_text, sha1(release_script_text)};
inline constexpr script fair_acquire_script{fair_acquire_script_text,
                                            sha1(fair_acquire_script_text)};
inline constexpr script fair_release_script{fair_release_script_text,
                                            sha1(fair_release_script_text)};
inline constexpr script permit_acquire_script{permit_acquire_script_text,
                                              sha1(permit_acquire_script_text)};
inline constexpr script permit_renew_script{permit_renew_script_text,
                                            sha1(permit_renew_script_text)};
inline constexpr script permit_release_script{permit_release_script_text,
                                              sha1(permit_release_script_text)};
inline constexpr script fair_permit_acquire_script{fair_permit_acquire_script_text,
                                                   sha1(fair_permit_acquire_script_text)};
inline constexpr script fair_permit_release_script{fair_permit_release_script_text,
                                                   sha1(fair_permit_release_script_text)};

}  // namespace edgelock
