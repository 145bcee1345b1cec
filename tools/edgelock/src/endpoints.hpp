// SPDX-License-Identifier: Apache-2.0
// edgelock CLI: the Redis instances a command asks, and how their failures read.
//
// `status`, `release` and `check` ask every --redis instance, or the master the sentinels
// name (one endpoint, opened through them), over hiredis::command_connection.
#pragma once

#include <string>
#include <system_error>
#include <vector>

#include "edgelock/deployment.hpp"
#include "edgelock/hiredis_commands.hpp"
#include "options.hpp"

namespace edgelock::cli {

struct endpoint {
    std::string address;  // host:port, for messages
    deployment target;    // one instance, or the sentinels
};

// The deployment the options name (--redis or --sentinel with --master, TLS, --redis-timeout
// for connects and replies, --restart-guard), for the lock and the admin connections alike.
deployment deployment_of(const options& o);

struct failure {
    std::error_code ec;
    std::string detail;  // Redis's own error text, for error replies
};

std::string describe(const failure& f);
// True (with `f` filled) when `r` is an error reply.
bool error_reply(const hiredis::command_reply& r, failure& f);
std::vector<endpoint> endpoints_of(const options& o);
// Opens a connection to `ep` (its address then names the server reached); on failure fills
// `f`, with what Sentinel said when asked.
bool open(hiredis::command_connection& c, endpoint& ep, const options& o, failure& f);

}  // namespace edgelock::cli
