// SPDX-License-Identifier: Apache-2.0
// edgelock session: one connection's drive loop, written once for every client.
//
// A client keeps one driver per connection it holds: per Redis instance, and for the
// subscriber of fair locks' wake-ups and the watch of a Sentinel's announcements. The driver
// owns the connection's state (connection.hpp: where to connect, the handshake, the sentinel
// step, timeouts and reconnect delays) and makes every decision after each input:
//
//   settle(now, wanted)  after every input: a connection given up is closed and its
//                        end reported, a connection that became ready is reported, an idle
//                        one is opened again when wanted and the reconnect delay allows (at
//                        once for the next sentinel of a round); returns when to look again
//   on_connected(...)    the socket is up (and secured): the handshake to send
//   on_bytes(...)        bytes read: every complete reply is routed, answers, the node read,
//                        pushed messages and master switches handed to the client's events
//                        (under simulation, a fault point may fail the connection after an
//                        answer: fault_points.hpp)
//   on_io_error / on_timer / close   the connection failed, a deadline passed, or the client
//                        drops it: settle() then closes it
//
// What a client supplies is two small hook sets, the way hiredis's event-loop adapters plug
// into its context:
//   connection_io      the socket: open it to an address, close it (the I/O the driver cannot
//                      do; the outcome of an open comes back as on_connected or on_io_error,
//                      at once for a blocking client, later for an asynchronous one)
//   connection_events  what the connection delivers: answers, the node read, pushed
//                      messages, readiness, requests given up, and its end (with whether the
//                      locks on it must hear it: lock_traffic.hpp's lock_hears_close)
// Writing lock requests stays with lock_traffic.hpp's write_requests over connection().
//
// The driver allocates nothing: the in-flight storage is the caller's (connection_setup).
//
// Codes: setup() returns one. The inputs return none: what goes wrong on a connection (a
// refused handshake, bytes that are not RESP, a timeout, a socket error) becomes the connection's
// failure (connection().last_error()), and settle() reports it as events.ended after closing.
#pragma once

#include <cstddef>
#include <cstdint>

#include "edgelock/lock.hpp"
#include "edgelock/resp_reader.hpp"
#include "edgelock/session/connection.hpp"

namespace edgelock::session {

// The socket side of a connection.
class connection_io {
public:
    // Resolve and connect to `to`, with TLS when to.tls; report with on_connected (after
    // on_tls_handshake for TLS) or on_io_error, now or later. May fail at once by calling
    // on_io_error before returning.
    virtual void open(const node_address& to) { (void)to; }
    // Drop the socket now: nothing of that connection reaches the driver any more.
    virtual void close() {}
    // The client cannot act now (a stopped or paused process): settle() does nothing more.
    virtual bool suspended() const { return false; }

protected:
    ~connection_io() = default;
};

// What a connection delivers to the client.
class connection_events {
public:
    // The answer to a request the client tracked as `entry`: nodes[0..count) are the reply.
    virtual void answered(const in_flight& entry, const reply_node* nodes, std::size_t count) {
        (void)entry;
        (void)nodes;
        (void)count;
    }
    // A subscriber's published message, or a watch's master switch (connection().switched_to()).
    virtual void pushed(routed_reply::kind what, const reply_node* nodes, std::size_t count) {
        (void)what;
        (void)nodes;
        (void)count;
    }
    // read_node: the handshake read the node (connection().node(), connection().started()); lock
    // requests are written on the connection only after this returns.
    virtual void node_read() {}
    // The handshake is done: requests may be written.
    virtual void became_ready() {}
    // A request tracked by the client will never be answered: its connection ended.
    virtual void dropped(const in_flight& entry) { (void)entry; }
    // The connection (or an attempt) ended. lock_hears: the locks on it must hear of it
    // (lock_traffic.hpp's hear_close); false when the connection only moved on (to the master a
    // sentinel named, or to the next sentinel) with nothing of theirs on it.
    virtual void ended(const connection_end& closed, bool lock_hears) {
        (void)closed;
        (void)lock_hears;
    }

protected:
    ~connection_events() = default;
};

class connection_driver {
public:
    // Sets up the connection and the hooks, kept by pointer: they must outlive the driver.
    // Returns ok, or invalid_config when the setup's kind is sentinel (a step, not a kind of
    // connection), it names no node (or a watch without sentinels), more than sentinels_max
    // sentinels or sentinels without a master name, no master credentials for a node found
    // through sentinels, in-flight storage below handshake_steps_max, timing that
    // check_timing() refuses (reconnect.hpp), or a master name over its limit. On
    // invalid_config the driver is not usable.
    errc setup(const connection_setup& s, connection_io& io, connection_events& events) noexcept;

    const session::connection& connection() const noexcept { return connection_; }
    session::connection& connection() noexcept { return connection_; }

    // After every input and whenever the client's wish for a connection changed: closes a
    // connection it gave up (io.close(), then events.dropped for each request in
    // flight and events.ended), reports readiness once per connection (events.became_ready), and
    // opens an idle connection when `wanted` and the reconnect delay allows, moving on at
    // once to the next sentinel of a round or to the master a sentinel named.
    // Returns when the client must look again (on_timer): the connection's connect, handshake or
    // reply deadline, the end of the reconnect delay when idle and wanted, or no_deadline_ms.
    std::int64_t settle(std::int64_t now, bool wanted) noexcept;

    // rediss://: the socket is connected and its TLS handshake began.
    void on_tls_handshake() noexcept { connection_.on_tls_handshake(); }
    // The socket is up (and secured): writes the handshake into out[0..capacity).
    // Returns its size, or 0 when it does not fit (the connection is then closing with
    // invalid_config, which settle() reports).
    std::size_t on_connected(std::int64_t now, char* out, std::size_t capacity) noexcept;
    // Bytes read on the connection: routes every complete reply in data[0..size), parsed into
    // nodes[0..nodes_max). Stops early when a delivery closed or replaced the connection.
    // Returns the bytes consumed (the rest is an incomplete reply, to be offered again with
    // what follows). A stream that is not RESP closes the connection with the parser's code
    // (protocol_error, reply_too_large, too_many_elements or too_deep), which settle()
    // reports.
    std::size_t on_bytes(const char* data, std::size_t size, reply_node* nodes,
                         std::size_t nodes_max, std::int64_t now) noexcept;
    // The socket failed (resolve, connect, read, write): the connection closes with `why`
    // (connection::on_io_error), and the next settle() reports it.
    void on_io_error(failure why, std::int64_t now) noexcept { connection_.on_io_error(why, now); }
    // A deadline settle() returned came: a connect, handshake or reply that took too long
    // closes the connection with its timeout code (connection::on_timer).
    void on_timer(std::int64_t now) noexcept { connection_.on_timer(now); }
    // The client drops the connection (a new master was announced: reconnect_now).
    void close(failure why, std::int64_t now, bool reconnect_now = false) noexcept;
    // Forgets the connection, reconnecting never by itself: the client stops it.
    void stop() noexcept;
    // Counts the connections closed: a delivery that closed or replaced one shows here.
    std::uint32_t connections_closed() const noexcept { return closed_count_; }

private:
    bool close_if_closing(std::int64_t now) noexcept;
    bool reading() const noexcept;
    void deliver(const routed_reply& routed, const reply_node* nodes, std::size_t count) noexcept;

    session::connection connection_;
    connection_io* io_ = nullptr;
    connection_events* events_ = nullptr;
    bool ready_reported_ = false;
    std::uint32_t closed_count_ = 0;
};

}  // namespace edgelock::session
