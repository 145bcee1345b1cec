// SPDX-License-Identifier: Apache-2.0
// edgelock::async: the production client, asynchronous, on the caller's asio::io_context.
//
// A `client` keeps one TCP connection per Redis instance (and, once a fair lock waits, one
// subscriber connection: "Fair waiting" below) and drives any number of locks (up to the table
// size chosen at open()) over them: every lock's requests to an instance share that
// instance's connection, pipelined. The lock logic is the sans-IO core (edgelock/lock.hpp);
// this layer moves its bytes, reads the clock, supplies random tokens and calls handlers.
//
// Redis Cluster (client_config::cluster, seed URLs): every lock is a single-instance lock on
// the master of its name's slot. The client reads the slot map from a seed (CLUSTER SLOTS)
// and keeps one connection per node it needs, made when a lock (or a map read) first needs
// it; a cluster of more masters than session::cluster_masters_max fails with
// transport_errc::too_many_masters. The locks on one master share its connection,
// pipelined. MOVED and ASK are followed (at most session::redirects_max in a row, then the
// operation fails with transport_errc::too_many_redirects), and the map is read again after a
// MOVED or a lost connection, so a migrated slot and a failed-over master are followed. A
// lock moves to another node only once its requests in flight came back, and a WAIT never
// confirms a write made on another node. TRYAGAIN (a slot half-migrated under a fenced lock's
// two keys) and CLUSTERDOWN are answers: the attempt fails with error_reply, and a waiting
// acquire tries again. The guarantees are those of one master with asynchronous replicas:
// a failover may lose an acknowledged lock (README, "Guarantees"). Replies are parsed into
// session::cluster_reply_nodes_max nodes (128 KiB, taken at open()): a map of about 315 slot
// ranges with a replica each; a larger one fails its read with too_many_elements.
//
//   asio::io_context io{1};
//   edgelock::async::client client(io);
//   edgelock::async::client_config config;
//   config.instances = {"redis://127.0.0.1:6379"};
//   if (auto ec = client.open(config)) { ... }            // bad URL, bad sizes
//   edgelock::lock_config lc;
//   lc.name = "orders:42";
//   lc.ttl_ms = 10'000;
//   edgelock::async::lock_handle orders;
//   client.add_lock(lc, orders);
//   client.async_acquire(orders, std::chrono::seconds(5), [&](std::error_code ec, std::int64_t
//   fence) {
//       if (ec) return;                                    // busy, no_quorum, connection_refused,
//       ... edgelock::async::scoped_lock hold(client, orders); // released when `hold` goes
//       ...                                                // work, passing `fence` to storage
//   });
//   io.run();
//
// Threading: single-threaded. Every member function must be called from the thread running
// the io_context (or before it runs), and every handler runs on it. The client never calls a
// handler from inside the function that started the operation: completions are delivered from
// the client's own I/O and timer completions, or posted to the io_context.
//
// Handlers are stored in fixed slots (see asio_handler_slot.hpp): a handler must fit in
// handler_bytes_max bytes, or the call does not compile. Once the connections are up, locking
// and unlocking allocate no memory. Error paths (an operation refused at once) may allocate
// to post their completion.
//
// Errors: handlers receive std::error_code values, compared as
//   ec == edgelock::errc::busy                 the core's lock outcomes (edgelock/errc.hpp)
//   ec == edgelock::transport_errc::...        the transports' own conditions, shared with the
//                                              blocking client (unknown_host, connection_closed,
//                                              connect_timeout, auth_failed, not_master, ...)
//   ec == std::errc::connection_refused        the operating system's socket errors, errno
//                                              values in std::generic_category() (the client
//                                              converts Asio's "asio.system" codes, which
//                                              compare equal to no std::errc condition in
//                                              Asio 1.22; end of stream becomes
//                                              connection_closed, a failed lookup unknown_host)
// Each function lists which it can produce. Over TLS (rediss://) any of them may also be a TLS
// refusal: transport_errc::tls_untrusted, tls_name_mismatch, tls_expired,
// tls_client_certificate_required, tls_not_offered, tls_handshake_timeout,
// tls_handshake_failed; and a plain connection that a TLS port drops, closed_before_reply.
//
// TLS: edgelock/tls_options.hpp says what is verified. Each connection's TLS state (OpenSSL's
// and Asio's SSL stream, about 128 KiB as bench/lock_cycle --only tls measures it) is
// allocated when it connects; lock traffic over it allocates nothing in edgelock or Asio
// (OpenSSL 3.0 allocates and frees small blocks inside each SSL_write).
//
// Scripts: every connection loads the core's lock scripts (SCRIPT LOAD) in its handshake, so
// a fresh or restarted server answers EVALSHA at once; after a SCRIPT FLUSH the core falls
// back to EVAL on NOSCRIPT. A server refusing SCRIPT LOAD (an ACL) is not an error.
//
// Connections follow the session's one policy (edgelock/session/connection.hpp), shared with
// the blocking client: a reply of READONLY, MASTERDOWN, LOADING or NOAUTH is delivered as the
// answer and then ends its connection, which is made again after the reconnect delay.
//
// Sentinel: with `sentinels` and `master_name` set, the client asks the sentinels for the
// master, checks with ROLE that it is one, and asks again (the next sentinel) whenever the
// connection ends for any reason, or a sentinel announces +switch-master (the client keeps
// one sentinel connection subscribed to it).
//
// Lock and failover (Sentinel): a lock held when the master fails over is kept when the
// promoted replica had received the key and the client reaches the new master before the
// lease runs out (the renewal then succeeds there, with the same token); it is reported
// `lost` with token_gone when the promoted replica never saw the key (asynchronous
// replication: the renewal finds no key), and `lost` with expired when no master answers
// before validity ends. Set lock_config::replicas_to_wait to make an acquire, and each
// renewal, count only once replicas confirmed it (WAIT); keep command_timeout_ms above
// replica_wait_ms, since WAIT holds the shared connection while it waits. A master left
// with fewer replicas than that (after a failover, until the old master rejoins as a
// replica) confirms nothing: no acquire succeeds there, and holds are not extended, so they
// end with `lost` (expired) unless a replica comes back before their validity runs out.
//
// Fair waiting (lock_config::fair; edgelock/lock.hpp, "Fair waiting"): waiters of one name
// line up in Redis and are served in arrival order, and a release wakes the head of the line
// at once instead of every waiter polling with backoff. Set it per lock:
//   lc.fair = true;          // needs a single instance (one Redis, Sentinel's master, or a
//                            // cluster: each lock's line lives on its slot's master)
//   lc.recheck_ms = 1000;    // while waiting, try again at least this often (default 1 s)
//   client.async_acquire(orders, std::chrono::seconds(30), handler);  // waits its turn
// The wake-ups come over pub/sub, which a RESP2 connection carrying commands cannot do, so
// the client keeps one more connection to the server: the subscriber, one per client whatever
// the number of fair locks, made (with the same address, AUTH, TLS and Sentinel lookup as the
// lock connection) only once a fair lock first waits, and kept open from then on. A release
// hands the lock to the waiter whose turn it is and tells only it (its acquire completes
// without another round trip where the core can take the grant), on the channel of that
// waiter's acquire (the line's key, ":" and the acquire's token: "{name}:queue:<token>"),
// which is subscribed while the acquire waits and unsubscribed when it stops, so Redis sends
// a client only its own turns.
// A confirmed subscription makes its waiter look at once (a release published before it was
// missed). Nothing about the subscriber fails a lock: when its connection is
// lost it is made again with the reconnect delays above, and meanwhile, or when Redis refuses
// the subscription (an ACL without the channel), waiters find a freed lock at their next
// re-check, recheck_ms at the latest. Memory: the first add_lock() with fair = true allocates
// the subscriber connection (about 73 KiB, mostly one reply's worth of read buffer) and a
// channel table of about 470 bytes per lock of locks_max (107,128 bytes in all with 64);
// waiting, waking and handing over allocate nothing. The table has two channels per lock: a
// channel stays until Redis confirms its UNSUBSCRIBE, while its lock goes on to its next
// wait, or the lock's slot is free at once, so that wait, or a fair lock added meanwhile
// (remove_lock() then add_lock(), e.g. in a release handler), still gets its channel. Only
// when more channels are leaving than the table has locks (waits begun faster than a round
// trip) does a wait find none: it waits with its re-checks alone until a channel is free,
// then takes it at its next attempt. In a cluster the subscriber listens on one node
// for every fair lock: the master of a waiting lock's slot, as the blocking client's
// (session::cluster_links::subscriber_move); it stays while any waiting lock's slot is on the
// master it listens on, and otherwise moves to the first's. Redis 7.0 sends a PUBLISH to every
// node of the cluster (the classic channels; not SPUBLISH), so the releases of locks on other
// masters reach it too. When it moves (a failover, a migration, the waiters there done), the
// subscriptions are made anew, and each waiter looks at once, as after any lost subscriber.
// Plain and fair locks of one name exclude each other (same key), but only fair ones wait in
// line. A zero wait makes one attempt and leaves the line again.
//
// Changes in behaviour since the clients share the session (edgelock/session/), for callers
// of earlier versions:
//   - async::client_error and client_category() are gone: transport_errc (shared with the
//     blocking client) replaces them (readonly is not_master, master_unknown is no_master).
//   - socket errors are errno values in std::generic_category() (were system_category());
//     end of stream is transport_errc::connection_closed, a failed lookup unknown_host.
//   - async_acquire: a wait that runs out reports the last attempt's cause (busy, ...), and
//     wait_timeout only when no attempt finished; busy is no longer for a zero wait only.
//   - async_release: with a single instance, that instance's failure replaces no_quorum.
//   - READONLY, MASTERDOWN, LOADING and NOAUTH answers end their connection (was READONLY
//     only); with Sentinel, any ended connection asks the next sentinel.
//   - reconnect delays are drawn with full jitter in [1 ms, cap] (were in [d/2, d]).
//   - open(): timeouts must lie in 1 ms..60 s (client_config's durations are integers
//     now, units last: connect_timeout_ms, ..., keepalive_idle_s); invalid_config also for
//     a reconnect delay out of range or master credentials too long. async_wait_ready may
//     report loading and master_down.
//   - the restart guard and the eviction check (client_config::restart_guard, eviction) are
//     on by default: each connection reads INFO and CONFIG GET appendfsync before any lock
//     request, and a node that (re)started without AOF appendfsync always makes acquires
//     fail with restart_guard (or wait) for a TTL after its start.
//   - a connection that ends, or a connect that fails, while the connection then waits out its
//     reconnect delay gives up the requests queued for that instance at once (they waited
//     for the attempt's deadline), and every lock hears of it (a failed connect was not
//     reported); with the restart guard off and no Sentinel, requests are pipelined behind
//     the handshake, as the blocking client does (session/lock_traffic.hpp holds these rules).
#pragma once

