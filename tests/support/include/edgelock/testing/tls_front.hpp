// SPDX-License-Identifier: Apache-2.0
// edgelock test support: a TLS-terminating front for a plain redis-server, that can make the
// server side of a TLS connection send records that carry no application data.
//
// Why: a TLS server may send, at any moment after the handshake, records the client must
// read but that hold no bytes for it: a TLS 1.3 KeyUpdate, a NewSessionTicket. redis-server
// sends none once a handshake is over, so a client that meets one on an idle connection and
// then waits in recv() for data that never comes (until its read timeout, holding whatever
// it holds) looks healthy against a real server. This front lets a test send them on demand,
// to every connection, at the moment it chooses.
//
// The front listens on 127.0.0.1:<port chosen by the OS>, accepts TLS 1.2 or 1.3 (the
// client's choice; TLS 1.3 with today's clients) presenting the material's server certificate
// (server_cert(): for IP:127.0.0.1, so a client verifying against ca_file() accepts it), and
// connects each client to 127.0.0.1:<upstream port> in plain TCP. Bytes are forwarded both
// ways, decrypted towards Redis and encrypted towards the client, one thread per connection.
// A connection whose client or Redis closes is closed on the other side too.
//
//   url()                   "rediss://127.0.0.1:<port>"
//   send_key_update()       on every open connection: SSL_key_update(SSL_KEY_UPDATE_REQUESTED),
//                           written at once; the client must answer with its own KeyUpdate
//                           (TLS 1.3 only)
//   send_session_ticket()   on every open connection: SSL_new_session_ticket(), written at once
//                           (TLS 1.3 only)
//
// Both are synchronous: they return once the record was handed to the kernel on every open
// connection (so the test knows it is in flight when it starts timing the client), with how
// many connections got it; 0 means the test injected nothing (no connection, or TLS 1.2).
//
// The destructor stops accepting, ends every connection (a close without close_notify) and
// joins every thread. Throws std::runtime_error only when it cannot listen: no socket, or
// the material's server certificate and key cannot be loaded into a TLS context.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

struct ssl_ctx_st;  // OpenSSL's SSL_CTX: the header needs no OpenSSL include

namespace edgelock::testing {

class tls_material;

class tls_front {
public:
    // Forwards to a plain redis-server (or anything) on 127.0.0.1:upstream_port. The material
    // is read in the constructor only.
    tls_front(const tls_material& material, std::uint16_t upstream_port);
    ~tls_front();
    tls_front(const tls_front&) = delete;
    tls_front& operator=(const tls_front&) = delete;

    std::uint16_t port() const noexcept { return port_; }
    std::string url() const;  // "rediss://127.0.0.1:<port>"

    // A TLS 1.3 KeyUpdate asking the client to update its keys too, on every connection whose
    // handshake is done. Returns how many connections it was written to.
    std::size_t send_key_update();
    // A TLS 1.3 NewSessionTicket on every connection whose handshake is done. Returns how
    // many connections it was written to.
    std::size_t send_session_ticket();

    // Bytes written to the clients that their kernels have not acknowledged yet (SIOCOUTQ,
    // summed over the connections with their handshake done). On loopback, 0 means whatever
    // was sent, an injected record too, sits in the clients' sockets.
    std::size_t bytes_unacknowledged();

    // Connections accepted since construction; connections open now with their handshake done.
    std::size_t connections_accepted() const noexcept { return accepted_.load(); }
    std::size_t connections_established();

private:
    struct connection;
    enum class record { key_update, session_ticket };

    void accept_loop();
    void serve(connection& c);
    std::size_t inject(record what);

    std::uint16_t upstream_port_ = 0;
    std::uint16_t port_ = 0;
    int listen_fd_ = -1;
    ::ssl_ctx_st* context_ = nullptr;
    std::atomic<bool> stopping_{false};
    std::atomic<std::size_t> accepted_{0};

    // Guards the list; a connection's own mutex guards its TLS state (taken after this one).
    std::mutex connections_mutex_;
    std::list<std::unique_ptr<connection>> connections_;
    std::thread acceptor_;
};

}  // namespace edgelock::testing
