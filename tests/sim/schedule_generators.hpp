// SPDX-License-Identifier: Apache-2.0
// RapidCheck generators of fault schedules for the property tests.
//
// A menu says which fault families a property draws from; each family stays within what
// the configuration under test claims to survive (for example: pauses anywhere but between
// the held() check and the write, client clocks within the drift allowance). RapidCheck
// shrinks a failing schedule by dropping faults and moving their numbers toward the
// simplest values, and the failure message carries the replay command.
#pragma once

#include <rapidcheck.h>

#include <vector>

#include "edgelock/sim/configuration.hpp"
#include "edgelock/sim/schedule.hpp"

namespace edgelock::sim::testing {

struct fault_menu {
    bool network = true;              // slow paths to Redis, loss, partitions, lost replies
    bool pauses = true;               // pauses anywhere except between check and write
    bool pauses_after_check = false;  // Kleppmann's pause between held() and the write
    bool resource_delays = false;     // the write to the resource delayed beyond the TTL
    bool clock_noise = true;          // client wall steps, rates within the drift allowance
    bool crashes = false;  // node crash or power-off and restart with `persist`, Redis pauses
    persistence persist = persistence::none;
    bool failover =
        false;  // Sentinel: the master down, paused or cut off past down_after, replication lag
    bool evictions = false;  // a node evicts lock keys, or every key (fence counters too)
};

// Rate errors the lease arithmetic absorbs (configuration.hpp).
inline constexpr std::int32_t tolerated_ppm = tolerated_clock_ppm;

inline std::uint8_t mask_of(const configuration& config) {
    return static_cast<std::uint8_t>((1u << config.nodes) - 1);
}

inline rc::Gen<trigger> trigger_gen(const world_params& p, std::vector<point> points) {
    return rc::gen::exec([p, points] {
        trigger t;
        if (points.empty() || *rc::gen::inRange(0, 3) == 0) {
            t.at_ms = *rc::gen::inRange<std::int64_t>(0, p.duration_ms);
            return t;
        }
        t.at_point = true;
        t.client = static_cast<std::uint8_t>(*rc::gen::inRange<int>(0, p.clients));
        t.where = *rc::gen::elementOf(points);
        t.nth = static_cast<std::uint16_t>(*rc::gen::inRange(1, 4));
        t.offset_ms = *rc::gen::inRange<std::int64_t>(0, 200);
        return t;
    });
}

inline rc::Gen<fault> fault_gen(const configuration& config, const world_params& p,
                                fault_menu menu) {
    return rc::gen::exec([config, p, menu] {
        std::vector<fault_kind> kinds;
        if (menu.network) {
            kinds.insert(kinds.end(), {fault_kind::slow_link, fault_kind::partition,
                                       fault_kind::loss, fault_kind::drop_reply});
        }
        if (menu.pauses || menu.pauses_after_check) kinds.push_back(fault_kind::pause);
        if (menu.resource_delays) kinds.push_back(fault_kind::slow_link);
        if (menu.clock_noise)
            kinds.insert(kinds.end(), {fault_kind::wall_step, fault_kind::clock_rate});
        if (menu.crashes || menu.failover)
            kinds.insert(kinds.end(), {fault_kind::crash, fault_kind::power_off});
        if (menu.failover) kinds.insert(kinds.end(), {fault_kind::repl_lag, fault_kind::isolate});
        if (menu.evictions) kinds.push_back(fault_kind::evict);
        const std::int64_t ttl = p.ttl_ms;
        const std::uint8_t all = mask_of(config);
        fault f;
        f.kind = *rc::gen::elementOf(kinds);
        f.target = static_cast<std::uint8_t>(*rc::gen::inRange<int>(0, p.clients));
        switch (f.kind) {
            case fault_kind::pause: {
                if ((menu.crashes || menu.failover) && *rc::gen::arbitrary<bool>()) {
                    // A Redis process pause: with Sentinel, the master's, as long as a failover.
                    f.on_node = true;
                    f.target =
                        menu.failover
                            ? 0
                            : static_cast<std::uint8_t>(*rc::gen::inRange<int>(0, config.nodes));
                    f.when = *trigger_gen(p, {point::acquired, point::renew_sent});
                    f.duration_ms = *rc::gen::inRange<std::int64_t>(1, p.down_after_ms +
                                                                           p.failover_ms + 3 * ttl);
                    break;
                }
                std::vector<point> points;
                if (menu.pauses) {
                    points = {point::acquire_sent, point::acquired,       point::read_done,
                              point::write_sent,   point::release_called, point::renew_sent};
                }
                if (menu.pauses_after_check) points.push_back(point::checked);
                f.when = *trigger_gen(p, points);
                if (f.when.at_point) f.target = f.when.client;
                if (f.when.at_point && f.when.where == point::checked) f.when.offset_ms = 0;
                f.duration_ms = *rc::gen::inRange<std::int64_t>(1, 3 * ttl);
                break;
            }
            case fault_kind::slow_link:
                f.when = *trigger_gen(p, {point::checked, point::acquire_sent, point::renew_sent});
                if (menu.resource_delays && (!menu.network || *rc::gen::arbitrary<bool>())) {
                    f.resource = true;
                } else {
                    f.nodes = static_cast<std::uint8_t>(*rc::gen::inRange<int>(1, all + 1));
                }
                f.duration_ms = *rc::gen::inRange<std::int64_t>(1, 500);
                f.amount = *rc::gen::inRange<std::int64_t>(1, 2 * ttl);
                break;
            case fault_kind::partition:
                f.when = *trigger_gen(p, {point::acquired, point::acquire_sent, point::renew_sent});
                f.nodes = static_cast<std::uint8_t>(*rc::gen::inRange<int>(1, all + 1));
                f.duration_ms = *rc::gen::inRange<std::int64_t>(1, 2 * ttl);
                f.reset = *rc::gen::arbitrary<bool>();
                break;
            case fault_kind::loss:
                f.when = *trigger_gen(p, {});
                f.nodes = static_cast<std::uint8_t>(*rc::gen::inRange<int>(1, all + 1));
                f.duration_ms = *rc::gen::inRange<std::int64_t>(1, 1000);
                f.amount = *rc::gen::inRange<std::int64_t>(1'000, 300'000);
                f.reset = *rc::gen::arbitrary<bool>();
                break;
            case fault_kind::drop_reply:
                f.when = *trigger_gen(
                    p, {point::release_called, point::renew_sent, point::acquire_sent});
                if (f.when.at_point) f.target = f.when.client;
                f.nodes = static_cast<std::uint8_t>(*rc::gen::inRange<int>(1, all + 1));
                f.count = static_cast<std::uint16_t>(*rc::gen::inRange(1, 4));
                f.reset = *rc::gen::arbitrary<bool>();
                break;
            case fault_kind::wall_step:
                f.when = *trigger_gen(p, {});
                f.amount = *rc::gen::inRange<std::int64_t>(-60'000, 60'000);
                break;
            case fault_kind::clock_rate:
                f.when = *trigger_gen(p, {});
                f.on_node = *rc::gen::arbitrary<bool>();
                if (f.on_node) {
                    f.target = static_cast<std::uint8_t>(*rc::gen::inRange<int>(0, config.nodes));
                    f.wall = true;  // Redis expires keys by its wall clock
                }
                f.amount = *rc::gen::inRange<std::int64_t>(-tolerated_ppm, tolerated_ppm + 1);
                break;
            case fault_kind::crash:
            case fault_kind::power_off:
                f.when =
                    *trigger_gen(p, {point::acquired, point::renew_sent, point::release_called});
                f.on_node = true;
                f.target = static_cast<std::uint8_t>(*rc::gen::inRange<int>(0, config.nodes));
                f.persist = menu.persist;
                f.duration_ms = *rc::gen::inRange<std::int64_t>(0, 2 * ttl);
                if (menu.failover) {
                    // One failure at a time: the first master crashes and stays down long
                    // enough for Sentinel to fail over. (A master restarting empty before
                    // that, or a second crash of the promoted one, loses the key with or
                    // without WAIT: scenario S5.)
                    f.target = 0;
                    const std::int64_t failover_ms = p.down_after_ms + p.failover_ms;
                    f.duration_ms =
                        *rc::gen::inRange<std::int64_t>(failover_ms + 50, failover_ms + 3 * ttl);
                }
                break;
            case fault_kind::isolate: {
                // The master cut off from the sentinels and replicas (clients still reach it)
                // long enough to be failed over: split brain until it is reconfigured.
                f.when = *trigger_gen(p, {point::acquired, point::renew_sent});
                f.on_node = true;
                f.target = 0;
                const std::int64_t failover_ms = p.down_after_ms + p.info_period_ms + p.failover_ms;
                f.duration_ms = *rc::gen::inRange<std::int64_t>(1, failover_ms + 3 * ttl);
                break;
            }
            case fault_kind::evict:
                f.when = *trigger_gen(p, {point::acquired, point::renew_sent, point::checked});
                f.on_node = true;
                f.target = static_cast<std::uint8_t>(*rc::gen::inRange<int>(0, config.nodes));
                f.amount = *rc::gen::inRange<std::int64_t>(0, 2);
                break;
            case fault_kind::replace:  // not on the menu: world_nodes_test plays it
                f.on_node = true;
                f.target = 0;
                f.when = *trigger_gen(p, {point::acquired});
                f.duration_ms = *rc::gen::inRange<std::int64_t>(0, ttl);
                f.amount = *rc::gen::inRange<std::int64_t>(ttl, 86'400'000);
                break;
            case fault_kind::migrate:  // not on the menu: the cluster rows' S8 draws it
                f.on_node = true;
                f.target = 0;
                f.nodes = 0b100;
                f.when = *trigger_gen(p, {point::acquired, point::renew_sent});
                f.duration_ms = *rc::gen::inRange<std::int64_t>(0, 2 * ttl);
                f.amount = *rc::gen::inRange<std::int64_t>(1, ttl);
                break;
            case fault_kind::slow_subscribe:  // not on the menu: the lock survives it unhelped
                f.when = *trigger_gen(p, {});
                f.nodes = all;
                f.duration_ms = *rc::gen::inRange<std::int64_t>(1, p.duration_ms);
                f.amount = *rc::gen::inRange<std::int64_t>(0, 2 * ttl);
                break;
            case fault_kind::repl_lag:
                f.when = *trigger_gen(p, {});
                f.on_node = true;
                f.target = 0;
                f.nodes = static_cast<std::uint8_t>(all & ~1u);
                f.duration_ms = *rc::gen::inRange<std::int64_t>(1, p.duration_ms);
                f.amount = *rc::gen::inRange<std::int64_t>(0, 200);
                break;
        }
        return f;
    });
}

inline rc::Gen<schedule> schedule_gen(const configuration& config, const world_params& p,
                                      fault_menu menu) {
    return rc::gen::exec([config, p, menu] {
        const auto count = *rc::gen::inRange(0, 5);
        return *rc::gen::container<schedule>(static_cast<std::size_t>(count),
                                             fault_gen(config, p, menu));
    });
}

}  // namespace edgelock::sim::testing