#include <asio/io_context.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "edgelock/asio_handler_slot.hpp"
#include "edgelock/asio_no_exceptions.hpp"
#include "edgelock/deployment.hpp"
#include "edgelock/error_code.hpp"
#include "edgelock/lock.hpp"
#include "edgelock/lock_event.hpp"
#include "edgelock/session/lock_metrics.hpp"
#include "edgelock/session/node_facts.hpp"
#include "edgelock/tls_options.hpp"

namespace edgelock::async {

// Where Redis is and how to reach it (edgelock/deployment.hpp: instances, sentinels or a
// cluster's seeds, master credentials, tls, connect_timeout_ms, command_timeout_ms, reconnect
// delays, restart_guard, eviction and on_warning), then what only this client has. on_warning is
// called on the io_context's thread. TLS (rediss://): the TLS handshake counts toward
// connect_timeout_ms (tls_handshake_timeout when it is what ran out); a failed one ends the
// connection with the tls_* code that says why, and is tried again after the reconnect
// delay like any failed connect. Restart guard: a lock request is written on a connection
// only once its node has been read.
struct client_config : deployment {
    // Capacity of the lock table: add_lock() refuses beyond it, 1 to 2^20. Memory is taken
    // at open(): about 1.7 KB per lock (1 KB of it the lock and its handlers, 0.7 KB its
    // metrics) plus the connections' buffers.
    std::size_t locks_max = 64;

