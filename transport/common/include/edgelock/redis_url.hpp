// edgelock: redis://[user:password@]host:port[/db] addresses.
//
// The transports and the CLI name Redis instances this way. Parsing copies nothing to the
// heap: the parts are views into the caller's string, which must outlive the result.
#pragma once

#include <cstdint>
#include <string_view>

#include "edgelock/errc.hpp"

namespace edgelock {

struct redis_url {
    std::string_view user;      // empty: no ACL user (AUTH with the password alone)
    std::string_view password;  // empty: no AUTH
    std::string_view host;      // a name, an IPv4 address, or an IPv6 address without brackets
    std::uint16_t port = 6379;
    std::uint16_t db = 0;
};

struct redis_url_result {
    errc code = errc::ok;  // ok, or invalid_config with `problem` saying what is wrong
    const char* problem = "";
    redis_url url;
};

// Parses "redis://host", "redis://host:6380", "redis://:secret@host", "redis://user:secret@host:6380/2",
// "redis://[::1]:6379". A bare "host:port" is accepted too. Returns invalid_config for an
// unknown scheme, an empty host, a port outside 1..65535, a db outside 0..65535, or stray bytes.
redis_url_result parse_redis_url(std::string_view text) noexcept;

}  // namespace edgelock
