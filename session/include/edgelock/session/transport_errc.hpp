// SPDX-License-Identifier: Apache-2.0
// edgelock session: the clients' own error conditions, one enum for both transports.
//
// The lock's verdicts are edgelock::errc (core); socket errors are errno values
// (std::generic_category()); everything else a client can report is one of these. The
// std::error_code adapter (category "edgelock.transport") is in transport/common's
// edgelock/error_code.hpp, outside the sans-IO session.
//
// Like errc, transport_errc and failure are [[nodiscard]]: a call returning one is a verdict
// the caller acts on.
#pragma once

#include <cstdint>

#include "edgelock/errc.hpp"

namespace edgelock {

enum class [[nodiscard]] transport_errc : std::uint8_t{
    unknown_host = 1,       // the host name could not be resolved
    connect_timeout,        // resolve + connect took longer than connect_timeout: no connection
    command_timeout,        // a reply took longer than command_timeout: the connection is dropped
    connection_closed,      // the server closed the connection
    auth_failed,            // AUTH refused: a wrong password or ACL user (WRONGPASS), or a
                            // password for a server that has none
    select_failed,          // SELECT <db> refused
    not_master,             // the server is a replica: ROLE says so, or a write got READONLY
    master_down,            // MASTERDOWN: a replica whose link to its master is down
    loading,                // LOADING: the server is loading its dataset after a restart
    no_master,              // Sentinel: no sentinel reachable, or none named a master
    master_changed,         // Sentinel: +switch-master announced another master
    out_of_memory,          // a transport could not allocate (hiredis)
    thread_failed,          // the blocking client's helper thread could not start
    not_open,               // async client: not open (never opened, or closed)
    already_open,           // async client: open() on an open client
    table_full,             // async client: every lock slot is in use
    invalid_handle,         // async client: a handle that is not (or no longer) in the table
    operation_in_progress,  // an acquire or release is already running on that lock
    lock_busy,              // async client: remove_lock() of a lock held or busy
    node_info_refused,      // INFO refused (an ACL without +info): the restart guard cannot
                            // tell when the node started; grant it, or turn the guard off
    evicting_node,          // the node may evict keys (maxmemory with a policy other than
                            // noeviction) and the client refuses such nodes (eviction_check)
    // TLS (rediss://). Each ends the connection; the next attempt follows the reconnect delay.
    tls_files,          // a CA file or directory, client certificate or key could not be
                        // loaded (or the key does not match the certificate): at open()
    tls_untrusted,      // the server's certificate chain does not lead to a trusted CA
    tls_name_mismatch,  // the server's certificate does not name the host (or server_name)
    tls_expired,        // the server's certificate has expired or is not yet valid
    tls_client_certificate_required,  // the server asks for a client certificate (tls-auth-clients)
                                      // and none was configured, or it refused the one given
    tls_not_offered,        // the server answered the TLS handshake with something that is
                            // not TLS (a plain port of a server that answers at once)
    tls_handshake_timeout,  // connected, but the TLS handshake did not end within
                            // connect_timeout: a plain Redis port (Redis waits for a command
                            // line), or a server that hung
    tls_handshake_failed,   // any other TLS failure (no common protocol or cipher, a bad record)
    closed_before_reply,    // a plain (redis://) connection was closed or reset before the first
                            // reply: what a TLS-only Redis port does to a client without TLS
    handshake_timeout,      // connected (and, for rediss://, the TLS handshake done), but the
                            // server did not answer the first commands within connect_timeout:
                            // a hung server, or a proxy whose backend is gone
    auth_required,          // the server wants a password and none was sent (NOAUTH)
    max_clients,            // the server is at maxclients: it refused the connection as it was
                            // made ("ERR max number of clients reached"); retried after the
                            // reconnect delay, as a slot may free up
    too_many_redirects,     // Redis Cluster: a request was redirected (MOVED, ASK) more times in a
                            // row than session::redirects_max: slots moving faster than a
                            // request can follow, or nodes that disagree on who serves them
    no_slot_map,            // Redis Cluster: no node answered CLUSTER SLOTS, or none serves the
                            // lock's slot (a cluster still forming, or one with slots
                            // uncovered)
    too_many_masters,       // Redis Cluster: its slot map names more masters than one client
                            // can reach (session::cluster_masters_max)
    io_uring_refused,       // async client built on io_uring (EDGELOCK_IO_URING): the kernel
                            // refused to set up a ring (a seccomp profile such as a
                            // container's, kernel.io_uring_disabled, a kernel before 5.6)
};

// True for the TLS codes (tls_files .. tls_handshake_failed): a refusal between this client
// and that server, which no other server or sentinel would change.
bool is_tls(transport_errc code) noexcept;

// A short, one-line, lower-case description ("reply timed out").
const char* describe(transport_errc code) noexcept;

// An error as the session keeps it, without std::error_code's category objects (which
// live in the C++ runtime, outside a sans-IO library): the lock's errc, a transport_errc, or
// an errno value from the operating system. The transports convert (edgelock/error_code.hpp).
struct [[nodiscard]] failure {
    enum class domain : std::uint8_t { none, lock, transport, system };
    domain from = domain::none;
    int value = 0;

    static failure of(errc code) noexcept;
    static failure of(transport_errc code) noexcept {
        return {domain::transport, static_cast<int>(code)};
    }
    static failure system(int errno_value) noexcept { return {domain::system, errno_value}; }
    explicit operator bool() const noexcept { return from != domain::none; }
    friend bool operator==(const failure& a, const failure& b) noexcept {
        return a.from == b.from && a.value == b.value;
    }
    friend bool operator!=(const failure& a, const failure& b) noexcept { return !(a == b); }
};

}  // namespace edgelock
