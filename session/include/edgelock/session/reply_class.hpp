// SPDX-License-Identifier: Apache-2.0
// edgelock session: what a reply says about the node that sent it.
//
// One rule set for every transport. Most replies are answers for whoever asked; a few error
// replies say the connection is to the wrong node, or to one that cannot serve writes now.
// Those still reach the lock as the answer to its request (the write did not happen, which
// is a definite outcome), and then the connection is dropped and made again: through the
// sentinels, in a Sentinel deployment, so a failover is followed; after the reconnect delay
// otherwise.
//
//   READONLY    a replica refused a write       -> not_master
//   MASTERDOWN  a replica lost its master        -> master_down
//   LOADING     a restarted node is loading      -> loading
//   NOAUTH      the node wants AUTH              -> auth_required
//   WRONGPASS   credentials refused              -> auth_failed
// One refuses the connection itself: Redis sends it on connect, before reading a command, and
// closes. It answers whatever the client sent first (AUTH, SELECT, PING, a sentinel query),
// so the handshake checks it at every step; another try after the reconnect delay may find a
// free slot:
//   ERR max number of clients reached            -> max_clients
// NOSCRIPT (a flushed or restarted node's script cache) is an answer: the lock falls back to
// EVAL itself. Every other error reply is an answer too. Two of them say a Redis Cluster is
// settling, so the same request may succeed once it has (cluster_settling()):
//   TRYAGAIN     a slot half-migrated splits a request's keys between two masters
//   CLUSTERDOWN  the cluster has no master for the slot, or is down (a failover under way)
#pragma once

#include <string_view>

#include "edgelock/resp_reader.hpp"
#include "edgelock/session/transport_errc.hpp"

namespace edgelock::session {

enum class reply_class : std::uint8_t {
    answer,      // deliver; the connection stays
    wrong_node,  // deliver, then drop the connection with `reason` and reconnect (re-discover)
    refused_connection,  // the connection never served: end it with `reason`, retry after
                         // the reconnect delay
};

struct [[nodiscard]] reply_verdict {
    reply_class what = reply_class::answer;
    transport_errc reason = transport_errc::connection_closed;  // all but answer
};

reply_verdict classify(const reply_node& reply) noexcept;

// Whether an error reply's text is TRYAGAIN or CLUSTERDOWN: an answer a wait may outlast.
bool cluster_settling(std::string_view error_text) noexcept;

}  // namespace edgelock::session
