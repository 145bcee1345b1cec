// SPDX-License-Identifier: Apache-2.0
// edgelock test support: a small blocking admin client for tests (GET, SET, INFO, DEBUG, ...).
//
// Deliberately independent of the transports under test: it uses hiredis directly and throws
// std::runtime_error on connection errors and protocol errors, so a broken set-up fails the
// test at once. Error replies from Redis are returned as replies (type error), not thrown.
//
// Over TLS (hiredis 0.14 has none) it does its own socket and OpenSSL I/O and parses replies
// with hiredis's reader. The handshake happens in the constructor; a server that refuses the
// client's certificate (or its absence) only says so after TLS 1.3's handshake, so then the
// first command throws, with OpenSSL's reason (e.g. "tlsv13 alert certificate required").
// After any I/O error or timeout the connection is dropped and later commands throw, as
// hiredis does.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

struct redisContext;

namespace edgelock::testing {

class tls_material;
namespace detail {
class tls_session;
}

// What a TLS redis_client trusts and presents.
struct client_tls {
    std::string ca_file;    // the CAs the server's certificate must chain to
    std::string cert_file;  // the client's certificate and key (PEM); "" presents none
    std::string key_file;
    // Checks the server's chain against ca_file and its name against the host connected to
    // (an IP literal against the certificate's IP SANs). Off: anything is accepted.
    bool verify_server = true;

    // Trusts `material`'s CA and presents its client certificate (what tls-auth-clients yes wants).
    static client_tls with_client_cert(const tls_material& material);
    // Trusts `material`'s CA and presents no certificate.
    static client_tls without_client_cert(const tls_material& material);
};

struct redis_reply {
    enum class kind { string, status, error, integer, nil, array };
    kind type = kind::nil;
    std::string text;                   // string, status, error
    long long integer = 0;              // integer
    std::vector<redis_reply> elements;  // array

    bool is_nil() const noexcept { return type == kind::nil; }
    bool is_error() const noexcept { return type == kind::error; }
};

class redis_client {
public:
    // Connects to host:port (and AUTHs when `password` is set, as `user` when that is set).
    // Throws on failure. Command timeout defaults to 10 s (DEBUG SLEEP etc. need more: pass it).
    redis_client(const std::string& host, std::uint16_t port, const std::string& password = "",
                 const std::string& user = "",
                 std::chrono::milliseconds timeout = std::chrono::seconds(10));
    explicit redis_client(std::uint16_t port) : redis_client("127.0.0.1", port) {}
    // The same over TLS: connects, completes the handshake within min(timeout, 2 s) and AUTHs.
    redis_client(const std::string& host, std::uint16_t port, const client_tls& tls,
                 const std::string& password = "", const std::string& user = "",
                 std::chrono::milliseconds timeout = std::chrono::seconds(10));
    redis_client(std::uint16_t port, const client_tls& tls)
        : redis_client("127.0.0.1", port, tls) {}
    ~redis_client();
    redis_client(const redis_client&) = delete;
    redis_client& operator=(const redis_client&) = delete;

    // Sends one command (each argument one bulk string) and returns its reply. Throws on I/O
    // or protocol errors; error replies come back with type error.
    redis_reply command(const std::vector<std::string>& args);

    // Shorthands. get() returns "" for a missing key (use exists() to tell the difference).
    std::string get(const std::string& key);
    bool exists(const std::string& key);
    long long pttl(const std::string& key);  // -2 missing, -1 no expiry
    void set(const std::string& key, const std::string& value);
    // The "role" field of INFO replication, e.g. "master" / "slave".
    std::string role();
    // One "field:value" line of INFO <section>; "" when absent.
    std::string info_field(const std::string& section, const std::string& field);

private:
    void authenticate(const std::string& password, const std::string& user);
    redis_reply plain_command(const std::vector<std::string>& args);
    redis_reply tls_command(const std::vector<std::string>& args);

    redisContext* context_ = nullptr;           // plain connections
    std::unique_ptr<detail::tls_session> tls_;  // TLS connections; null once broken
    bool uses_tls_ = false;
    std::chrono::milliseconds timeout_{0};
};

}  // namespace edgelock::testing