    // TCP keepalive on every connection: first probe after keepalive_idle_s idle seconds,
    // then every keepalive_interval_s, the connection declared dead after keepalive_probes
    // unanswered probes; each above 0, at most 32767 s and 127 probes (Linux's bounds).
    // Only this client sets these: the blocking client's
    // connections (hiredis's redisEnableKeepAlive) probe at hiredis's own fixed interval.
    bool keepalive = true;
    std::int64_t keepalive_idle_s = 10;
    std::int64_t keepalive_interval_s = 5;
    int keepalive_probes = 3;

    // Each connection's write buffers (two of this size) and read buffer
    // (edgelock::reply_bytes_max plus this), 2 * request_bytes_max to 16 MiB. Bounds how
    // many requests one write batches.
    std::size_t buffer_bytes = 32 * 1024;

    // Observation (edgelock/lock_event.hpp): called on the io_context's thread, at once, for
    // each connection of an instance made (connected) or ended (disconnected), each
    // acquire's verdict (attempt: one per acquire, the attempt that decided it, with the
    // time since the call), each renewal confirmed, each instance that failed its part of a
    // renewal, each loss and each release that ended a hold (with the hold's length). An
    // acquire that took the lock is told right after its handler ran (unless the handler
    // closed the client), so the hook's time never comes between the lease's last check and
    // the handler. It runs inside the client's own
    // I/O: it must not call the client, and should be quick (it holds up every lock's I/O).
    // Copied at open(); calling it allocates nothing.
    std::function<void(const lock_event&)> on_event;
};

// Names one lock in a client's table. Cheap to copy; stale after remove_lock() or close(),
// and stays stale: a lock added later (after open() again, too) never gets an equal handle.
struct lock_handle {
    std::uint32_t index = 0xffffffff;
    std::uint32_t generation = 0;
};

struct lock_status {
    lock_state state = lock_state::unconfigured;
    bool held = false;  // held now, and the lease has not run out
    std::uint16_t hold_count = 0;
    std::int64_t fence = 0;
    std::chrono::steady_clock::time_point valid_until{};
    std::uint32_t renewals = 0;  // renewals confirmed since the last acquire
    errc last_cause = errc::ok;  // the last failed attempt's cause
    // With last_cause restart_guard: when enough instances count again (the acquire may be
    // retried then; a wait that reached it would have waited).
    std::chrono::steady_clock::time_point guard_until{};
};

namespace detail {
class client_impl;
}

class client {
public:
    explicit client(asio::io_context& io);
    // Closes as close() does, but handlers still pending are destroyed without being called.
    // Keys of locks still held stay in Redis until their TTL ends. Fair waiters leave their
    // lines as with close(): the connection carrying that lingers after the client is gone,
    // as long as the io_context runs, command_timeout_ms at most.
    ~client();
    client(const client&) = delete;
    client& operator=(const client&) = delete;

