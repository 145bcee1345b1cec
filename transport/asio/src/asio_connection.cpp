// SPDX-License-Identifier: Apache-2.0
// One socket carrying one session connection: resolve, connect, TLS, bytes in and out, one timer.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/ssl.h>

#include <asio/connect.hpp>
#include <asio/ssl/error.hpp>
#include <asio/write.hpp>

#include <algorithm>
#include <cstring>
#include <utility>

#include "client_impl.hpp"
#include "handler_memory.hpp"

namespace edgelock::async::detail {

asio_connection::asio_connection(client_impl& owner, asio::io_context& io, std::uint8_t index,
                                 connection_role role)
    : owner_(owner), index_(index), role_(role), io_(io), resolver_(io), timer_(io) {}

errc asio_connection::init(session::connection_setup setup, std::size_t lock_requests_max,
                           std::size_t buffer_bytes, std::size_t waiters_max) {
    const std::size_t capacity = lock_requests_max + session::handshake_steps_max;
    in_flight_.reset(new session::in_flight[capacity]);
    setup.in_flight_storage = in_flight_.get();
    setup.in_flight_capacity = capacity;
    if (driver_.setup(setup, *this, *this) != errc::ok) return errc::invalid_config;
    waiters_.init(std::max<std::size_t>(waiters_max, 1));
    buffer_bytes_ = buffer_bytes;
    read_capacity_ = reply_bytes_max + buffer_bytes;
    bytes_ = std::make_shared<io_bytes>();
    bytes_->read.reset(new char[read_capacity_]);
    for (auto& buffer : bytes_->writes) buffer.reset(new char[buffer_bytes]);
    return errc::ok;
}

std::string asio_connection::address() const {
    if (connection().state() == session::connection_state::idle &&
        connection().attempts_finished() == 0)
        return {};
    return std::string(session::format_address(connection().address()).view());
}

void asio_connection::start() {
    stopped_ = false;
    settle();
}

void asio_connection::stop() {
    stopped_ = true;
    driver_.stop();
    waiters_.clear();
}

// close(): the requests written on this connection (a fair waiter's leaving release among
// them) are answered, or the command timeout drops it, before it closes. Nothing of it reaches
// the client any more: not its replies, its end, nor a reconnect. A connection not ready
// takes nothing: it closes at once.
void asio_connection::linger() {
    role_ = connection_role::leaving;
    waiters_.clear();
    flush();
    settle();
}

void asio_connection::follow_switch(const node_address& from, const node_address& to) {
    connection().follow_switch(from, to, now_ms());
    settle();
}

void asio_connection::move_on() {
    if (connection().state() != session::connection_state::idle) {
        connection().close(failure::of(transport_errc::master_changed), now_ms(), true);
    } else {
        connection().retry_now();  // a delay earned at the old node does not hold for the new
    }
    settle();
}

void asio_connection::close_socket() noexcept {
    epoch_ = owner_.next_epoch();
    timer_epoch_ = owner_.next_epoch();
    timer_ms_ = no_deadline_ms;
    resolver_.cancel();
    release_socket();
    timer_.cancel();
    read_size_ = 0;
    pending_size_ = 0;
    writing_ = false;
    write_error_.clear();
}

// Asio 1.22's io_uring backend frees a closed socket's record at once, with its cancelled
// operation still queued in it; the next socket made takes the record, and the old operation
// is armed again on the descriptor number it names, the new socket's (it then takes the new
// connection's first reply, which its handler drops). So on io_uring a socket is closed only
// when the last handler of its operations has gone (each holds the socket, as a TLS stream's
// handlers hold the stream): now its operations are cancelled and its peer told (shutdown).
// Under epoll it is closed now.
void asio_connection::release_socket() noexcept {
    asio::ip::tcp::socket* open = tls_ ? &tls_->next_layer() : socket_.get();
    if (open != nullptr) {
        std::error_code ignored;
#if defined(ASIO_HAS_IO_URING_AS_DEFAULT)
        open->shutdown(asio::socket_base::shutdown_both, ignored);
        open->cancel(ignored);
#else
        open->close(ignored);
#endif
    }
    socket_.reset();
    tls_.reset();
}

// After every input to the connection: the driver closes what it closed, reports what changed and
// connects again when it may; the timer is re-armed for its next deadline.
void asio_connection::settle() {
    if (stopped_) return;
    if (role_ == connection_role::leaving) return settle_leaving();
    const bool wanted = role_ == connection_role::subscriber
                            ? owner_.subscriber_wanted()
                            : session::opens_by_itself(client_impl::linking);
    const std::int64_t wake_ms = driver_.settle(now_ms(), wanted);
    if (!stopped_) arm_timer(wake_ms);  // an end's handlers may have stopped this socket
}

void asio_connection::open(const node_address& to) { connect_to(to); }

void asio_connection::close() { close_socket(); }

void asio_connection::became_ready() {
    owner_.on_attempt_finished();
    if (role_ == connection_role::instance) owner_.on_connection_ready(index_);
}

void asio_connection::dropped(const session::in_flight& entry) {
    if (role_ == connection_role::instance) owner_.on_request_dropped(index_, entry.owner);
}

void asio_connection::ended(const session::connection_end& closed, bool lock_hears) {
    owner_.on_attempt_finished();
    if (role_ == connection_role::instance) owner_.on_link_ended(index_, closed);
    if (role_ == connection_role::instance && lock_hears) {
        waiters_.clear();
        owner_.on_connection_down(index_);  // runs handlers: this socket may be stopped after
    }
    // No lock hears of it: a lost subscription only delays (the locks re-check by themselves).
    if (role_ == connection_role::subscriber) owner_.on_subscriber_down();
}

// Replies on a lingering connection reach nobody: the client has moved on.
void asio_connection::answered(const session::in_flight& entry, const reply_node* nodes,
                               std::size_t count) {
    if (role_ == connection_role::subscriber) owner_.on_subscription_answer(entry, nodes, count);
    if (role_ != connection_role::instance) return;
    if (entry.owner == client_impl::map_read_owner)
        return owner_.on_map_answer(index_, nodes, count);
    owner_.on_lock_reply(index_, entry, nodes[0]);
}

void asio_connection::pushed(session::routed_reply::kind what, const reply_node* nodes,
                             std::size_t count) {
    if (role_ == connection_role::leaving) return;
    if (what == session::routed_reply::kind::message) owner_.on_wake_message(nodes, count);
    if (what == session::routed_reply::kind::master_switched)
        owner_.on_switch_master(connection().switched_from(), connection().switched_to());
}

void asio_connection::node_read() {
    if (role_ == connection_role::instance)
        owner_.on_node_read(index_, connection().node(), connection().started());
}

// A lingering connection ends once nothing is in flight, or when the connection gave up on it (a
// reply overdue by the command timeout, an error): the bound is the last request's timeout.
void asio_connection::settle_leaving() {
    const bool answered = connection().ready() && connection().requests_in_flight() == 0;
    if (!connection().ready() || answered) return stop();
    arm_timer(connection().next_deadline_ms());
}

void asio_connection::connect_to(const node_address& to) {
    // A fresh epoch per attempt: handlers of an earlier socket at this index (one closed and
    // replaced by open()) can never pass for this one's.
    epoch_ = owner_.next_epoch();
    socket_ = std::make_shared<asio::ip::tcp::socket>(io_);  // this attempt's, held by its handlers
    auto self = owner_.self();
    const std::uint8_t i = index_;
    const std::uint32_t epoch = epoch_;
    const std::string host(to.host.view());
    std::error_code ec;
    const asio::ip::address address = asio::ip::make_address(host, ec);
    if (!ec) {
        socket_->async_connect(asio::ip::tcp::endpoint(address, to.port),
                               [self, i, epoch, plain = socket_](std::error_code result) {
                                   if (asio_connection* s = self->connection_at(i))
                                       s->on_connected(epoch, result);
                               });
        return;
    }
    resolver_.async_resolve(host, std::to_string(to.port),
                            [self, i, epoch](std::error_code result,
                                             const asio::ip::tcp::resolver::results_type& found) {
                                if (asio_connection* s = self->connection_at(i))
                                    s->on_resolved(epoch, result, found);
                            });
}

void asio_connection::on_resolved(std::uint32_t epoch, std::error_code ec,
                                  const asio::ip::tcp::resolver::results_type& results) {
    if (epoch != epoch_) return;
    client_impl::dispatch_scope scope(owner_);
    if (ec) return fail(ec);
    auto self = owner_.self();
    const std::uint8_t i = index_;
    // The next address is tried only while this attempt is current: a dropped one's socket
    // stays open on io_uring until its handler has run (release_socket()), and Asio's range
    // connect stops by itself only on a closed socket.
    const auto current = [self, i, epoch](const std::error_code&, const asio::ip::tcp::endpoint&) {
        return self->connection_at(i, epoch) != nullptr;
    };
    asio::async_connect(
        *socket_, results, current,
        [self, i, epoch, plain = socket_](std::error_code result, const asio::ip::tcp::endpoint&) {
            if (asio_connection* s = self->connection_at(i)) s->on_connected(epoch, result);
        });
}

void asio_connection::on_connected(std::uint32_t epoch, std::error_code ec) {
    if (epoch != epoch_) return;
    client_impl::dispatch_scope scope(owner_);
    if (ec) return fail(ec);
    set_socket_options();
    if (connection().address().tls) return start_tls(epoch);
    start_session();
}

// The TLS handshake, within the attempt's connect deadline (the connection's timer).
void asio_connection::start_tls(std::uint32_t epoch) {
    ssl_st* ssl = owner_.tls().new_connection(connection().address().host.view());
    if (ssl == nullptr) return fail(make_error_code(transport_errc::tls_handshake_failed));
    tls_ = std::make_shared<tls_stream>(std::move(*socket_), ssl);
    socket_.reset();  // the stream owns the connected socket now
    // Buffers kept for the connection's life: no allocation per record (Asio's stream asks
    // OpenSSL to release them between records).
    SSL_clear_mode(ssl, SSL_MODE_RELEASE_BUFFERS);
    driver_.on_tls_handshake();
    auto self = owner_.self();
    const std::uint8_t i = index_;
    tls_->async_handshake(
        asio::ssl::stream_base::client,
        with_handler_memory([self, i, epoch, keep = tls_](std::error_code result) {
            if (asio_connection* s = self->connection_at(i)) s->on_tls_handshake(epoch, result);
        }));
    settle();
}

void asio_connection::on_tls_handshake(std::uint32_t epoch, std::error_code ec) {
    if (epoch != epoch_) return;
    client_impl::dispatch_scope scope(owner_);
    if (ec) return fail(ec);
    start_session();
}

// Connected (and secured): the connection's handshake goes out first.
void asio_connection::start_session() {
    pending_size_ += driver_.on_connected(now_ms(), cursor(), room());
    if (connection().state() == session::connection_state::handshaking) start_read();
    settle();
}

void asio_connection::set_socket_options() {
    const client_config& config = owner_.config();
    std::error_code ignored;
    asio::ip::tcp::socket& socket = *socket_;
    socket.set_option(asio::ip::tcp::no_delay(true), ignored);
    if (config.keepalive) {
        using keep_idle = asio::detail::socket_option::integer<IPPROTO_TCP, TCP_KEEPIDLE>;
        using keep_interval = asio::detail::socket_option::integer<IPPROTO_TCP, TCP_KEEPINTVL>;
        using keep_count = asio::detail::socket_option::integer<IPPROTO_TCP, TCP_KEEPCNT>;
        socket.set_option(asio::socket_base::keep_alive(true), ignored);
        socket.set_option(keep_idle(static_cast<int>(config.keepalive_idle_s)), ignored);
        socket.set_option(keep_interval(static_cast<int>(config.keepalive_interval_s)), ignored);
        socket.set_option(keep_count(config.keepalive_probes), ignored);
    }
    // Writes are tried synchronously first; a full socket buffer falls back to async_write.
    socket.non_blocking(true, ignored);
}

bool asio_connection::commit(std::size_t size) noexcept {
    EDGELOCK_ASSERT(size <= room());
    pending_size_ += size;
    arm_timer(connection().next_deadline_ms());
    return true;  // written later, by flush(): a failure closes the connection then
}

void asio_connection::flush() noexcept {
    if (writing_ || pending_size_ == 0) return;
    const session::connection_state state = connection().state();
    if (state != session::connection_state::handshaking &&
        state != session::connection_state::ready)
        return;
    char* data = bytes_->writes[pending_].get();
    std::error_code ec;
    // Over TLS every write is asynchronous: the stream encrypts and writes in one operation.
    std::size_t written = tls_ ? 0 : socket_->write_some(asio::buffer(data, pending_size_), ec);
    if (ec == asio::error::would_block || ec == asio::error::try_again) {
        ec.clear();
        written = 0;
    }
    if (ec) {
        // Reported through the read side, which fails at once on a shut-down socket: the
        // failure is then handled inside a completion, never inside the caller's call.
        write_error_ = ec;
        pending_size_ = 0;
        std::error_code ignored;
        socket_->shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
        return;
    }
    if (written == pending_size_) {
        pending_size_ = 0;
        return;
    }
    const std::size_t remaining = pending_size_ - written;
    pending_ = 1 - pending_;
    pending_size_ = 0;
    writing_ = true;
    auto self = owner_.self();
    const std::uint8_t i = index_;
    const std::uint32_t epoch = epoch_;
    auto on_written = with_handler_memory([self, i, epoch, tls = tls_, plain = socket_,
                                           bytes = bytes_](std::error_code result, std::size_t) {
        if (asio_connection* s = self->connection_at(i, epoch)) s->on_write(epoch, result);
    });
    const asio::const_buffer rest(data + written, remaining);
    if (tls_) {
        asio::async_write(*tls_, rest, std::move(on_written));
    } else {
        asio::async_write(*socket_, rest, std::move(on_written));
    }
}

void asio_connection::on_write(std::uint32_t epoch, std::error_code ec) {
    if (epoch != epoch_) return;
    client_impl::dispatch_scope scope(owner_);
    writing_ = false;
    if (ec && tls_) {
        // A TLS server that refuses this client (no certificate, or one it does not trust)
        // sends its alert and resets: the write may see the reset before the read sees the
        // alert, which says why. The read, always pending, ends the connection.
        write_error_ = ec;
        std::error_code ignored;
        tls_->next_layer().shutdown(asio::socket_base::shutdown_send, ignored);
    } else if (ec) {
        fail(ec);
    } else if (role_ == connection_role::leaving) {
        flush();  // the client's dispatch only flushes its current sockets
    }
    // Otherwise the scope's end sends what accumulated meanwhile and wakes waiting locks.
}

void asio_connection::start_read() {
    EDGELOCK_ASSERT(read_size_ < read_capacity_);
    auto self = owner_.self();
    const std::uint8_t i = index_;
    const std::uint32_t epoch = epoch_;
    auto on_read = with_handler_memory([self, i, epoch, tls = tls_, plain = socket_,
                                        bytes = bytes_](std::error_code result, std::size_t size) {
        if (asio_connection* s = self->connection_at(i, epoch)) s->on_read(epoch, result, size);
    });
    const asio::mutable_buffer room(read_buffer() + read_size_, read_capacity_ - read_size_);
    if (tls_) {
        tls_->async_read_some(room, std::move(on_read));
    } else {
        socket_->async_read_some(room, std::move(on_read));
    }
}

void asio_connection::on_read(std::uint32_t epoch, std::error_code ec, std::size_t size) {
    if (epoch != epoch_) return;
    client_impl::dispatch_scope scope(owner_);
    if (ec) {
        const bool tls_said_why = tls_ && ec.category() == asio::error::get_ssl_category();
        return fail(write_error_ && !tls_said_why ? write_error_ : ec);
    }
    read_size_ += size;
    if (!route_replies(epoch)) return;  // the socket was dropped meanwhile
    const session::connection_state state = connection().state();
    const bool reading = state == session::connection_state::handshaking ||
                         state == session::connection_state::ready;
    settle();
    if (reading && epoch == epoch_) start_read();
}

// Hands each complete reply to the driver, which routes it. Returns false when the socket was
// dropped while doing so (a handler closed the client).
bool asio_connection::route_replies(std::uint32_t epoch) {
    // The driver's clock for this read (its handshake and close times); each lock reads the
    // clock again when its reply reaches it, after the handlers before it ran.
    const std::size_t consumed = driver_.on_bytes(read_buffer(), read_size_, owner_.nodes(),
                                                  owner_.nodes_capacity(), now_ms());
    if (epoch != epoch_) return false;
    if (consumed > 0) {
        std::memmove(read_buffer(), read_buffer() + consumed, read_size_ - consumed);
        read_size_ -= consumed;
    }
    return true;
}

// The timer is only ever moved earlier: an early firing just re-arms for the connection's next
// deadline. Replies thus cost no timer operation.
void asio_connection::arm_timer(std::int64_t deadline_ms) {
    if (deadline_ms >= timer_ms_) return;
    timer_ms_ = deadline_ms;
    timer_epoch_ = owner_.next_epoch();
    timer_.expires_at(
        std::chrono::steady_clock::time_point(std::chrono::milliseconds(deadline_ms)));
    auto self = owner_.self();
    const std::uint8_t i = index_;
    const std::uint32_t timer_epoch = timer_epoch_;
    timer_.async_wait(with_handler_memory([self, i, timer_epoch](std::error_code result) {
        if (asio_connection* s = self->connection_at(i, timer_epoch))
            s->on_timer(timer_epoch, result);
    }));
}

void asio_connection::on_timer(std::uint32_t timer_epoch, std::error_code ec) {
    if (timer_epoch != timer_epoch_ || ec == asio::error::operation_aborted) return;
    client_impl::dispatch_scope scope(owner_);
    timer_ms_ = no_deadline_ms;
    driver_.on_timer(now_ms());
    settle();
}

void asio_connection::fail(std::error_code code) {
    driver_.on_io_error(failure_of(code), now_ms());
    settle();
}

failure asio_connection::failure_of(std::error_code ec) const {
    if (tls_ && ec.category() == asio::error::get_ssl_category()) {
        return tls_failure(SSL_get_verify_result(tls_->native_handle()),
                           static_cast<unsigned long>(ec.value()));
    }
    if (ec == asio::ssl::error::stream_truncated)
        return failure::of(transport_errc::connection_closed);
    return to_failure(ec);
}

}  // namespace edgelock::async::detail
