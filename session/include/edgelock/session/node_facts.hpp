// SPDX-License-Identifier: Apache-2.0
// edgelock session: what a Redis node says of its own process, read in the handshake.
//
// The restart guard (lock.hpp, "Restarts") needs to know when a node's process started and
// whether a restart keeps its data; the eviction check needs its memory limit and policy.
// A server connection asks (handshake.hpp, when read_node is set):
//   INFO                    uptime_in_seconds, run_id, redis_version, aof_enabled, maxmemory,
//                           maxmemory_policy (the default sections; naming several sections
//                           in one INFO is a syntax error before Redis 7.0)
//   CONFIG GET appendfsync  always / everysec / no (ACLs may refuse it)
// The INFO replication fields (role, master_host, master_port, connected_slaves, the slaveN
// lines' lag) are read too, for `edgelock check`: the lock itself does not use them.
// Decisions where Redis leaves room:
//   - uptime_in_seconds is whole seconds of a wall clock cached by the server, so it may be up
//     to a second more than the process has run: the start is taken a second later than it
//     says (node_start_of), the safe side for the guard. A missing uptime counts as 0: the
//     node is taken as just started.
//   - a run_id that changed on the same host and port counts as a start at the reading,
//     whatever the uptime: a long uptime there is another server behind the address (a
//     moved VIP, DNS), which never had this client's keys. (Clients that never saw the old
//     run_id cannot tell; the README says so.)
//   - a refused or unreadable CONFIG GET leaves the fsync policy unknown, and unknown is not
//     durable: the node is guarded like one without AOF.
//   - a refused INFO ends the connection (transport_errc::node_info_refused): the guard and
//     the eviction check cannot work without it, and silently counting the node would hide
//     that (turning both off stops the reading).
#pragma once

#include <cstdint>
#include <string_view>

#include "edgelock/lock.hpp"
#include "edgelock/resp_reader.hpp"
#include "edgelock/session/fixed_text.hpp"
#include "edgelock/session/limits.hpp"

namespace edgelock::session {

enum class fsync_policy : std::uint8_t { unknown, always, everysec, no };

// What a client does with a node that may evict keys (node_facts::may_evict): under memory
// pressure it can drop a lock key (another owner then takes the lock) or a fence counter.
enum class eviction_check : std::uint8_t {
    warn,    // connect, and tell the client's warning hook (one line, eviction_warning())
    refuse,  // fail the connection with transport_errc::evicting_node
    off,     // say nothing
};

inline constexpr std::size_t run_id_bytes = 40;
inline constexpr std::size_t version_bytes_max = 32;
inline constexpr std::size_t policy_bytes_max = 32;
inline constexpr std::size_t eviction_warning_bytes_max = 192;
inline constexpr std::size_t role_bytes_max = 16;

struct node_facts {
    std::int64_t uptime_s = 0;
    fixed_text<run_id_bytes> run_id;  // empty when not reported
    fixed_text<version_bytes_max> version;
    bool aof_enabled = false;
    fsync_policy fsync = fsync_policy::unknown;
    std::int64_t maxmemory_bytes = 0;  // 0: no limit
    fixed_text<policy_bytes_max> maxmemory_policy;
    fixed_text<role_bytes_max> role;         // "master" or "slave", as INFO spells it
    fixed_text<host_bytes_max> master_host;  // a replica's master (master_host, master_port)
    std::uint16_t master_port = 0;
    std::int64_t replicas = 0;           // connected_slaves
    std::int64_t replica_lag_s_max = 0;  // the largest lag=N of the slaveN lines

    // AOF with appendfsync always: a restart loses no acknowledged write.
    bool durable() const noexcept { return aof_enabled && fsync == fsync_policy::always; }
    // A memory limit with a policy that may evict keys (anything but noeviction).
    bool may_evict() const noexcept {
        return maxmemory_bytes > 0 && !maxmemory_policy.empty() &&
               maxmemory_policy.view() != "noeviction";
    }
};

// Reads the fields above from INFO's text ("field:value" lines, CRLF or LF). Fields it does
// not know are skipped; a value out of range (a negative uptime, a run_id not 40 hex
// digits, a text too long) is ignored, leaving the default. A number is decimal digits
// only: no sign, no space. Never fails.
node_facts parse_info(std::string_view text) noexcept;

// The policy from CONFIG GET appendfsync's reply (nodes as parse_reply gave them): unknown
// for an error, an empty array, or a value it does not know.
fsync_policy parse_fsync_policy(const reply_node* nodes, std::size_t count) noexcept;
// The policy a value of appendfsync names: unknown for any other text.
fsync_policy parse_fsync_policy(std::string_view value) noexcept;

// The start the lock is told (lock::on_node_started): the latest instant on the caller's
// clock the process can have started, from the uptime read at received_ms.
node_start node_start_of(const node_facts& facts, std::int64_t received_ms,
                         bool restarted) noexcept;

// One line for a node that may evict keys: "maxmemory 1048576 bytes with maxmemory-policy
// allkeys-lru may evict lock keys, fence counters and waiting lines; set maxmemory-policy
// noeviction". The same for volatile-* policies: every key a lock writes has a TTL (fence
// counters a week, a fair line's :queue and :qttl keys theirs).
fixed_text<eviction_warning_bytes_max> eviction_warning(const node_facts& facts) noexcept;

}  // namespace edgelock::session
