// SPDX-License-Identifier: Apache-2.0
// edgelock session: one connection to one Redis node, as a sans-IO state machine.
//
// A connection is what a transport keeps per Redis instance (and, for failover notices, per
// Sentinel watch). It decides where to connect (the node itself, or the master the
// sentinels name, asking them in turn), what to say first (handshake.hpp), whether each
// reply is an answer for a lock or a sign of the wrong node (reply_class.hpp), when a
// connect or a reply has taken too long, and when to connect again (reconnect.hpp). The
// transport only moves bytes and reads a clock:
//
//   start(now)            -> an address: resolve it, connect           state: connecting
//   on_connected(now,buf) -> handshake bytes to write                  state: handshaking
//   on_reply(nodes,now)   -> an answer for (owner, tag), a master switch, or nothing
//                            (handshake replies are the connection's own)    state: ready at the
//                            end
//   track(owner,tag,now)  after writing a lock request (ready, or behind the handshake)
//   on_io_error / on_timer / close  -> state closing: close the socket, then
//   on_closed(now,dropped)-> every request in flight handed to `dropped`; state idle
//   next_deadline_ms()    when to call on_timer (connect or reply timeout, reconnect delay)
//
// The restart guard: with read_node, a lock traffic connection also reads what the node says of its
// process (node_facts.hpp) and holds lock requests until the handshake is done; its last
// reply then comes out as node_read, and the transport tells every lock on this instance
// (lock::on_node_started(started())) before writing for any of them. A run_id that differs
// from the last one read from the same host and port is a restart: durable only if the
// process before was, and counted from that reading at the earliest while it runs. With
// refuse_evicting, a node that may evict keys (node_facts::may_evict) ends the connection instead.
// With refuse_replica (a node named directly, where a replica is always a mistake), a node
// whose INFO says role:slave ends it with not_master before the locks hear of its start: its
// writes would only come back READONLY, and its start would hold the locks up for nothing.
//
// Sentinel deployments: each attempt first asks a sentinel for the master (a connection of
// its own), then connects to the master named and checks with ROLE that it is one. Any
// failure moves on to the next sentinel and asks again, at once until every sentinel has
// failed once in a row, then after the reconnect delay: a failover is followed on the next
// connection, and a READONLY, MASTERDOWN or LOADING reply ends the connection that got it.
// The master named is reached with TLS exactly when the sentinel that named it was (rediss://).
// A failed sentinel is reported as no_master, except a TLS refusal, which keeps its code.
//
// Fair locks' wake-ups (kind subscriber): a connection to the same node (or the master the
// sentinels name, checked with ROLE), with [AUTH] PING as its handshake. Once ready, the
// transport writes SUBSCRIBE and UNSUBSCRIBE of one channel each and tracks each one like a
// lock request: its confirmation (or error) comes back as its answer, within the command
// timeout; a published message answers nothing and comes back as `message` (pubsub.hpp).
//
// No allocation: the in-flight queue lives in storage the caller owns (sized when opened).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "edgelock/lock.hpp"
#include "edgelock/session/address.hpp"
#include "edgelock/session/fault_points.hpp"
#include "edgelock/session/handshake.hpp"
#include "edgelock/session/node_facts.hpp"
#include "edgelock/session/reconnect.hpp"
#include "edgelock/session/transport_errc.hpp"

