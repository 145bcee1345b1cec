// SPDX-License-Identifier: Apache-2.0
// edgelock session: the address of a Redis node or Sentinel, and the one parser of
// redis:// and rediss:// URLs.
//
// Every place that names a node (the asio and blocking clients' instances and sentinels,
// the CLI's --redis and --sentinel, the master a Sentinel names) holds a node_address. It
// owns its bytes in fixed storage (limits.hpp), so it can be copied, kept and compared
// without a heap.
#pragma once

#include <cstdint>
#include <string_view>

#include "edgelock/errc.hpp"
#include "edgelock/session/fixed_text.hpp"
#include "edgelock/session/limits.hpp"

namespace edgelock::session {

inline constexpr std::uint16_t default_port = 6379;

struct node_address {
    fixed_text<host_bytes_max>
        host;  // a name, an IPv4 address, or an IPv6 address without brackets
    std::uint16_t port = default_port;
    fixed_text<user_bytes_max> user;          // empty: no ACL user (AUTH with the password alone)
    fixed_text<password_bytes_max> password;  // empty: no AUTH
    std::uint16_t db = 0;                     // SELECT this database after AUTH (0: none sent)
    bool tls = false;  // rediss://: the transport speaks TLS on this connection

    // Same node (host and port); credentials and db are not part of the identity. Hosts are
    // compared as same_host() does.
    bool same_node(const node_address& other) const noexcept;
};

// Whether two hosts, as written in addresses, name the same host without a name lookup:
// names compare without case and without a trailing dot ("LocalHost." is "localhost"), IPv4
// addresses by value in every form the resolver accepts for one ("127.1", "2130706433",
// "0x7f.0.0.1" are "127.0.0.1"), IPv6 addresses by value ("0:0::1" is "::1"). Different names
// of one host ("localhost", "127.0.0.1") need a lookup, and are not the same here.
bool same_host(std::string_view a, std::string_view b) noexcept;

struct [[nodiscard]] address_result {
    errc code = errc::ok;      // ok, or invalid_config with `problem` saying what is wrong
    const char* problem = "";  // one line, never containing the input (it may hold a password)
};

// Parses "redis://host", "redis://host:6380", "redis://:secret@host", "redis://secret@host",
// "redis://user:secret@host:6380/2", "redis://[::1]:6379", and a bare "host:port", into `out`.
// "rediss://" takes the same forms and sets `tls` (the transport's TLS options say what is
// verified; the host is the name the certificate must carry unless they name another).
// The last '@' ends the credentials, so a password may contain '@'.
// Returns invalid_config (leaving `out` unspecified) for: an unknown scheme, an empty host, a
// host with a space, '/', '@', '[' or ']' in it, a port outside 1..65535, a database outside
// 0..65535, stray bytes, or a URL, host, user or password longer than its limit (limits.hpp).
address_result parse_node_url(std::string_view text, node_address& out) noexcept;

// Sets host and port, keeping credentials, db and tls (a master a Sentinel named inherits the
// master credentials the user configured). Returns invalid_config for an empty or too long
// host, or a port of 0.
address_result set_host_port(node_address& address, std::string_view host,
                             std::uint16_t port) noexcept;

// "host:port", or "[v6]:port" for an IPv6 host: how messages name a node. Never shows
// credentials.
using address_text = fixed_text<host_bytes_max + 8>;
address_text format_address(const node_address& address) noexcept;

// Parses a decimal port, 1..65535, nothing but digits; returns false otherwise.
bool parse_port(std::string_view digits, std::uint16_t& out) noexcept;

}  // namespace edgelock::session
