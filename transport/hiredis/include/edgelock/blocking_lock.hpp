// SPDX-License-Identifier: Apache-2.0
// edgelock::blocking: a blocking lock client (poll(2), a renewal thread), for tools and simple
// programs; hiredis 0.14 only makes its TCP connections.
//
// One `blocking::lock` is one lock name held by one owner, over one Redis, N independent
// masters (Redlock, N odd), the master a set of Sentinels points at, or the master of the
// name's slot in a Redis Cluster (see "Redis Cluster" below). It drives the sans-IO
// core (edgelock/lock.hpp) over one connection per instance, each driven by the session's
// connection (edgelock/session/connection.hpp) exactly as the async client's are; hiredis
// only makes the TCP connection (name lookup, connect timeout, keepalive):
//
//   - acquire() sends the request to every instance first, then collects replies (poll() over
//     all connections) until the core decides; validity is measured from before the first
//     request, so a slow network or a pause eats into the lease, never extends it.
//   - While held, a helper thread renews the lease (compare-and-PEXPIRE every ttl/3 by
//     default). When renewal cannot reach a quorum before validity ends, or Redis says the key
//     is no longer ours, the lock is `lost`: lost() turns true and `on_lost` is called.
//   - Connections are made on demand. The handshake (AUTH with the password or ACL user from
//     the redis:// URL, SELECT, PING, ROLE behind Sentinel, SCRIPT LOAD) is pipelined with the
//     first requests, and must finish within the connect timeout; each reply waits at most
//     the command timeout. A connection that ends (or answers READONLY, MASTERDOWN, LOADING,
//     NOAUTH) is made again by the next request: at once when it had been up, after the
//     reconnect delay when an attempt failed; through the sentinels, the next one first.
//   - Sentinel: a third thread keeps one sentinel connection subscribed to +switch-master,
//     from open() to the end (its connects never hold up a renewal or a call). When a sentinel
//     announces another master, the lock's connections leave the old one at once (even one
//     that still answers: cut off from the sentinels, not from us) and go to the announced
//     master, checking its ROLE. Closing the lock waits for a connect of that thread under way
//     (at most the connect timeout per sentinel).
//   - EVALSHA falls back to EVAL when a restarted or flushed server answers NOSCRIPT.
//   - Fair waiting (lock_options::fair, one instance): a waiting acquire() stands in line in
//     Redis and, rather than sleeping until its next attempt, polls a second connection
//     subscribed to its own channel (the queue key, ":" and its token) beside the first, so
//     the release before it wakes it at once (see lock_options::fair for what it costs and how it
//     falls back).
//
// Sentinel failover during a hold: the hold is kept when the promoted replica has our key and
// a renewal reaches it before validity ends (the client finds the new master through the
// sentinels and goes on renewing there); it is lost with `expired` when the failover outlasts
// the remaining validity, and with `token_gone` when the new master does not hold our token.
// A change of master alone is not a loss: the key on the master that now takes writes decides.
// Replication is asynchronous, so a key acquired just before a failover may be missing on the
// new master, and another owner may take it there before our next renewal notices: use
// replicas_to_wait (WAIT) and fencing where that matters.
//
// Redis Cluster (deployment::cluster, seed URLs): the lock is a single-instance lock (instance
// 0) on the master serving its name's slot (edgelock/session/cluster_route.hpp). The first
// acquire() reads the slot map (CLUSTER SLOTS) from the first seed that answers; the map is
// read again, on any connection that is up (or a seed's), after a MOVED and after a
// connection to a node is lost, at most once per 100 ms. A MOVED or ASK is followed (ASKING
// before each request while an ASK is in force), up to session::redirects_max in a row
// (then too_many_redirects). Connections are kept per node, made when first needed. When no
// seed answers CLUSTER SLOTS within the attempt, or a freshly read map has no master for the
// slot, acquire() fails with transport_errc::no_slot_map. CLUSTERDOWN and TRYAGAIN answers
// (a cluster that lost a slot's master, a fencing acquire while its slot's two keys are split
// by a migration) are error replies: acquire() returns error_reply (instance_error_text(0)
// says which) or, with a wait, tries again until it ends. A failover is seen as a lost
// connection to the old master: the hold is kept, lost or refused as with Sentinel (above),
// since replication to the promoted replica is asynchronous too.
//
// Threads: the calls below may come from any thread, one call at a time per object (they are
// serialised by a mutex; held(), lost(), fence() never wait for I/O). The helper thread starts
// in open() and stops in the destructor. `on_lost` runs on a thread of its own (started by
// open() when on_lost is set, stopped by the destructor, which waits for a running call),
// without any of the object's locks held: it may call release() and acquire(), and however
// long it takes, the helper goes on renewing the next hold meanwhile. When the object is
// destroyed (on another thread) while on_lost runs, no hold outlives it: from the moment the
// destructor begins, an acquire() the callback starts returns cancelled and one it is waiting
// in ends with cancelled (as after cancel()); an acquire() that had already succeeded keeps
// its hold, renewed, until the callback returns; then the destructor releases it with the
// rest. So the destructor waits for the callback: one that loops until it acquires must stop
// at cancelled (and after expired, a hold it took being lost, release() before it tries
// again). No on_lost call starts once the destructor has begun. The callback must not
// destroy the object itself (it would wait for its own return): that aborts the process.
//
// Signals: the client writes with send(MSG_NOSIGNAL), so a connection Redis has reset never
// raises SIGPIPE from the lock.
//
// Errors are std::error_code values, never exceptions. They come from three categories:
//   edgelock::errc (edgelock::error_category()): the lock's verdicts and bad input:
//     busy, no_quorum, validity_expired, token_gone, not_replicated, expired, not_held,
//     fence_exhausted (the fence counter is at 2^63-1; an operator must reset it),
//     wrong_kind and permits_mismatch (see lock_options::permits),
//     restart_guard (too few nodes count yet, see restart_guard below), node_restarted,
//     cancelled, invalid_config, invalid_name, invalid_ttl, invalid_instances, invalid_state,
//     error_reply, unexpected_reply, protocol_error, reply_too_large, too_many_elements,
//     too_deep, io_error
//   edgelock::transport_errc (transport_category(), shared with the async client):
//     unknown_host, connect_timeout (no connection), handshake_timeout (connected, but the
//     server did not answer), command_timeout, auth_required (NOAUTH: no password sent),
//     auth_failed (a wrong password or user), select_failed, connection_closed, not_master,
//     master_down, loading, no_master, out_of_memory, thread_failed, node_info_refused
//     (INFO refused while restart_guard is on), max_clients (the server is at maxclients:
//     retried, like any failed connect, after the reconnect delay)
//   std::generic_category(): errno values from the socket, e.g. std::errc::connection_refused,
//     std::errc::connection_reset
//
// Example:
//   edgelock::blocking::lock_options options;
//   options.name = "orders:42";
//   options.instances = {"redis://127.0.0.1:6379"};
//   options.ttl_ms = 10'000;
//   edgelock::blocking::lock lock;
//   if (auto ec = lock.open(options)) return ec;
//   edgelock::blocking::hold hold;
//   if (auto ec = lock.acquire(std::chrono::seconds(5), &hold)) return ec;  // busy, ...
//   ... work, checking lock.lost(); write with hold.fence ...
//   lock.release();
//
// Changes in behaviour since the clients share the session (edgelock/session/), for callers
// of earlier versions:
//   - blocking::connection_errc and connection_category() are gone: transport_errc (shared
//     with the async client) replaces them; timeouts are connect_timeout / command_timeout
//     (were std::errc::timed_out), and both default to 2 s (were 1 s).
//   - reconnect delays: reconnect_delay_min_ms / max_ms (100 ms / 5 s), full jitter (was a
//     doubling 10-500 ms without jitter).
//   - the handshake adds PING, ROLE behind Sentinel and SCRIPT LOAD, pipelined, within the
//     connect timeout; MASTERDOWN, LOADING and NOAUTH answers end a connection like READONLY.
//   - Redlock: acquire() and release() report no_quorum, not one instance's error; release()
//     succeeds only when a quorum deleted the key (was: any instance).
//   - open() may return io_error (no random bytes for the jitter) and invalid_config for
//     timings out of range or credentials too long; SIGPIPE need not be ignored any more.
//   - open() checks the deployment as the async client does (edgelock/deployment.hpp): fair
//     with several instances is invalid_instances (was invalid_config), a replica_wait_ms
//     not below command_timeout_ms is invalid_config (was accepted), an even instance
//     count with a malformed URL is invalid_instances (was invalid_config).
//   - the restart guard and the eviction check (restart_guard, eviction) are on by default:
//     each connection reads INFO and CONFIG GET appendfsync before any lock request, and a
//     node that (re)started without AOF appendfsync always makes acquire() fail with
//     restart_guard (or wait) for a TTL after its start.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "edgelock/deployment.hpp"
#include "edgelock/error_code.hpp"
#include "edgelock/lock_event.hpp"
#include "edgelock/session/lock_metrics.hpp"
#include "edgelock/session/node_facts.hpp"
#include "edgelock/tls_options.hpp"

