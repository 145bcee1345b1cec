// SPDX-License-Identifier: Apache-2.0
// The world's faults: a schedule's fault taking effect (on a client, its paths, a clock; a
// node's go to world_nodes.cpp), the paths it slows, cuts or drops messages on, the
// connections it breaks, and when its effects have healed.
#include <algorithm>
#include <string>

#include "edgelock/sim/world.hpp"
#include "world_text.hpp"

namespace edgelock::sim {

// ---- faults -------------------------------------------------------------------------------

void world::activate(std::size_t index) {
    if (fired_[index]) return;
    fired_[index] = true;
    const fault& f = spec_.faults[index];
    mix(0xfa000000u + index);
    const bool client_ok = !f.on_node && f.target < params_.clients;
    const bool node_ok = f.on_node && f.target < config_.nodes;
    const std::int64_t duration_us = f.duration_ms * 1000;
    const std::int64_t amount_us = f.amount * 1000;
    std::int64_t end_us = now_us_;
    if (f.on_node && (f.kind == fault_kind::crash || f.kind == fault_kind::power_off ||
                      f.kind == fault_kind::pause || f.kind == fault_kind::isolate ||
                      f.kind == fault_kind::evict || f.kind == fault_kind::migrate ||
                      f.kind == fault_kind::replace)) {
        if (node_ok) activate_node_fault(f);
        return;
    }
    switch (f.kind) {
        case fault_kind::pause:
            if (!client_ok) return;
            end_us = now_us_ + duration_us;
            clients_[f.target]->pause(end_us);
            events_.push(end_us, scheduler::kind::client_resume, f.target, 0);
            break;
        case fault_kind::slow_link:
        case fault_kind::partition:
        case fault_kind::loss:
            if (!client_ok) return;
            end_us = now_us_ + duration_us;
            active_.push_back(active_fault{index, now_us_, end_us, 0});
            if (f.kind == fault_kind::slow_link) end_us += amount_us;
            break;
        case fault_kind::drop_reply:
            if (!client_ok) return;
            active_.push_back(active_fault{index, now_us_, never_us, f.count});
            break;
        case fault_kind::repl_lag:
            end_us = now_us_ + duration_us;
            active_.push_back(active_fault{index, now_us_, end_us, 0});
            end_us += amount_us;
            break;
        case fault_kind::slow_subscribe:
            // What the lock must survive without help: no healing to wait for.
            if (!client_ok) return;
            active_.push_back(active_fault{index, now_us_, now_us_ + duration_us, 0});
            if (f.reset) reset_subscribers(f);
            fault_begins(f, now_us_ + duration_us + amount_us);
            return;
        case fault_kind::crash:
        case fault_kind::power_off:
        case fault_kind::isolate:
        case fault_kind::evict:
        case fault_kind::migrate:
        case fault_kind::replace: return;  // on a client: nothing to do
        case fault_kind::wall_step:
        case fault_kind::clock_rate:
            if (!node_ok && !client_ok) return;
            change_clock(f);
            break;
    }
    fault_begins(f, end_us);
    // A slow path only delays: the fair checks stretch their bounds by it instead, unless it
    // is slow enough to time connections out (a waiter giving up may then lose its release
    // with its connection, and its entry holds the line until it expires, as after any fault
    // that breaks connections); a paused client is not judged while paused, and its lease
    // running out is what the others' re-checks are for (world_pubsub.cpp).
    const std::int64_t fair_heal_before = fair_heal_us_;
    heal_at(end_us);
    const bool only_delays = f.kind == fault_kind::slow_link && !times_out(2 * amount_us);
    if (only_delays || f.kind == fault_kind::pause) fair_heal_us_ = fair_heal_before;
}

// The fault is in force until `end_us`: on the timeline's pictures, and for the kept check.
void world::fault_begins(const fault& f, std::int64_t end_us) {
    mark(world_mark::kind::fault, f.on_node, f.target, end_us, to_text(f));
    disturb_by(f, end_us);
}

// A wall step, or a clock's rate changed, on a node or a client.
void world::change_clock(const fault& f) {
    if (f.kind == fault_kind::wall_step) {
        process_clocks& clocks = f.on_node ? node_clocks_[f.target] : clients_[f.target]->clocks();
        clocks.wall.step(now_us_, f.amount * 1000);
        return;
    }
    const auto ppm =
        static_cast<std::int32_t>(std::clamp<std::int64_t>(f.amount, -500'000, 500'000));
    process_clocks& clocks = f.on_node ? node_clocks_[f.target] : clients_[f.target]->clocks();
    (f.wall ? clocks.wall : clocks.mono).set_rate(now_us_, ppm);
    if (!f.on_node) clients_[f.target]->clocks_changed();
}

// A fault point fired: a fault concerning the client, in force for what it delays
// (lasting_us) and what a broken connection takes to be noticed and made again (settle_us),
// and healed then (the liveness window and the fair checks run from there).
void world::fault_point_fired(std::uint8_t client, const char* what, std::int64_t lasting_us) {
    disturbance d;
    d.client = client;
    d.to_us = now_us_ + lasting_us + settle_us();
    disturb(d);
    heal_at(d.to_us);
    if (recording()) note_client(client, what);
}

void world::heal_at(std::int64_t end_us) {
    heal_us_ = std::max(heal_us_, end_us);
    fair_heal_us_ = std::max(fair_heal_us_, end_us);
    end_us_ = std::max(end_us_, heal_us_ + params_.liveness_window_ms * 1000);
}

bool world::partitioned(std::uint8_t client, std::uint8_t server) const noexcept {
    const bool node = net_.is_node_server(server);
    for (const active_fault& a : active_) {
        const fault& f = spec_.faults[a.index];
        const bool peer = node ? ((f.nodes >> server) & 1u) != 0 : f.sentinels;
        if (f.kind == fault_kind::partition && f.target == client && peer &&
            now_us_ >= a.start_us && now_us_ < a.end_us) {
            return true;
        }
    }
    return false;
}

bool world::lose_message(std::uint8_t client, std::uint8_t server, bool& reset) {
    if (!net_.is_node_server(server)) return false;
    for (const active_fault& a : active_) {
        const fault& f = spec_.faults[a.index];
        if (f.kind != fault_kind::loss || f.target != client || ((f.nodes >> server) & 1u) == 0 ||
            now_us_ < a.start_us || now_us_ >= a.end_us) {
            continue;
        }
        const auto rate =
            static_cast<std::uint32_t>(std::clamp<std::int64_t>(f.amount, 0, 1'000'000));
        if (rng_.chance(rate)) {
            reset = f.reset;
            return true;
        }
    }
    return false;
}

std::int64_t world::path_extra_us(std::uint8_t client, std::uint8_t server,
                                  bool resource) const noexcept {
    if (!resource && !net_.is_node_server(server)) return 0;
    std::int64_t extra = 0;
    for (const active_fault& a : active_) {
        const fault& f = spec_.faults[a.index];
        if (f.kind != fault_kind::slow_link || f.target != client || now_us_ < a.start_us ||
            now_us_ >= a.end_us) {
            continue;
        }
        if (resource ? f.resource : ((f.nodes >> server) & 1u) != 0)
            extra += std::max<std::int64_t>(0, f.amount) * 1000;
    }
    return extra;
}

std::int64_t world::replication_extra_us(std::uint8_t replica) const noexcept {
    std::int64_t extra = 0;
    for (const active_fault& a : active_) {
        const fault& f = spec_.faults[a.index];
        if (f.kind == fault_kind::repl_lag && ((f.nodes >> replica) & 1u) != 0 &&
            now_us_ >= a.start_us && now_us_ < a.end_us) {
            extra += std::max<std::int64_t>(0, f.amount) * 1000;
        }
    }
    return extra;
}

void world::break_connection(std::uint8_t client, std::uint8_t server, bool reset, const char* why,
                             lane on) {
    std::uint32_t epoch = 0;
    if (!take_connection(client, server, on, 0xb0000000u, epoch)) return;
    if (reset) {
        const std::int64_t at = now_us_ + net_.latency_us(net_.server_endpoint(server), client);
        clients_[client]->connection_reset(server, epoch, at);
    }
    note_broken(client, server, why, reset ? " (reset)" : " (silent)", on);
}

// An orderly close by the server: the client reads what was sent before it, then the end.
void world::close_from_server(std::uint8_t client, std::uint8_t server, const char* why, lane on) {
    std::uint32_t epoch = 0;
    if (!take_connection(client, server, on, 0xb1000000u, epoch)) return;
    const std::int64_t at =
        net_.close_arrives_us(net_.server_endpoint(server), client, on, now_us_);
    net_.conn(client, server, on).drained_at_us = at;
    clients_[client]->connection_reset(server, epoch, at);
    note_broken(client, server, why, " (closed)", on);
}

// The open connection ends on the world's side (the node forgets it); its epoch, or false
// when it was not open. `how` tells the ways of ending apart in the trace hash.
bool world::take_connection(std::uint8_t client, std::uint8_t server, lane on, std::uint32_t how,
                            std::uint32_t& epoch) {
    network::tcp_state& conn = net_.conn(client, server, on);
    if (!conn.open) return false;
    conn.open = false;
    epoch = conn.epoch;
    forget_connection(client, server, on);
    mix(how + client * 16u + server + (on == lane::subscriber ? 0x100u : 0u));
    return true;
}

void world::note_broken(std::uint8_t client, std::uint8_t server, const char* why, const char* how,
                        lane on) {
    if (recording()) {
        note_client(client, format("%sconnection to %s broken: %s%s",
                                   on == lane::subscriber ? "subscriber " : "",
                                   server_name(server).c_str(), why, how));
    }
}

// slow_subscribe with rst=1: the client's subscriber connections to its nodes are reset.
void world::reset_subscribers(const fault& f) {
    for (std::uint8_t n = 0; n < config_.nodes; ++n) {
        if ((f.nodes >> n) & 1u)
            break_connection(f.target, n, true, "reset by the fault", lane::subscriber);
    }
}

void world::break_connections(std::uint8_t client, std::uint8_t server, bool reset,
                              const char* why) {
    break_connection(client, server, reset, why, lane::command);
    break_connection(client, server, reset, why, lane::subscriber);
}

std::int64_t world::node_wall_ms(std::uint8_t node) const noexcept {
    return node_clocks_[node].wall.read_ms(now_us_);
}

}  // namespace edgelock::sim
