// SPDX-License-Identifier: Apache-2.0
// edgelock: one distributed lock, as a sans-IO state machine.
//
// A `lock` is one lock name held by one owner over 1..instances_max Redis instances: one
// instance is the ordinary case (a single Redis, or the master behind Sentinel); an odd
// count N > 1 is Redlock, where the lock is held while a quorum of N/2+1 instances agree.
//
// The object never touches a socket, a clock or the heap. The caller drives it:
//
//   calls in    acquire(now, wait, token)   release(now)
//               on_reply(instance, reply, now)   on_io_error(instance, now)   on_timer(now)
//               give_up_unsent(instance, now)
//   pulls out   has_request(instance) / write_request(instance, buffer)   bytes to send
//               next_deadline_ms()                                           when to call on_timer
//               poll_event(event)                                            what happened
//
// `now` is the caller's monotonic clock in milliseconds (never the wall clock), passed on every
// call. The clock contract:
//   - every now_ms lies within [-now_ms_limit, now_ms_limit] (limits.hpp: 2^62 ms); a call
//     outside returns invalid_time and changes nothing. Inside, no lease computation can
//     overflow, whatever the start (negative readings are fine).
//   - it never goes backwards. A call whose now_ms is below the previous call's (a clock
//     reset, a 32-bit tick that wrapped) fails closed, before the call does its own work: a
//     hold ends with `lost` (clock_stepped_back), a running acquire() ends with
//     `acquire_failed` (clock_stepped_back) and cleans up, a release goes on with its
//     deadline moved to the new timeline. The new reading is the lock's time from then on.
//     held(now) is false for any reading below the last call's, told or not.
// The events such a step queues count within the call's events_per_call_max. After every
// call in, the caller drains poll_event(), sends what write_request() produces for each
// instance in order, and arms a timer for next_deadline_ms(). Replies for an instance must be
// handed over in the order the requests were written, as one pipelined connection delivers
// them; when a connection fails, on_io_error() says so and the requests in flight on it are
// given up.
//
// Lease arithmetic (all on the caller's monotonic clock):
//   An attempt starts at t0, the instant before its requests are handed out. It holds the
//   lock when a quorum answered OK and validity = ttl - (now - t0) - drift is still > 0, so
//   the lock is held until valid_until = t0 + ttl - drift. Time spent waiting for replies
//   (a paused process, a slow network) is subtracted, never ignored. drift defaults to
//   ttl/100 + 2 ms, the allowance for Redis expiring keys on its own, slightly faster clock.
//   A renewal started at t1 and confirmed by a quorum before valid_until extends it to
//   t1 + ttl - drift. held(now) is false from valid_until on, whether or not on_timer ran.
//
// Renewals with replicas_to_wait > 0 (Sentinel + WAIT):
//   The acquire counts only once WAIT confirmed that replicas have the key, so a failover
//   cannot promote a replica that lacks it. A renewal needs the same: the master's OK alone
//   moves the key's expiry there, while the replicas may still carry the previous one. If
//   validity grew on that OK and the master then failed, Sentinel could promote a replica
//   whose copy expires at the old time, and another client would take the lock there while
//   this holder still believed. So a renewal's OK is followed by WAIT on the instances that
//   renewed, and valid_until moves to t1 + ttl - drift only once a quorum of them confirmed
//   (t1 still the renewal's start). Until then validity stays what the last confirmed round
//   gave; a WAIT that falls short or times out is retried like a failed renewal, and the
//   hold is lost at valid_until if no confirmation comes. (Extending only up to the expiry
//   replicas last confirmed would be the same bound, reached with the same round trip.)
//
// Fencing tokens with N > 1 (why the extra "raise" round trip is needed):
//   Each instance has its own counter, INCRed by the acquire script where the SET succeeds.
//   One instance's counter is not enough: the next holder may reach a quorum that does not
//   include it. So a holder H computes t = max of the INCR results over its quorum Q, then
//   raises the counter to >= t on the instances of Q where it still holds the key, and hands
//   t out only after a quorum R (a subset of Q) confirmed the raise, still within validity.
//   Claim: the next holder H' (which acquires only after H's keys are gone from a quorum)
//   gets t' > t. Proof: R and H''s quorum Q' are both majorities, so they share an instance
//   x. On x, H's key existed when the raise ran (the raise checks it), and H''s SET on x
//   succeeded only after that key was gone, so H''s INCR on x ran after the raise and
//   returns > t; t' is the max over Q', hence t' > t. Counters never decrease (INCR and
//   raise only go up), so tokens increase over any sequence of holders, not only pairs.
//   The argument needs what Redlock itself needs: keys do not vanish early (no wall-clock
//   jump on a Redis node, no restart that forgets data unless the restart guard below keeps
//   the node out until that cannot matter). The simulator checks both sides.
//   With N = 1 the single counter is already monotonic and no raise is sent.
//
// Restarts (the restart guard):
//   Redlock, and a single Redis, assume a key lasts its TTL. A Redis that restarts without
//   durable data (no AOF with appendfsync always) forgets keys early: another owner may still
//   hold a lease that relied on the forgotten key, and SET NX succeeds under it. So an
//   instance whose process started less than restart_guard_ms ago does not count toward a
//   quorum: an attempt whose lease starts at t0 counts the instance only when
//   started + guard <= t0. Every lease that relied on a key it forgot began before the
//   restart and ended within the longest TTL after it, so the guard must cover the longest
//   TTL (plus drift) any client of this name uses; the default is this lock's ttl + drift.
//   The caller reads the start from the node (INFO uptime) on every connection and tells
//   on_node_started(); without that call an instance always counts. What it is told is kept
//   with the guard off too (a later configure() may turn it on), and a durable reading does
//   not erase a non-durable start of the same process (keys it forgot before AOF always was
//   switched on stay forgotten): only a durable process that restarted clears it.
//   Instances kept out are not asked at all; with fewer than a quorum left, none is, and the
//   attempt fails with restart_guard (a refusal says busy first), carrying guard_until_ms,
//   the instant a quorum of instances counts; with a wait that reaches it the attempt is
//   retried then, otherwise acquire_failed{restart_guard} comes at once.
//   A restart noticed during an attempt or a hold (its run_id changed, or a start read then
//   that would have kept it out at t0) takes the instance out of that attempt or hold: its
//   OK no longer counts, and a hold left with fewer than a quorum of instances is lost with
//   node_restarted.
//   Why a node's first start is guarded too: nothing a client can read tells a first start
//   from a restart that lost everything. Both begin with an empty data set and a new run_id;
//   a marker key written into the node (which a restart without persistence would lose) is
//   missing after both; and a marker proves only that this process did not restart since it
//   was written, which its uptime already says. What the guard must cover is the leases of
//   the process before, which only that process knew. Mixed TTLs make it worse, not better:
//   a marker recording the guard some client already waited out (30 s for its 30 s leases)
//   says nothing about a 1 h lease that a client of the same name held before the start. So
//   the guard stays a TTL after every start of a node without durable data, and the ways out
//   are the operator's: AOF with appendfsync always (durable: no guard), or a guard sized by
//   hand (restart_guard_ms; 0 turns it off) by someone who knows which leases the node can
//   have carried before it started.
//
// Fencing across restarts: a restart without durable data forgets the fence counter too, or
// sets it back to an older snapshot, and an INCR from there would hand out tokens already
// given. So the acquire script keeps the counter at or above the node's clock in microseconds
// (TIME, scripts.hpp): every token is at least the clock reading of its acquire, and above it
// only by the acquires of the last moments (fewer than 10^6 a second). The guard makes that
// sufficient: a restarted node counts only once every lease from before the restart is over,
// a TTL after its last token, so the first token it hands out after is above every earlier
// one (as long as the node's clock did not step back across the restart). With N > 1 the
// raise copies the highest counter onto every instance of the quorum, and that counter may
// come from a node whose clock runs ahead: a node that forgets it resumes from its own
// clock, so the argument also needs the nodes' clocks to agree within the guard (a node
// behind by more than ttl + drift could hand out a lower token after its restart).
//
// Fence counters expire: every name ever locked ("orders:42", one per entity) would otherwise
// leave its counter in Redis for good. So each write of a counter (the acquire scripts, the
// raise) gives it the expiry fence_ttl_ms (limits.hpp, a week), and an idle name's counter
// goes a week after its last holder. The floor above makes that safe, by the same argument
// as a restart that forgot it: say the last write left the counter at v, at clock reading c
// (microseconds). v exceeds c only by the tokens handed out faster than the clock ran (fewer
// than 10^6 a second keeps v - c small), and the counter is gone only after c + a week, so
// the first token after that is at least the clock then, above v, unless the counter ran a
// week ahead of the clock or the node's clock stepped back by a week. A name in use keeps its
// counter: a week is far beyond the longest lease (ttl_ms_max), and every acquire refreshes
// it. With N > 1 each instance's counter expires on its own; the raise refreshes those of the
// quorum, and one that expired restarts from its node's clock, as after a restart (above).
//
// The acquire on the wire: without fencing it is Redis's own SET key token NX PX ttl GET
// (Redis 7.0 and later), cheaper for the server than the script. Nil means the key was
// free and is now ours. Our own token back means an earlier attempt of this acquire() set
// the key and its reply was lost: that key's expiry counts from the earlier attempt, so it
// is extended from this one by a renew (the renew script) before the instance counts. Any
// other value is another owner's. An instance that answers the form with a syntax error (a
// server before 7.0) gets the acquire script instead (scripts.hpp), which does all of that
// in one step, from then on until its connection changes (on_io_error); the attempt's own
// retry is the script's text (EVAL), whatever connection it then goes out on. With fencing the
// acquire is always the script: the counter must move in the same atomic step.
//
// Fair waiting (lock_config::fair, one instance: a single Redis or Sentinel's master):
//   Waiters line up in Redis in arrival order and are woken when the lock is freed, instead
//   of polling with backoff, where the releaser (or the waiter whose backoff happens to end
//   first) wins and a waiter can starve. Every acquire attempt is the fair_acquire script
//   (scripts.hpp): a free lock goes only to the head of the line (or to anyone when the line
//   is empty); a refused attempt leaves our token in the line, whose entry expires
//   queue_entry_ttl_ms after the attempt, so a waiter that died drops out of the line by
//   itself. The line is the name's own (keys.hpp: no two names share one).
//   The taker stays at the head of the line until its release, with its entry's expiry
//   renewed by the take: if the answer is lost, the cleanup that deletes the key leaves it
//   first in line, and its next attempt takes the lock again. A fair release (and the
//   cleanup of an acquire() that gave up, or of a hold that was lost) removes our token and
//   hands the free lock to the new head (a grant): the key takes its token, expiring when
//   its entry in the line does, and "<token> <fence>" is published on that waiter's own
//   channel (keys.hpp, write_wake_channel: the queue key, ":" and the token), so a release
//   wakes one waiter, which holds the lock without another round trip. Its lease counts
//   from its acquire() call (every entry of its token was set after it), for
//   min(queue_entry_ttl_ms, ttl) - drift, and its first renewal comes within a third of
//   that. A grant is taken only while backing off, without WAIT (no replica confirmed the
//   grant), with the watchdog on, with a fence when fencing, with validity left, and only
//   while this acquire() has sent no cleanup and lost no connection to the node: a cleanup
//   deletes the key when it holds our token, a granted one too, and a pub/sub message is
//   not ordered with our replies, so a grant it deleted could still be read after it; a new
//   connection may reach a restarted node whose start the lock has not been told of yet, or
//   whose grant would need the restart guard. Otherwise it is a wake-up, and the next
//   attempt takes the key that holds our token (as a retried acquire does). The grant's key
//   ends when the entry does, by the clock of the node that runs the release: after a slot
//   migration (Redis Cluster) another node's clock reads the entry's expiry, so the nodes'
//   clocks must agree within drift, as they must for a failover already (replicas keep
//   absolute expiries). A head that died holds the granted lock until its entry would have
//   expired, as long as it would have kept the free lock from the line. A waiter of an
//   earlier version, which knows no grants, hears its token and more, not its token: it
//   takes the lock granted to it at its next re-check.
//   The caller subscribes to its acquire()'s channel (wake_channel()) while wants_wake_ups()
//   is true and passes each message to on_wake(); a message naming our token starts the
//   next attempt at once. Each acquire() brings a new token and so a new channel. So
//   that a lost message (a dropped subscriber connection, or a release published before the
//   subscription took effect) never strands a waiter, the caller also calls on_wake() with
//   an empty message whenever its subscription is (re)confirmed, and attempts repeat at
//   least every recheck_ms while waiting, which also keeps our entry from expiring. A wake-up
//   that arrives while an attempt is in flight is kept: if that attempt is refused, the next
//   starts at once. An attempt that fails otherwise (no answer in time, a dropped
//   connection) is cleaned up with the fair release's "stay" form: the lock key is deleted
//   if the attempt set it, and the waiter keeps its place.
//   The restart guard (below) delays the take, not the place: while it keeps the instance
//   out and the wait reaches its end, each attempt only joins the line (the script's "join":
//   it never takes the lock) and is repeated every recheck_ms to keep the entry alive, so
//   waiters that arrive during the guard are served in arrival order once it ends. A wait
//   that ends before the guard does fails at once with restart_guard and joins nothing.
//   Bounds: a release wakes the head at once; a lost wake-up costs at most recheck_ms (plus
//   the attempt's round trip); a head that died holds the free lock for at most its
//   entry's remaining time plus one re-check of another waiter (with the defaults about
//   10 s), and so does a holder that died (its entry counts from its take). A head whose
//   entry is gone altogether (deleted, evicted) is dropped by the next script. A waiter's
//   leaving release that cannot be sent (its connection is gone for good, or its request
//   queue is full of requests still in flight) leaves the entry to expire within
//   queue_entry_ttl_ms of its last attempt, the bound of a waiter that died. A waiter keeps
//   its place while one of its scripts reaches Redis at least every queue_entry_ttl_ms: the
//   minimum allowed covers one refused attempt after another (recheck_ms + 2 x the attempt
//   timeout), not an attempt lost in between (with the defaults, 8 s against up to 2 x (1 s
//   + 3 s) + 3 s); a waiter whose requests are lost that long rejoins at the tail. A head
//   that joins under its restart guard keeps the free lock from the waiters behind it until
//   its guard ends: clients of one name must share one guard (restart_guard_ms covering the
//   longest TTL any of them uses), as the guard's own argument already needs. Entries expire
//   on the Redis server's clock (TIME), like keys: a server clock that steps forward drops
//   every waiter's entry at once (they rejoin in the order of their next re-checks), one
//   that steps back keeps dead entries longer.
//   Clients of the same key that do not use the line (plain edgelock locks, SET NX from
//   other libraries) still exclude and are excluded, as the lock key is the same; they may
//   take a free lock ahead of the line, and their releases wake nobody, so fair waiters then
//   find the lock free at their next re-check.
//   Over several independent masters (Redlock) an order would have to be agreed by a quorum
//   of queues that can each see waiters arrive in another order; edgelock does not attempt
//   it: fair needs instances = 1.
//
// Semaphores (lock_config::permits = N > 1): up to N owners hold the name at once, each with
//   its own token and lease. The name's key is then a sorted set of the holders'
//   tokens, each scored by its lease's expiry on the server's clock, and every call is a script
//   (scripts.hpp): acquire takes a lease while fewer than N live ones are left (expired ones
//   are dropped first), renew extends only ours, release removes only ours. The rest is the
//   lock's: each holder's validity counts from its own attempt's t0, the watchdog, WAIT for
//   replicas, the restart guard, reentrancy, and fair waiting (a freed permit goes to the
//   waiters at the head of the line that hold none). N goes with every acquire: while leases
//   are held, an acquire with another N fails with permits_mismatch, and a lock on a
//   semaphore's name, or a semaphore on a lock's, fails with wrong_kind (Redis's WRONGTYPE).
//   Neither is retried, whatever the wait: the configuration needs mending. permits = 1 is the
//   lock, unchanged on the wire. Over independent masters (Redlock) a quorum does not bound
//   the holders: with N >= 2, N + 1 owners can each hold a majority of 5 masters while no
//   master has more than N leases (3(N + 1) <= 5N), so permits > 1 needs instances = 1.
//   Fencing numbers the permits: each lease holds a permit p in 0..N-1 that no other live
//   lease holds, and its fence token is the first value above the name's counter whose
//   remainder by N is a free permit, p (permit_of): the nearest, so a lone taker moves the
//   counter by one, as the lock does, and no grant by more than N. Tokens still rise
//   strictly in grant order, exact to 2^63-1, and a permit passes from one holder to the
//   next as the lock does, with a higher token each time. So the resource keeps the highest
//   token it has accepted per permit and refuses a lower one of the same permit: a holder
//   whose lease ended is refused once the next holder of its permit has touched the
//   resource, as the lock's fencing refuses it. (One highest token for all permits would
//   refuse a live holder of a long job while the other permits changed hands, and a count
//   of later tokens would let an expired holder in.) The numbers live in the name's slots
//   key (keys.hpp) as long as its leases; a renewal puts its own back if the key was lost
//   (evicted, flushed) and fails, losing the lease, if another live lease took that permit
//   meanwhile: run with maxmemory-policy noeviction. All holders of a name fence, or none:
//   an unfenced lease holds no permit number. N can change only while no lease is held;
//   a resource that learns of a new N starts every permit's highest token at the highest it
//   accepted under the old one (every later token is above it).
//
// Tokens: 128 random bits from the caller per acquire() (the core reads no entropy), sent as
// 32 hex characters. The same token is kept across the retries of one acquire() and for the
// whole hold; every acquire() must bring a new token (a grant of a reused one could be taken,
// and a cleanup of the earlier acquire() still queued would then delete it).
//
// Reentrancy: acquire() on a held lock counts one more hold and queues `acquired` at once,
// with no traffic; release() counts down and only the last one talks to Redis.
//
// sizeof(lock) is checked in lock.cpp: at most 640 bytes with instances_max = 7.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string_view>

