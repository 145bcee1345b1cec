// SPDX-License-Identifier: Apache-2.0
// edgelock: the Redis deployment a client talks to, and the one check of it.
//
// Both clients and the CLI describe where Redis is and how to reach it with this struct:
// the async client's client_config and the blocking client's lock_options derive from it
// (so `config.instances`, `options.command_timeout_ms` and the rest read as before), and the
// CLI's admin connection (blocking::command_connection) opens one. validate() is the only
// place a deployment is checked, so every client answers the same bad input with the same
// code; check_lock() is the only check of a lock against the deployment it runs on.
//
// Fields come in the same order everywhere: where (instances or Sentinel), TLS, timing,
// then what each connection reads of its node. Durations are integers, their unit last.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "edgelock/errc.hpp"
#include "edgelock/lock.hpp"
#include "edgelock/session/address.hpp"
#include "edgelock/session/node_facts.hpp"
#include "edgelock/session/reconnect.hpp"
#include "edgelock/session/connection.hpp"
#include "edgelock/tls_options.hpp"

namespace edgelock {

class tls_context;

struct deployment {
    // Either Redis instances, as redis://[user:password@]host[:port][/db] URLs (rediss:// for
    // TLS): one for a single server, or an odd number up to edgelock::instances_max for
    // Redlock; every lock spans all of them ...
    std::vector<std::string> instances;
    // ... or Sentinel: the sentinels' URLs (up to session::sentinels_max; credentials in a
    // URL authenticate to that sentinel) and the monitored master's name (up to
    // session::master_name_bytes_max bytes). The master is reached with master_user,
    // master_password and master_db, and looked up again (the next sentinel first) whenever
    // its connection ends for any reason.
    std::vector<std::string> sentinels;
    std::string master_name;
    std::string master_user;      // up to session::user_bytes_max bytes
    std::string master_password;  // up to session::password_bytes_max bytes
    std::uint16_t master_db = 0;
    // ... or Redis Cluster: seed nodes' URLs (any nodes of one cluster, up to
    // session::cluster_seeds_max; database 0, the only one a cluster has). The slot map is read
    // from a seed with CLUSTER SLOTS; every lock is a single-instance lock on the master of
    // its name's slot, reached with the seeds' credentials and TLS (a cluster shares one ACL
    // and one TLS setup: the first seed's are used for every node). Redirects (MOVED, ASK)
    // are followed, and the map read again after a MOVED or a lost connection
    // (edgelock/session/cluster_route.hpp).
    std::vector<std::string> cluster;

    // rediss:// addresses (instances, sentinels, and the masters TLS sentinels name): what is
    // verified and which client certificate is shown (edgelock/tls_options.hpp). The files
    // are read by validate(), only when some address is rediss://. The TLS handshake counts
    // toward connect_timeout_ms.
    tls_options tls;

    // Timing (edgelock/session/reconnect.hpp, whose defaults these are). Both timeouts lie
    // in session::timeout_ms_min..timeout_ms_max (1 ms to 60 s). connect_timeout_ms bounds
    // one attempt: name lookup, connect, TLS and the whole handshake (and the Sentinel
    // query). command_timeout_ms is the longest one reply may take before its connection is
    // taken as dead, dropped and made again; it must exceed any lock's WAIT timeout
    // (check_lock()). After a failed attempt the next waits a delay drawn with full jitter
    // in [1 ms, cap], the cap doubling from reconnect_delay_min_ms to reconnect_delay_max_ms
    // (1 <= min <= max <= session::reconnect_delay_ms_limit, ten minutes).
    std::int64_t connect_timeout_ms = session::timing{}.connect_timeout_ms;
    std::int64_t command_timeout_ms = session::timing{}.command_timeout_ms;
    std::int64_t reconnect_delay_min_ms = session::timing{}.reconnect_delay_min_ms;
    std::int64_t reconnect_delay_max_ms = session::timing{}.reconnect_delay_max_ms;

    // The restart guard (edgelock/lock.hpp, "Restarts"): every connection reads its node's
    // uptime, run_id and persistence (INFO, CONFIG GET appendfsync) before any lock request,
    // and a node that restarted without AOF appendfsync always counts toward a quorum only
    // lock_config::restart_guard_ms (default ttl + drift) after its start. An ACL refusing
    // INFO fails every connection with transport_errc::node_info_refused; one refusing
    // CONFIG GET makes every node count as not durable. false: no node is read, no lock is
    // guarded, whatever restart_guard_ms says.
    bool restart_guard = true;

