// SPDX-License-Identifier: Apache-2.0
// A blocking TLS client connection with deadlines, for redis_client (not installed).
//
// OpenSSL reads and writes memory BIOs, and this class moves their bytes over a non-blocking
// socket with poll(), send(MSG_NOSIGNAL) and recv(): every wait has a deadline, and a server
// that resets the connection cannot raise SIGPIPE in the test process.
#pragma once

#include <openssl/types.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "edgelock/testing/redis_client.hpp"

namespace edgelock::testing::detail {

using deadline = std::chrono::steady_clock::time_point;

class tls_stream {
public:
    // Connects to host:port and completes the handshake before `until`. Throws
    // std::runtime_error with the reason (OpenSSL's, and the verification error if any).
    tls_stream(const std::string& host, std::uint16_t port, const client_tls& options,
               deadline until);
    ~tls_stream();
    tls_stream(const tls_stream&) = delete;
    tls_stream& operator=(const tls_stream&) = delete;

    // Sends all of `bytes`. Throws on failure, or when `until` passes.
    void write(const std::string& bytes, deadline until);
    // Some decrypted bytes, at least one. Throws at the end of the stream, on failure, or when
    // `until` passes.
    std::string read_some(deadline until);

private:
    template <typename Step>
    int run(Step step, const char* what, deadline until);
    void send_pending(const char* what, deadline until);
    void receive(const char* what, deadline until);
    [[noreturn]] void fail_tls(const char* what, int ssl_error);
    [[noreturn]] void fail_io(const char* what, int errno_value);
    std::string alert_received();

    int fd_ = -1;
    SSL* ssl_ = nullptr;
    BIO* network_in_ = nullptr;   // bytes from the socket, for OpenSSL to read
    BIO* network_out_ = nullptr;  // bytes OpenSSL wrote, for the socket
};

}  // namespace edgelock::testing::detail