    // Validates `config`, builds the lock table and starts connecting to every instance (in
    // the background, with reconnects). Returns:
    //   {}                      connecting has started
    //   transport_errc::already_open
    //   errc::invalid_config    locks_max, buffer_bytes or a keepalive field out of its range
    //   then the deployment's codes, as edgelock::validate() checks them (deployment.hpp),
    //   the same the blocking client returns for the same deployment:
    //   errc::invalid_config    not exactly one of instances, sentinels and cluster given,
    //                           master_name missing or too long, too many sentinels or
    //                           cluster seeds, a cluster seed with a database, a timeout or
    //                           reconnect delay outside its range, a URL that does not
    //                           parse, master credentials too long
    //   errc::invalid_instances an even count, or more than instances_max
    //   transport_errc::tls_files  an address is rediss:// and a file of config.tls cannot be
    //                           loaded (missing, unreadable, no certificate in it, a key that
    //                           does not match its certificate): tls_error() says which
    //   transport_errc::out_of_memory  OpenSSL could not make its TLS context
    //   errc::io_error          the OS has no random bytes for the reconnect jitter
    [[nodiscard]] std::error_code open(const client_config& config);
    // After open() returned transport_errc::tls_files: which file of config.tls was refused,
    // and why (edgelock/tls_options.hpp); empty otherwise.
    const tls_load_error& tls_error() const noexcept;