#include "edgelock/backoff.hpp"
#include "edgelock/errc.hpp"
#include "edgelock/limits.hpp"
#include "edgelock/request_ring.hpp"
#include "edgelock/resp_reader.hpp"

namespace edgelock {

struct script;

inline constexpr std::int64_t no_deadline_ms = std::numeric_limits<std::int64_t>::max();

// The permit a fenced semaphore's fence token stands for (see "Semaphores" above): 0..N-1, as
// a resource keys the highest token it has accepted. 0 for the lock (permits = 1).
constexpr std::uint16_t permit_of(std::int64_t fence, std::uint16_t permits) noexcept {
    return permits == 0 || fence < 0 ? 0 : static_cast<std::uint16_t>(fence % permits);
}

struct lock_config {
    // 1..name_bytes_max bytes, copied; the Redis key as is. Not another lock's fence or queue
    // key (is_companion_key() in keys.hpp: ":fence", ":queue", ":qttl" or ":owner" after a
    // part with a hash tag, as "{x}:fence").
    std::string_view name;
    std::int64_t ttl_ms = 30'000;  // lease length, 1..ttl_ms_max
    std::uint8_t instances = 1;    // 1, or odd up to instances_max (Redlock)
    bool fencing = false;          // maintain a fence counter and hand out its tokens:
                                   // exact integers 1..2^63-1; once a counter reaches
                                   // 2^63-1, acquires fail at once with fence_exhausted,
                                   // whatever their wait (an operator must reset it)
    bool watchdog = true;          // renew while held; without it the lease simply ends