namespace edgelock::blocking {

// What the lock's I/O did, for logs and verbose tools (lock_options::on_event): the event
// vocabulary both clients share (edgelock/lock_event.hpp).
using edgelock::lock_event;
using edgelock::lock_event_kind;

// Events kept for the callback between two deliveries (each round of I/O delivers them); one
// more is dropped, and counted in lock::events_dropped().
inline constexpr std::size_t lock_events_pending_max = 64;

// Where Redis is and how to reach it (edgelock/deployment.hpp: instances or sentinels,
// master credentials, tls, connect_timeout_ms, command_timeout_ms, reconnect delays,
// restart_guard, eviction and on_warning), then the lock. on_warning is called on the thread
// doing the I/O, with this lock's mutex held: it must not call this lock. Connections are
// made on demand, so timeouts, reconnect delays and the node reading apply from the first
// acquire(). TCP keepalive is hiredis's own (redisEnableKeepAlive, a fixed interval).
struct lock_options : deployment {
    std::string name;  // the Redis key, 1..128 bytes

    std::int64_t ttl_ms = 30'000;
    bool fencing = false;  // hand out fence tokens (hold::fence), strictly increasing per name
    bool watchdog = true;  // renew while held
    // Sentinel deployments: require the SET to reach this many replicas (WAIT) before the lock
    // counts as held, and each renewal before it extends the lease. A master with fewer
    // replicas (after a failover, until the old master rejoins) confirms neither: the hold
    // then ends as expired at its validity. 0: no WAIT. replica_wait_ms is WAIT's timeout
    // (0: half the attempt timeout), below the attempt timeout and below command_timeout_ms:
    // WAIT holds the connection while it waits.
    std::uint8_t replicas_to_wait = 0;
    std::int64_t replica_wait_ms = 0;

