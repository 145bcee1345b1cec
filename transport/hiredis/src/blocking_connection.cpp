// SPDX-License-Identifier: Apache-2.0
#include "blocking_connection.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>
#include <string>

#include "edgelock/assert.hpp"
#include "edgelock/blocking_lock.hpp"

namespace edgelock::blocking {
namespace {

// The handshake: AUTH, SELECT, PING, ROLE and the four scripts fit with room to spare.
constexpr std::size_t handshake_bytes_max = 8 * 1024;
constexpr std::size_t read_buffer_bytes = reply_bytes_max + request_bytes_max;
// A connection that answered within this many milliseconds (the current or the last tick of
// the clock) is not asked whether it was closed before the next write: a server that closed
// it so soon is one restarting (whose new connection would be refused too) or one that killed
// it, and a close just after the question is as likely. It saves a system call per request of
// back-to-back calls; a request that meets such a close fails as any request on a connection
// that ends does, and is retried as such.
constexpr std::int64_t answered_recently_ms = 2;

timeval to_timeval(std::int64_t ms) {
    timeval tv{};
    tv.tv_sec = static_cast<time_t>(ms / 1000);
    tv.tv_usec = static_cast<suseconds_t>((ms % 1000) * 1000);
    return tv;
}

// A failed redisConnectWithTimeout: hiredis reports a failed name lookup as REDIS_ERR_OTHER
// (getaddrinfo's message), a connect timeout as ETIMEDOUT or EINPROGRESS.
failure connect_failure(const redisContext* c, int saved_errno) {
    if (c == nullptr) return failure::of(transport_errc::out_of_memory);
    if (c->err == REDIS_ERR_OTHER) return failure::of(transport_errc::unknown_host);
    if (saved_errno == ETIMEDOUT || saved_errno == EINPROGRESS)
        return failure::of(transport_errc::connect_timeout);
    return saved_errno != 0 ? failure::system(saved_errno) : failure::of(errc::io_error);
}

}  // namespace

errc blocking_connection::setup(session::connection_setup setup, session::connection_events& events,
                                const tls_context* tls, std::size_t reply_nodes) {
    tls_context_ = tls;
    setup.in_flight_storage = in_flight_.data();
    setup.in_flight_capacity = in_flight_.size();
    if (driver_.setup(setup, *this, events) != errc::ok) return errc::invalid_config;
    if (!read_buffer_) read_buffer_.reset(new (std::nothrow) char[read_buffer_bytes]);
    if (!nodes_) {
        nodes_.reset(new (std::nothrow) reply_node[reply_nodes]);
        nodes_capacity_ = nodes_ ? reply_nodes : 0;
    }
    return read_buffer_ && nodes_ ? errc::ok : errc::invalid_config;
}

void blocking_connection::settle(std::int64_t now, bool wanted,
                                 std::unique_lock<std::mutex>* unlocked) {
    unlocked_ = unlocked;
    driver_.settle(now, wanted);
    unlocked_ = nullptr;
}

// The driver's open: a blocking TCP connect (the caller's mutex released meanwhile), then the
// TLS handshake or the connection's own. A failure leaves the connection closing for the driver's
// settle.
void blocking_connection::open(const session::node_address& to) {
    const std::int64_t timeout_ms = connection().times().connect_timeout_ms;
    if (unlocked_ != nullptr) unlocked_->unlock();
    errno = 0;
    context_ = redisConnectWithTimeout(std::string(to.host.view()).c_str(), to.port,
                                       to_timeval(timeout_ms));
    const int saved_errno = errno;
    if (unlocked_ != nullptr) unlocked_->lock();
    const std::int64_t now = now_ms();
    if (context_ == nullptr || context_->err != 0) {
        driver_.on_io_error(connect_failure(context_, saved_errno), now);
        return;
    }
    redisEnableKeepAlive(context_);
    // Blocking writes end after the command timeout (EAGAIN): a peer that stops reading
    // cannot hold the caller longer than a reply could.
    redisSetTimeout(context_, to_timeval(connection().times().command_timeout_ms));
    if (to.tls) {
        start_tls(to, now);
    } else {
        say_hello(now);
    }
}

void blocking_connection::start_tls(const session::node_address& to, std::int64_t now) {
    if (tls_context_ ==
        nullptr) {  // the client loads a context whenever it has a rediss:// address
        driver_.on_io_error(failure::of(transport_errc::tls_files), now);
        return;
    }
    driver_.on_tls_handshake();
    if (const failure why = tls_.start(fd(), *tls_context_, to.host.view())) {
        driver_.on_io_error(why, now);
        return;
    }
    continue_tls(now);  // the ClientHello goes out at once
}

void blocking_connection::continue_tls(std::int64_t now) {
    failure why;
    if (tls_.handshake(why)) {
        say_hello(now);
    } else if (why) {
        driver_.on_io_error(why, now);
    }
}

// Connected (and secured): the connection's handshake goes out first.
void blocking_connection::say_hello(std::int64_t now) {
    std::array<char, handshake_bytes_max> hello{};
    const std::size_t size = driver_.on_connected(now, hello.data(), hello.size());
    if (size > 0) write_all(hello.data(), size, now);
}

ssize_t blocking_connection::send_bytes(const char* bytes, std::size_t size, failure& why) {
    if (tls_.active()) return tls_.send(bytes, size, why);
    // MSG_NOSIGNAL: a peer that reset the connection gives EPIPE, not a SIGPIPE.
    const ssize_t n = ::send(fd(), bytes, size, MSG_NOSIGNAL);
    why = n < 0 && errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK
              ? failure::system(errno)
              : failure{};
    return n;
}

ssize_t blocking_connection::receive_bytes(char* bytes, std::size_t size, failure& why) {
    if (tls_.active()) return tls_.recv(bytes, size, why);
    const ssize_t n = ::recv(fd(), bytes, size, 0);
    why = n < 0 && errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK
              ? failure::system(errno)
              : failure{};
    return n;
}

bool blocking_connection::send(const char* bytes, std::size_t size, std::uint32_t tag,
                               std::int64_t now) {
    if (!write_all(bytes, size, now)) return false;
    const bool tracked = connection().track(0, tag, now);
    EDGELOCK_ASSERT(tracked);
    return true;
}

bool blocking_connection::write_all(const char* bytes, std::size_t size, std::int64_t now) {
    std::size_t sent = 0;
    while (sent < size) {
        failure why;
        const ssize_t n = send_bytes(bytes + sent, size - sent, why);
        if (n > 0) {
            sent += static_cast<std::size_t>(n);
        } else if (n < 0 && !why && errno == EINTR && !tls_.active()) {
            continue;
        } else {
            // Not sent and no error: the socket's send timeout (SO_SNDTIMEO) ran out.
            driver_.on_io_error(why ? why : failure::of(transport_errc::command_timeout), now);
            return false;
        }
    }
    return true;
}

void blocking_connection::receive(std::int64_t now) {
    if (tls_.handshaking()) return continue_tls(now);
    if (!read_some(now)) return;
    const std::size_t consumed =
        driver_.on_bytes(read_buffer_.get(), read_size_, nodes_.get(), nodes_capacity_, now);
    if (context_ == nullptr) return;  // a delivery closed the connection: its bytes went with it
    if (consumed > 0) answered_ms_ = now;
    std::memmove(read_buffer_.get(), read_buffer_.get() + consumed, read_size_ - consumed);
    read_size_ -= consumed;
}

bool blocking_connection::read_some(std::int64_t now) {
    if (read_size_ == read_buffer_bytes) {
        driver_.on_io_error(failure::of(errc::reply_too_large), now);
        return false;
    }
    failure why;
    const ssize_t n =
        receive_bytes(read_buffer_.get() + read_size_, read_buffer_bytes - read_size_, why);
    if (n > 0) {
        read_size_ += static_cast<std::size_t>(n);
        return true;
    }
    if (n < 0 && !why) return false;  // nothing yet
    driver_.on_io_error(n == 0 ? failure::of(transport_errc::connection_closed) : why, now);
    return false;
}

bool blocking_connection::closed_while_idle(std::int64_t now) {
    if (!connection().ready() || busy() || now - answered_ms_ < answered_recently_ms) return false;
    pollfd p{fd(), POLLIN, 0};
    if (::poll(&p, 1, 0) <= 0) return false;
    // Nothing is owed to us: readable means closed (end of stream), reset, or a stray reply.
    if (read_some(now)) driver_.on_io_error(failure::of(errc::unexpected_reply), now);
    return connection().state() == session::connection_state::closing;
}

void blocking_connection::close_socket() noexcept {
    tls_.close();
    if (context_ != nullptr) redisFree(context_);
    context_ = nullptr;
    read_size_ = 0;
    answered_ms_ = never_answered;
}

}  // namespace edgelock::blocking