    // Sentinel deployments: after the acquire, send WAIT so the SET reached this many
    // replicas before the lock counts as held (a failover then cannot promote a replica
    // that never saw it), and after each renewal before it extends validity (see the lease
    // arithmetic above). 0 sends no WAIT.
    std::uint8_t replicas_to_wait = 0;
    std::int64_t replica_wait_ms = 0;  // WAIT's timeout; default attempt timeout / 2

    // Zero or negative means "the default", computed from ttl_ms; for drift_ms only a
    // negative value does (0 is no allowance at all). Each must be at most ttl_ms_max, with
    // the watchdog or without.
    std::int64_t renew_interval_ms = 0;   // default ttl/3; must end before validity would
    std::int64_t drift_ms = -1;           // default ttl/100 + 2; must be < ttl
    std::int64_t attempt_timeout_ms = 0;  // one round's reply budget; default max(ttl/10, 1)
    std::int64_t retry_delay_ms_min = 0;  // backoff base, default 50 (capped to the max)
    std::int64_t retry_delay_ms_max = 0;  // backoff cap, default 1000

    // How long an instance restarted without durable data stays out of the quorum (see
    // "Restarts" above): negative means ttl + drift, 0 turns the guard off, at most ttl_ms_max.
    std::int64_t restart_guard_ms = -1;