    // Core tuning; 0 (or -1 for drift) means the core's default (see edgelock::lock_config).
    std::int64_t renew_interval_ms = 0;
    std::int64_t drift_ms = -1;
    std::int64_t attempt_timeout_ms = 0;
    std::int64_t retry_delay_ms_min = 0;
    std::int64_t retry_delay_ms_max = 0;

    // Fair waiting (edgelock/lock.hpp, "Fair waiting"): waiters line up in Redis in arrival
    // order and each release wakes the next in line, instead of every waiter polling with
    // backoff. Needs one instance (a single Redis, Sentinel's master, or a cluster's master of
    // the name's slot): open() returns invalid_instances with several. While an acquire()
    // with a wait has to wait, the lock holds a second connection to the same server (same
    // address, credentials, db and TLS), subscribed to the acquire()'s own channel (the queue
    // key, ":" and its token: a release wakes only the waiter whose turn it is); it is made
    // the first time an acquire() waits and kept until the lock is destroyed (a loop that
    // acquires again reuses it). It is subscribed only while an acquire() waits: UNSUBSCRIBE
    // when the acquire() returns (the helper reads the confirmation), SUBSCRIBE of the next
    // acquire()'s channel on the kept connection at the next wait (after that confirmation,
    // if it has not come yet), whose confirmation starts an attempt. So a held or idle lock is sent
    // nothing, and a message published for an earlier wait is never taken as a wake-up. A
    // subscriber connection that fails never fails acquire(): the attempts then repeat every
    // recheck_ms. In a Redis Cluster, Redis (7.0) propagates PUBLISH to every node; the subscriber
    // sits on the master of the name's slot, and moves when the slot map names another. A failover
    // while an acquire() waits ends the subscriber's connection with the old master. The loss marks
    // the slot map stale; the lock's next attempt (at the latest recheck_ms later) reads it again,
    // and the subscriber is made again on the master it names. As after any reconnect, the
    // SUBSCRIBE's confirmation makes the lock look again at once, so a release published while it
    // was away is caught then; until then the re-checks every recheck_ms stand in. recheck_ms (0:
    // 1000) and queue_entry_ttl_ms (0: 2 * (recheck + attempt timeout); a waiter that died leaves
    // the line after it) are the core's lock_config fields.
    bool fair = false;
    std::int64_t recheck_ms = 0;
    std::int64_t queue_entry_ttl_ms = 0;

