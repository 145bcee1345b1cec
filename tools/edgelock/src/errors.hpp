// edgelock CLI: what a transport's std::error_code means to a shell user.
#pragma once

#include <string>
#include <string_view>
#include <system_error>

namespace edgelock::cli {

// The exit code for a failure to reach or use Redis: exit_unavailable (the network, timeouts,
// no quorum, no master), exit_redis_refused (AUTH, SELECT, error replies, protocol errors),
// exit_usage (configuration the transport refused), exit_internal (anything else).
int exit_code_for(std::error_code ec);

// A short lower-case phrase: "connection refused", "the key no longer holds our token".
std::string describe(std::error_code ec);

// "host:port" of a redis:// URL, without credentials, for messages (escaped: quote.hpp).
std::string display_address(std::string_view url);

}  // namespace edgelock::cli
