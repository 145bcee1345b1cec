// SPDX-License-Identifier: Apache-2.0
#include "tls_channel.hpp"

#include <fcntl.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>

#include "edgelock/blocking_lock.hpp"

namespace edgelock::blocking {
namespace {

int socket_of(BIO* bio) {
    return static_cast<int>(reinterpret_cast<std::intptr_t>(BIO_get_data(bio)));
}

bool would_block(ssize_t n) {
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
}

int bio_write(BIO* bio, const char* data, int size) {
    BIO_clear_retry_flags(bio);
    const ssize_t n = ::send(socket_of(bio), data, static_cast<std::size_t>(size), MSG_NOSIGNAL);
    if (would_block(n)) BIO_set_retry_write(bio);
    return static_cast<int>(n);
}

// Never waits: the caller polls before reading. A record that is not data (a TLS 1.3 key
// update or session ticket, or part of a record) must not block it until SO_RCVTIMEO while it
// holds the client's mutex; OpenSSL keeps what it read and wants more (SSL_ERROR_WANT_READ).
int bio_read(BIO* bio, char* data, int size) {
    BIO_clear_retry_flags(bio);
    const ssize_t n = ::recv(socket_of(bio), data, static_cast<std::size_t>(size), MSG_DONTWAIT);
    if (would_block(n)) BIO_set_retry_read(bio);
    return static_cast<int>(n);
}

long bio_ctrl(BIO*, int command, long, void*) { return command == BIO_CTRL_FLUSH ? 1 : 0; }

int bio_create(BIO* bio) {
    BIO_set_init(bio, 1);
    return 1;
}

// Made once for the process; OpenSSL keeps it for as long as it runs.
BIO_METHOD* socket_method() {
    static BIO_METHOD* const method = [] {
        BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "edgelock socket");
        if (m != nullptr) {
            BIO_meth_set_write(m, bio_write);
            BIO_meth_set_read(m, bio_read);
            BIO_meth_set_ctrl(m, bio_ctrl);
            BIO_meth_set_create(m, bio_create);
        }
        return m;
    }();
    return method;
}

}  // namespace

failure tls_channel::start(int fd, const tls_context& context, std::string_view host) {
    close();
    ssl_ = context.new_connection(host);
    BIO* bio = ssl_ != nullptr ? BIO_new(socket_method()) : nullptr;
    if (bio == nullptr) {
        close();
        return failure::of(transport_errc::out_of_memory);
    }
    BIO_set_data(bio, reinterpret_cast<void*>(static_cast<std::intptr_t>(fd)));
    SSL_set_bio(ssl_, bio, bio);
    context_ = &context;
    fd_ = fd;
    blocking_flags_ = ::fcntl(fd, F_GETFL);
    ::fcntl(fd, F_SETFL, blocking_flags_ | O_NONBLOCK);
    handshaking_ = true;
    wanted_ = POLLOUT;
    return {};
}

bool tls_channel::handshake(failure& why) {
    why = {};
    ERR_clear_error();  // another library's leftovers on this thread would read as our failure
    errno = 0;
    const int result = context_->handshake_step(ssl_);
    if (result == 1) {
        ::fcntl(fd_, F_SETFL, blocking_flags_);
        handshaking_ = false;
        return true;
    }
    why = failed(result);
    if (why) {
        close();
    } else {
        wanted_ = SSL_get_error(ssl_, result) == SSL_ERROR_WANT_WRITE ? POLLOUT : POLLIN;
    }
    return false;
}

ssize_t tls_channel::send(const char* bytes, std::size_t size, failure& why) {
    why = {};
    ERR_clear_error();
    errno = 0;
    const int result =
        SSL_write(ssl_, bytes, static_cast<int>(std::min<std::size_t>(size, INT32_MAX)));
    if (result > 0) return result;
    why = failed(result);
    // A TLS server that refuses this client sends its alert and resets: the write may see
    // the reset first. The alert, already received, says why (a dead socket never blocks).
    if (why == failure::system(ECONNRESET) || why == failure::system(EPIPE)) {
        char ignored = 0;
        const int read = SSL_read(ssl_, &ignored, 1);
        const failure alert = read <= 0 ? failed(read) : failure{};
        if (alert.from == failure::domain::transport &&
            alert != failure::of(transport_errc::connection_closed)) {
            why = alert;
        }
    }
    return -1;
}

ssize_t tls_channel::recv(char* bytes, std::size_t size, failure& why) {
    why = {};
    ERR_clear_error();
    errno = 0;
    const int result =
        SSL_read(ssl_, bytes, static_cast<int>(std::min<std::size_t>(size, INT32_MAX)));
    if (result > 0) return result;
    why = failed(result);
    return why == failure::of(transport_errc::connection_closed) ? 0 : -1;
}

std::size_t tls_channel::buffered() const noexcept {
    return ssl_ != nullptr ? static_cast<std::size_t>(SSL_pending(ssl_)) : 0;
}

// Why an SSL call returned `result`; empty for "not yet" (a timeout, or a record that is not
// complete: the caller waits for the socket and calls again).
failure tls_channel::failed(int result) noexcept {
    const int saved_errno = errno;
    const int error = SSL_get_error(ssl_, result);
    const unsigned long first = ERR_peek_error();
    ERR_clear_error();
    switch (error) {
        case SSL_ERROR_WANT_READ:
        case SSL_ERROR_WANT_WRITE: return {};
        case SSL_ERROR_ZERO_RETURN: return failure::of(transport_errc::connection_closed);
        case SSL_ERROR_SYSCALL:
            if (first != 0) break;
            return saved_errno != 0 ? failure::system(saved_errno)
                                    : failure::of(transport_errc::connection_closed);
        default: break;
    }
    return tls_failure(SSL_get_verify_result(ssl_), first);
}

void tls_channel::close() noexcept {
    SSL_free(ssl_);  // frees the BIO too; the socket is the caller's
    ssl_ = nullptr;
    handshaking_ = false;
}

}  // namespace edgelock::blocking