    // Fair waiting (see "Fair waiting" above); needs instances = 1. While waiting, attempts
    // repeat at the latest every recheck_ms (default 1000, at most wait_ms_max); our line
    // entry expires queue_entry_ttl_ms after each (default 2 * (recheck + attempt timeout)),
    // which must exceed recheck_ms + 2 * the attempt timeout (the longest gap between two
    // attempts reaching Redis), and be at most ttl_ms_max. Checked only with fair set.
    bool fair = false;
    std::int64_t recheck_ms = 0;
    std::int64_t queue_entry_ttl_ms = 0;

    // A semaphore (see "Semaphores" above): up to this many owners hold the name at once,
    // each with its own lease and token. 1 is the lock; 2..permits_max needs instances = 1.
    std::uint16_t permits = 1;
};

// `config` with every default above filled in, exactly as configure() will run it: the
// renew interval, drift, attempt timeout, retry delays, replica_wait_ms (even with
// replicas_to_wait 0), restart_guard_ms (0 stays off) and, fair or not, recheck_ms and
// queue_entry_ttl_ms. Values given are kept as given, valid or not; nothing is checked
// (configure() does that), and a default that would overflow from out-of-range inputs
// saturates instead. resolve(resolve(c)) == resolve(c). Transports, tools and the simulator
// read the defaults here rather than restating them.
lock_config resolve(const lock_config& config) noexcept;

// What the caller learned of an instance's Redis process when it connected.
struct node_start {
    std::int64_t started_ms = 0;  // on the caller's clock: the latest instant it can have started
    bool durable = false;         // AOF with appendfsync always: a restart forgets no write
    bool restarted = false;       // its run_id differs from the previous connection's
};

enum class lock_state : std::uint8_t {
    unconfigured,  // configure() has not succeeded yet
    idle,          // not held, nothing running (background cleanup may still be in flight)
    acquiring,     // an attempt's requests are out
    backing_off,   // an attempt failed; the next starts at the backoff deadline
    confirming,    // quorum reached; raising fence counters (N > 1 with fencing) and/or
                   // waiting for replicas (WAIT), within the attempt's validity
    held,          // held until valid_until_ms(); renewals run if the watchdog is on
    releasing,     // the last release() is deleting the key everywhere
    lost,          // the hold ended without release(): the next release() reports it
};

enum class event_type : std::uint8_t {
    acquired,        // fence, valid_until_ms
    acquire_failed,  // code (busy, no_quorum, validity_expired, token_gone, not_replicated,
                     // fence_exhausted, restart_guard (with guard_until_ms), wait_timeout,
                     // cancelled, clock_stepped_back, wrong_kind, permits_mismatch),
                     // cause (with wait_timeout: the last attempt's failure)
    renewed,         // valid_until_ms
    lost,            // code: expired (no quorum confirmed in time), token_gone,
                     // node_restarted (too few instances left that did not restart), or
                     // clock_stepped_back (the caller's clock went backwards)
    released,        // expired_before, instances_released
};

struct event {
    event_type type = event_type::released;
    errc code = errc::ok;
    errc cause = errc::ok;
    bool expired_before = false;          // released: the lease had already run out, or a quorum
                                          // said the key no longer held our token
    std::uint8_t instances_released = 0;  // released: instances that deleted our key
    std::int64_t fence = 0;               // acquired: the fence token (0 without fencing)
    std::int64_t valid_until_ms = 0;      // acquired, renewed: end of the lease
    std::int64_t guard_until_ms = 0;      // acquire_failed with restart_guard (as code or
                                          // cause): when a quorum of instances counts again
};

struct [[nodiscard]] write_result {
    errc code = errc::ok;
    std::size_t size = 0;
};

class lock {
public:
    lock() noexcept = default;
    lock(const lock&) = delete;
    lock& operator=(const lock&) = delete;

