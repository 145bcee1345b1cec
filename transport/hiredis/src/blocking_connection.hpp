// SPDX-License-Identifier: Apache-2.0
// One connection of the blocking client: the blocking adapter of a session::connection_driver,
// over a socket that hiredis connects (name lookup, connect timeout, TCP keepalive), with TLS
// on it for a rediss:// address (tls_channel). Everything after the connect (the handshake,
// the Sentinel step, reply routing, timeouts, reconnect delays, what a closed connection
// means) is the driver's, which hands what the connection delivers to the caller's
// session::connection_events; this class moves the bytes, blocking, with poll(2) and the
// driver's deadlines.
#pragma once

#include <hiredis/hiredis.h>
#include <poll.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>

#include "edgelock/limits.hpp"
#include "edgelock/session/connection_driver.hpp"
#include "edgelock/tls_context.hpp"
#include "tls_channel.hpp"

namespace edgelock::blocking {

class blocking_connection final : public session::connection_io {
public:
    blocking_connection() = default;
    ~blocking_connection() { close_socket(); }
    blocking_connection(const blocking_connection&) = delete;
    blocking_connection& operator=(const blocking_connection&) = delete;

    // Sizes the read buffer (the only allocation, made by the first setup) and sets up the
    // driver (storage is ours), whose deliveries go to `events` (kept, not owned). An idle
    // connection may be set up again, for another node. `tls` (kept, not owned) makes the
    // connections to rediss:// addresses; null when the client has none. Returns
    // invalid_config for a setup the connection refuses.
    // `reply_nodes`: the nodes a reply is parsed into (a cluster link's CLUSTER SLOTS needs
    // session::cluster_reply_nodes_max), allocated by the first setup.
    errc setup(session::connection_setup setup, session::connection_events& events,
               const tls_context* tls = nullptr, std::size_t reply_nodes = nodes_max);

    const session::connection& connection() const noexcept { return driver_.connection(); }
    session::connection& connection() noexcept { return driver_.connection(); }
    bool ready() const noexcept { return connection().ready(); }
    // Something is owed to us: replies, or the rest of a TLS handshake (poll() it, with
    // events(), and receive(); timed_out() ends either).
    bool busy() const noexcept {
        return connection().requests_in_flight() > 0 || tls_.handshaking();
    }
    int fd() const noexcept { return context_ != nullptr ? context_->fd : -1; }
    short events() const noexcept { return tls_.handshaking() ? tls_.wanted_events() : POLLIN; }
    // Bytes already read (and decrypted) that poll(2) on fd() cannot see: receive() at once.
    bool has_buffered() const noexcept { return tls_.buffered() > 0; }

    // Closes the connection, carrying nothing, without telling the events (a link pruned).
    void stop() noexcept { driver_.stop(); }
    // session::connection_driver::settle: a connection given up is closed and its end
    // told to the events; when `wanted`, an idle one is connected if the reconnect delay
    // allows (blocking, at most the connect timeout per attempt: a TCP connect, no round trip
    // to Redis; the next sentinel at once), its handshake written, its replies to come
    // through receive(). With `unlocked`, that mutex is released during each connect.
    void settle(std::int64_t now, bool wanted, std::unique_lock<std::mutex>* unlocked = nullptr);
    // Writes one request (tracked under `tag`); false when the connection failed (settle()).
    bool send(const char* bytes, std::size_t size, std::uint32_t tag, std::int64_t now);
    // Writes bytes the caller tracked on connection() already; false when the connection failed.
    bool write_all(const char* bytes, std::size_t size, std::int64_t now);
    // Takes a TLS handshake a step further, or reads what the socket has and hands every
    // complete reply to the driver, which delivers it to the events. Stops when the connection
    // closes (settle()).
    void receive(std::int64_t now);
    // A reply took longer than the command timeout: true, with the connection closing.
    bool timed_out(std::int64_t now) {
        driver_.on_timer(now);
        return connection().state() == session::connection_state::closing;
    }
    // The node closed an idle connection (a restart): true, with the connection closing. Not
    // asked of one that answered within the last few milliseconds.
    bool closed_while_idle(std::int64_t now);

private:
    // session::connection_io
    void open(const session::node_address& to) override;
    void close() override { close_socket(); }

    void start_tls(const session::node_address& to, std::int64_t now);
    void continue_tls(std::int64_t now);
    void say_hello(std::int64_t now);
    ssize_t send_bytes(const char* bytes, std::size_t size, failure& why);
    ssize_t receive_bytes(char* bytes, std::size_t size, failure& why);
    bool read_some(std::int64_t now);
    void close_socket() noexcept;

    session::connection_driver driver_;
    // The handshake, every request a lock can have out with an ASKING before each (Redis
    // Cluster, session/lock_traffic.hpp), and a read of the cluster's slot map.
    std::array<session::in_flight, session::handshake_steps_max + 2 * requests_per_instance_max + 1>
        in_flight_{};
    std::unique_lock<std::mutex>* unlocked_ = nullptr;
    redisContext* context_ = nullptr;
    const tls_context* tls_context_ = nullptr;
    tls_channel tls_;
    std::unique_ptr<char[]> read_buffer_;
    std::size_t read_size_ = 0;
    static constexpr std::int64_t never_answered = INT64_MIN / 2;
    std::int64_t answered_ms_ = never_answered;  // when the connection last consumed a reply
    std::unique_ptr<reply_node[]> nodes_;
    std::size_t nodes_capacity_ = 0;
};

}  // namespace edgelock::blocking
