// SPDX-License-Identifier: Apache-2.0
#include "edgelock/session/transport_errc.hpp"

namespace edgelock {

const char* describe(transport_errc code) noexcept {
    switch (code) {
        case transport_errc::unknown_host: return "unknown host";
        case transport_errc::connect_timeout: return "connect timed out";
        case transport_errc::command_timeout: return "reply timed out";
        case transport_errc::connection_closed: return "connection closed by the server";
        case transport_errc::auth_failed: return "authentication refused: wrong password or user";
        case transport_errc::select_failed: return "SELECT of the database refused";
        case transport_errc::not_master: return "the server is a replica, not the master";
        case transport_errc::master_down: return "the replica's master is down (MASTERDOWN)";
        case transport_errc::loading: return "the server is loading its dataset (LOADING)";
        case transport_errc::no_master: return "no sentinel named a reachable master";
        case transport_errc::master_changed: return "sentinel announced a new master";
        case transport_errc::out_of_memory: return "out of memory";
        case transport_errc::thread_failed: return "helper thread could not start";
        case transport_errc::not_open: return "client not open";
        case transport_errc::already_open: return "client already open";
        case transport_errc::table_full: return "lock table full";
        case transport_errc::invalid_handle: return "invalid lock handle";
        case transport_errc::operation_in_progress: return "operation already in progress";
        case transport_errc::lock_busy: return "lock held or busy";
        case transport_errc::node_info_refused:
            return "INFO refused: the restart guard and the eviction check read it";
        case transport_errc::evicting_node:
            return "the node may evict keys (maxmemory-policy is not noeviction)";
        case transport_errc::tls_files:
            return "TLS CA, certificate or key file could not be loaded";
        case transport_errc::tls_untrusted:
            return "TLS: the server's certificate is not signed by a trusted CA";
        case transport_errc::tls_name_mismatch:
            return "TLS: the server's certificate does not name this host";
        case transport_errc::tls_expired:
            return "TLS: the server's certificate has expired or is not yet valid";
        case transport_errc::tls_client_certificate_required:
            return "TLS: the server requires a client certificate it accepts";
        case transport_errc::tls_not_offered:
            return "TLS: the server did not answer in TLS (a plain port?)";
        case transport_errc::tls_handshake_timeout:
            return "TLS: no handshake within the connect timeout (a plain port, or a hung server)";
        case transport_errc::tls_handshake_failed: return "TLS handshake failed";
        case transport_errc::closed_before_reply:
            return "the server closed the connection before its first reply (a TLS port? use "
                   "rediss://)";
        case transport_errc::handshake_timeout:
            return "connected, but the server did not answer within the connect timeout";
        case transport_errc::auth_required:
            return "authentication required: the server wants a password and none was given";
        case transport_errc::max_clients:
            return "Redis refused the connection: max number of clients reached";
        case transport_errc::too_many_redirects:
            return "Redis Cluster: the request was redirected too many times in a row";
        case transport_errc::no_slot_map:
            return "Redis Cluster: no node serves the lock's slot (or none answered CLUSTER SLOTS)";
        case transport_errc::too_many_masters:
            return "Redis Cluster: more masters than one client can reach (16)";
        case transport_errc::io_uring_refused:
            return "io_uring refused by the kernel (this client was built with "
                   "EDGELOCK_IO_URING=ON; rebuild without it, or allow io_uring_setup)";
    }
    return "unknown transport error";
}

bool is_tls(transport_errc code) noexcept {
    return code >= transport_errc::tls_files && code <= transport_errc::tls_handshake_failed;
}

failure failure::of(errc code) noexcept {
    if (code == errc::ok) return {};
    return {domain::lock, static_cast<int>(code)};
}

}  // namespace edgelock
