// SPDX-License-Identifier: Apache-2.0
#include "tls_stream.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>

namespace edgelock::testing::detail {
namespace {

constexpr std::size_t chunk_size = 16 * 1024;  // one TLS record at most

std::runtime_error failure(const std::string& what, const std::string& reason) {
    return std::runtime_error("TLS " + what + ": " + reason);
}

// The most recent OpenSSL error, e.g. "error:0A000086:SSL routines::certificate verify failed".
std::string openssl_reason() {
    char text[256] = "no OpenSSL error";
    if (const unsigned long code = ERR_peek_last_error(); code != 0)
        ERR_error_string_n(code, text, sizeof text);
    return text;
}

// Waits until `fd` is ready for `events`; false when `until` passed first.
bool wait_for(int fd, short events, deadline until) {
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            until - std::chrono::steady_clock::now());
        if (left.count() <= 0) return false;
        pollfd p{fd, events, 0};
        const int n = ::poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 60'000)));
        if (n > 0) return true;
        if (n < 0 && errno != EINTR) return false;
    }
}

// A connected non-blocking socket to one of host's addresses, or -1 with `why` set.
int connect_one(const addrinfo& address, deadline until, std::string& why) {
    const int fd = ::socket(address.ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        why = std::strerror(errno);
        return -1;
    }
    int error = ::connect(fd, address.ai_addr, address.ai_addrlen) == 0 ? 0 : errno;
    if (error == EINPROGRESS) {
        socklen_t size = sizeof error;
        error = wait_for(fd, POLLOUT, until) ? 0 : ETIMEDOUT;
        if (error == 0) ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &size);
    }
    if (error != 0) {
        why = std::strerror(error);
        ::close(fd);
        return -1;
    }
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

int connect_to(const std::string& host, std::uint16_t port, deadline until) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    addrinfo* found = nullptr;
    if (const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
        rc != 0) {
        throw std::runtime_error(std::string("resolve: ") + ::gai_strerror(rc));
    }
    std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> addresses(found, ::freeaddrinfo);
    std::string why = "no address";
    for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
        if (const int fd = connect_one(*a, until, why); fd >= 0) return fd;
    }
    throw std::runtime_error(why);
}

struct ssl_ctx_free {
    void operator()(SSL_CTX* context) const { SSL_CTX_free(context); }
};

std::unique_ptr<SSL_CTX, ssl_ctx_free> make_context(const client_tls& options) {
    std::unique_ptr<SSL_CTX, ssl_ctx_free> context(SSL_CTX_new(TLS_client_method()));
    if (!context) throw failure("set-up", openssl_reason());
    SSL_CTX* c = context.get();
    if (options.verify_server) {
        if (options.ca_file.empty()) throw failure("set-up", "verify_server needs a ca_file");
        if (SSL_CTX_load_verify_locations(c, options.ca_file.c_str(), nullptr) != 1) {
            throw failure("set-up", options.ca_file + ": " + openssl_reason());
        }
    }
    SSL_CTX_set_verify(c, options.verify_server ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, nullptr);
    if (!options.cert_file.empty() &&
        (SSL_CTX_use_certificate_chain_file(c, options.cert_file.c_str()) != 1 ||
         SSL_CTX_use_PrivateKey_file(c, options.key_file.c_str(), SSL_FILETYPE_PEM) != 1 ||
         SSL_CTX_check_private_key(c) != 1)) {
        throw failure("set-up", options.cert_file + ": " + openssl_reason());
    }
    return context;
}

bool is_ip_literal(const std::string& host) {
    in6_addr ignored{};
    return ::inet_pton(AF_INET, host.c_str(), &ignored) == 1 ||
           ::inet_pton(AF_INET6, host.c_str(), &ignored) == 1;
}

// What the server's certificate must name: the host connected to, as an IP or a DNS name.
void expect_name(SSL* ssl, const std::string& host) {
    const bool set = is_ip_literal(host)
                         ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host.c_str()) == 1
                         : SSL_set1_host(ssl, host.c_str()) == 1 &&
                               SSL_set_tlsext_host_name(ssl, host.c_str()) == 1;
    if (!set) throw failure("set-up", "server name " + host + ": " + openssl_reason());
}

}  // namespace