    // A semaphore (edgelock/lock.hpp, "Semaphores"): up to this many owners hold the name at
    // once, each with its own lease and renewal. 1 is the lock, unchanged on the wire. More
    // needs one instance (open() returns errc::invalid_instances otherwise). With fencing,
    // each holder's fence token names its permit (edgelock::permit_of(hold::fence, permits)),
    // for a store that keeps the highest token per permit. Every owner of the name must give
    // the same count: acquire() fails with
    // errc::permits_mismatch while leases with another count are held, and with
    // errc::wrong_kind when the name is held as a lock (or, for a lock, as a semaphore).
    std::uint16_t permits = 1;

    // The restart guard's length for this lock (deployment::restart_guard says whether
    // there is one): a node that restarted without AOF appendfsync always counts toward a
    // quorum only restart_guard_ms after its start (-1: ttl + drift; it must cover the
    // longest TTL any client of this name uses). acquire() then fails with restart_guard, or
    // waits it out when `wait` reaches it; a restart during a hold takes the node out of it
    // (lost with node_restarted when fewer than a quorum are left).
    std::int64_t restart_guard_ms = -1;

    // Called (on the lock's callback thread, see "Threads" above) when a hold is lost, with
    // the code of that loss, captured when it happened: edgelock::errc::expired (no quorum
    // renewed before validity ended), edgelock::errc::token_gone (Redis no longer has our
    // token) or edgelock::errc::node_restarted (see restart_guard). A call is always about
    // the current hold: a loss whose hold has ended before its call could start (release()
    // returned) is not reported (release() reports it: expired), and only the latest loss
    // waits while an earlier call still runs. No new hold starts before the call for the
    // loss of the current one has returned (acquire() returns expired meanwhile), but from
    // the call itself. A call that started runs to its end even if another thread releases
    // meanwhile, or destroys the object: the destructor waits for it, and refuses it a new
    // hold (see "Threads" above).
    std::function<void(std::error_code)> on_lost;

    // Observation (lock_event above): called on the thread doing the lock's I/O at the time
    // (the thread of a running acquire(), release() or destructor, or the helper thread
    // between user calls), one call at a time and in order, with none of the lock's own
    // mutexes held. Events are gathered while that thread works and handed over before it
    // waits in poll() and when its round of I/O ends, so they come a little after the fact,
    // never out of order. While a call runs, no I/O of this lock makes progress: renewals
    // wait. So it must not block, and must not call this lock (acquire() or release() would
    // wait for the very thread that runs it). Its time counts against the lease: an
    // acquire() whose lease ran out while the calls ran returns validity_expired (the hook
    // heard its attempt succeed, then the hold lost after 0 ms; on_lost, lost() and the loss
    // counts do not). Unset: nothing is gathered.
    std::function<void(const lock_event&)> on_event;
};

struct hold {
    std::int64_t fence = 0;           // the fence token (0 without fencing)
    std::int64_t valid_until_ms = 0;  // end of the lease on now_ms()'s clock
    // The owner token in the key, 32 lower-case hex characters: what an operator passes to
    // `edgelock release --token`.
    std::string token;
};

// The monotonic clock the lock runs on, in milliseconds (CLOCK_MONOTONIC).
std::int64_t now_ms() noexcept;

class lock {
public:
    lock() noexcept;
    // Waits for a running on_lost call to return, refusing it any new hold (see "Threads"
    // above). Then releases a held lock, every hold of it (best effort, bounded by the
    // timeouts), then finishes any cleanup still queued or unanswered, within the command
    // timeout (plus a connect when the connection must be made again): notably a fair
    // waiter's leave of the line after an acquire() that gave up, so the waiters behind it
    // need not wait for its entry to expire. Then stops the helper thread and closes the
    // connections. Never throws.
    ~lock();
    lock(const lock&) = delete;
    lock& operator=(const lock&) = delete;

