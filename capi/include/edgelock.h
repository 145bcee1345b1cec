/* SPDX-License-Identifier: Apache-2.0 */
/* edgelock.h: the C API of edgelock's blocking lock client (edgelock/blocking_lock.hpp), for C
 * programs and for other languages through their C foreign-function interfaces (Python's
 * ctypes, Go's cgo, Rust's bindgen). C99 and C11; no C++ type crosses it.
 *
 * One `edgelock_lock` is one lock name held by one owner, over one Redis, N independent
 * masters (Redlock, N odd), or the master a set of Sentinels points at: the same deployment
 * settings, the same behaviour and the same guarantees as the C++ client, which does the
 * work underneath (renewal on a helper thread, reconnection, Sentinel failover, fencing,
 * the restart guard, fair waiting). Read blocking_lock.hpp for the details of each setting.
 *
 * Errors are values: every call that can fail returns an `int`, EDGELOCK_OK (0) or one of the
 * negative EDGELOCK_E_* codes below; edgelock_strerror() names any code and never returns
 * NULL, and edgelock_last_error_message() describes the calling thread's latest failure in
 * full (the OS error's text, the part of a URL that is wrong). Nothing is thrown across this
 * interface and nothing aborts on bad input: a NULL where an object is needed is
 * EDGELOCK_E_INVALID_ARGUMENT.
 *
 * Threads: the calls may come from any thread, one call at a time per lock (they are
 * serialised inside); edgelock_held(), edgelock_lost() and edgelock_fence() never wait for
 * I/O. The lost callback runs on a thread of the lock's own (see edgelock_options.on_lost).
 *
 * ABI, what stays stable within a major version (the shared library's soname,
 * libedgelock-c.so.<major>):
 *   - every function's signature, and every EDGELOCK_E_* value and enumerator value;
 *   - edgelock_options may grow, at its end only: its first field, struct_size, says which
 *     version of it the caller was compiled with (edgelock_options_init(&o, sizeof o)
 *     sets it). A
 *     library newer than the caller gives the fields the caller does not know their
 *     defaults; a library older than the caller accepts the caller's newer fields only when
 *     they are zero, and otherwise fails edgelock_open() with EDGELOCK_E_INVALID_CONFIG;
 *   - edgelock_metrics may grow, at its end only: the caller passes sizeof its struct to
 *     edgelock_metrics_snapshot(), which fills that many bytes (zero beyond what it knows);
 *   - edgelock_hold and edgelock_histogram never change: new facts about a hold come as
 *     new functions.
 *
 * Example (examples/c/quickstart.c, shown in README.md):
 *   edgelock_options options;
 *   edgelock_options_init(&options, sizeof options);
 *   const char* instances[] = {"redis://127.0.0.1:6379"};
 *   options.instances = instances;
 *   options.instance_count = 1;
 *   options.name = "reports:daily";
 *   options.fencing = 1;
 *   edgelock_lock* lock;
 *   int rc = edgelock_open(&options, &lock);
 *   ... rc = edgelock_acquire(lock, 5000, &hold); ... edgelock_release(lock);
 *   edgelock_close(lock);
 */
#ifndef EDGELOCK_H
#define EDGELOCK_H

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define EDGELOCK_API __attribute__((visibility("default")))
#else
#define EDGELOCK_API
#endif

