// SPDX-License-Identifier: Apache-2.0
// TLS over one connected socket of the blocking client. The handshake is taken a step at a
// time on the non-blocking socket, so the caller's poll(2) loop and the connection's deadlines
// bound it like any other wait; the socket is blocking again once it is done, for writes with
// the socket's own timeout, as the plain client uses it. Reads never wait (the caller polls
// first): records that carry no data, or arrive in parts, only make recv() say "not yet".
//
// OpenSSL reaches the socket through a BIO of our own that sends with MSG_NOSIGNAL (a peer
// that resets the connection gives EPIPE, never a SIGPIPE that would kill the user's process)
// and reads with recv().
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "edgelock/session/transport_errc.hpp"
#include "edgelock/tls_context.hpp"

namespace edgelock::blocking {

class tls_channel {
public:
    tls_channel() noexcept = default;
    ~tls_channel() { close(); }
    tls_channel(const tls_channel&) = delete;
    tls_channel& operator=(const tls_channel&) = delete;

    bool active() const noexcept { return ssl_ != nullptr; }

    // Begins the handshake on the connected socket `fd` as a client of `host`. Returns an
    // empty failure, or out_of_memory (the channel is then closed).
    failure start(int fd, const tls_context& context, std::string_view host);
    // In the handshake: the poll(2) events it waits for (POLLIN or POLLOUT).
    bool handshaking() const noexcept { return handshaking_; }
    short wanted_events() const noexcept { return wanted_; }
    // Takes the handshake as far as the socket allows. Returns true when it is done; false
    // with `why` empty when it waits for wanted_events(), or with why it failed (an errno,
    // connection_closed, the TLS codes of tls_failure: the channel is then closed).
    bool handshake(failure& why);

    // Like send(2) and recv(2) on a blocking socket with SO_SNDTIMEO / SO_RCVTIMEO: the bytes
    // moved, or -1 with `why` set. A timeout, or a record not complete yet, is -1 with `why`
    // empty (try again once the socket is readable). recv returns 0 at the end of the stream.
    ssize_t send(const char* bytes, std::size_t size, failure& why);
    ssize_t recv(char* bytes, std::size_t size, failure& why);
    // Decrypted bytes already read from the socket and not handed out yet (poll(2) cannot
    // see them).
    std::size_t buffered() const noexcept;

    void close() noexcept;

private:
    failure failed(int result) noexcept;

    struct ssl_st* ssl_ = nullptr;
    const tls_context* context_ = nullptr;  // ssl_'s: its handshake steps take turns there
    int fd_ = -1;
    int blocking_flags_ = 0;  // the socket's flags before the handshake
    bool handshaking_ = false;
    short wanted_ = 0;
};

}  // namespace edgelock::blocking