    // Checks the options, starts the helper thread. No network traffic: connections are
    // made by the first acquire(). May be called once. Returns ok, or, the first that
    // applies:
    //   errc::invalid_config     open() called twice
    //   the deployment's codes, as edgelock::validate() checks them (deployment.hpp), the
    //   same the async client's open() returns for the same deployment:
    //   errc::invalid_config     not exactly one of instances, sentinels and cluster, master_name
    //                            missing or too long, too many sentinels, a timeout or
    //                            reconnect delay out of range, a malformed URL, master
    //                            credentials too long, more than session::cluster_seeds_max
    //                            seeds or one with a database other than 0
    //   errc::invalid_instances  an even count, or more than instances_max
    //   transport_errc::tls_files  an address is rediss:// and a file of options.tls cannot
    //                            be loaded: tls_error() says which, and why
    //   transport_errc::out_of_memory
    //   the lock against the deployment, edgelock::check_lock() (the async client's
    //   add_lock() returns the same): errc::invalid_instances (fair with several
    //   instances), invalid_config (replicas_to_wait set and the WAIT timeout,
    //   replica_wait_ms or by default half the attempt timeout, not below
    //   command_timeout_ms)
    //   the core's (lock::configure()): invalid_name, invalid_ttl, invalid_config
    //   errc::io_error           no random bytes to seed the reconnect jitter
    //   transport_errc::thread_failed
    [[nodiscard]] std::error_code open(const lock_options& options) noexcept;

    // One attempt, no waiting: acquire(0 ms, out).
    [[nodiscard]] std::error_code try_acquire(hold* out = nullptr) noexcept;

    // Acquires, retrying with exponential backoff and full jitter while attempts can start
    // within `wait`. On success fills `out` (when given) and returns ok. On a lock this object
    // already holds, counts one more hold (reentrancy) and returns ok at once. After a hold
    // is lost, its caller must hear of it before a new hold starts: until the on_lost call
    // for that loss has returned, or release() has reported it, acquire() returns expired at
    // once and starts nothing (the on_lost call itself may acquire again), also when the
    // lease ran out unnoticed just before the call (the helper not yet run). A reentrant
    // acquire is never answered with a new hold in place of the one it nests in.
    // Returns the reason the last attempt failed:
    //   busy              another owner holds the lock (on too many instances)
    //   restart_guard     too few instances count yet (restart_guard): guard_until_ms() says
    //                     until when; a wait that reaches it waits instead
    //   validity_expired  a quorum agreed, but only after the lease had run out
    //   expired           the hold this object had is lost, unheard (above): release() it
    //   token_gone, not_replicated  the fence raise or the WAIT failed (see lock.hpp)
    //   with a single instance (or Sentinel's master), that instance's error when it failed
    //     and said why: e.g. std::errc::connection_refused, std::errc::connection_reset, and
    //     the transport_errc values above (connect_timeout, handshake_timeout,
    //     command_timeout, unknown_host, auth_required, auth_failed, no_master, ...; over TLS
    //     tls_untrusted, tls_name_mismatch, tls_expired, tls_client_certificate_required,
    //     tls_handshake_timeout, ...), error_reply (instance_error_text() has Redis's text),
    //     unexpected_reply, protocol_error; in a cluster also no_slot_map, too_many_masters and
    //     too_many_redirects (see "Redis Cluster" above)
    //   no_quorum         too few instances answered in time (Redlock: always this; the
    //                     instances' own errors are in instance_error())
    //   cancelled         cancel() was called (see there), or, from on_lost, the object is
    //                     being destroyed (see "Threads" above)
    //   invalid_wait      wait negative or above a day
    //   invalid_state     not opened, or another call is releasing (also, never expected, an
    //                     attempt the lock's I/O ended without a verdict: it is cancelled;
    //                     a call never returns an earlier call's result)
    //   io_error          the OS could not supply random bytes for the token
    // Keys written by a failed attempt are deleted (compare-and-delete) before it returns,
    // within the command timeout.
    [[nodiscard]] std::error_code acquire(std::chrono::milliseconds wait,
                                          hold* out = nullptr) noexcept;

