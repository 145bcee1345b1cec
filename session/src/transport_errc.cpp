#include "edgelock/session/transport_errc.hpp"

namespace edgelock {

const char* describe(transport_errc code) noexcept {
    switch (code) {
        case transport_errc::unknown_host: return "unknown host";
        case transport_errc::connect_timeout: return "connect timed out";
        case transport_errc::command_timeout: return "reply timed out";
        case transport_errc::connection_closed: return "connection closed by the server";
        case transport_errc::auth_failed: return "authentication refused";
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
        case transport_errc::node_info_refused: return "INFO refused: the restart guard needs it";
        case transport_errc::evicting_node: return "the node may evict keys (maxmemory-policy is not noeviction)";
    }
    return "unknown transport error";
}

failure failure::of(errc code) noexcept {
    if (code == errc::ok) return {};
    return {domain::lock, static_cast<int>(code)};
}

}  // namespace edgelock