namespace edgelock::session {

// What a reply on the connection will answer.
struct in_flight {
    static constexpr std::uint32_t internal = 0xffffffff;
    std::uint32_t owner = internal;  // the transport's (a lock slot), or internal: a handshake step
    std::uint32_t tag = 0;           // the transport's (a lock generation), or the handshake step
    std::int64_t sent_ms = 0;
};

enum class connection_state : std::uint8_t {
    idle,         // no connection: start() makes one once the reconnect delay has passed
    connecting,   // the transport resolves and connects to address()
    handshaking,  // connected; the handshake's replies are awaited
    ready,        // lock requests may be written
    closing,      // the transport must close the socket and call on_closed()
};

struct connection_setup {
    connection_kind kind = connection_kind::lock_traffic;  // lock_traffic, subscriber or watch
    const node_address* node = nullptr;                    // without sentinels: the node
    const node_address* sentinels = nullptr;               // Sentinel: the sentinels, in order
    std::size_t sentinel_count = 0;
    std::string_view master_name;          // Sentinel: the monitored master's name
    const node_address* master = nullptr;  // Sentinel: the master's user, password, db
    timing times;
    in_flight* in_flight_storage = nullptr;  // owned by the caller, outlives the connection
    std::size_t in_flight_capacity = 0;      // >= handshake_steps_max + lock requests
    std::uint64_t seed = 0;                  // reconnect jitter
    bool read_node = false;                  // lock_traffic: read node facts (restart guard,
                                             // eviction check)
    bool refuse_evicting = false;            // read_node: a node that may evict keys
                                             // fails the connection (evicting_node)
    bool refuse_replica = false;             // read_node: a node whose INFO says it is a
                                             // replica fails the connection (not_master)
    fault_points* faults = nullptr;          // the simulator's (fault_points.hpp); else none
};

struct routed_reply {
    enum class kind : std::uint8_t {
        none,             // the connection's own (handshake), or nothing to deliver
        answer,           // deliver nodes to entry.owner: the answer to its request
        master_switched,  // watch: a sentinel announced a new master (switched_to())
        node_read,        // read_node: the handshake is done; tell the locks started()
        message,          // subscriber: a published message (parse_pubsub of the nodes)
    };
    kind what = kind::none;
    in_flight entry;
};

struct connection_end {
    bool was_ready = false;  // lock traffic was flowing: every lock on it must hear of it
    failure why;             // empty when the connection only moved on (sentinel to master)
};

class connection {
public:
    // Returns invalid_config for a setup that names no node, sentinels without a master
    // name or credentials, a watch without sentinels, too little in-flight storage, or bad
    // timing. The pointed-to addresses must outlive the connection.
    errc setup(const connection_setup& s) noexcept;

    connection_state state() const noexcept { return state_; }
    bool ready() const noexcept { return state_ == connection_state::ready; }
    const node_address& address() const noexcept { return *address_; }
    const timing& times() const noexcept { return times_; }
    // At the sentinel step of a Sentinel deployment (not yet at the master).
    bool asking_sentinel() const noexcept { return asking_sentinel_; }
    // Why the last connection or attempt ended (kept after a reconnect succeeds).
    const failure& last_error() const noexcept { return last_error_; }
    // Attempts that ended (ready, or failed before it): lets a caller wait for every
    // instance to have tried once.
    std::uint32_t attempts_finished() const noexcept { return attempts_finished_; }
    // A watch connection's last master_switched: the new master's host and port, and the old.
    const node_address& switched_to() const noexcept { return switched_; }
    const node_address& switched_from() const noexcept { return switched_from_; }
    // Past the sentinels and ready on `master`.
    bool serves(const node_address& master) const noexcept {
        return ready() && !asking_sentinel_ && address().same_node(master);
    }
    std::size_t requests_in_flight() const noexcept { return count_; }
    // The request the k-th reply from now will answer (0: the next), or null when fewer are
    // in flight: a client may bring that lock's state into its cache before the reply comes.
    const in_flight* in_flight_at(std::size_t k) const noexcept {
        return k < count_ ? &storage_[(head_ + k) % capacity_] : nullptr;
    }
    // read_node: what the node said on the current (or last) connection, and the start the
    // locks are told, valid from node_read on.
    const node_facts& node() const noexcept { return node_; }
    const node_start& started() const noexcept { return started_; }
    // read_node, and the current connection read its node: started() is its process's start.
    bool knows_node() const noexcept { return read_node_ && state_ == connection_state::ready; }

    // Idle, and start() would connect now (a transport that connects on demand asks first).
    bool may_start(std::int64_t now) const noexcept {
        return state_ == connection_state::idle &&
               (go_to_master_ || announced_at(now) || backoff_.may_connect(now));
    }
    // Idle: when start() may connect (the end of the reconnect delay).
    std::int64_t start_not_before_ms() const noexcept {
        return go_to_master_ ? 0 : backoff_.not_before_ms();
    }