#ifdef __cplusplus
#define EDGELOCK_NOEXCEPT noexcept
extern "C" {
#else
#define EDGELOCK_NOEXCEPT
#endif

/* The version of this header; edgelock_version() is the library's ("0.1.0"). */
#define EDGELOCK_VERSION_MAJOR 0
#define EDGELOCK_VERSION_MINOR 1
#define EDGELOCK_VERSION_PATCH 0

/* Error codes. 0 is success; failures are negative and never change value.
 *   -1 .. -99     the lock's verdicts and bad input (edgelock::errc, errc.hpp), -(errc value)
 *   -101 .. -199  the connections (edgelock::transport_errc), -(100 + transport_errc value)
 *   -200 ..       this interface's own */
enum edgelock_error {
    EDGELOCK_OK = 0,

    /* Bad input; the lock is unchanged and stays usable. */
    EDGELOCK_E_INVALID_NAME = -1,      /* name empty, over 128 bytes, or a fence key */
    EDGELOCK_E_INVALID_TTL = -2,       /* ttl_ms <= 0 or above the core's maximum */
    EDGELOCK_E_INVALID_WAIT = -3,      /* wait_ms negative or above a day */
    EDGELOCK_E_INVALID_INSTANCES = -4, /* an even count, more than the maximum, or fair with
                                          several instances */
    EDGELOCK_E_INVALID_INSTANCE = -5,
    EDGELOCK_E_INVALID_CONFIG = -6, /* a setting out of its range, a malformed URL, ... */
    EDGELOCK_E_INVALID_STATE = -7,  /* the call does not fit the lock's state */
    EDGELOCK_E_NOT_HELD = -8,       /* release of a lock not held */
    EDGELOCK_E_BUFFER_TOO_SMALL = -9,

    /* The lock's verdicts. */
    EDGELOCK_E_BUSY = -10,             /* another owner holds the lock */
    EDGELOCK_E_NO_QUORUM = -11,        /* too few instances answered in time */
    EDGELOCK_E_VALIDITY_EXPIRED = -12, /* a quorum agreed, after the lease had run out */
    EDGELOCK_E_WAIT_TIMEOUT = -13,
    EDGELOCK_E_CANCELLED = -14,      /* edgelock_cancel() ended the acquire */
    EDGELOCK_E_TOKEN_GONE = -15,     /* Redis no longer holds our token */
    EDGELOCK_E_NOT_REPLICATED = -16, /* WAIT: too few replicas confirmed in time */
    EDGELOCK_E_EXPIRED = -17,        /* the lease ran out before a renewal reached a quorum */

    /* Replies and the RESP protocol. */
    EDGELOCK_E_NEED_MORE = -18, /* never returned by this interface */
    EDGELOCK_E_PROTOCOL_ERROR = -19,
    EDGELOCK_E_REPLY_TOO_LARGE = -20,
    EDGELOCK_E_TOO_MANY_ELEMENTS = -21,
    EDGELOCK_E_TOO_DEEP = -22,
    EDGELOCK_E_UNEXPECTED_REPLY = -23,
    EDGELOCK_E_ERROR_REPLY = -24, /* Redis answered with an error */
    EDGELOCK_E_IO_ERROR = -25,    /* e.g. no random bytes for a token */
    EDGELOCK_E_EVENTS_PENDING = -26,
    EDGELOCK_E_INVALID_TIME = -27,
    EDGELOCK_E_CLOCK_STEPPED_BACK = -28,
    EDGELOCK_E_FENCE_EXHAUSTED = -29,  /* the fence counter is at 2^63-1 */
    EDGELOCK_E_RESTART_GUARD = -30,    /* too few instances count yet (restart guard) */
    EDGELOCK_E_NODE_RESTARTED = -31,   /* an instance restarted during the hold */
    EDGELOCK_E_WRONG_KIND = -32,       /* the name's key holds another kind: a lock's name used
                                          as a semaphore, or the reverse */
    EDGELOCK_E_PERMITS_MISMATCH = -33, /* the semaphore is held with another permit count */

    /* The connections. */
    EDGELOCK_E_UNKNOWN_HOST = -101,
    EDGELOCK_E_CONNECT_TIMEOUT = -102, /* no connection within connect_timeout_ms */
    EDGELOCK_E_COMMAND_TIMEOUT = -103, /* a reply took longer than command_timeout_ms */
    EDGELOCK_E_CONNECTION_CLOSED = -104,
    EDGELOCK_E_AUTH_FAILED = -105, /* a wrong password or ACL user */
    EDGELOCK_E_SELECT_FAILED = -106,
    EDGELOCK_E_NOT_MASTER = -107,
    EDGELOCK_E_MASTER_DOWN = -108,
    EDGELOCK_E_LOADING = -109,
    EDGELOCK_E_NO_MASTER = -110, /* Sentinel: no sentinel named a master */
    EDGELOCK_E_MASTER_CHANGED = -111,
    EDGELOCK_E_OUT_OF_MEMORY = -112, /* also: this interface could not allocate */
    EDGELOCK_E_THREAD_FAILED = -113, /* the helper or callback thread could not start */
    EDGELOCK_E_NOT_OPEN = -114,
    EDGELOCK_E_ALREADY_OPEN = -115,
    EDGELOCK_E_TABLE_FULL = -116,
    EDGELOCK_E_INVALID_HANDLE = -117,
    EDGELOCK_E_OPERATION_IN_PROGRESS = -118,
    EDGELOCK_E_LOCK_BUSY = -119,
    EDGELOCK_E_NODE_INFO_REFUSED = -120, /* INFO refused while restart_guard is on */
    EDGELOCK_E_EVICTING_NODE = -121,     /* eviction = EDGELOCK_EVICTION_REFUSE */
    EDGELOCK_E_TLS_FILES = -122,         /* a TLS file could not be loaded */
    EDGELOCK_E_TLS_UNTRUSTED = -123,
    EDGELOCK_E_TLS_NAME_MISMATCH = -124,
    EDGELOCK_E_TLS_EXPIRED = -125,
    EDGELOCK_E_TLS_CLIENT_CERTIFICATE_REQUIRED = -126,
    EDGELOCK_E_TLS_NOT_OFFERED = -127,
    EDGELOCK_E_TLS_HANDSHAKE_TIMEOUT = -128,
    EDGELOCK_E_TLS_HANDSHAKE_FAILED = -129,
    EDGELOCK_E_CLOSED_BEFORE_REPLY = -130,
    EDGELOCK_E_HANDSHAKE_TIMEOUT = -131,
    EDGELOCK_E_AUTH_REQUIRED = -132, /* NOAUTH: the server wants a password */
    EDGELOCK_E_MAX_CLIENTS = -133,
    EDGELOCK_E_TOO_MANY_REDIRECTS = -134, /* Redis Cluster: MOVED/ASK past the bound */
    EDGELOCK_E_NO_SLOT_MAP = -135,        /* Redis Cluster: no node serves the slot */
    EDGELOCK_E_TOO_MANY_MASTERS = -136,   /* Redis Cluster: over 16 masters */

    /* This interface's own. */
    EDGELOCK_E_OS = -200, /* the operating system failed a call (e.g. connection refused):
                             edgelock_last_os_error() has its errno value, and
                             edgelock_strerror() its text on the same thread */
    EDGELOCK_E_INVALID_ARGUMENT = -201, /* a NULL where an object or result is needed */
    EDGELOCK_E_UNKNOWN = -202           /* a code this version cannot name (never expected) */
};

/* A short, stable, lower-case description of any code: "busy", "no_quorum", "reply timed
 * out", ...; "unknown error" for a value that is no code. Never NULL; the string is static
 * (never freed, never changed). EDGELOCK_E_OS alone says only that the operating system failed
 * a call, so its text is that of the errno value edgelock_last_os_error() returns on the
 * calling thread: "connection refused", "connection reset by peer", ...; or "operating system
 * error (see edgelock_last_os_error)" when this thread has seen none. Call it on the thread
 * that got the code. */
EDGELOCK_API const char* edgelock_strerror(int code) EDGELOCK_NOEXCEPT;

/* The errno value of the latest EDGELOCK_E_OS returned on the calling thread (or reported to
 * an on_lost callback running on it); 0 when there was none. */
EDGELOCK_API int edgelock_last_os_error(void) EDGELOCK_NOEXCEPT;

/* The latest failure of a call on the calling thread, in one line: what edgelock_strerror()
 * says of the code that call returned, or more where the code alone cannot say it:
 *   EDGELOCK_E_INVALID_CONFIG from edgelock_open() for a URL: which one, and which part of it
 *     is wrong: 'bad instances[1] address "redis://db1:0": bad port', 'bad cluster[0]
 *     address "redis://n1:7000/2": a cluster has only database 0' (credentials in a URL are
 *     shown as ***)
 *   EDGELOCK_E_TLS_FILES: which file and why ("TLS CA file /etc/ca.pem: No such file or
 *     directory")
 *   EDGELOCK_E_OS: the errno value's text ("connection refused")
 * "" before any failure on this thread. Like errno, a call that succeeds leaves it as it was:
 * read it right after the call that failed. Never NULL. The string belongs to the calling
 * thread and stays valid until that thread's next call into this library; copy it to keep
 * it. */
EDGELOCK_API const char* edgelock_last_error_message(void) EDGELOCK_NOEXCEPT;

/* The library's version, "MAJOR.MINOR.PATCH". */
EDGELOCK_API const char* edgelock_version(void) EDGELOCK_NOEXCEPT;

/* The monotonic clock the lock runs on (CLOCK_MONOTONIC), in milliseconds:
 * edgelock_hold.valid_until_ms is on it. */
EDGELOCK_API int64_t edgelock_now_ms(void) EDGELOCK_NOEXCEPT;

/* edgelock_options.eviction: what a connection does with a node that may evict keys
 * (maxmemory with a policy other than noeviction). */
enum edgelock_eviction {
    EDGELOCK_EVICTION_WARN = 0,   /* connect anyway (the default) */
    EDGELOCK_EVICTION_REFUSE = 1, /* fail the connection: EDGELOCK_E_EVICTING_NODE */
    EDGELOCK_EVICTION_OFF = 2     /* do not check */
};

/* What edgelock_open() needs: where Redis is, then the lock. Fill it with
 * edgelock_options_init(&options, sizeof options) first, which sets struct_size and every
 * default (read from the C++ client's, so the two never differ), then set what you need. Strings
 * are UTF-8, NUL-terminated, and copied by edgelock_open(): they need not outlive the call. NULL
 * strings are empty. Booleans are ints: 0 false, anything else true. */
typedef struct edgelock_options {
    size_t struct_size; /* sizeof(edgelock_options) as the caller knows it */

    /* Either instances, redis://[user:password@]host[:port][/db] URLs (rediss:// for TLS):
     * one, or an odd number for Redlock ... */
    const char* const* instances;
    size_t instance_count;
    /* ... or Sentinel: the sentinels' URLs and the master's name and credentials. */
    const char* const* sentinels;
    size_t sentinel_count;
    const char* master_name;
    const char* master_user;
    const char* master_password;
    int master_db; /* 0..65535 */

    /* TLS, for rediss:// addresses (tls_options.hpp). Files are PEM. */
    const char* tls_ca_file;
    const char* tls_ca_dir;
    const char* tls_cert_file;
    const char* tls_key_file;
    const char* tls_server_name;
    int tls_insecure_skip_verification_for_tests_only; /* never in production */

    /* Timing: 1..60000 ms timeouts; reconnect delays 1 <= min <= max <= 600000 ms. */
    int64_t connect_timeout_ms;
    int64_t command_timeout_ms;
    int64_t reconnect_delay_min_ms;
    int64_t reconnect_delay_max_ms;
    int restart_guard; /* read each node's start and persistence (default on) */
    int eviction;      /* enum edgelock_eviction */

    /* The lock. */
    const char* name; /* the Redis key, 1..128 bytes */
    int64_t ttl_ms;
    int fencing;          /* hand out fence tokens, strictly increasing per name */
    int watchdog;         /* renew while held (default on) */
    int replicas_to_wait; /* Sentinel: WAIT for this many replicas, 0..255 (0: no WAIT) */
    int64_t replica_wait_ms;
    /* Core tuning: 0 (-1 for drift_ms) is the core's default. */
    int64_t renew_interval_ms;
    int64_t drift_ms;
    int64_t attempt_timeout_ms;
    int64_t retry_delay_ms_min;
    int64_t retry_delay_ms_max;
    int fair; /* fair waiting: one instance only */
    int64_t recheck_ms;
    int64_t queue_entry_ttl_ms;
    int64_t restart_guard_ms; /* -1: ttl + drift */

    /* Called when a hold is lost, with EDGELOCK_E_EXPIRED, EDGELOCK_E_TOKEN_GONE or
     * EDGELOCK_E_NODE_RESTARTED, and `on_lost_user`. It runs on a thread of the lock's own,
     * with none of the lock's locks held: it may call edgelock_release() and
     * edgelock_acquire() on this lock, but not edgelock_close(). A call is always about the
     * current hold (a loss whose hold already ended is not reported). When another thread
     * calls edgelock_close() meanwhile, an edgelock_acquire() the callback makes from then on,
     * or is waiting in, returns EDGELOCK_E_CANCELLED, so a callback that retries until it
     * acquires must stop at that code (and after EDGELOCK_E_EXPIRED, a hold it took being
     * lost, release before it tries again); a hold it already got is released by the close
     * once the callback returns. NULL: not called. */
    void (*on_lost)(int code, void* user);
    void* on_lost_user;

    /* ... or Redis Cluster: seed nodes' URLs (database 0), instead of instances and
     * sentinels. The lock lives on the master of its name's slot; slot moves (MOVED, ASK) and
     * failovers are followed. Last in the struct: a caller built before it leaves it zero. */
    const char* const* cluster;
    size_t cluster_count;

    /* A semaphore (lock.hpp, "Semaphores"): up to this many owners hold the name at once,
     * each with its own lease and renewal. 1 (the default; 0 reads as 1) is the lock. More
     * needs one instance (EDGELOCK_E_INVALID_INSTANCES; above 1000: EDGELOCK_E_INVALID_CONFIG).
     * With fencing, a holder's fence token modulo permits is its permit (0..permits-1), for a
     * store that keeps the highest token per permit. Every owner of the name must give the
     * same count (edgelock_acquire() fails with EDGELOCK_E_PERMITS_MISMATCH while leases of
     * another count are held, and with EDGELOCK_E_WRONG_KIND on a lock's name). */
    int permits;
} edgelock_options;

/* Zeroes the caller's struct_size bytes (pass sizeof(edgelock_options): the size the caller
 * was compiled with), then sets struct_size and every field this library knows to its
 * default. A field the library does not know stays zero, which an older library accepts.
 * Does nothing with NULL or a struct_size smaller than the struct_size field. */
EDGELOCK_API void edgelock_options_init(edgelock_options* options,
                                        size_t struct_size) EDGELOCK_NOEXCEPT;

typedef struct edgelock_lock edgelock_lock;

/* Checks the options and makes a lock (no network traffic: connections are made by the first
 * acquire). On success *out is the lock, which edgelock_close() ends; on failure *out is
 * NULL. Returns EDGELOCK_OK, or the first that applies:
 *   EDGELOCK_E_INVALID_ARGUMENT  options or out NULL, or a NULL string in instances,
 *                                sentinels or cluster
 *   EDGELOCK_E_INVALID_CONFIG    struct_size smaller than its own field or larger than
 *                                this library's edgelock_options with the unknown fields
 *                                not zero; master_db, replicas_to_wait or eviction out of
 *                                range; then as the C++ client's open(): not exactly one of
 *                                instances, sentinels and cluster, master_name missing or too long,
 *                                a timeout or delay out of range, a malformed URL, ...
 *   EDGELOCK_E_INVALID_INSTANCES an even count, too many, or fair with several
 *   EDGELOCK_E_TLS_FILES         an address is rediss:// and a TLS file cannot be loaded
 *   EDGELOCK_E_INVALID_NAME, EDGELOCK_E_INVALID_TTL
 *   EDGELOCK_E_IO_ERROR          no random bytes to seed the reconnect jitter
 *   EDGELOCK_E_OUT_OF_MEMORY, EDGELOCK_E_THREAD_FAILED */
EDGELOCK_API int edgelock_open(const edgelock_options* options,
                               edgelock_lock** out) EDGELOCK_NOEXCEPT;

/* Waits for a running on_lost call to return, refusing it any new hold (see
 * edgelock_options.on_lost: its edgelock_acquire() returns EDGELOCK_E_CANCELLED) and starting
 * no other; then releases a held lock, every hold of it, the callback's included (best effort,
 * bounded by the timeouts: a release that fails leaves the key to its TTL), stops the lock's
 * threads, closes its connections and frees it. NULL: nothing. Must not be called from the
 * lock's own on_lost callback. */
EDGELOCK_API void edgelock_close(edgelock_lock* lock) EDGELOCK_NOEXCEPT;

/* A hold, as acquire reports it. Never changes layout. */
typedef struct edgelock_hold {
    int64_t fence;          /* the fence token (0 without fencing) */
    int64_t valid_until_ms; /* end of the lease, on edgelock_now_ms()'s clock */
    char token[33];         /* the owner token in the key: 32 hex characters and a NUL */
} edgelock_hold;

/* One attempt, no waiting: edgelock_acquire(lock, 0, out). */
EDGELOCK_API int edgelock_try_acquire(edgelock_lock* lock, edgelock_hold* out) EDGELOCK_NOEXCEPT;

/* Acquires, retrying with backoff while attempts can start within wait_ms. On success fills
 * *out (when not NULL). On a lock this one already holds, counts one more hold. After a hold
 * is lost, returns EDGELOCK_E_EXPIRED at once and starts nothing until the on_lost call for
 * the loss has returned (on_lost itself may acquire again) or edgelock_release() has
 * returned EDGELOCK_E_EXPIRED, also when the lease ran out unnoticed just before the call:
 * no new hold takes the place of one whose loss the caller has not heard. Returns
 * EDGELOCK_OK, or the reason the last attempt failed:
 *   EDGELOCK_E_BUSY, EDGELOCK_E_RESTART_GUARD, EDGELOCK_E_VALIDITY_EXPIRED,
 *   EDGELOCK_E_TOKEN_GONE, EDGELOCK_E_NOT_REPLICATED, EDGELOCK_E_FENCE_EXHAUSTED
 *   one instance's connection error (EDGELOCK_E_OS with edgelock_last_os_error() = e.g.
 *     ECONNREFUSED; EDGELOCK_E_CONNECT_TIMEOUT, EDGELOCK_E_AUTH_FAILED, EDGELOCK_E_TLS_*,
 *     EDGELOCK_E_ERROR_REPLY, ...), or with several instances EDGELOCK_E_NO_QUORUM
 *   EDGELOCK_E_CANCELLED        edgelock_cancel() was called, or, from on_lost,
 *                               edgelock_close() began
 *   EDGELOCK_E_EXPIRED          the hold this lock had is lost, unheard (above): release it
 *   EDGELOCK_E_INVALID_WAIT     wait_ms negative or above a day
 *   EDGELOCK_E_INVALID_STATE    another call is releasing
 *   EDGELOCK_E_IO_ERROR         no random bytes for the token
 *   EDGELOCK_E_INVALID_ARGUMENT lock NULL */
EDGELOCK_API int edgelock_acquire(edgelock_lock* lock, int64_t wait_ms,
                                  edgelock_hold* out) EDGELOCK_NOEXCEPT;

/* Ends the acquire that is running, from another thread or a signal handler (the only call
 * here that is async-signal-safe); a cancel with no acquire running ends the next one. */
EDGELOCK_API void edgelock_cancel(edgelock_lock* lock) EDGELOCK_NOEXCEPT;

/* Drops one hold; the last one deletes the key where it still holds our token. Returns
 * EDGELOCK_OK, EDGELOCK_E_EXPIRED (the lease had run out or the lock was lost first: the
 * protected work may have overlapped another owner's), EDGELOCK_E_NOT_HELD,
 * EDGELOCK_E_NO_QUORUM or one instance's error (the key then ends at its TTL),
 * EDGELOCK_E_INVALID_ARGUMENT. */
EDGELOCK_API int edgelock_release(edgelock_lock* lock) EDGELOCK_NOEXCEPT;

/* 1 while held and within validity, else 0 (also for NULL). */
EDGELOCK_API int edgelock_held(const edgelock_lock* lock) EDGELOCK_NOEXCEPT;
/* 1 once the current hold was lost (until edgelock_release(), or the next hold an acquire
 * starts once on_lost has heard the loss), else 0. */
EDGELOCK_API int edgelock_lost(const edgelock_lock* lock) EDGELOCK_NOEXCEPT;
/* The fence token of the current or last hold; 0 without one (or NULL). */
EDGELOCK_API int64_t edgelock_fence(const edgelock_lock* lock) EDGELOCK_NOEXCEPT;

/* Metrics (session/lock_metrics.hpp): what this lock did, counted since edgelock_open(). */
enum edgelock_acquire_outcome {
    EDGELOCK_ACQUIRE_ACQUIRED = 0,
    EDGELOCK_ACQUIRE_BUSY,
    EDGELOCK_ACQUIRE_WAIT_TIMEOUT,
    EDGELOCK_ACQUIRE_NO_QUORUM,
    EDGELOCK_ACQUIRE_RESTART_GUARD,
    EDGELOCK_ACQUIRE_VALIDITY_EXPIRED,
    EDGELOCK_ACQUIRE_NOT_REPLICATED,
    EDGELOCK_ACQUIRE_TOKEN_GONE,
    EDGELOCK_ACQUIRE_FENCE_EXHAUSTED,
    EDGELOCK_ACQUIRE_CANCELLED,
    EDGELOCK_ACQUIRE_UNREACHABLE, /* a single instance's connection failed */
    EDGELOCK_ACQUIRE_ERROR        /* anything else: error replies, bad input */
};
#define EDGELOCK_ACQUIRE_OUTCOME_COUNT 12

enum edgelock_loss_cause {
    EDGELOCK_LOSS_EXPIRED = 0,
    EDGELOCK_LOSS_TOKEN_GONE,
    EDGELOCK_LOSS_NODE_RESTARTED,
    EDGELOCK_LOSS_CLOCK_STEPPED_BACK
};
#define EDGELOCK_LOSS_CAUSE_COUNT 4

enum edgelock_release_outcome {
    EDGELOCK_RELEASE_RELEASED = 0,
    EDGELOCK_RELEASE_EXPIRED,
    EDGELOCK_RELEASE_FAILED
};
#define EDGELOCK_RELEASE_OUTCOME_COUNT 3

/* Latency buckets: counts[i] holds samples above bound i-1 (or 0) and at most bound i; the
 * last bucket what lies above the highest bound. Not cumulative. */
#define EDGELOCK_LATENCY_BOUND_COUNT 14
#define EDGELOCK_LATENCY_BUCKET_COUNT (EDGELOCK_LATENCY_BOUND_COUNT + 1)

/* Upper bound `i` of the latency buckets in ms (1, 2, 5, ... 30000); -1 when i is out of
 * range. */
EDGELOCK_API int64_t edgelock_latency_bound_ms(size_t i) EDGELOCK_NOEXCEPT;

/* Stable lower-case names for exporters ("acquired", "busy", ...); "" out of range. */
EDGELOCK_API const char* edgelock_acquire_outcome_name(size_t outcome) EDGELOCK_NOEXCEPT;
EDGELOCK_API const char* edgelock_loss_cause_name(size_t cause) EDGELOCK_NOEXCEPT;
EDGELOCK_API const char* edgelock_release_outcome_name(size_t outcome) EDGELOCK_NOEXCEPT;

typedef struct edgelock_histogram {
    uint64_t counts[EDGELOCK_LATENCY_BUCKET_COUNT];
    uint64_t count;
    int64_t sum_ms;
} edgelock_histogram;

/* What each field counts is written in session/lock_metrics.hpp. */
typedef struct edgelock_metrics {
    uint64_t acquires[EDGELOCK_ACQUIRE_OUTCOME_COUNT]; /* by enum edgelock_acquire_outcome */
    edgelock_histogram acquire_latency;                /* call -> acquired, first attempt */
    edgelock_histogram acquire_wait;                   /* call -> verdict, more than one attempt */
    edgelock_histogram handover_gap;                   /* fair: release message -> acquired */
    uint64_t renewals_ok;
    uint64_t renewals_late;
    uint64_t renewal_failures;
    uint64_t losses[EDGELOCK_LOSS_CAUSE_COUNT];
    uint64_t releases[EDGELOCK_RELEASE_OUTCOME_COUNT];
    uint64_t connects;
    uint64_t reconnects;
    uint64_t failovers;
    uint64_t requests_in_flight; /* a gauge, at the snapshot */
    uint64_t redirects_moved;    /* Redis Cluster: MOVED replies followed */
    uint64_t redirects_ask;      /* Redis Cluster: ASK replies followed */
} edgelock_metrics;

/* Copies the lock's counters into *out, whose size the caller passes (sizeof *out): the
 * first out_bytes bytes of this library's edgelock_metrics are written, and bytes beyond it
 * are zeroed. Safe beside a running acquire on another thread. Returns EDGELOCK_OK, or
 * EDGELOCK_E_INVALID_ARGUMENT (lock or out NULL). */
EDGELOCK_API int edgelock_metrics_snapshot(const edgelock_lock* lock, edgelock_metrics* out,
                                           size_t out_bytes) EDGELOCK_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif /* EDGELOCK_H */
