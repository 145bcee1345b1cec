// SPDX-License-Identifier: Apache-2.0
// edgelock session: every capacity and bound of the Redis session, in one place, units last.
//
// The session allocates nothing; these constants size its fixed buffers (addresses live in
// fixed storage, so a session object's size is known at compile time) and bound what the
// transports accept from users and from servers.
#pragma once

#include <cstddef>
#include <cstdint>

namespace edgelock::session {

// Addresses. A DNS name is at most 253 bytes; an IPv6 literal (without brackets) fits too.
// Redis ACL user names and passwords have no limit of their own; these bound what a URL or a
// Sentinel reply may carry into the session.
inline constexpr std::size_t host_bytes_max = 253;
inline constexpr std::size_t user_bytes_max = 128;
inline constexpr std::size_t password_bytes_max = 256;
inline constexpr std::size_t url_bytes_max = 1024;
// The name a Sentinel deployment monitors the master under.
inline constexpr std::size_t master_name_bytes_max = 128;
// Sentinels one deployment may list.
inline constexpr std::size_t sentinels_max = 9;
// Redis Cluster: the masters one slot map holds, so the masters of a cluster a client can use
// (a map naming more fails its read: transport_errc::too_many_masters), and the redirects
// (MOVED, ASK) one request follows before it fails: a slot moving twice while one request is
// on its way is already rare; more is a loop.
inline constexpr std::size_t cluster_masters_max = 16;
// The seed nodes a cluster deployment may list (it reads the slot map from one of them).
inline constexpr std::size_t cluster_seeds_max = 9;
inline constexpr std::size_t redirects_max = 5;
// The reply nodes a cluster connection parses a reply into: CLUSTER SLOTS takes 1, then 3 +
// 5 per node of each slot range (13 with a replica), beyond the lock replies'
// edgelock::nodes_max (256, about 19 ranges) once a cluster is resharded. This holds about
// 315 ranges with one replica each (the reply's 64 KiB about as many): 128 KiB of nodes per
// async client, and per node connection of a blocking client's cluster lock.
inline constexpr std::size_t cluster_reply_nodes_max = 4096;

// An error reply's text kept for messages ("ERR ...", "OOM ..."): enough for Redis's own
// sentences, cut there so a reply cannot make a client's record of it grow.
inline constexpr std::size_t error_text_bytes_max = 160;

// Timeouts a user may configure: from 1 ms to a minute. A longer connect or command timeout
// only hides a dead server from the lock for longer than any lease it could still protect.
inline constexpr std::int64_t timeout_ms_min = 1;
inline constexpr std::int64_t timeout_ms_max = 60 * 1000;
// Reconnect delays: at most ten minutes between attempts.
inline constexpr std::int64_t reconnect_delay_ms_limit = 10 * 60 * 1000;

}  // namespace edgelock::session