    // Begins an attempt when idle and the reconnect delay has passed: returns the address to
    // connect to (state connecting), or null (see next_deadline_ms()).
    const node_address* start(std::int64_t now) noexcept;
    // rediss://: the socket is connected and the TLS handshake began. The attempt's deadline
    // passing before on_connected() is then tls_handshake_timeout, not connect_timeout.
    void on_tls_handshake() noexcept;
    // The socket is connected (and, for rediss://, its TLS handshake done): writes the
    // handshake into out and returns its size (state handshaking). Returns 0 when it does not
    // fit (state closing, invalid_config).
    std::size_t on_connected(std::int64_t now, char* out, std::size_t capacity) noexcept;
    // Lock requests may be written: ready, or handshaking with the node itself (they are
    // pipelined behind the handshake, and dropped with it when it fails; never behind a
    // Sentinel query, which is not the node, nor before the locks heard node_read).
    bool accepts_requests() const noexcept {
        return state_ == connection_state::ready ||
               (state_ == connection_state::handshaking && !asking_sentinel_ && !read_node_);
    }
    // Fault point delay_wait (fault_points.hpp): whether a WAIT about to be written now is held
    // back, the point firing now or a delay it drew before still running (next_deadline_ms()
    // wakes the transport at its end). Once the delay passed, the next call lets the WAIT go
    // without asking the point again. Without fault points, false.
    bool holds_wait(std::int64_t now) noexcept;
    fault_points* faults() const noexcept { return faults_; }
    // A lock request was written while accepts_requests(). Returns false when the in-flight
    // storage is full (the caller sized it: a bug).
    bool track(std::uint32_t owner, std::uint32_t tag, std::int64_t now) noexcept;
    // An ASKING was written (ready): its reply is the connection's own. Returns false when
    // the in-flight storage is full.
    bool track_asking(std::int64_t now) noexcept;
    // One reply (nodes as parse_reply gave them). Not to be called once closing.
    routed_reply on_reply(const reply_node* nodes, std::size_t count, std::int64_t now) noexcept;
    // The transport read bytes on this connection (a byte stream's transports call it with
    // each read; a reply handed to on_reply counts too).
    void on_bytes_received() noexcept { heard_ = true; }
    // The socket failed (read, write, connect, resolve): state closing. A plain connection
    // closed or reset before it received a byte is closed_before_reply (what a TLS-only
    // Redis port does to a client without TLS).
    void on_io_error(failure why, std::int64_t now) noexcept;
    // Connect and reply timeouts: state closing when one passed. A held WAIT's delay that
    // passed is over (holds_wait lets it go). The attempt's deadline
    // (connect_timeout_ms from start()) ends it with connect_timeout while connecting,
    // tls_handshake_timeout during the TLS handshake, and handshake_timeout once connected
    // (the node took the connection but did not answer the handshake); a late reply to a
    // request is command_timeout.
    void on_timer(std::int64_t now) noexcept;
    // The owner drops the connection (e.g. a new master was announced). reconnect_now skips
    // the reconnect delay.
    void close(failure why, std::int64_t now, bool reconnect_now = false) noexcept;
    // The socket is closed. Hands every lock request in flight to dropped(const in_flight&)
    // (their replies will never come), then goes idle.
    template <typename Dropped>
    connection_end on_closed(std::int64_t now, Dropped&& dropped) noexcept {
        while (count_ > 0) {
            const in_flight entry = pop();
            if (entry.owner != in_flight::internal) dropped(entry);
        }
        return finish_close(now);
    }
    // Skips the reconnect delay: the next start() connects at once (a new master was
    // announced, so the reason to wait has gone).
    void retry_now() noexcept;
    // A sentinel announced that `to` replaced `from` (a watch's master_switched:
    // switched_from(), switched_to()). A connection that reaches its master through the
    // sentinels and is on `from`, or not ready on any master, is closed with
    // transport_errc::master_changed; its next attempt goes to `to` itself (with the master's
    // credentials, and TLS as the sentinels speak it) and checks its ROLE, not to a sentinel,
    // which may not have heard of the switch yet and name the old master again. An idle one
    // skips its reconnect delay the same way. The announcement is used for one attempt, within
    // a connect timeout of it; an attempt that fails, or comes later, asks the sentinels. A
    // connection ready on `to`, or on a third master (the announcement is older than what its
    // sentinel told it), is left alone. Returns whether it closed the connection (the driver's
    // settle() then reports the end). The rule every client follows.
    bool follow_switch(const node_address& from, const node_address& to, std::int64_t now) noexcept;
    // Forgets the connection without reconnecting (the owner is closing): idle, no delay,
    // nothing in flight.
    void reset() noexcept;

