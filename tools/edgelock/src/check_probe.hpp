// SPDX-License-Identifier: Apache-2.0
// edgelock CLI, `edgelock check` (check.hpp): what it reads of one Redis node. INFO's fields,
// the fsync policy and the snapshots (CONFIG GET), and the node's clock against this host's
// (TIME, with the round trip as error bar).
#pragma once

#include <string>

#include "edgelock/session/node_facts.hpp"
#include "nodes.hpp"

namespace edgelock::cli {

struct node_report {
    std::string address;
    command_failure problem;
    session::node_facts facts;      // INFO's fields, CONFIG GET appendfsync's policy
    std::string rdb;                // CONFIG GET save: "" for no snapshots
    long long clock_offset_ms = 0;  // the node's TIME against this host's clock
    long long round_trip_ms = 0;
};

// Reads the node at `where`; a node that cannot be read has its problem set.
node_report read_node(node where, const options& o);
// The role INFO names: "master", "slave" ("" when it names none).
std::string role_of(const node_report& r);
// A replica's master, host:port ("" for any other role).
std::string master_of(const node_report& r);

}  // namespace edgelock::cli