    // Validates and stores `config` (the name is copied). Allowed while unconfigured, idle or
    // lost, with no request queued or in flight (cleanups after a loss or a failed attempt
    // included: their replies or io errors must come first).
    // Returns ok, invalid_name (empty, too long, or another lock's fence or queue key),
    // invalid_ttl, invalid_instances (also: permits > 1 over more than one instance),
    // invalid_config, invalid_state. On error the lock keeps
    // its previous configuration.
    errc configure(const lock_config& config) noexcept;

    // Starts acquiring (from idle or lost): wait_ms = 0 makes one attempt; otherwise attempts
    // repeat, with exponential backoff and full jitter, while they can start by now + wait_ms
    // (not after fence_exhausted, wrong_kind or permits_mismatch: no retry mends them). The result
    // comes as an `acquired` or `acquire_failed` event. On a held lock it counts another hold
    // and queues `acquired` at once (the token is then ignored). On a held lock whose lease
    // has run out by now_ms, or whose clock stepped back (no call noticed it yet), the hold
    // is lost first (`lost`) and the call returns expired: a reentrant acquire never starts
    // a new hold in place of the one it was meant to nest in.
    // Returns ok, expired (that case), invalid_wait, invalid_time, events_pending (the event
    // queue lacks room), invalid_state (unconfigured, or already acquiring, confirming or
    // releasing, or the hold count is at holds_max).
    errc acquire(std::int64_t now_ms, std::int64_t wait_ms, const owner_token& token) noexcept;