tls_stream::tls_stream(const std::string& host, std::uint16_t port, const client_tls& options,
                       deadline until) {
    const auto context = make_context(options);
    ssl_ = SSL_new(context.get());
    network_in_ = BIO_new(BIO_s_mem());
    network_out_ = BIO_new(BIO_s_mem());
    if (ssl_ == nullptr || network_in_ == nullptr || network_out_ == nullptr) {
        BIO_free(network_in_);
        BIO_free(network_out_);
        SSL_free(ssl_);
        throw failure("set-up", openssl_reason());
    }
    SSL_set_bio(ssl_, network_in_, network_out_);  // ssl_ owns them from here
    SSL_set_connect_state(ssl_);
    try {
        if (options.verify_server) expect_name(ssl_, host);
        fd_ = connect_to(host, port, until);
        run([this] { return SSL_do_handshake(ssl_); }, "handshake", until);
    } catch (...) {
        SSL_free(ssl_);
        if (fd_ >= 0) ::close(fd_);
        throw;
    }
}

tls_stream::~tls_stream() {
    SSL_free(ssl_);
    ::close(fd_);
}

void tls_stream::write(const std::string& bytes, deadline until) {
    run([&] { return SSL_write(ssl_, bytes.data(), static_cast<int>(bytes.size())); }, "write",
        until);
}

std::string tls_stream::read_some(deadline until) {
    char buffer[chunk_size];
    const int n = run([&] { return SSL_read(ssl_, buffer, sizeof buffer); }, "read", until);
    return std::string(buffer, static_cast<std::size_t>(n));
}

// Calls `step` (an SSL_* function) until it succeeds, sending what OpenSSL wrote after each
// call (records, handshake messages, alerts) and receiving when it wants more.
template <typename Step>
int tls_stream::run(Step step, const char* what, deadline until) {
    for (;;) {
        ERR_clear_error();
        const int rc = step();
        const int error = rc > 0 ? SSL_ERROR_NONE : SSL_get_error(ssl_, rc);
        send_pending(what, until);
        if (rc > 0) return rc;
        if (error != SSL_ERROR_WANT_READ) fail_tls(what, error);
        receive(what, until);
    }
}

void tls_stream::send_pending(const char* what, deadline until) {
    char buffer[chunk_size];
    while (BIO_ctrl_pending(network_out_) > 0) {
        const int size = BIO_read(network_out_, buffer, sizeof buffer);
        for (int done = 0; done < size;) {
            const ssize_t n =
                ::send(fd_, buffer + done, static_cast<std::size_t>(size - done), MSG_NOSIGNAL);
            if (n > 0) {
                done += static_cast<int>(n);
            } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                if (!wait_for(fd_, POLLOUT, until)) throw failure(what, "timed out");
            } else if (n == 0 || errno != EINTR) {
                fail_io(what, n == 0 ? EPIPE : errno);
            }
        }
    }
}

void tls_stream::receive(const char* what, deadline until) {
    char buffer[chunk_size];
    for (;;) {
        const ssize_t n = ::recv(fd_, buffer, sizeof buffer, 0);
        if (n > 0) {
            BIO_write(network_in_, buffer, static_cast<int>(n));
            return;
        }
        if (n == 0) throw failure(what, "the server closed the connection");
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            if (!wait_for(fd_, POLLIN, until)) throw failure(what, "timed out");
        } else if (errno != EINTR) {
            fail_io(what, errno);
        }
    }
}

void tls_stream::fail_tls(const char* what, int ssl_error) {
    if (ssl_error == SSL_ERROR_ZERO_RETURN) {
        throw failure(what, "the server closed the connection (close_notify)");
    }
    std::string reason = openssl_reason();
    if (const long verified = SSL_get_verify_result(ssl_); verified != X509_V_OK) {
        reason += std::string(" (") + X509_verify_cert_error_string(verified) + ")";
    }
    throw failure(what, reason);
}

// A server that refuses the client (a missing certificate under TLS 1.3) sends an alert and
// closes; a reset that follows may reach us first. The alert says more than the reset.
void tls_stream::fail_io(const char* what, int errno_value) {
    const std::string alert = alert_received();
    throw failure(what, alert.empty() ? std::strerror(errno_value) : alert);
}

// The alert already received on the socket, as OpenSSL's reason; "" when there is none.
std::string tls_stream::alert_received() {
    char buffer[chunk_size];
    for (ssize_t n; (n = ::recv(fd_, buffer, sizeof buffer, MSG_DONTWAIT)) > 0;) {
        BIO_write(network_in_, buffer, static_cast<int>(n));
    }
    ERR_clear_error();
    char byte = 0;
    const int rc = SSL_peek(ssl_, &byte, 1);
    const bool refused = rc <= 0 && SSL_get_error(ssl_, rc) == SSL_ERROR_SSL;
    return refused ? openssl_reason() : "";
}

}  // namespace edgelock::testing::detail
