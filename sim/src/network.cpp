// SPDX-License-Identifier: Apache-2.0
#include "edgelock/sim/network.hpp"

#include <algorithm>

#include "edgelock/assert.hpp"

namespace edgelock::sim {

void network::init(std::uint8_t clients, std::uint8_t nodes, std::uint8_t sentinels,
                   const world_params& params, std::uint64_t seed) {
    EDGELOCK_ASSERT(clients <= clients_max);
    EDGELOCK_ASSERT(nodes <= nodes_max);
    EDGELOCK_ASSERT(sentinels <= sentinel_processes_max);
    clients_ = clients;
    nodes_ = nodes;
    sentinels_ = sentinels;
    tail_per_million_ = params.tail_per_million;
    tail_us_max_ = params.tail_ms_max * 1000;
    const std::size_t count = pairs();
    paths_.clear();
    paths_.resize(lanes * count);
    for (std::size_t id = 0; id < paths_.size(); ++id) {
        path& l = paths_[id];
        l.jitter = prng::stream(seed, 1000 + id);
        const bool replication = is_node(path_from(id)) && is_node(path_to(id));
        // No long tail to or from the protected resource: a write delayed past the lease is
        // S2's fault, drawn there, not noise that every unfenced cell would have to survive.
        const bool resource =
            path_from(id) == resource_endpoint() || path_to(id) == resource_endpoint();
        l.tail = !replication && !resource;
        l.latency_us = replication ? l.jitter.between(params.repl_us_min, params.repl_us_max)
                                   : l.jitter.between(params.path_us_min, params.path_us_max);
        if (id >= count) l.latency_us = paths_[id % count].latency_us;  // the same route
    }
    connections_.assign(lanes * clients * servers(), tcp_state{});
}

std::int64_t network::send(std::uint8_t from, std::uint8_t to, message&& m, std::int64_t now_us,
                           std::int64_t extra_us) {
    path& l = paths_[path_id(from, to, m.on)];
    std::int64_t delay = l.latency_us + l.jitter.between(0, l.latency_us / 4) + extra_us;
    last_send_tailed_ = l.tail && tail_per_million_ > 0 && l.jitter.chance(tail_per_million_);
    if (last_send_tailed_)
        delay += l.jitter.between(1000, std::max<std::int64_t>(1000, tail_us_max_));
    const std::int64_t deliver = std::max(now_us + delay, l.last_deliver_us);
    l.last_deliver_us = deliver;
    m.deliver_us = deliver;
    l.queue.push_back(std::move(m));
    return deliver;
}

message network::take(std::size_t path_index) {
    path& l = paths_[path_index];
    EDGELOCK_ASSERT(!l.queue.empty());
    message m = std::move(l.queue.front());
    l.queue.pop_front();
    return m;
}

std::int64_t network::latency_us(std::uint8_t from, std::uint8_t to) const noexcept {
    return paths_[path_id(from, to)].latency_us;
}

std::int64_t network::close_arrives_us(std::uint8_t from, std::uint8_t to, lane on,
                                       std::int64_t now_us) const noexcept {
    const path& p = paths_[path_id(from, to, on)];
    return std::max(now_us + p.latency_us, p.last_deliver_us + 1);
}

network::tcp_state& network::conn(std::uint8_t client, std::uint8_t server, lane on) noexcept {
    EDGELOCK_ASSERT(client < clients_ && server < servers());
    const std::size_t pair = static_cast<std::size_t>(client) * servers() + server;
    return connections_[static_cast<std::size_t>(on) * clients_ * servers() + pair];
}

std::uint32_t network::open(std::uint8_t client, std::uint8_t server, lane on) noexcept {
    tcp_state& c = conn(client, server, on);
    c.epoch = next_epoch_++;
    c.open = true;
    c.drained_at_us = -1;
    return c.epoch;
}

}  // namespace edgelock::sim
