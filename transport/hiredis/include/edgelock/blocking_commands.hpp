// SPDX-License-Identifier: Apache-2.0
// edgelock::blocking: plain Redis commands over the lock's own session, for tools.
//
// The CLI's `status` and `release` read and delete keys on behalf of other owners, so they do
// not take a lock; they still reach Redis exactly as the lock does: the same redis:// URLs,
// handshake (AUTH, SELECT, PING, ROLE behind Sentinel), Sentinel lookup (each sentinel once
// before giving up), timeouts and error codes (edgelock/session/connection.hpp). Blocking,
// one call at a time, not thread-safe. Replies are copied out (tools, not a hot path).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "edgelock/deployment.hpp"
#include "edgelock/error_code.hpp"
#include "edgelock/resp_reader.hpp"
#include "edgelock/tls_options.hpp"

namespace edgelock::blocking {

// Where the commands go: a deployment (edgelock/deployment.hpp) of one instance, or of
// sentinels and the master's name, checked by validate() as the locks' are. Its timeouts,
// reconnect delays (between sentinels) and TLS apply; no node is read (restart_guard,
// eviction and on_warning are the locks').
using command_target = deployment;

struct command_reply {
    reply_type type = reply_type::nil;
    std::string text;                     // simple, error and bulk strings
    std::int64_t integer = 0;             // integers
    std::vector<command_reply> elements;  // arrays
};

class command_connection {
public:
    command_connection();
    ~command_connection();
    command_connection(const command_connection&) = delete;
    command_connection& operator=(const command_connection&) = delete;

    // Connects and completes the handshake (through the sentinels when given). Returns {} or:
    // errc::invalid_config (open() twice), validate()'s codes for the deployment
    // (invalid_config, invalid_instances, transport_errc::tls_files: tls_error() says which
    // file), errc::invalid_instances for more than one instance (one connection asks one
    // server), errc::invalid_config for a cluster's seeds (give the node to ask as an instance:
    // the CLI reads the slot map and asks each node so), and the transports' errors (the TLS ones
    // for rediss://): std::errc::connection_refused, transport_errc::unknown_host, connect_timeout,
    // auth_failed, select_failed, no_master, not_master, loading, master_down, ...
    [[nodiscard]] std::error_code open(const command_target& target);
    // After open() returned tls_files: which file of target.tls was refused, and why.
    const tls_load_error& tls_error() const noexcept { return tls_error_; }
    // Sends one command and waits for its reply. An error reply is a reply (type error), not
    // a failure. Returns {} or: transport_errc::command_timeout, connection_closed, the
    // socket's errno, errc::protocol_error, reply_too_large, invalid_state (not open), ...
    [[nodiscard]] std::error_code call(const std::vector<std::string>& args, command_reply& out);
    // "host:port" of the server the commands go to (the master a sentinel named).
    std::string endpoint() const;

private:
    struct impl;
    std::unique_ptr<impl> impl_;
    tls_load_error tls_error_;
};

}  // namespace edgelock::blocking
