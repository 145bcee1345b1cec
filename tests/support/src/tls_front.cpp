// SPDX-License-Identifier: Apache-2.0
#include "edgelock/testing/tls_front.hpp"

#include <fcntl.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <stdexcept>
#include <string>
#include <utility>

#include "edgelock/testing/tls_material.hpp"
#include "socket_util.hpp"

namespace edgelock::testing {
namespace {

using clock_type = std::chrono::steady_clock;

constexpr int poll_interval_ms = 10;           // how soon a connection sees the destructor's stop
constexpr std::size_t chunk_size = 16 * 1024;  // one TLS record's worth of plaintext
// A client that does not read what the front must write to it for this long is given up
// (its connection closed), so no test hangs on it.
constexpr std::chrono::seconds client_write_timeout{5};

// The most recent OpenSSL error, e.g. "error:0A000086:SSL routines::...".
std::string openssl_reason() {
    char text[256] = "no OpenSSL error";
    if (const unsigned long code = ERR_peek_last_error(); code != 0)
        ERR_error_string_n(code, text, sizeof text);
    return text;
}

// Sends all of `data` on the non-blocking socket `fd`, waiting with poll() while its buffer
// is full: false when the peer is gone, `until` passes, or the front stops. MSG_NOSIGNAL: a
// peer that reset the connection is EPIPE, not a SIGPIPE that would kill the test.
bool send_waiting(int fd, const char* data, std::size_t size, clock_type::time_point until,
                  const std::atomic<bool>& stopping) {
    std::size_t sent = 0;
    while (sent < size) {
        const ssize_t n = ::send(fd, data + sent, size - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            sent += static_cast<std::size_t>(n);
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) return false;
        if (stopping.load() || clock_type::now() >= until) return false;
        pollfd p{fd, POLLOUT, 0};
        ::poll(&p, 1, poll_interval_ms);
    }
    return true;
}

}  // namespace

// One client. OpenSSL reads and writes two memory BIOs, and the connection's thread (or an
// injection, under `mutex`) moves their bytes over the socket: no socket BIO, whose write()
// would raise SIGPIPE in the test process when a client resets.
struct tls_front::connection {
    int client_fd = -1;  // non-blocking
    int server_fd = -1;  // non-blocking, plain TCP to Redis
    std::mutex mutex;    // guards everything below: the TLS state and writes to client_fd
    SSL* ssl = nullptr;
    BIO* network_in = nullptr;        // bytes from the client, for OpenSSL to read (owned by ssl)
    BIO* network_out = nullptr;       // bytes OpenSSL wrote, for the client (owned by ssl)
    bool established = false;         // the handshake is done and the connection still open
    std::atomic<bool> broken{false};  // a write to the client failed: end the connection
    std::atomic<bool> done{false};    // the thread has finished and closed both sockets
    std::thread thread;

    ~connection() { SSL_free(ssl); }