    // Drops one hold. The last one deletes the key on every instance (compare-and-delete,
    // so a late or retried release never deletes another owner's lock) and ends with a
    // `released` event. After `lost`, it queues released{expired_before = true} at once
    // (the cleanup was already sent when the loss was noticed). While acquiring, it cancels:
    // queues acquire_failed with code cancelled, and cleans up behind an attempt in flight
    // (one that failed already, now backing off, queued its cleanup when it failed).
    // Returns ok, not_held (idle: nothing acquired), invalid_time, events_pending,
    // invalid_state (unconfigured, already releasing).
    errc release(std::int64_t now_ms) noexcept;

    // Hands over the next reply from `instance`. Error replies count as a failure of that
    // instance for the running round and return error_reply, but for two that return ok:
    // NOSCRIPT to a script (the request is sent again as EVAL), and a syntax error to the
    // native acquire (remembered; the running round's acquire is sent again as the script,
    // see "The acquire on the wire").
    // Returns ok, invalid_instance, unexpected_reply (nothing in flight on that instance, or
    // a reply type the request cannot produce: the instance counts as failed), error_reply,
    // invalid_state (unconfigured), invalid_time or events_pending (the reply was not used:
    // hand it over again).
    errc on_reply(std::uint8_t instance, const reply_node& reply, std::int64_t now_ms) noexcept;

    // Redis Cluster: the oldest request in flight on `instance` was answered with a redirect
    // (MOVED or ASK), so it did not run. It is queued again as it was, for the node the caller
    // routes it to next: the running round's always, a cleanup release when re-sending it
    // cannot delete a key set after it (as after NOSCRIPT). Its round keeps its start, so the
    // validity it may grant is still measured from the first send. The caller bounds how
    // many redirects it follows and hands the last one to on_reply() instead, as the error it is.
    // Returns ok, invalid_instance, unexpected_reply (nothing in flight on that instance),
    // invalid_state (unconfigured), invalid_time or events_pending (nothing was taken: call
    // again after draining).
    errc on_redirect(std::uint8_t instance, std::int64_t now_ms) noexcept;

    // The connection to `instance` failed: requests in flight on it are given up, requests not
    // yet written stay queued. Releases are queued again for the next connection: the running
    // round's, and a cleanup after a failed attempt or a lost hold while a key it must delete
    // can still be there (up to a TTL plus drift after the token's last claim left flight)
    // and no later claim of the same token would run before it. With replicas_to_wait > 0,
    // a claim the instance confirmed in the running round counts as failed, and its unwritten
    // WAIT is dropped: WAIT on a new connection confirms nothing. Call it whenever the
    // connection changes, even with nothing in flight (e.g. an idle one the server closed).
    // Returns ok, invalid_instance, invalid_state (unconfigured), invalid_time,
    // events_pending (nothing was given up: call again after draining).
    errc on_io_error(std::uint8_t instance, std::int64_t now_ms) noexcept;

    // The connection to `instance` failed and no other can be made for a while (a reconnect
    // delay): on_io_error(), and the requests queued for it but not yet written are given up
    // with those in flight, exactly as if they had been written on the failed connection,
    // rather than waiting for a connection until their round's deadline. Releases among them
    // are queued again for the next connection, as on_io_error() queues those in flight, and
    // what the call itself queues (the cleanup of a round it decides, an attempt a timer due
    // by now_ms starts) waits for the next connection too.
    // Returns ok, invalid_instance, invalid_state (unconfigured), invalid_time,
    // events_pending (nothing was dropped or given up: call again after draining).
    errc give_up_unsent(std::uint8_t instance, std::int64_t now_ms) noexcept;
    // give_up_unsent's name in 0.1.0, deprecated.
    [[deprecated("renamed give_up_unsent")]] errc drop_unsent(std::uint8_t instance,
                                                              std::int64_t now_ms) noexcept {
        return give_up_unsent(instance, now_ms);
    }

    // Tells what the caller learned of `instance`'s process on connecting (see "Restarts"):
    // call it after on_io_error() for the old connection and before writing on the new one.
    // With the guard off it changes nothing. A restart noticed during an attempt or a hold
    // takes the instance out of it, which may end the attempt or lose the hold at once.
    // Returns ok, invalid_instance, invalid_state (unconfigured), invalid_time (now_ms or
    // started_ms outside [-now_ms_limit, now_ms_limit]), events_pending.
    errc on_node_started(std::uint8_t instance, const node_start& start,
                         std::int64_t now_ms) noexcept;

    // Runs whatever is due by now_ms. Returns ok, invalid_state (unconfigured), invalid_time
    // or events_pending.
    errc on_timer(std::int64_t now_ms) noexcept;

    // A message on a fair lock's channel (see "Fair waiting"): the token (32 hex characters)
    // of the waiter whose turn it is, a grant ("<token> <fence>": the lock is that waiter's),
    // or empty for "look now" (the caller's subscription was just confirmed, so messages
    // before it may be lost). A grant of ours that can be taken queues `acquired` at once;
    // our token, any other grant of ours or an empty message starts the next attempt at once
    // when backing off, or marks the running attempt so that a refusal is retried at once.
    // Anything else, and any message when not waiting fairly, changes nothing.
    // Returns ok, invalid_state (unconfigured), invalid_time, events_pending.
    errc on_wake(std::int64_t now_ms, std::string_view message) noexcept;