    // Stops: empties the lock table and drops every connection, except what lets fair waiters
    // leave their lines. Pending acquire, release and readiness handlers complete (posted)
    // with std::errc::operation_canceled. Calls see not_open from then on, and open() may
    // be called again at once.
    // Fair waiters (a fair lock whose acquire runs): each is cancelled as release() would
    // cancel it, and its fair release, which takes its token out of the line in Redis (and
    // wakes the next waiter when the lock is free), is written at once on the instance
    // connection when that is ready; the fair release script is loaded ahead of it. That
    // connection then lingers in the background, apart from the client (no reconnect, its
    // replies and its end reported to nobody), until every request on it is answered, or
    // until one is overdue by command_timeout_ms: close() itself returns at once, and the
    // lingering connection is closed within command_timeout_ms of it. A connection not ready
    // (down, or still connecting) takes nothing: the waiter's entry stays in the line until
    // it expires (lock_config::queue_entry_ttl_ms after its last attempt), as it did before.
    // Plain locks are not released: keys of locks still held, or being acquired, stay until
    // their TTL ends.
    void close();

    // Completes when enough instances are connected for a lock to be taken (all of one, or a
    // quorum of Redlock instances; in a cluster, once the slot map was read):
    // handler(std::error_code). Error codes, when quorum is impossible after every instance
    // not connected has finished one more attempt (in a cluster, every seed tried):
    //   the failing attempt's error, e.g. std::errc::connection_refused,
    //   transport_errc::unknown_host, connect_timeout, auth_failed, select_failed, no_master
    //   (no sentinel reachable, or none named a master), not_master, loading, master_down,
    //   node_info_refused (INFO refused while client_config::restart_guard is on),
    //   no_slot_map (a cluster node answered CLUSTER SLOTS with no usable map: no cluster);
    //   transport_errc::not_open; transport_errc::operation_in_progress (one waiter at a time);
    //   std::errc::operation_canceled (close()).
    // The client keeps reconnecting in the background either way.
    template <typename Handler>
    void async_wait_ready(Handler&& handler) {
        detail::handler_slot slot;
        slot.emplace_with_code(std::forward<Handler>(handler));
        start_wait_ready(std::move(slot));
    }

    // Adds a lock to the table. `config.instances` is ignored: the lock spans all of this
    // client's instances. Every other field is the core's (lock.hpp), including fencing,
    // the watchdog, replicas_to_wait / replica_wait_ms for WAIT after the acquire, fair /
    // recheck_ms / queue_entry_ttl_ms for fair waiting (see "Fair waiting" above), and permits
    // for a semaphore (lock.hpp, "Semaphores": the core's errc::invalid_instances with more
    // than one permit on a client of several instances).
    // Returns {}, transport_errc::not_open, transport_errc::table_full, the codes of
    // edgelock::check_lock() (deployment.hpp, the blocking client's open() returns the same):
    // errc::invalid_instances when fair is set on a client of several instances (Redlock has
    // no single line to wait in), invalid_config when replicas_to_wait is set and the WAIT
    // timeout (replica_wait_ms, by default half the attempt timeout) is not below
    // command_timeout_ms; then the core's errc::invalid_name, invalid_ttl, invalid_config
    // (e.g. queue_entry_ttl_ms not above recheck_ms plus twice the attempt timeout).
    [[nodiscard]] std::error_code add_lock(const lock_config& config, lock_handle& out);

    // Frees a lock's slot. Only for a lock that is idle (never acquired, released, or failed
    // to acquire) or lost, with no operation running. Returns {}, invalid_handle, lock_busy.
    // The handle is stale at once; the slot itself is taken by add_lock() again only once
    // the requests the lock still has in flight (the clean-up of a cancelled acquire or of a
    // loss) are answered or their connection drops, so a slow server holds it up to
    // command_timeout_ms, and add_lock() may meanwhile return table_full.
    [[nodiscard]] std::error_code remove_lock(lock_handle handle);