    // When on_timer must run: the connect or oldest reply's deadline, the end of a held WAIT's
    // delay (holds_wait), or the end of the reconnect delay; no_deadline_ms when nothing is timed.
    std::int64_t next_deadline_ms() const noexcept;

private:
    std::int64_t state_deadline_ms() const noexcept;
    void push(const in_flight& entry) noexcept;
    in_flight pop() noexcept;
    const in_flight& front() const noexcept { return storage_[head_]; }
    void begin_closing(failure why, std::int64_t now) noexcept;
    transport_errc attempt_timeout() const noexcept;
    routed_reply on_handshake_reply(const in_flight& entry, const reply_node* nodes,
                                    std::size_t count, std::int64_t now) noexcept;
    routed_reply handshake_done(std::int64_t now) noexcept;
    void read_node_reply(handshake_step step, const reply_node* nodes, std::size_t count,
                         std::int64_t now) noexcept;
    void node_read() noexcept;
    routed_reply on_message(const reply_node* nodes, std::size_t count) noexcept;
    connection_end finish_close(std::int64_t now) noexcept;
    bool via_sentinels() const noexcept { return sentinel_count_ > 0; }
    bool announced_at(std::int64_t now) const noexcept {
        return to_announced_ && now <= announced_until_ms_;
    }
    // Connects to the node itself (or the master the sentinels name), not to a sentinel.
    bool reaches_master() const noexcept {
        return kind_ == connection_kind::lock_traffic || kind_ == connection_kind::subscriber;
    }

    connection_kind kind_ = connection_kind::lock_traffic;
    const node_address* node_address_ = nullptr;
    const node_address* sentinels_ = nullptr;
    std::size_t sentinel_count_ = 0;
    std::size_t sentinel_index_ = 0;
    std::size_t sentinels_tried_ = 0;  // failed in a row this round, before a reconnect delay
    fixed_text<master_name_bytes_max> master_name_;
    timing times_;
    reconnect_backoff backoff_;

    connection_state state_ = connection_state::idle;
    connection_state closing_from_ = connection_state::idle;
    const node_address* address_ = nullptr;
    node_address discovered_;     // Sentinel: the master named (credentials from setup)
    node_address switched_;       // watch: the master announced
    node_address switched_from_;  // watch: the master it replaced
    bool asking_sentinel_ = false;
    bool go_to_master_ = false;  // closing only to connect to the master just named
    // follow_switch: the next attempt, until announced_until_ms_, goes to announced_
    bool to_announced_ = false;
    bool announced_attempt_ = false;  // this attempt went to an announced master
    node_address announced_;
    std::int64_t announced_until_ms_ = 0;
    bool reconnect_now_ = false;
    bool answered_ = false;         // this connection answered a lock request (or a watch message)
    bool heard_ = false;            // this connection received any byte
    bool tls_handshaking_ = false;  // this attempt is in its TLS handshake
    std::int64_t attempt_deadline_ms_ = no_deadline_ms;
    failure closing_why_;
    failure last_error_;
    std::uint32_t attempts_finished_ = 0;

    bool read_node_ = false;
    bool refuse_evicting_ = false;
    bool refuse_replica_ = false;
    node_facts node_;
    std::int64_t node_read_ms_ = 0;  // when INFO's answer came
    node_start started_;
    fixed_text<host_bytes_max> last_host_;  // where node_ was last read: host, port, run_id
    std::uint16_t last_port_ = 0;
    fixed_text<run_id_bytes> last_run_id_;
    bool last_durable_ = false;                    // that process ran AOF appendfsync always
    std::int64_t last_started_ms_ = 0;             // the start told for it
    std::int64_t start_floor_ms_ = -now_ms_limit;  // it counts from here at the earliest

    fault_points* faults_ = nullptr;
    // holds_wait: a WAIT is held back until wait_held_until_ms_, or that passed (over) and the
    // next WAIT, the held one, goes without the point being asked again.
    enum class wait_hold : std::uint8_t { none, held, over };
    wait_hold wait_hold_ = wait_hold::none;
    std::int64_t wait_held_until_ms_ = 0;

    in_flight* storage_ = nullptr;
    std::size_t capacity_ = 0;
    std::size_t head_ = 0;
    std::size_t count_ = 0;
};

}  // namespace edgelock::session