    // Sends what OpenSSL wrote for the client. Under `mutex`.
    bool flush(const std::atomic<bool>& stopping) {
        char buffer[chunk_size];
        const auto until = clock_type::now() + client_write_timeout;
        while (BIO_ctrl_pending(network_out) > 0) {
            const int n = BIO_read(network_out, buffer, sizeof buffer);
            if (n <= 0 ||
                !send_waiting(client_fd, buffer, static_cast<std::size_t>(n), until, stopping)) {
                broken = true;
                return false;
            }
        }
        return true;
    }
};

tls_front::tls_front(const tls_material& material, std::uint16_t upstream_port)
    : upstream_port_(upstream_port) {
    ERR_clear_error();
    context_ = SSL_CTX_new(TLS_server_method());
    const bool loaded =
        context_ != nullptr && SSL_CTX_set_min_proto_version(context_, TLS1_2_VERSION) == 1 &&
        SSL_CTX_use_certificate_chain_file(context_, material.server_cert().c_str()) == 1 &&
        SSL_CTX_use_PrivateKey_file(context_, material.server_key().c_str(), SSL_FILETYPE_PEM) ==
            1 &&
        SSL_CTX_check_private_key(context_) == 1;
    if (!loaded) {
        const std::string why = openssl_reason();
        SSL_CTX_free(context_);
        throw std::runtime_error("tls_front: cannot load the server certificate: " + why);
    }
    try {
        listen_fd_ = detail::listen_loopback(port_);
    } catch (...) {
        SSL_CTX_free(context_);
        throw;
    }
    acceptor_ = std::thread([this] { accept_loop(); });
}

tls_front::~tls_front() {
    stopping_ = true;
    if (acceptor_.joinable()) acceptor_.join();
    {
        std::lock_guard<std::mutex> guard(connections_mutex_);
        for (auto& c : connections_) {
            if (c->thread.joinable()) c->thread.join();
        }
        connections_.clear();
    }
    ::close(listen_fd_);
    SSL_CTX_free(context_);
}

std::string tls_front::url() const { return "rediss://127.0.0.1:" + std::to_string(port_); }

std::size_t tls_front::send_key_update() { return inject(record::key_update); }
std::size_t tls_front::send_session_ticket() { return inject(record::session_ticket); }

std::size_t tls_front::connections_established() {
    std::lock_guard<std::mutex> guard(connections_mutex_);
    std::size_t count = 0;
    for (auto& c : connections_) {
        std::lock_guard<std::mutex> held(c->mutex);
        if (c->established) ++count;
    }
    return count;
}

std::size_t tls_front::bytes_unacknowledged() {
    std::lock_guard<std::mutex> guard(connections_mutex_);
    std::size_t bytes = 0;
    for (auto& c : connections_) {
        std::lock_guard<std::mutex> held(c->mutex);
        int queued = 0;
        if (!c->established || ::ioctl(c->client_fd, SIOCOUTQ, &queued) != 0) continue;
        bytes += static_cast<std::size_t>(queued);
    }
    return bytes;
}

// Queues the record on each established connection and writes it out at once: both are sent
// on the next write, or by SSL_do_handshake() (here, so the caller knows it is on its way).
std::size_t tls_front::inject(record what) {
    std::lock_guard<std::mutex> guard(connections_mutex_);
    std::size_t reached = 0;
    for (auto& c : connections_) {
        std::lock_guard<std::mutex> held(c->mutex);
        if (!c->established || c->broken) continue;
        ERR_clear_error();
        const int queued = what == record::key_update
                               ? SSL_key_update(c->ssl, SSL_KEY_UPDATE_REQUESTED)
                               : SSL_new_session_ticket(c->ssl);
        if (queued != 1) continue;  // not TLS 1.3
        const int written = SSL_do_handshake(c->ssl);
        if (c->flush(stopping_) && written == 1) ++reached;
    }
    return reached;
}

void tls_front::accept_loop() {
    while (!stopping_) {
        pollfd p{listen_fd_, POLLIN, 0};
        if (::poll(&p, 1, poll_interval_ms) <= 0) continue;
        const int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (client < 0) continue;
        ++accepted_;
        const int one = 1;
        ::setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        const int server = detail::connect_loopback(upstream_port_);
        if (server < 0) {
            detail::close_with_reset(client);  // Redis down: the client sees a reset
            continue;
        }
        ::fcntl(server, F_SETFL, ::fcntl(server, F_GETFL) | O_NONBLOCK);

        auto c = std::make_unique<connection>();
        c->client_fd = client;
        c->server_fd = server;
        c->ssl = SSL_new(context_);
        BIO* in = c->ssl != nullptr ? BIO_new(BIO_s_mem()) : nullptr;
        BIO* out = in != nullptr ? BIO_new(BIO_s_mem()) : nullptr;
        if (out == nullptr) {
            BIO_free(in);
            detail::close_with_reset(client);
            detail::close_with_reset(server);
            continue;  // c frees the SSL
        }
        BIO_set_mem_eof_return(in, -1);  // empty is "not yet" (WANT_READ), never the end
        BIO_set_mem_eof_return(out, -1);
        SSL_set_bio(c->ssl, in, out);
        SSL_set_accept_state(c->ssl);
        c->network_in = in;
        c->network_out = out;

        std::lock_guard<std::mutex> guard(connections_mutex_);
        // Reap finished connections so a long test does not pile up threads.
        for (auto it = connections_.begin(); it != connections_.end();) {
            if ((*it)->done) {
                (*it)->thread.join();
                it = connections_.erase(it);
            } else {
                ++it;
            }
        }
        connection& ref = *c;
        connections_.push_back(std::move(c));
        ref.thread = std::thread([this, &ref] { serve(ref); });
    }
}

// The handshake, then both directions until either side closes, a write fails or the front
// stops.
void tls_front::serve(connection& c) {
    char buffer[chunk_size];
    char plain[chunk_size];
    bool graceful = false;  // the client or Redis closed: close the other side without a reset
    bool handshaken = false;

    while (!stopping_ && !c.broken) {
        // Redis is read only once the client can be written to (poll ignores fd -1).
        pollfd fds[2] = {{c.client_fd, POLLIN, 0}, {handshaken ? c.server_fd : -1, POLLIN, 0}};
        if (::poll(fds, 2, poll_interval_ms) <= 0) continue;

        if ((fds[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
            const ssize_t n = ::recv(c.client_fd, buffer, sizeof buffer, MSG_DONTWAIT);
            if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
            if (n <= 0) {
                graceful = n == 0;
                break;
            }
            std::string to_server;
            bool open = true;
            {
                std::lock_guard<std::mutex> held(c.mutex);
                BIO_write(c.network_in, buffer, static_cast<int>(n));
                ERR_clear_error();
                if (!handshaken) {
                    const int result = SSL_accept(c.ssl);
                    const int error = SSL_get_error(c.ssl, result);
                    open = c.flush(stopping_) && (result == 1 || error == SSL_ERROR_WANT_READ);
                    handshaken = result == 1;
                    graceful = !c.broken;  // a refused handshake: the client reads our alert
                    c.established = open && handshaken;
                }
                // Application data (possibly sent with the client's Finished), and records
                // that carry none (the client's KeyUpdate in answer to ours).
                while (open && handshaken) {
                    const int result = SSL_read(c.ssl, plain, sizeof plain);
                    if (result > 0) {
                        to_server.append(plain, static_cast<std::size_t>(result));
                        continue;
                    }
                    const int error = SSL_get_error(c.ssl, result);
                    graceful = error == SSL_ERROR_ZERO_RETURN;  // close_notify
                    open = c.flush(stopping_) && error == SSL_ERROR_WANT_READ;
                    break;
                }
            }
            if (!to_server.empty() && !send_waiting(c.server_fd, to_server.data(), to_server.size(),
                                                    clock_type::time_point::max(), stopping_)) {
                graceful = false;
                break;
            }
            if (!open) break;
        }

        if (handshaken && (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
            const ssize_t n = ::recv(c.server_fd, buffer, sizeof buffer, MSG_DONTWAIT);
            if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
            std::lock_guard<std::mutex> held(c.mutex);
            ERR_clear_error();
            if (n <= 0) {  // Redis closed: so does the front, with a close_notify
                SSL_shutdown(c.ssl);
                c.flush(stopping_);
                graceful = n == 0;
                break;
            }
            if (SSL_write(c.ssl, buffer, static_cast<int>(n)) != n || !c.flush(stopping_)) break;
        }
    }

    {
        std::lock_guard<std::mutex> held(c.mutex);
        c.established = false;
        if (graceful) {
            ::close(c.client_fd);
        } else {
            detail::close_with_reset(c.client_fd);
        }
        c.client_fd = -1;
    }
    if (graceful) {
        ::close(c.server_fd);
    } else {
        detail::close_with_reset(c.server_fd);
    }
    c.server_fd = -1;
    c.done = true;
}

}  // namespace edgelock::testing
