// SPDX-License-Identifier: Apache-2.0
// Every lock the command line and the C API accept is simulated: each combination of
// deployment, fencing, WAIT, restart guard, fair waiting and permits (a lock, or a semaphore:
// the simulator's have 3 permits, simulated_row.hpp) either has a configuration of
// edgelock-sim (a matrix row, soaked by `edgelock-sim soak`, or one run only when named,
// soaked by `soak --one-off`) that models exactly that lock, or is refused with one line.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "edgelock/limits.hpp"
#include "edgelock/lock.hpp"
#include "edgelock/sim/configuration.hpp"
#include "edgelock/sim/soak.hpp"
#include "options.hpp"
#include "simulated_row.hpp"

namespace {

using namespace edgelock;
using namespace edgelock::cli;

// The deployments the parser may meet, each as its flags.
struct deployment {
    const char* name;
    std::vector<std::string> flags;
};

std::vector<deployment> deployments() {
    std::vector<deployment> out;
    for (std::size_t masters = 1; masters <= redis_urls_max + 1; ++masters) {
        deployment d{"redis", {}};
        for (std::size_t i = 0; i < masters; ++i) {
            d.flags.push_back("--redis");
            d.flags.push_back("redis://127.0.0.1:" + std::to_string(7000 + i));
        }
        out.push_back(d);
    }
    out.push_back({"sentinel", {"--sentinel", "127.0.0.1:26379", "--master", "m"}});
    out.push_back({"cluster", {"--cluster", "127.0.0.1:7000"}});
    return out;
}

sim::topology topology_of(const options& o) {
    if (!o.cluster_urls.empty()) return sim::topology::cluster;
    if (!o.sentinel_urls.empty()) return sim::topology::sentinel;
    return o.redis_urls.size() == 1 ? sim::topology::single : sim::topology::redlock;
}

// The simulator's configuration of the lock `o` describes, or a failure naming what differs.
void expect_simulated(const options& o, const std::string& command_line) {
    const std::string row = simulated_row(o);
    const sim::configuration* c = sim::find_configuration(row);
    ASSERT_NE(c, nullptr) << "no configuration " << row << " for: " << command_line;
    const lock_config lock = run_lock_config(o);
    EXPECT_EQ(c->layout, topology_of(o)) << row;
    EXPECT_EQ(c->instances, lock.instances) << row;
    EXPECT_EQ(c->fencing, o.fencing) << row;
    EXPECT_EQ(c->replicas_to_wait > 0, lock.replicas_to_wait > 0) << row;
    EXPECT_EQ(c->restart_guard, lock.restart_guard_ms != 0) << row;
    EXPECT_EQ(c->fair, lock.fair) << row;
    EXPECT_EQ(c->permits > 1, lock.permits > 1) << row;
    EXPECT_FALSE(c->delayed_restart) << row;
}

// Whether a soak draws `config`: the matrix's rows by `soak`, the others by `soak --one-off`.
bool soaked(const sim::configuration& config) {
    for (const sim::soak_rows rows : {sim::soak_rows::matrix, sim::soak_rows::one_off}) {
        for (std::size_t i = 0; i < sim::soak_row_count(rows); ++i) {
            if (&sim::soak_row(rows, i) == &config) return true;
        }
    }
    return false;
}

// The command line of `command` with the given settings (fencing: check's --fencing).
std::vector<std::string> command_line(const std::string& command, const deployment& d,
                                      const char* wait, const char* guard, bool unfair,
                                      const char* fencing, const char* permits) {
    std::vector<std::string> args{command};
    if (command != "check") args.insert(args.end(), {"--name", "job"});
    args.insert(args.end(), d.flags.begin(), d.flags.end());
    args.insert(args.end(), {"--wait-replicas", wait, "--restart-guard", guard});
    if (unfair) args.push_back("--unfair");
    if (command == "check") args.insert(args.end(), {"--fencing", fencing});
    args.insert(args.end(), {"--permits", permits});
    if (command == "run") args.insert(args.end(), {"--", "true"});
    return args;
}

TEST(CliRows, EveryLockTheParserAcceptsIsSimulatedAndEveryOtherIsRefusedInOneLine) {
    std::size_t accepted = 0;
    std::size_t refused = 0;
    for (const std::string command : {"run", "hold", "check"}) {
        for (const deployment& d : deployments()) {
            for (const char* wait : {"0", "1", "2"}) {
                for (const char* guard : {"on", "off"}) {
                    for (const bool unfair : {false, true}) {
                        for (const char* fencing : {"on", "off"}) {
                            if (command != "check" && std::string(fencing) == "off") continue;
                            for (const char* permits : {"1", "3"}) {
                                const std::vector<std::string> args =
                                    command_line(command, d, wait, guard, unfair, fencing, permits);
                                std::string line;
                                for (const std::string& a : args) line += a + " ";
                                const cli::parse_result r = parse_command_line(args, environment{});
                                if (r.exit_code != 0) {
                                    ++refused;
                                    EXPECT_FALSE(r.error.empty()) << line;
                                    EXPECT_EQ(r.error.find('\n'), std::string::npos) << r.error;
                                    continue;
                                }
                                ++accepted;
                                expect_simulated(r.parsed, line);
                            }
                        }
                    }
                }
            }
        }
    }
    // Both sides are reached: an even count of --redis is refused, the rest accepted.
    EXPECT_GT(accepted, 0u);
    EXPECT_GT(refused, 0u);
}

// The configuration that models `config` on `layout`, or null.
const sim::configuration* row_for(sim::topology layout, const lock_config& config) {
    const sim::configuration* found = nullptr;
    for (std::size_t i = 0;
         i < sim::soak_row_count(sim::soak_rows::one_off) + sim::configuration_count; ++i) {
        const sim::configuration& c = sim::configuration_at(i);
        if (c.layout == layout && c.instances == config.instances && c.fencing == config.fencing &&
            (c.replicas_to_wait > 0) == (config.replicas_to_wait > 0) &&
            c.restart_guard == (config.restart_guard_ms != 0) && c.fair == config.fair &&
            (c.permits > 1) == (config.permits > 1) && !c.delayed_restart)
            found = &c;
    }
    return found;
}

// Every lock_config the core accepts over these fields: instances, fencing, WAIT, guard, fair
// waiting and permits (1, or 3 for any semaphore).
std::vector<lock_config> accepted_locks() {
    std::vector<lock_config> accepted;
    for (unsigned bits = 0; bits < 32; ++bits) {
        for (std::uint8_t instances = 1; instances <= instances_max + 1; ++instances) {
            lock_config config;
            config.name = "job";
            config.ttl_ms = 10'000;
            config.instances = instances;
            config.fencing = (bits & 1u) != 0;
            config.replicas_to_wait = (bits & 2u) != 0 ? 1 : 0;
            config.restart_guard_ms = (bits & 4u) != 0 ? -1 : 0;
            config.fair = (bits & 8u) != 0;
            config.permits = (bits & 16u) != 0 ? 3 : 1;
            lock l;
            if (l.configure(config) == errc::ok) accepted.push_back(config);
        }
    }
    return accepted;
}

// The C API (and both clients) take the lock's fields as the core's configure() accepts
// them: every such lock, on each deployment its instance count allows, is a configuration.
TEST(CliRows, EveryLockTheCoreAcceptsIsSimulatedOnEachDeployment) {
    std::size_t semaphores = 0;
    const std::vector<lock_config> accepted = accepted_locks();
    for (const lock_config& config : accepted) {
        std::vector<sim::topology> layouts{sim::topology::redlock};
        if (config.instances == 1)
            layouts = {sim::topology::single, sim::topology::sentinel, sim::topology::cluster};
        for (const sim::topology layout : layouts) {
            const sim::configuration* found = row_for(layout, config);
            ASSERT_NE(found, nullptr)
                << "instances=" << int{config.instances} << " fencing=" << config.fencing
                << " wait=" << int{config.replicas_to_wait} << " guard=" << config.restart_guard_ms
                << " fair=" << config.fair << " permits=" << config.permits;
            EXPECT_TRUE(soaked(*found)) << found->name;
            semaphores += config.permits > 1 ? 1 : 0;
        }
    }
    EXPECT_GT(accepted.size(), 0u);
    EXPECT_EQ(semaphores, 48u) << "one Redis, Sentinel, a cluster: fencing x WAIT x guard x fair";
}

}  // namespace