    // Ends the acquire() that is running, from another thread or a signal handler: the only
    // call here that is async-signal-safe (it sets an atomic flag and writes an eventfd). The
    // acquire() gives up its attempt as soon as its I/O loop wakes (at once, unless it is in
    // the middle of a connect, bounded by the connect timeout), sends the cleanup a failed
    // attempt sends (a fair waiter's leave of the line, so the waiters behind it move up at
    // once instead of after its entry's expiry), within the command timeout, and returns
    // cancelled. A cancel that finds no acquire() running stays pending until the next one,
    // which then returns cancelled at once: a signal between two calls is not lost. An
    // acquire() that had decided before the cancel was seen returns its verdict (a hold the
    // caller then releases). Needs a successful open(); otherwise does nothing.
    void cancel() noexcept;

    // Drops one hold; the last one deletes the key on every instance (only if it still holds
    // our token). Returns ok (deleted on a quorum of instances, or an inner hold dropped),
    // expired (the lease had run out or the lock was lost before this release: the protected
    // work may have overlapped another owner's), not_held (nothing acquired), or, when too
    // few instances deleted it, no_quorum or (one instance) its error, as for acquire (the
    // key then expires by its TTL). After `lost`, release() also returns expired and clears
    // the lost state.
    [[nodiscard]] std::error_code release() noexcept;

    // True while held and within validity (never after valid_until).
    bool held() const noexcept;
    // True once the current hold was lost (until release(), or the next hold acquire()
    // starts once on_lost has heard the loss).
    bool lost() const noexcept;
    // Why it was lost: expired or token_gone; empty when not lost.
    [[nodiscard]] std::error_code lost_reason() const noexcept;
    // The fence token of the current or last hold.
    std::int64_t fence() const noexcept;
    // After acquire() failed with restart_guard: when (on now_ms()'s clock) enough instances
    // count again.
    std::int64_t guard_until_ms() const noexcept;
    // The last error instance `i` reported (empty when none); instances in options order (in
    // a cluster, instance 0 is the node the lock's requests went to last).
    [[nodiscard]] std::error_code instance_error(std::size_t i) const noexcept;
    // While instance_error(i) is errc::error_reply: Redis's own text of that reply ("ERR ...",
    // "OOM command not allowed ...", without the leading '-'), cut to
    // session::error_text_bytes_max bytes; empty otherwise.
    std::string instance_error_text(std::size_t i) const;
    // What the last connection to instance `i` read of its Redis process (restart_guard or
    // the eviction check on): when it started on now_ms()'s clock, whether its data is
    // durable, and whether its run_id changed since this lock's previous connection there (a
    // restart this lock saw; a first start and a restart before it are alike). False, with
    // `out` untouched, when nothing was read yet.
    bool instance_start(std::size_t i, node_start& out) const noexcept;
    // What this lock did since open(), counted (edgelock/session/lock_metrics.hpp): its
    // acquire calls by outcome (calls refused up front, e.g. invalid_wait or invalid_state,
    // are not counted), their latency and waits, the handover gap of a fair lock, renewals,
    // losses, releases, its connections made, made again and moved to another master, and
    // the requests in flight now. Any thread; it takes the lock's mutex as held() does, so
    // it may wait for a connect or write in progress (within the timeouts). Counting is
    // always on and allocates nothing.
    session::lock_metrics metrics() const noexcept;
    // Events on_event never saw, the pending queue being full (lock_events_pending_max).
    std::uint64_t events_dropped() const noexcept;
    // After open() returned transport_errc::tls_files: which file of options.tls was refused,
    // and why (edgelock/tls_options.hpp); empty otherwise.
    const tls_load_error& tls_error() const noexcept { return tls_error_; }

private:
    struct impl;
    std::unique_ptr<impl> impl_;
    tls_load_error tls_error_;
};

}  // namespace edgelock::blocking
