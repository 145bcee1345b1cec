// SPDX-License-Identifier: Apache-2.0
// edgelock CLI: the Redis instances a command asks, and how their failures read.
//
// `status`, `release` and `check` ask every --redis instance, or the master the sentinels
// name (one endpoint, opened through them), over blocking::command_connection.
//
// A Redis Cluster (--cluster) is read node by node, each node as a single instance: the
// admin connection refuses a cluster deployment, and a command about one key needs only the
// node that serves it. CLUSTER SLOTS from the first seed that answers names the nodes; every
// node is reached with that seed's credentials and TLS (a cluster shares one ACL and one TLS
// setup). `status` and `release` ask the master of the name's slot (following one MOVED, for a
// slot that moved meanwhile), `list` every master, `check` every master and replica.
#pragma once

#include <cstdint>
#include <string>
#include <system_error>
#include <vector>

#include "edgelock/deployment.hpp"
#include "edgelock/blocking_commands.hpp"
#include "options.hpp"

namespace edgelock::cli {

struct command_failure {
    std::error_code ec;
    std::string detail;  // Redis's own error text, for error replies
};

struct node {
    std::string address;      // host:port, for messages
    deployment target;        // one instance, or the sentinels
    bool in_cluster = false;  // a node of a Redis Cluster: its MOVED replies are followed
    // Set when the node could not be named (no seed answered, no master serves the slot):
    // open() fails with it.
    command_failure unknown;
};

// The deployment the options name (--redis, --sentinel with --master, or --cluster; TLS,
// --redis-timeout for connects and replies, --restart-guard), for the lock and the admin
// connections alike.
deployment deployment_of(const options& o);

std::string describe(const command_failure& f);
// True (with `f` filled) when `r` is an error reply.
bool error_reply(const blocking::command_reply& r, command_failure& f);
std::vector<node> nodes_of(const options& o);
// Opens a connection to `where` (its address then names the server reached); on failure fills
// `f`, with what Sentinel said when asked.
bool open(blocking::command_connection& c, node& where, const options& o, command_failure& f);
// The same for a report about the node (`status`, `check`): its address is noted in
// `r.address` whether the connection was made or not, a failure in `r.problem`.
template <class Report>
bool open_for(blocking::command_connection& c, node& where, const options& o, Report& r) {
    const bool opened = open(c, where, o, r.problem);
    r.address = where.address;
    return opened;
}

// One node CLUSTER SLOTS names.
struct cluster_member {
    std::string host;  // the answering seed's host when the reply left it empty
    std::uint16_t port = 0;
    std::string id;  // the node's cluster id, "" when the reply has none
};

// One entry of CLUSTER SLOTS: slots first..last, their master and its replicas.
struct cluster_range {
    std::uint16_t first = 0;
    std::uint16_t last = 0;
    cluster_member master;
    std::vector<cluster_member> replicas;
};

struct cluster_layout {
    node seed;  // the seed that answered (its URL carries the credentials and TLS)
    std::vector<cluster_range> ranges;
};

// Reads CLUSTER SLOTS from each --cluster seed in turn until one answers with a slot map.
// False when none does, with `f` the last seed's failure and `failed` that seed.
bool read_cluster(const options& o, cluster_layout& out, node& failed, command_failure& f);
// The cluster node at `member`, addressed as the seed that answered is (credentials, TLS).
node cluster_node(const cluster_layout& layout, const cluster_member& member);
// The master of --redis instance `i` ("host:port") when INFO replication there says it is a
// replica; "" when it is not, or cannot be asked. For messages: a lock connection that found a
// replica fails with not_master, and the operator wants to know where the master is.
std::string master_of_replica(const options& o, std::size_t i);

// A MOVED reply of a cluster node: `where` becomes the node it names. False for any other
// reply, and when `where` is not a cluster node.
bool follow_moved(const blocking::command_reply& r, node& where);

}  // namespace edgelock::cli
