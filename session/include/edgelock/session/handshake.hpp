// SPDX-License-Identifier: Apache-2.0
// edgelock session: what a new connection says first, and how each answer is checked.
//
// Four kinds of connection, one handshake each:
//   lock_traffic to the Redis that carries lock traffic:
//              [AUTH] [SELECT] PING [ROLE] [INFO, CONFIG GET appendfsync] SCRIPT LOAD x4
//              (ROLE only when the node was named by a sentinel: a sentinel may not have
//              noticed a failover yet, and writes to a replica would only come back READONLY;
//              INFO and CONFIG GET only with read_node, for the restart guard: node_facts.hpp)
//   sentinel   to a sentinel, to learn the master: [AUTH] SENTINEL get-master-addr-by-name
//   watch      to a sentinel, to hear of failovers: [AUTH] SUBSCRIBE +switch-master
//   subscriber to the Redis that carries lock traffic, for fair locks' wake-ups (pubsub.hpp):
//              [AUTH] PING [ROLE]; its channels are subscribed once it is ready (a RESP2
//              connection in subscribed mode carries no lock commands, hence its own)
// The requests are written at once (pipelined) and checked in order as replies arrive.
// SCRIPT LOAD saves the NOSCRIPT round trip on a fresh or restarted node; it is best effort
// (an ACL without SCRIPT only costs that round trip: the lock falls back to EVAL itself).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "edgelock/resp_reader.hpp"
#include "edgelock/session/address.hpp"
#include "edgelock/session/transport_errc.hpp"

namespace edgelock::session {

enum class connection_kind : std::uint8_t { lock_traffic, sentinel, watch, subscriber };

enum class handshake_step : std::uint8_t {
    auth,
    select,
    ping,
    role,
    script_load,
    master_query,
    subscribe,
    node_info,
    fsync_policy,
    asking,  // not a handshake step: Redis Cluster's ASKING before a redirected request, the
             // connection's own reply all the same (lock_traffic.hpp's write_requests)
};

inline constexpr std::size_t handshake_steps_max = 10;

struct handshake_plan {
    std::array<handshake_step, handshake_steps_max> steps{};
    std::uint8_t count = 0;
};

struct handshake_request {
    connection_kind kind = connection_kind::lock_traffic;
    const node_address* to = nullptr;  // credentials and db come from here
    std::string_view master_name;      // sentinel, watch
    bool check_role = false;           // lock_traffic, subscriber: a sentinel named it
    bool read_node = false;            // lock_traffic: ask INFO and CONFIG GET appendfsync
};

struct [[nodiscard]] handshake_write {
    errc code = errc::ok;  // ok, or buffer_too_small (nothing usable was written)
    std::size_t size = 0;
    handshake_plan plan;
};

// Writes every request of the handshake into out[0..capacity).
handshake_write write_handshake(const handshake_request& request, char* out,
                                std::size_t capacity) noexcept;

// The reply to one step. Returns an empty failure to go on, or why the connection must be
// dropped: auth_failed (AUTH refused, or WRONGPASS to PING), auth_required (NOAUTH to PING:
// no password was sent), select_failed, loading or master_down (to PING), not_master (ROLE
// says replica), no_master (the sentinel knows no such master, or named an unusable address),
// node_info_refused (INFO refused), max_clients (a full node's refusal, at any step:
// reply_class.hpp), errc::error_reply (any other refusal of PING or SUBSCRIBE),
// errc::unexpected_reply (a reply of the wrong shape). The answers of node_info and fsync_policy
// are read by node_facts.hpp. master_query: on success sets `master`'s host and port (its
// credentials stay as given).
failure check_handshake_reply(handshake_step step, const reply_node* nodes, std::size_t count,
                              node_address& master) noexcept;

// A message on a watch connection: ["message", "+switch-master", "<name> <old-ip> <old-port>
// <new-ip> <new-port>"]. True, with `master`'s host and port set to the new master's (and
// `old`'s, when given, to the old one's), when it announces a new master for `master_name`;
// false for anything else (other masters, other messages).
bool parse_switch_master(const reply_node* nodes, std::size_t count, std::string_view master_name,
                         node_address& master, node_address* old = nullptr) noexcept;

}  // namespace edgelock::session