    // True while a fair acquire() with a wait is running: the caller should be subscribed to
    // the acquire()'s channel (wake_channel) and pass its messages to on_wake().
    bool wants_wake_ups() const noexcept;
    // Writes the channel of the current (or last) acquire()'s wake-ups, the queue key, ":"
    // and token_hex() (keys.hpp, write_wake_channel), into out[0, capacity) and returns its
    // length: 0 when unconfigured or when it does not fit (wake_channel_bytes_max does).
    std::size_t wake_channel(char* out, std::size_t capacity) const noexcept;

    // True when write_request(instance, ...) has a request to write.
    bool has_request(std::uint8_t instance) const noexcept;
    // The requests written for `instance` whose replies have not come (0 for an instance not
    // below the count): a caller that moves the instance to another node waits for them.
    std::uint8_t requests_in_flight(std::uint8_t instance) const noexcept;
    // The next request write_request(instance, ...) would write is a WAIT: it confirms the
    // writes before it on the same connection, so it must go where they went.
    bool next_request_waits(std::uint8_t instance) const noexcept;

    // Encodes the next queued request for `instance` into out[0, capacity) and marks it in
    // flight. request_bytes_max always suffices.
    // Returns ok, invalid_instance, invalid_state (nothing queued), buffer_too_small (nothing
    // is marked in flight; call again with a larger buffer).
    write_result write_request(std::uint8_t instance, char* out, std::size_t capacity) noexcept;

    // The earliest instant on_timer() has work to do, or no_deadline_ms.
    std::int64_t next_deadline_ms() const noexcept;

    // Takes the oldest pending event. Returns false when there is none.
    bool poll_event(event& out) noexcept;

    lock_state state() const noexcept { return state_; }
    // True only while held and before the lease ends: never after validity has passed, and
    // never for a reading below the last call's (a clock gone backwards).
    bool held(std::int64_t now_ms) const noexcept;
    std::int64_t valid_until_ms() const noexcept { return valid_until_ms_; }
    std::int64_t fence() const noexcept { return fence_; }
    std::uint16_t hold_count() const noexcept { return hold_count_; }
    // Attempts the running (or last) acquire() started, and why the latest one that failed
    // did (ok when none failed): a caller that reports each attempt reads them after a move to
    // backing_off, which has no event of its own.
    std::uint16_t attempts() const noexcept { return attempts_; }
    errc last_cause() const noexcept { return last_cause_; }
    std::uint8_t instance_count() const noexcept { return instances_; }
    std::uint16_t permits() const noexcept { return permits_; }  // 1: a lock
    std::uint8_t quorum() const noexcept { return quorum_of(instances_); }
    std::string_view name() const noexcept { return {name_.data(), name_size_}; }
    // The token of the current or last acquire(), as 32 hex characters sent to Redis.
    std::array<char, token_hex_bytes> token_hex() const noexcept;

private:
    using request = lock_request;  // request_ring.hpp, with the ring and the token slots
    enum class outcome : std::uint8_t { none, pending, ok, refused, failed };

    struct round_tally {
        std::uint8_t pending = 0;
        std::uint8_t ok = 0;
        std::uint8_t refused = 0;
        std::uint8_t failed = 0;
        std::uint8_t incurable = 0;     // failed acquires no retry can mend, the latest
        errc incurable_why = errc::ok;  // for why: fence_exhausted, wrong_kind or
                                        // permits_mismatch
    };

    using instance_set = std::array<bool, instances_max>;
    // What a fair waiter's cleanup does with its entry in the line.
    enum class line : std::uint8_t { leave, keep_place };

    // lock.cpp: calls in, time, rounds, decisions, transitions, the requests.
    errc input_refusal(std::int64_t now_ms) const noexcept;
    errc check_input(std::int64_t now_ms) noexcept;
    void step_back(std::int64_t now_ms) noexcept;
    void advance() noexcept;
    bool run_due_timer() noexcept;

    void start_round(request_kind kind) noexcept;
    void send_round(request_kind kind, const instance_set& targets) noexcept;
    instance_set all_instances() const noexcept;
    instance_set counting_instances() const noexcept;
    void retire_round() noexcept;
    void start_attempt() noexcept;
    void start_confirmation(request_kind kind) noexcept;
    void confirm_or_hold(request_kind after) noexcept;
    void start_renewal() noexcept;
    void start_renewal_confirmation() noexcept;
    std::int64_t renewal_retry_ms() const noexcept;
    void end_round(lock_state next, std::uint16_t holds) noexcept;
    void start_release() noexcept;

    void decide() noexcept;
    void decide_attempt() noexcept;
    void decide_confirmation() noexcept;
    void decide_renewal() noexcept;
    void fail_pending() noexcept;
    void record(std::uint8_t instance, outcome result) noexcept;

    void fail_attempt(errc cause) noexcept;
    void abandon_attempt(errc why) noexcept;
    void become_held() noexcept;
    void lose(errc why) noexcept;
    void finish_release() noexcept;

    void give_up_in_flight(std::uint8_t instance) noexcept;
    void forget_unconfirmable(std::uint8_t instance) noexcept;
    bool resendable(std::uint8_t instance, const request& sent, bool token_replaced) const noexcept;
    bool stale_release_worth_resending(std::uint8_t instance, const request& lost,
                                       bool token_replaced) const noexcept;
    bool has_requests() const noexcept;
    bool enqueue(std::uint8_t instance, request_kind kind, bool current, bool eval,
                 std::size_t free_slots_needed, bool in_line_only = false) noexcept;
    bool requeue(std::uint8_t instance, request sent, bool eval) noexcept;
    request pop_in_flight(std::uint8_t instance, bool& token_replaced) noexcept;
    errc take_answered(std::uint8_t instance, std::int64_t now_ms, request& sent,
                       bool& token_replaced) noexcept;
    void take_token(const owner_token& token) noexcept;
    void push_event(const event& e) noexcept;