    // Called as handler(std::error_code why) when a held lock ends without release():
    // errc::expired (no quorum confirmed a renewal before validity ran out),
    // errc::token_gone (a quorum said the key no longer holds our token) or
    // errc::node_restarted (instances restarted during the hold, fewer than a quorum are
    // left: client_config::restart_guard). Called at most once per hold; after it, release()
    // completes at once with errc::expired, and a new acquire is allowed. Without a handler,
    // an acquire after a loss completes with errc::expired until release() has reported the
    // loss. Replaces the previous one. The handler stays installed across holds until
    // replaced, or until its lock is removed (also from inside the handler itself: a lock
    // added later in the same slot starts without one). Returns {} or invalid_handle.
    template <typename Handler>
    [[nodiscard]] std::error_code set_lost_handler(lock_handle handle, Handler&& handler) {
        detail::handler_slot slot;
        slot.emplace_with_code(std::forward<Handler>(handler));
        return store_lost_handler(handle, std::move(slot));
    }

    // Takes the lock: handler(std::error_code, std::int64_t fence). `wait` zero makes one
    // attempt; otherwise attempts repeat with backoff while they can start within `wait` (a
    // fair lock waits in line instead: it tries again when woken, and every recheck_ms).
    // A new random token is drawn for every acquire. On a lock this owner already holds, it
    // counts one more hold and completes at once (posted) with the same fence; when that
    // hold is gone unheard, it completes with errc::expired below.
    // Error codes (edgelock/session/outcome.hpp: the rules both clients share): the reason
    // the last attempt failed, also when a wait ran out (never wait_timeout, unless no
    // attempt finished at all):
    //   errc::busy               another owner holds it
    //   errc::fence_exhausted    the fence counter is at 2^63-1 (ends any wait at once)
    //   errc::wrong_kind         the name is held as the other kind (a lock's as a semaphore's,
    //                            or the reverse; ends any wait at once)
    //   errc::permits_mismatch   the semaphore is held with another count of permits (ends
    //                            any wait at once)
    //   errc::restart_guard      too few instances count yet: one restarted without durable
    //                            data less than its guard ago (client_config::restart_guard);
    //                            status().guard_until says until when. A wait that reaches
    //                            that instant waits it out; a shorter one ends at once
    //   errc::no_quorum          too few instances answered (connections down, timeouts);
    //                            with a single instance, replaced by that instance's failure
    //                            when it is known: errc::error_reply, unexpected_reply,
    //                            protocol_error, reply_too_large, transport_errc::auth_failed,
    //                            command_timeout, connect_timeout, connection_closed,
    //                            unknown_host, std::errc::connection_reset, connection_refused, ...
    //   errc::validity_expired   a quorum answered, too late for any validity to remain;
    //                            or the lease ran out before this handler could be called
    //                            (other handlers took the time): success is never reported
    //                            for a lease that has ended. The lock is then lost; the lost
    //                            handler is called only for a hold already reported (this
    //                            acquire was a reentrant one)
    //   errc::expired            a hold this owner was told of is lost, unheard: its lease
    //                            ran out before this call, unnoticed, or no lost handler has
    //                            heard its loss yet (none installed: until release()). The
    //                            lost handler is called first; release() then completes with
    //                            errc::expired. No new hold takes the place of the old one
    //   errc::token_gone         (fencing, Redlock) the keys vanished while confirming
    //   errc::not_replicated     (replicas_to_wait) too few replicas acknowledged in time
    //   errc::cancelled          release() was called before the acquire finished
    //   errc::invalid_wait       wait negative or over edgelock::wait_ms_max
    //   errc::invalid_state      the core refused (hold count at its maximum)
    //   transport_errc::operation_in_progress  an acquire is running, or the release of
    //                            the last hold is still deleting the key (state releasing)
    //   transport_errc::invalid_handle, not_open
    //   std::errc::operation_canceled (close())
    // fence is the fence token when fencing is on and ec is {}; 0 otherwise.
    template <typename Handler>
    void async_acquire(lock_handle handle, std::chrono::milliseconds wait, Handler&& handler) {
        detail::handler_slot slot;
        slot.emplace_with_value(std::forward<Handler>(handler));
        start_acquire(handle, wait, std::move(slot));
    }

