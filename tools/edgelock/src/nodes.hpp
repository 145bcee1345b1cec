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

struct node {
    std::string address;  // host:port, for messages
    deployment target;    // one instance, or the sentinels
};

// The deployment the options name (--redis or --sentinel with --master, TLS, --redis-timeout
// for connects and replies, --restart-guard), for the lock and the admin connections alike.
deployment deployment_of(const options& o);

struct command_failure {
    std::error_code ec;
    std::string detail;  // Redis's own error text, for error replies
};

std::string describe(const command_failure& f);
// True (with `f` filled) when `r` is an error reply.
bool error_reply(const hiredis::command_reply& r, command_failure& f);
std::vector<node> nodes_of(const options& o);
// Opens a connection to `where` (its address then names the server reached); on failure fills
// `f`, with what Sentinel said when asked.
bool open(hiredis::command_connection& c, node& where, const options& o, command_failure& f);

}  // namespace edgelock::cli