    // lock_wire.cpp: requests encoded, replies read.
    std::size_t encode(const request& r, char* out, std::size_t capacity) const noexcept;
    const script& script_for(request_kind kind) const noexcept;
    bool native_acquire(std::uint8_t instance) const noexcept;
    void handle_reply(std::uint8_t instance, request sent, bool token_replaced,
                      const reply_node& reply, errc& code) noexcept;
    void handle_native_acquire_reply(std::uint8_t instance, request sent, const reply_node& reply,
                                     errc& code) noexcept;
    void follow_up(std::uint8_t instance, request_kind kind, bool eval = false) noexcept;
    void note_incurable(const request& sent, const reply_node& reply) noexcept;

    // lock_fair.cpp: fair waiting.
    std::int64_t resume_ms(errc cause, std::int64_t guard_until) noexcept;
    bool take_grant(std::int64_t fence) noexcept;
    void clean_up_everywhere(line place) noexcept;

    // lock_restart_guard.cpp: the restart guard.
    void record_start(std::uint8_t instance, const node_start& start) noexcept;
    std::int64_t counts_from_ms(std::uint8_t instance) const noexcept;
    std::int64_t guard_until_ms() const noexcept;
    bool excluded(std::uint8_t instance) const noexcept { return (excluded_ >> instance) & 1u; }
    std::uint8_t countable() const noexcept;
    void exclude_not_counting_yet() noexcept;
    void exclude(std::uint8_t instance) noexcept;

    // Configuration.
    std::array<char, name_bytes_max> name_{};
    std::uint8_t name_size_ = 0;
    std::uint8_t instances_ = 0;
    bool fencing_ = false;
    bool watchdog_ = true;
    std::uint8_t replicas_to_wait_ = 0;
    std::int64_t ttl_ms_ = 0;
    std::int64_t renew_interval_ms_ = 0;
    std::int64_t drift_ms_ = 0;
    std::int64_t attempt_timeout_ms_ = 0;
    std::int64_t retry_delay_ms_min_ = 0;
    std::int64_t retry_delay_ms_max_ = 0;
    std::int64_t replica_wait_ms_ = 0;
    std::int64_t restart_guard_ms_ = 0;

    // The hold and the running round.
    lock_state state_ = lock_state::unconfigured;
    request_kind round_kind_ = request_kind::release;
    bool round_decided_ = true;
    bool retrying_ = false;  // acquire() was given a wait: failures back off and retry
    round_tally tally_{};
    std::array<outcome, instances_max> results_{};  // each instance's answer in the round
    std::uint16_t hold_count_ = 0;
    std::uint16_t attempts_ = 0;
    errc last_cause_ = errc::ok;
    std::uint8_t excluded_ = 0;  // instances out of the running attempt or hold (bit i: i)
    // Fair waiting: configuration, and a wake-up that came while an attempt was in flight.
    std::int64_t recheck_ms_ = 0;
    std::int64_t queue_entry_ttl_ms_ = 0;
    bool fair_ = false;
    std::uint16_t permits_ = 1;
    bool wake_pending_ = false;
    bool joining_ = false;         // the running attempt only joins the line (restart guard)
    bool may_be_in_line_ = false;  // this acquire() sent a fair acquire: its token may be queued
    bool grants_trusted_ = false;  // no cleanup or lost connection yet in this acquire()
    // Instances whose connection refused SET NX PX GET (a Redis before 7.0): acquires go there
    // as the script until the connection changes (bit i: i).
    std::uint8_t scripted_acquire_ = 0;
    token_slots tokens_{};  // the current acquire()'s token and the previous one's
    static constexpr std::int64_t no_reading_ms = std::numeric_limits<std::int64_t>::min();
    std::int64_t now_ms_ = no_reading_ms;  // the last input's reading of the caller's clock
    std::int64_t round_start_ms_ = 0;
    std::int64_t lease_start_ms_ = 0;  // t0 of the attempt that won the hold
    std::int64_t round_deadline_ms_ = no_deadline_ms;
    std::int64_t timer_ms_ = no_deadline_ms;  // backoff end, or the next renewal
    std::int64_t acquire_started_ms_ = 0;     // the running (or last) acquire()'s call
    std::int64_t wait_deadline_ms_ = 0;
    std::int64_t valid_until_ms_ = 0;
    std::int64_t fence_ = 0;
    std::int64_t fence_candidate_ = 0;                // highest fence value of the running attempt
    std::int64_t claims_settled_ms_ = no_reading_ms;  // the current token's last claim left flight
    full_jitter_backoff backoff_;

    // The restart guard: when each instance's process started (no_reading_ms: it counts
    // always; configure() sets that, as the instance count changes from 0).
    std::array<std::int64_t, instances_max> node_started_ms_{};

    std::array<request_ring, instances_max> rings_{};  // each instance's requests

    std::array<event, events_max> events_{};
    std::uint8_t event_head_ = 0;
    std::uint8_t event_count_ = 0;
};

}  // namespace edgelock
