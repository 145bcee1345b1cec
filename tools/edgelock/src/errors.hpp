// SPDX-License-Identifier: Apache-2.0
// edgelock CLI: what a transport's std::error_code means to a shell user.
#pragma once

#include <string>
#include <string_view>
#include <system_error>

#include "edgelock/blocking_lock.hpp"
#include "edgelock/tls_options.hpp"

namespace edgelock::cli {

// The exit code for a failure to reach or use Redis: exit_unavailable (the network, timeouts,
// no quorum, no master), exit_redis_refused (AUTH, SELECT, error replies, protocol errors),
// exit_usage (configuration the transport refused), exit_internal (anything else).
int exit_code_for(std::error_code ec);
// The same for a failure that may carry Redis's answer (`redis_text`): a cluster's TRYAGAIN or
// CLUSTERDOWN is exit_unavailable, an answer another try later may not get.
int exit_code_for(std::error_code ec, std::string_view redis_text);

// A short lower-case phrase: "connection refused", "the key no longer holds our token". A TLS
// refusal for want of a trusted CA, with --tls-ca-dir given (note_tls_options), adds how to
// hash that directory, the likely cause.
std::string describe(std::error_code ec);

// describe(ec) of instance `instance` of `lock`, with Redis's own text when ec is an error
// reply: "Redis answered with an error: ERR ..." (escaped as quote.hpp's shown() does).
std::string describe(std::error_code ec, const blocking::lock& lock, std::size_t instance);

// The TLS options of this process's command, read by describe() for its hints. Called once,
// from main(), before any command runs.
void note_tls_options(const tls_options& tls);

// "host:port" of a redis:// URL, without credentials, for messages (escaped: quote.hpp).
std::string display_address(std::string_view url);

}  // namespace edgelock::cli