    // Drops one hold; the last one deletes the key wherever it holds our token:
    // handler(std::error_code). In every case the lock is no longer held when it completes.
    //   {}                       released, the key deleted on a quorum
    //   errc::expired            the lease had already ended, or the key no longer held our
    //                            token (the lock may have been someone else's for a while)
    //   errc::no_quorum          released locally, but too few instances confirmed the
    //                            delete: the key ends at its TTL; with a single instance,
    //                            that instance's failure when it is known (as for acquire)
    //   errc::not_held           nothing was held (never acquired, or already released)
    //   transport_errc::invalid_handle, operation_in_progress, not_open
    //   std::errc::operation_canceled (close())
    // While an acquire is running, this cancels it: the acquire completes with
    // errc::cancelled, then this handler with {}. An acquire whose deadline had already
    // passed, its handler not yet called, completes first with its own outcome (e.g.
    // no_quorum); this handler follows with errc::not_held.
    template <typename Handler>
    void async_release(lock_handle handle, Handler&& handler) {
        detail::handler_slot slot;
        slot.emplace_with_code(std::forward<Handler>(handler));
        start_release(handle, std::move(slot));
    }

    // Releases without a handler (what scoped_lock does). Never fails loudly: an invalid
    // handle or a release already running is ignored.
    void release_detached(lock_handle handle) noexcept;

    // The lock's state now ({} for an invalid handle).
    lock_status status(lock_handle handle) const noexcept;

    // What the client did since it was constructed, counted (edgelock/session/
    // lock_metrics.hpp): every lock's acquires, renewals, losses and releases (locks removed
    // since, and those close() dropped, included), the instances' connections made, made
    // again and moved to another master, and the requests in flight on them now. Counting
    // is always on and allocates nothing; a snapshot is a copy of about 700 bytes.
    session::lock_metrics metrics() const noexcept;
    // One lock's counts since add_lock() ({} for an invalid handle). Connections are the
    // client's, shared by its locks: connects, reconnects and failovers are 0 here, and
    // requests_in_flight is this lock's.
    session::lock_metrics metrics(lock_handle handle) const noexcept;
    bool held(lock_handle handle) const noexcept { return status(handle).held; }

    // Instances and their connections. `endpoint` is "host:port" of the server connected
    // (or last tried); with Sentinel, of the master it found. `last_error` is the error that
    // ended the last connection or attempt ({} if none yet). In a cluster, the instances are
    // the nodes of the slot map (the seeds first), and one without a connection yet is
    // neither connected nor has an endpoint.
    std::size_t instance_count() const noexcept;
    bool instance_connected(std::size_t instance) const noexcept;
    std::string instance_endpoint(std::size_t instance) const;
    [[nodiscard]] std::error_code instance_last_error(std::size_t instance) const noexcept;

    asio::io_context& context() const noexcept { return io_; }

private:
    void start_wait_ready(detail::handler_slot handler);
    [[nodiscard]] std::error_code store_lost_handler(lock_handle handle,
                                                     detail::handler_slot handler);
    void start_acquire(lock_handle handle, std::chrono::milliseconds wait,
                       detail::handler_slot handler);
    void start_release(lock_handle handle, detail::handler_slot handler);

    asio::io_context& io_;
    std::shared_ptr<detail::client_impl> impl_;
};

// Releases a held lock when it goes out of scope: the release runs in the background
// (client::release_detached), errors are ignored, and nothing can throw. The guard must not
// outlive its client.
class scoped_lock {
public:
    scoped_lock() noexcept = default;
    // Adopts a lock `owner` holds (after a successful acquire).
    scoped_lock(client& owner, lock_handle handle) noexcept : client_(&owner), handle_(handle) {}
    scoped_lock(scoped_lock&& other) noexcept
        : client_(std::exchange(other.client_, nullptr)), handle_(other.handle_) {}
    scoped_lock& operator=(scoped_lock&& other) noexcept {
        if (this != &other) {
            reset();
            client_ = std::exchange(other.client_, nullptr);
            handle_ = other.handle_;
        }
        return *this;
    }
    scoped_lock(const scoped_lock&) = delete;
    scoped_lock& operator=(const scoped_lock&) = delete;
    ~scoped_lock() { reset(); }

    // Releases now (if still owned).
    void reset() noexcept {
        if (client_ != nullptr) std::exchange(client_, nullptr)->release_detached(handle_);
    }
    // Gives up ownership without releasing; returns the handle.
    lock_handle dismiss() noexcept {
        client_ = nullptr;
        return handle_;
    }
    bool owns() const noexcept { return client_ != nullptr; }

private:
    client* client_ = nullptr;
    lock_handle handle_{};
};

}  // namespace edgelock::async