    // Eviction: a node with maxmemory set and a policy other than noeviction may evict lock
    // keys (another owner then takes the lock) and fence counters. The same read tells:
    // warn (the default) calls on_warning(instance, one line), refuse fails every connection
    // to such a node with transport_errc::evicting_node, off says nothing. Which thread calls
    // on_warning is each client's (its header says); it must not call into the client. Run
    // Redis with maxmemory-policy noeviction.
    session::eviction_check eviction = session::eviction_check::warn;
    std::function<void(std::size_t instance, std::string_view warning)> on_warning;
};

// A deployment validate() accepted, parsed for the session's connections. The setups handed out
// point into it: it must stay where it is, unchanged, while a connection uses one.
struct validated_deployment {
    std::vector<session::node_address> instances;  // without Sentinel: one per URL, in order
    std::vector<session::node_address> sentinels;  // with Sentinel: one per URL, in order
    std::vector<session::node_address> seeds;      // Redis Cluster: one per URL, in order
    session::node_address master;                  // Sentinel: the master's user, password, db
    std::string master_name;
    session::timing times;
    std::size_t instance_count = 0;  // instances.size(), or 1 (the master) behind Sentinel or
                                     // in a cluster (the master of each lock's slot)
    bool read_node = false;          // restart_guard on, or an eviction check
    bool refuse_evicting = false;    // eviction_check::refuse

    bool by_sentinel() const noexcept { return !sentinels.empty(); }
    bool by_cluster() const noexcept { return !seeds.empty(); }
    // The setup of the lock connection to instance `i` (< instance_count): the server, or
    // the sentinels and the master's name; the timing; the node reading. `seed` draws its
    // reconnect jitter (distinct per connection). The caller adds its in-flight storage, and
    // changes the kind for a subscriber or watch connection.
    session::connection_setup instance_setup(std::size_t i, std::uint64_t seed) const noexcept;
    // Sentinel: the setup of the watch connection (a sentinel's +switch-master), as
    // instance_setup's; it reads no node and carries no lock request.
    session::connection_setup watch_setup(std::uint64_t seed) const noexcept;
    // Redis Cluster: the setup of the lock connection to `node` (a seed, or a node of the slot
    // map), as instance_setup's.
    session::connection_setup node_setup(const session::node_address& node,
                                         std::uint64_t seed) const noexcept;
};

// The one check of a deployment, run by both clients' open() and the CLI's
// command_connection::open(); on success fills `out` and, when any address is rediss://,
// loads `tls` from given.tls. The first failure, in this order, decides the code:
//   errc::invalid_config     not exactly one of instances, sentinels and cluster given;
//                            with sentinels, master_name empty or too long, or more than
//                            session::sentinels_max of them; more than
//                            session::cluster_seeds_max cluster seeds
//   errc::invalid_instances  an even number of instances, or more than instances_max
//   errc::invalid_config     a timeout or reconnect delay out of its range (see above)
//   errc::invalid_config     a URL that does not parse (session::parse_node_url), master
//                            credentials longer than session/limits.hpp allows, a cluster
//                            seed with a database other than 0
//   errc::invalid_instances  two instances naming one node (the same host and port,
//                            whatever their credentials or database): one server would
//                            count twice toward Redlock's quorum. Names are compared as
//                            written ("localhost" and "127.0.0.1" are not resolved).
//   transport_errc::tls_files  a file of given.tls cannot be loaded (missing, unreadable,
//                            no certificate in it, a key that does not match its
//                            certificate): tls.load_error() says which, and why
//   transport_errc::out_of_memory  OpenSSL could not make its context
// On failure `out` is unspecified.
[[nodiscard]] std::error_code validate(const deployment& given, validated_deployment& out,
                                       tls_context& tls);

// The one check of a lock against the deployment it runs on (after validate() accepted the
// deployment; the lock's own fields are the core's to check, lock::configure()). The lock's
// defaults are the core's (resolve()). Returns:
//   errc::ok
//   errc::invalid_instances  fair set on a deployment of several instances (Redlock has no
//                            single line to wait in); a cluster has one per lock: fair is
//                            allowed
//   errc::invalid_config     replicas_to_wait set and the WAIT timeout (replica_wait_ms, by
//                            default half the attempt timeout) not below command_timeout_ms:
//                            WAIT holds the connection while it waits, and a wait longer
//                            than the command timeout would get a healthy one dropped
[[nodiscard]] errc check_lock(const deployment& where, const lock_config& lock) noexcept;

}  // namespace edgelock
