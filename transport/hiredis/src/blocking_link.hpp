// SPDX-License-Identifier: Apache-2.0
// One connection of the blocking client: a session::server_link over a socket that hiredis
// connects (name lookup, connect timeout, TCP keepalive), with TLS on it for a rediss://
// address (tls_channel). Everything after the connect (the handshake, the Sentinel step,
// reply routing, timeouts, reconnect delays) is the link's; this class moves the bytes,
// blocking, with poll(2) and the link's deadlines.
#pragma once

#include <hiredis/hiredis.h>
#include <poll.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

#include "edgelock/limits.hpp"
#include "edgelock/session/server_link.hpp"
#include "edgelock/tls_context.hpp"
#include "tls_channel.hpp"

namespace edgelock::hiredis {

class blocking_link {
public:
    blocking_link() = default;
    ~blocking_link() { close_socket(); }
    blocking_link(const blocking_link&) = delete;
    blocking_link& operator=(const blocking_link&) = delete;

    // Sizes the read buffer (the only allocation) and sets up the link (storage is ours).
    // `tls` (kept, not owned) makes the connections to rediss:// addresses; null when the
    // client has none. Returns invalid_config for a setup the link refuses.
    errc setup(session::link_setup setup, const tls_context* tls = nullptr);

    const session::server_link& link() const noexcept { return link_; }
    session::server_link& link() noexcept { return link_; }
    bool ready() const noexcept { return link_.ready(); }
    // Something is owed to us: replies, or the rest of a TLS handshake (poll() it, with
    // events(), and receive(); timed_out() ends either).
    bool busy() const noexcept { return link_.requests_in_flight() > 0 || tls_.handshaking(); }
    int fd() const noexcept { return context_ != nullptr ? context_->fd : -1; }
    short events() const noexcept { return tls_.handshaking() ? tls_.wanted_events() : POLLIN; }
    // Bytes already read (and decrypted) that poll(2) on fd() cannot see: receive() at once.
    bool has_buffered() const noexcept { return tls_.buffered() > 0; }

    // Lock requests may be written now (ready, or pipelined behind the server's handshake).
    bool accepts_requests() const noexcept { return link_.accepts_requests(); }
    // Starts a connection when none is up and the reconnect delay allows: connects (blocking,
    // at most the connect timeout: a TCP connect, no round trip to Redis) and writes the
    // handshake, whose replies come through receive() like any other. For rediss:// the TLS
    // handshake comes first, through receive() too (busy() while it lasts). Returns true
    // when the link now connects (TLS, or handshaking); otherwise link().last_error() says why.
    bool start_connect(std::int64_t now);
    // Writes one lock request (tracked under `tag`); false when the connection failed
    // (link closing: call finish()).
    bool send(const char* bytes, std::size_t size, std::uint32_t tag, std::int64_t now);
    // Writes bytes the caller tracked on link() already; false when the connection failed
    // (link closing: call finish()).
    bool write_all(const char* bytes, std::size_t size, std::int64_t now);
    // Takes a TLS handshake a step further, or reads what the socket has and hands each answer to on_answer(const in_flight&, const
    // reply_node&), and the node's start (read_node) to on_started(const node_start&) at the
    // end of the handshake. Stops when the link closes (call finish()).
    template <typename OnAnswer, typename OnStarted>
    void receive(std::int64_t now, OnAnswer&& on_answer, OnStarted&& on_started) {
        receive(now, on_answer, on_started, [](const session::link_reply&, const reply_node*, std::size_t) {});
    }
    // The same for a link that does not read its node (no read_node).
    template <typename OnAnswer>
    void receive(std::int64_t now, OnAnswer&& on_answer) {
        receive(now, on_answer, [](const node_start&) {});
    }
    // The same with on_push(const link_reply&, const reply_node* nodes, std::size_t count) for
    // what a subscriber link delivers unasked: each message. (The answer to its SUBSCRIBE
    // goes to on_answer, whose node is the first of the reply's nodes, in order.)
    template <typename OnAnswer, typename OnStarted, typename OnPush>
    void receive(std::int64_t now, OnAnswer&& on_answer, OnStarted&& on_started, OnPush&& on_push);
    // Skips the reconnect delay (a user call wants a fresh try).
    void retry_now() noexcept { link_.retry_now(); }
    // A reply took longer than the command timeout: true, with the link closing.
    bool timed_out(std::int64_t now) {
        link_.on_timer(now);
        return link_.state() == session::link_state::closing;
    }
    // The server closed an idle connection (a restart): true, with the link closing.
    bool closed_while_idle(std::int64_t now);
    // Ends the connection the link gave up (state closing): closes the socket. `dropped`
    // counts the lock requests that were in flight on it.
    session::link_closed finish(std::int64_t now, std::size_t& dropped);

private:
    void start_tls(const session::server_address& to, std::int64_t now);
    void continue_tls(std::int64_t now);
    void say_hello(std::int64_t now);
    ssize_t send_bytes(const char* bytes, std::size_t size, failure& why);
    ssize_t receive_bytes(char* bytes, std::size_t size, failure& why);
    bool read_some(std::int64_t now);
    // Hands every complete reply in the buffer to the link; answers go to on_answer.
    template <typename OnAnswer, typename OnStarted, typename OnPush>
    void route(std::int64_t now, OnAnswer&& on_answer, OnStarted&& on_started, OnPush&& on_push);
    void close_socket() noexcept;

    session::server_link link_;
    std::array<session::in_flight, session::handshake_steps_max + requests_per_instance_max> in_flight_{};
    redisContext* context_ = nullptr;
    const tls_context* tls_context_ = nullptr;
    tls_channel tls_;
    std::unique_ptr<char[]> read_buffer_;
    std::size_t read_size_ = 0;
    std::array<reply_node, nodes_max> nodes_{};
};

template <typename OnAnswer, typename OnStarted, typename OnPush>
void blocking_link::receive(std::int64_t now, OnAnswer&& on_answer, OnStarted&& on_started, OnPush&& on_push) {
    if (tls_.handshaking()) return continue_tls(now);
    if (read_some(now)) route(now, on_answer, on_started, on_push);
}

template <typename OnAnswer, typename OnStarted, typename OnPush>
void blocking_link::route(std::int64_t now, OnAnswer&& on_answer, OnStarted&& on_started, OnPush&& on_push) {
    std::size_t offset = 0;
    while (link_.state() == session::link_state::handshaking || link_.ready()) {
        const parse_result parsed = parse_reply(read_buffer_.get() + offset, read_size_ - offset, nodes_.data(), nodes_.size());
        if (parsed.code == errc::need_more) break;
        if (parsed.code != errc::ok) {
            link_.on_io_error(failure::of(parsed.code), now);
            break;
        }
        offset += parsed.consumed;
        const session::link_reply routed = link_.on_reply(nodes_.data(), parsed.nodes, now);
        if (routed.what == session::link_reply::kind::answer) on_answer(routed.entry, nodes_[0]);
        if (routed.what == session::link_reply::kind::node_started) on_started(link_.started());
        if (routed.what == session::link_reply::kind::message) on_push(routed, nodes_.data(), parsed.nodes);
    }
    std::memmove(read_buffer_.get(), read_buffer_.get() + offset, read_size_ - offset);
    read_size_ -= offset;
}

}  // namespace edgelock::hiredis
