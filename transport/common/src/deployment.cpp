// SPDX-License-Identifier: Apache-2.0
#include "edgelock/deployment.hpp"

#include "edgelock/assert.hpp"
#include "edgelock/error_code.hpp"
#include "edgelock/limits.hpp"
#include "edgelock/session/limits.hpp"
#include "edgelock/tls_context.hpp"

namespace edgelock {
namespace {

// Where the deployment is: counts and Sentinel fields, before anything is parsed.
errc check_shape(const deployment& given) noexcept {
    const bool by_sentinel = !given.sentinels.empty();
    const bool by_cluster = !given.cluster.empty();
    const int kinds =
        (given.instances.empty() ? 0 : 1) + (by_sentinel ? 1 : 0) + (by_cluster ? 1 : 0);
    if (kinds != 1) return errc::invalid_config;
    if (by_cluster) {
        return given.cluster.size() > session::cluster_seeds_max ? errc::invalid_config : errc::ok;
    }
    if (by_sentinel) {
        if (given.master_name.empty()) return errc::invalid_config;
        if (given.master_name.size() > session::master_name_bytes_max) return errc::invalid_config;
        if (given.sentinels.size() > session::sentinels_max) return errc::invalid_config;
        return errc::ok;
    }
    const std::size_t count = given.instances.size();
    if (count % 2 == 0 || count > instances_max) return errc::invalid_instances;
    return errc::ok;
}

session::timing timing_of(const deployment& given) noexcept {
    session::timing times;
    times.connect_timeout_ms = given.connect_timeout_ms;
    times.command_timeout_ms = given.command_timeout_ms;
    times.reconnect_delay_min_ms = given.reconnect_delay_min_ms;
    times.reconnect_delay_max_ms = given.reconnect_delay_max_ms;
    return times;
}

errc parse_all(const std::vector<std::string>& urls, std::vector<session::node_address>& out) {
    out.clear();
    out.reserve(urls.size());
    for (const std::string& url : urls) {
        session::node_address address;
        if (const errc code = session::parse_node_url(url, address).code; code != errc::ok) {
            return code;
        }
        out.push_back(address);
    }
    return errc::ok;
}

// Whether two addresses name one node: Redlock's instances must be independent servers, and
// one server given twice would hold the lock as two votes of its quorum.
bool any_node_twice(const std::vector<session::node_address>& nodes) noexcept {
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        for (std::size_t j = i + 1; j < nodes.size(); ++j) {
            if (nodes[i].same_node(nodes[j])) return true;
        }
    }
    return false;
}

}  // namespace

session::connection_setup validated_deployment::instance_setup(std::size_t i,
                                                               std::uint64_t seed) const noexcept {
    EDGELOCK_ASSERT(i < instance_count);
    session::connection_setup setup;
    setup.times = times;
    setup.master = &master;
    if (by_sentinel()) {
        setup.sentinels = sentinels.data();
        setup.sentinel_count = sentinels.size();
        setup.master_name = master_name;
    } else {
        setup.node = &instances[i];
        setup.refuse_replica = true;  // named directly: a replica can never hold a lock
    }
    setup.seed = seed;
    setup.read_node = read_node;
    setup.refuse_evicting = refuse_evicting;
    return setup;
}

session::connection_setup validated_deployment::watch_setup(std::uint64_t seed) const noexcept {
    EDGELOCK_ASSERT(by_sentinel());
    session::connection_setup setup = instance_setup(0, seed);
    setup.kind = session::connection_kind::watch;
    setup.node = nullptr;
    setup.read_node = false;
    setup.refuse_evicting = false;
    return setup;
}

session::connection_setup validated_deployment::node_setup(const session::node_address& node,
                                                           std::uint64_t seed) const noexcept {
    session::connection_setup setup;
    setup.times = times;
    setup.node = &node;
    setup.seed = seed;
    setup.read_node = read_node;
    setup.refuse_evicting = refuse_evicting;
    return setup;
}

std::error_code validate(const deployment& given, validated_deployment& out, tls_context& tls) {
    if (const errc code = check_shape(given); code != errc::ok) return make_error_code(code);
    out.times = timing_of(given);
    if (session::check_timing(out.times) != errc::ok) return make_error_code(errc::invalid_config);
    if (const errc code = parse_all(given.instances, out.instances); code != errc::ok) {
        return make_error_code(code);
    }
    if (any_node_twice(out.instances)) return make_error_code(errc::invalid_instances);
    if (const errc code = parse_all(given.sentinels, out.sentinels); code != errc::ok) {
        return make_error_code(code);
    }
    if (const errc code = parse_all(given.cluster, out.seeds); code != errc::ok) {
        return make_error_code(code);
    }
    for (const session::node_address& seed : out.seeds) {
        if (seed.db != 0) return make_error_code(errc::invalid_config);  // a cluster has db 0 only
    }
    out.master = session::node_address{};
    if (!out.master.user.assign(given.master_user) ||
        !out.master.password.assign(given.master_password)) {
        return make_error_code(errc::invalid_config);
    }
    out.master.db = given.master_db;
    out.master_name = given.master_name;
    out.instance_count = out.by_sentinel() || out.by_cluster() ? 1 : out.instances.size();
    out.read_node = given.restart_guard || given.eviction != session::eviction_check::off;
    out.refuse_evicting = given.eviction == session::eviction_check::refuse;
    const std::vector<session::node_address>& servers = out.by_sentinel()  ? out.sentinels
                                                        : out.by_cluster() ? out.seeds
                                                                           : out.instances;
    return load_for(tls, given.tls, servers.data(), servers.size());
}

errc check_lock(const deployment& where, const lock_config& lock) noexcept {
    const bool one_master = !where.sentinels.empty() || !where.cluster.empty();
    const std::size_t instances = one_master ? 1 : where.instances.size();
    if (lock.fair && instances != 1) return errc::invalid_instances;
    if (lock.replicas_to_wait > 0 && resolve(lock).replica_wait_ms >= where.command_timeout_ms) {
        return errc::invalid_config;
    }
    return errc::ok;
}

}  // namespace edgelock
