// SPDX-License-Identifier: Apache-2.0
// edgelock: the OpenSSL client context both transports open TLS connections from, and the
// one mapping of TLS failures to the session's error values.
//
// A transport loads one tls_context from the client's tls_options when it opens (files are
// read then, never per connection), makes an SSL object from it for each connection to a
// rediss:// address, and hands a failed handshake, read or write to tls_failure(). What is
// verified is written in tls_options.hpp.
#pragma once

#include <cstddef>
#include <mutex>
#include <string>
#include <string_view>
#include <system_error>

#include "edgelock/error_code.hpp"
#include "edgelock/session/address.hpp"
#include "edgelock/session/transport_errc.hpp"
#include "edgelock/tls_options.hpp"

struct ssl_st;
struct ssl_ctx_st;

namespace edgelock {

class tls_context {
public:
    tls_context() noexcept = default;
    ~tls_context();
    tls_context(const tls_context&) = delete;
    tls_context& operator=(const tls_context&) = delete;

    // Builds the context: TLS 1.2 or later, peer verification on (unless the options skip it
    // for tests), the CA store, and the client certificate when given. Returns {} or
    // transport_errc::tls_files (a file that cannot be read or parsed, a CA directory that
    // is not one, a key that does not match its certificate, a certificate without its key),
    // out_of_memory. Loading again
    // replaces the context.
    [[nodiscard]] std::error_code load(const tls_options& options);
    bool loaded() const noexcept { return context_ != nullptr; }
    // After load() returned tls_files: the file refused and why (empty otherwise).
    const tls_load_error& load_error() const noexcept { return error_; }

    // A new SSL object for one connection to `host`: it sends SNI (for a DNS name; an IP
    // address is never sent as SNI) and verifies that the certificate names server_name, or
    // else `host`. Returns null when OpenSSL cannot make one (out of memory, a name it
    // refuses); the caller owns the result (SSL_free, or an asio::ssl::stream that takes it).
    ssl_st* new_connection(std::string_view host) const;

    // One step of a client handshake (SSL_connect) on a connection made by new_connection(),
    // taken under the context's lock: the SSL_connect result. Verifying a peer caches what
    // OpenSSL parses in the context's own certificates, and OpenSSL 3.0 rewrites that cache
    // while another thread's verification reads it (openssl/openssl#25202), so the threads of
    // one client that handshake from one context take turns. A step never waits for the
    // network: the socket is non-blocking during the handshake.
    int handshake_step(ssl_st* connection) const;

private:
    ssl_ctx_st* context_ = nullptr;
    mutable std::mutex handshakes_;
    std::string server_name_;
    bool verify_ = true;
    tls_load_error error_;
};

// Loads `context` from `options` when any of the `count` addresses is rediss:// (a client
// without one never reads the files, nor needs them). Returns {} or load()'s errors.
[[nodiscard]] std::error_code load_for(tls_context& context, const tls_options& options,
                                       const session::node_address* addresses, std::size_t count);

// What a failed TLS operation means, from the connection's certificate verification result
// (SSL_get_verify_result) and the first OpenSSL error code of the failure (ERR_get_error, or
// the value of an Asio SSL error code; 0 when there was none): tls_untrusted,
// tls_name_mismatch, tls_expired, tls_client_certificate_required, tls_not_offered or
// tls_handshake_failed.
failure tls_failure(long verify_result, unsigned long openssl_error) noexcept;

}  // namespace edgelock
