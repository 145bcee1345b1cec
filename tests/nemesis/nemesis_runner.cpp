// SPDX-License-Identifier: Apache-2.0
// nemesis: the simulator's safety matrix checked against real processes under real faults.
//
//   nemesis_runner --holder <nemesis_holder> --sim <edgelock-sim> [--holder-asio <path>]
//                  [--holder-cli <nemesis_holder_cli> --edgelock <edgelock>]
//                  [--runs N] [--runs-of S3=1,S8=1] [--ttl MS] [--configs a,b,...]
//                  [--scenarios S1,S2,S3,S5,S6,S8,S9] [--matrix-runs R] [--dir D]
//
// For each configuration it starts real redis-server (and redis-sentinel) processes on
// loopback, runs each scenario N times with two holder processes, A and B, judges each run
// from the holders' logs (nemesis_history.hpp) and prints the agreement table against
// `edgelock-sim matrix`. The holders rotate over the kinds given (the blocking client, the
// async client, the edgelock CLI running a command): A on the kind (run + configuration)
// modulo their count, B on the next. Exit status 1 when a cell disagrees.
//
// Faults, as the simulator's scenarios (docs/SIMULATION.md) land them:
//   S1  holder A checks held(), is SIGSTOPped before its write, past the TTL; B acquires
//       and writes; A is SIGCONTed and writes on the strength of its old check.
//   S2  A's first write leaves while it holds and is held in the network (A waits for a
//       line on stdin to deliver it) while A ends its job and releases, and B holds and
//       writes; then it lands.
//   S3  A is SIGSTOPped right after its acquire (even variants) or, holding, its renewal
//       (odd) went to the server (a proxy hook on a request naming the lock), for 1.5 TTL:
//       it resumes on a reply older than its TTL. Never the CLI as A for a renewal (its
//       command has no held(): a pause during its hold is S1 for it). A belief ends at the
//       held() check a write followed: the stop may land between a check and its write.
//   S5  during A's hold the node (Redlock: the node two majorities share) is killed with
//       SIGKILL and restarted without persistence (delayed-restart: after 1.5 TTL).
//   S6  Sentinel: split brain after a forced promotion: the master n0 is SIGSTOPped, replica
//       n1 is promoted (REPLICAOF NO ONE) and n3 re-pointed to it, A locks on n1; n0 is
//       SIGCONTed while n2 still replicates from it, and B locks on n0 (WAIT 1 answered by
//       n2). Each client is pointed at the master its sentinel would name during the
//       failover. Without replicas: the node is paused for 1.5 TTL during A's hold (SIGSTOP,
//       or CLIENT PAUSE ALL), then runs what waited.
//   S8  the replies to A's renewal and release are lost: its proxies forward its requests
//       and drop the replies (even runs), or cut its connections at the first reply byte
//       (odd runs), until B has held and released.
//   S9  A, holding, is cut off by a TCP proxy that swallows everything from every node it
//       reaches, until B has held and released. Sentinel: the partition leaves A with the
//       master and one replica, and the other side promotes a replica of its own (see
//       run_sentinel_partition).
// Redlock runs partition the holders as the simulator does: A reaches n0..n2 only, B n2..n4
// only (the other two addresses are ports nothing listens on). Redis Cluster (three masters
// with a replica each) plays S1 and S2 as above, and:
//   S6  (with WAIT) the lock's master SIGSTOPped during A's hold until its replica is
//       promoted, then SIGCONTed (it rejoins as the new master's replica).
//   S8  the lock's slot migrated during A's hold: A's key moved under IMPORTING/MIGRATING
//       (ASK), the move completed 1.5 TTL later (MOVED). S6 and S8 also judge a lost hold.
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <future>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "edgelock/testing/child_process.hpp"
#include "edgelock/testing/key_slot.hpp"
#include "edgelock/testing/redis_cluster.hpp"
#include "edgelock/testing/redis_client.hpp"
#include "edgelock/testing/redis_process.hpp"
#include "edgelock/testing/refused_port.hpp"
#include "edgelock/testing/tcp_proxy.hpp"
#include "nemesis_history.hpp"
#include "nemesis_matrix.hpp"

namespace {

using edgelock::nemesis::monotonic_us;
using edgelock::testing::child_process;
using edgelock::testing::persistence;
using edgelock::testing::redis_client;
using edgelock::testing::redis_cluster;
using edgelock::testing::redis_masters;
using edgelock::testing::redis_server;
using edgelock::testing::sentinel_topology;
using edgelock::testing::tcp_proxy;

enum class topology_kind { single, sentinel, redlock, cluster };

struct config_spec {
    std::string name;
    topology_kind kind = topology_kind::single;
    bool fencing = false;
    bool guard = false;
    bool delayed_restart = false;
    int wait = 0;
};

const std::vector<config_spec>& all_configs() {
    static const std::vector<config_spec> configs = {
        {"single", topology_kind::single, false, false, false, 0},
        {"single+fencing", topology_kind::single, true, false, false, 0},
        {"single+guard", topology_kind::single, false, true, false, 0},
        {"single+fencing+guard", topology_kind::single, true, true, false, 0},
        {"sentinel", topology_kind::sentinel, false, false, false, 0},
        {"sentinel+WAIT", topology_kind::sentinel, false, false, false, 1},
        {"sentinel+WAIT+guard", topology_kind::sentinel, false, true, false, 1},
        {"redlock-5", topology_kind::redlock, false, false, false, 0},
        {"redlock-5+fencing", topology_kind::redlock, true, false, false, 0},
        {"redlock-5+guard", topology_kind::redlock, false, true, false, 0},
        {"redlock-5+fencing+guard", topology_kind::redlock, true, true, false, 0},
        {"redlock-5+delayed-restart", topology_kind::redlock, false, false, true, 0},
        {"cluster", topology_kind::cluster, false, false, false, 0},
        {"cluster+WAIT", topology_kind::cluster, false, false, false, 1},
        {"cluster+WAIT+guard", topology_kind::cluster, false, true, false, 1},
    };
    return configs;
}

enum class holder_kind { blocking, asio, cli };

// The holders' command timeout (holder_settings, nemesis_holder_common.hpp; the CLI's
// --redis-timeout): a renewal's try ends within it.
constexpr std::int64_t holder_command_timeout_ms = 1000;

struct runner_options {
    std::string holder_path;
    std::string holder_asio_path;  // when set, runs rotate which client holds first
    std::string holder_cli_path;   // with edgelock_path: the CLI joins the rotation
    std::string edgelock_path;
    std::string sim_path;
    std::string dir;
    int runs = 1;
    int matrix_runs = 50;  // the matrix docs/SIMULATION.md prints: fewer runs miss verdicts
    std::int64_t ttl_ms = 1000;
    std::vector<std::string> configs;
    std::vector<std::string> scenarios = {"S1", "S2", "S3", "S5", "S6", "S8", "S9"};
    // Runs per cell of some scenarios, when not `runs` (--runs-of S3=1,S8=1): the CI keeps
    // the newer scenarios short.
    std::map<std::string, int> runs_of;

    // The holder kinds runs rotate through, in this order.
    std::vector<holder_kind> kinds() const {
        std::vector<holder_kind> out = {holder_kind::blocking};
        if (!holder_asio_path.empty()) out.push_back(holder_kind::asio);
        if (!holder_cli_path.empty() && !edgelock_path.empty()) out.push_back(holder_kind::cli);
        return out;
    }
};

const char* kind_name(holder_kind kind) {
    if (kind == holder_kind::asio) return "asio";
    return kind == holder_kind::cli ? "cli" : "blocking";
}

std::string join(const std::vector<std::string>& parts) {
    std::string out;
    for (const std::string& part : parts) out += (out.empty() ? "" : ",") + part;
    return out;
}

std::vector<std::string> split_commas(const std::string& text) {
    std::vector<std::string> out;
    std::stringstream in(text);
    std::string part;
    while (std::getline(in, part, ',')) {
        if (!part.empty()) out.push_back(part);
    }
    return out;
}

// The servers of one configuration, started once and reused by its runs (each run uses a
// lock name and a store of its own).
struct deployment {
    std::unique_ptr<redis_server> single;
    std::unique_ptr<redis_masters> masters;
    std::unique_ptr<sentinel_topology> topology;
    // Three masters with a replica each (WAIT 1 has one to count), the node timeout 1 s.
    std::unique_ptr<redis_cluster> cluster;
    // Ports kept bound and never listened on: connections to them are refused (a partition),
    // and no server of a test running beside this one can take them.
    std::vector<edgelock::testing::refused_port> dead_ports;
    // A's way to the nodes it reaches, for S9 (a partition cuts it off from them).
    std::vector<std::unique_ptr<tcp_proxy>> proxies;

    explicit deployment(const config_spec& spec) {
        if (spec.kind == topology_kind::single) {
            single =
                std::make_unique<redis_server>(std::vector<std::string>{}, persistence::volatile_);
            proxies.push_back(std::make_unique<tcp_proxy>(single->port()));
        } else if (spec.kind == topology_kind::cluster) {
            edgelock::testing::cluster_settings settings;
            settings.replicas_per_master = 1;
            cluster = std::make_unique<redis_cluster>(settings);
        } else if (spec.kind == topology_kind::redlock) {
            masters = std::make_unique<redis_masters>(5, std::vector<std::string>{},
                                                      persistence::volatile_);
            dead_ports.resize(2);
            for (std::size_t i = 0; i < 3; ++i) {
                proxies.push_back(std::make_unique<tcp_proxy>((*masters)[i].port()));
            }
        } else {
            // Later arguments win: both servers without AOF, so a restart comes back empty.
            topology =
                std::make_unique<sentinel_topology>(std::vector<std::string>{"--appendonly", "no"});
        }
    }

    // Where holder `who` ("A" or "B") finds Redis, as holder arguments; A through the
    // proxies when `proxied` (behind Sentinel: straight to the master the sentinels name,
    // through a proxy made by proxy_to_master()).
    std::vector<std::string> where(const std::string& who, bool proxied = false) const {
        const bool via = proxied && who == "A";
        if (cluster) return {"cluster=" + join(cluster->seed_urls())};
        if (single) return {"instances=" + (via ? proxies[0]->url() : single->url())};
        if (topology && via) return {"instances=" + proxies[0]->url()};
        if (topology) return {"sentinels=" + join(topology->sentinel_urls()), "master=mymaster"};
        auto& m = *masters;
        if (who == "A") {
            std::vector<std::string> urls;
            for (std::size_t i = 0; i < 3; ++i) {
                urls.push_back(via ? proxies[i]->url() : m[i].url());
            }
            return {"instances=" +
                    join({urls[0], urls[1], urls[2], dead_ports[0].url(), dead_ports[1].url()})};
        }
        return {"instances=" + join({dead_ports[0].url(), dead_ports[1].url(), m[2].url(),
                                     m[3].url(), m[4].url()})};
    }

    // Behind Sentinel, A's proxy goes to the master of the moment (S5 may have moved it).
    void proxy_to_master() {
        if (!topology) return;
        proxies.clear();
        proxies.push_back(std::make_unique<tcp_proxy>(topology->master_port()));
    }

    // The node S5 crashes: the only one, the master, or the one both majorities share.
    redis_server& crash_target() {
        if (single) return *single;
        if (topology) return topology->server_on(topology->master_port());
        return (*masters)[2];
    }
};

// One run's files and the holders' common arguments.
struct run_context {
    const runner_options* options = nullptr;
    const config_spec* spec = nullptr;
    std::string dir;
    std::string name;
    std::int64_t ttl_ms = 0;
    int run = 0;
    holder_kind a_kind = holder_kind::blocking;
    holder_kind b_kind = holder_kind::blocking;
    bool renewal_in_flight = false;  // S3: which reply A is paused on
    // S3 judges a belief by the held() checks: its pause may land between a check and its
    // write, which is S1's question (a check made before a pause), not a reply read late.
    edgelock::nemesis::belief_rule belief = edgelock::nemesis::belief_rule::through_writes;
    // Where a lost hold is a violation, and of which matrix check: Redis Cluster's S6 with
    // WAIT (kept: a loss once the promoted master has been reachable for a renewal interval
    // and its timeouts) and S8 (available: a loss while or after the slot moves).
    edgelock::nemesis::lost_check lost_against = edgelock::nemesis::lost_check::none;

    holder_kind kind(const std::string& who) const { return who == "A" ? a_kind : b_kind; }

    std::string program(const std::string& who) const {
        if (kind(who) == holder_kind::asio) return options->holder_asio_path;
        return kind(who) == holder_kind::cli ? options->holder_cli_path : options->holder_path;
    }

    std::string log(const std::string& who) const { return dir + "/" + who + ".log"; }

    child_process spawn(const std::string& who, const std::vector<std::string>& where,
                        const std::vector<std::string>& extra) const {
        std::vector<std::string> argv = {program(who),
                                         "id=" + who,
                                         "log=" + log(who),
                                         "store=" + dir + "/store",
                                         "name=" + name,
                                         "ttl=" + std::to_string(ttl_ms),
                                         std::string("fencing=") + (spec->fencing ? "1" : "0"),
                                         std::string("guard=") + (spec->guard ? "1" : "0"),
                                         "wait=" + std::to_string(spec->wait)};
        argv.insert(argv.end(), where.begin(), where.end());
        argv.insert(argv.end(), extra.begin(), extra.end());
        if (kind(who) == holder_kind::cli) argv.push_back("edgelock=" + options->edgelock_path);
        edgelock::testing::spawn_options spawn;
        spawn.pipe_stdio = true;
        spawn.output_path = dir + "/" + who + ".stderr";
        return child_process(argv, spawn);
    }
};

// SIGSTOP or SIGCONT to a holder: a CLI holder's whole process group (the wrapper, edgelock
// with its renewal thread, and the command writing), as a paused machine would be.
void signal_holder(holder_kind kind, pid_t pid, int signal) {
    ::kill(kind == holder_kind::cli ? -pid : pid, signal);
}

// Reads the holder's stdout until a line starting with `prefix`; false on EOF or deadline.
bool expect_line(child_process& holder, const std::string& prefix,
                 std::chrono::milliseconds timeout) {
    const std::int64_t until_us = monotonic_us() + timeout.count() * 1000;
    while (monotonic_us() < until_us) {
        const auto left = std::chrono::milliseconds((until_us - monotonic_us()) / 1000 + 1);
        const auto line = holder.read_line(left);
        if (!line) return false;
        if (line->rfind(prefix, 0) == 0) return true;
    }
    return false;
}

std::chrono::milliseconds acquire_bound(std::int64_t ttl_ms) {
    // Covers a restart guard (ttl + drift, read from INFO uptime in whole seconds) and a TTL.
    return std::chrono::milliseconds(3 * ttl_ms + 5000);
}

struct run_times {
    std::int64_t fault_us = 0;
    std::int64_t heal_us = 0;
};

edgelock::nemesis::verdict judge_run(const run_context& ctx, const run_times& times) {
    const auto holds = edgelock::nemesis::read_holds({ctx.log("A"), ctx.log("B")});
    auto verdict = edgelock::nemesis::judge(holds, times.fault_us, times.heal_us,
                                            acquire_bound(ctx.ttl_ms).count() * 1000, ctx.belief);
    using edgelock::nemesis::lost_check;
    if (ctx.lost_against == lost_check::available) {
        edgelock::nemesis::lost_holds(holds, times.fault_us, verdict);
    } else if (ctx.lost_against == lost_check::kept) {
        // The simulator's kept forgives a loss nearer the fault than this.
        const std::int64_t settle_ms = ctx.ttl_ms / 3 + 2 * holder_command_timeout_ms;
        edgelock::nemesis::lost_holds(holds, times.heal_us + settle_ms * 1000, verdict);
    }
    return verdict;
}

// S1: A is frozen between its held() check and its write, until B has held and released.
edgelock::nemesis::verdict run_s1(const run_context& ctx, deployment& where) {
    const std::int64_t ttl_ms = ctx.ttl_ms;
    child_process a =
        ctx.spawn("A", where.where("A"), {"gate=1", "work_ms=" + std::to_string(ttl_ms / 2)});
    run_times times;
    if (!expect_line(a, "held", acquire_bound(ctx.ttl_ms)) ||
        !expect_line(a, "checked", std::chrono::seconds(5))) {
        return judge_run(ctx, times);
    }
    signal_holder(ctx.a_kind, a.pid(), SIGSTOP);
    times.fault_us = monotonic_us();
    a.write_line("go");  // read once A runs again: its write follows the old check
    child_process b = ctx.spawn("B", where.where("B"), {"work_ms=300"});
    // B can hold only once A's key expired, so the pause outlasts the TTL by construction.
    expect_line(b, "released", acquire_bound(ctx.ttl_ms));
    signal_holder(ctx.a_kind, a.pid(), SIGCONT);
    times.heal_us = monotonic_us();
    a.wait_exit(std::chrono::seconds(10));
    b.wait_exit(std::chrono::seconds(10));
    return judge_run(ctx, times);
}

// S2: A's first write leaves while it holds (held() checked) and stays in the network: A
// ends its job and releases; B takes the lock and writes; only then does the runner let
// A's write reach the store (a line on A's stdin).
edgelock::nemesis::verdict run_s2(const run_context& ctx, deployment& where) {
    child_process a = ctx.spawn("A", where.where("A"), {"delay_write=1"});
    run_times times;
    if (!expect_line(a, "held", acquire_bound(ctx.ttl_ms)) ||
        !expect_line(a, "sent", std::chrono::seconds(5))) {
        return judge_run(ctx, times);
    }
    times.fault_us = monotonic_us();
    expect_line(a, "released", std::chrono::seconds(5));
    child_process b = ctx.spawn("B", where.where("B"), {"work_ms=300"});
    expect_line(b, "released", acquire_bound(ctx.ttl_ms));
    a.write_line("go");
    times.heal_us = monotonic_us();
    expect_line(a, "landed", std::chrono::seconds(5));
    a.wait_exit(std::chrono::seconds(10));
    b.wait_exit(std::chrono::seconds(10));
    return judge_run(ctx, times);
}

// A fault landed during A's hold: A holds (through its proxies when `proxied`) for
// a_work_ms; B is started before the fault (b_first) or once it began; `start` lands it
// (and, with heal_at_once, ends it too); otherwise `heal` ends it once B has held and
// released.
struct hold_fault {
    bool proxied = false;
    std::int64_t a_work_ms = 0;
    bool b_first = false;
    bool heal_at_once = false;
    std::function<void(child_process& a)> start;
    std::function<void()> heal;
};

edgelock::nemesis::verdict run_fault(const run_context& ctx, deployment& where,
                                     const hold_fault& fault) {
    const std::string work = "work_ms=" + std::to_string(fault.a_work_ms);
    child_process a = ctx.spawn("A", where.where("A", fault.proxied), {work});
    run_times times;
    if (!expect_line(a, "held", acquire_bound(ctx.ttl_ms))) return judge_run(ctx, times);
    child_process b;
    if (fault.b_first) b = ctx.spawn("B", where.where("B"), {"work_ms=300"});
    times.fault_us = monotonic_us();
    fault.start(a);
    if (fault.heal_at_once) times.heal_us = monotonic_us();
    if (!fault.b_first) b = ctx.spawn("B", where.where("B"), {"work_ms=300"});
    expect_line(b, "released", acquire_bound(ctx.ttl_ms));
    if (!fault.heal_at_once) {
        fault.heal();
        times.heal_us = monotonic_us();
    }
    a.wait_exit(std::chrono::milliseconds(3 * ctx.ttl_ms + 10'000));
    b.wait_exit(std::chrono::seconds(10));
    return judge_run(ctx, times);
}

// S5: the node is killed during A's hold and comes back empty (after 1.5 TTL when delayed).
edgelock::nemesis::verdict run_s5(const run_context& ctx, deployment& where) {
    hold_fault fault;
    fault.a_work_ms = 3 * ctx.ttl_ms;
    fault.b_first = true;
    fault.heal_at_once = true;
    fault.start = [&](child_process&) {
        redis_server& target = where.crash_target();
        target.stop();
        if (ctx.spec->delayed_restart) {
            // The fault's length, not synchronization: the node stays down past the TTL.
            std::this_thread::sleep_for(std::chrono::milliseconds(ctx.ttl_ms * 3 / 2));
        }
        target.start();
    };
    return run_fault(ctx, where, fault);
}

// S6 without replicas: the node (Redlock: the one both majorities share) stops answering
// for 1.5 TTL during A's hold: SIGSTOP in even runs, CLIENT PAUSE ALL (which also holds
// back expiry) in odd runs. Then it runs what waited.
edgelock::nemesis::verdict run_node_pause(const run_context& ctx, deployment& where) {
    hold_fault fault;
    fault.a_work_ms = 3 * ctx.ttl_ms;
    fault.b_first = true;
    fault.heal_at_once = true;
    fault.start = [&](child_process&) {
        redis_server& target = where.crash_target();
        const auto pause = std::chrono::milliseconds(ctx.ttl_ms * 3 / 2);
        if (ctx.run % 2 == 0) {
            target.freeze();
            std::this_thread::sleep_for(pause);  // the fault's length
            target.thaw();
        } else {
            redis_client(target.port())
                .command({"CLIENT", "PAUSE", std::to_string(pause.count()), "ALL"});
            std::this_thread::sleep_for(pause);  // the fault's length (the server ends it)
        }
    };
    return run_fault(ctx, where, fault);
}

// Ends a fault on A's proxies: everything passes again, and connections that lost bytes
// are cut, so the clients start again on fresh ones.
void heal_proxies(deployment& where) {
    for (auto& proxy : where.proxies) {
        proxy->pass();
        proxy->close_all();
    }
}

// S9: A, holding, is cut off from every node it reaches (its proxies swallow everything)
// until B has held and released; then the partition heals.
edgelock::nemesis::verdict run_partition(const run_context& ctx, deployment& where) {
    hold_fault fault;
    fault.proxied = true;
    fault.a_work_ms = 3 * ctx.ttl_ms;
    fault.start = [&](child_process&) {
        for (auto& proxy : where.proxies) proxy->blackhole();
    };
    fault.heal = [&] { heal_proxies(where); };
    return run_fault(ctx, where, fault);
}

// S8: the replies to A's renewal and release are lost, until B has held and released.
// Even runs: A works 3/4 TTL (a renewal at ttl/3, then its release, inside its lease) while
// its proxies forward its requests and drop the server's replies. Odd runs: A works 3 TTL
// and the proxies cut its connections at the first reply byte, so no renewal is confirmed:
// A must stop writing when its lease ends, whatever its requests did in Redis.
edgelock::nemesis::verdict run_lost_replies(const run_context& ctx, deployment& where) {
    where.proxy_to_master();
    hold_fault fault;
    fault.proxied = true;
    fault.a_work_ms = ctx.run % 2 == 0 ? ctx.ttl_ms * 3 / 4 : 3 * ctx.ttl_ms;
    fault.start = [&](child_process&) {
        for (auto& proxy : where.proxies) {
            if (ctx.run % 2 == 0) {
                proxy->drop_replies();
            } else {
                proxy->reset_after(0);
            }
        }
    };
    fault.heal = [&] { heal_proxies(where); };
    return run_fault(ctx, where, fault);
}

// Arms A's proxies so that A is SIGSTOPped right after its next request naming the lock
// (an acquire or a renewal, never the handshake) has gone to the server, and waits up to
// `bound` for that. True when A was stopped there.
bool pause_after_request(const run_context& ctx, deployment& where, pid_t pid,
                         std::chrono::milliseconds bound) {
    auto frozen = std::make_shared<std::promise<void>>();
    auto once = std::make_shared<std::atomic<bool>>(false);
    const holder_kind kind = ctx.a_kind;
    for (auto& proxy : where.proxies) {
        proxy->on_next_request(
            [frozen, once, pid, kind] {
                if (once->exchange(true)) return;
                signal_holder(kind, pid, SIGSTOP);
                frozen->set_value();
            },
            ctx.name);
    }
    const bool stopped = frozen->get_future().wait_for(bound) == std::future_status::ready;
    for (auto& proxy : where.proxies) proxy->on_next_request({});
    once->store(true);
    return stopped;
}

// S3, even variants: A is paused right after its acquire went out, for 1.5 TTL; its key
// is set meanwhile and expires, B takes the lock, and A reads an OK older than its TTL.
edgelock::nemesis::verdict run_paused_acquire(const run_context& ctx, deployment& where) {
    // Armed once A runs: its acquire follows its start and handshake, milliseconds later.
    child_process a = ctx.spawn("A", where.where("A", true), {"work_ms=300"});
    run_times times;
    if (!pause_after_request(ctx, where, a.pid(), acquire_bound(ctx.ttl_ms))) {
        return judge_run(ctx, times);
    }
    times.fault_us = monotonic_us();
    child_process b = ctx.spawn("B", where.where("B"), {"work_ms=300"});
    std::this_thread::sleep_for(std::chrono::milliseconds(ctx.ttl_ms * 3 / 2));  // length
    signal_holder(ctx.a_kind, a.pid(), SIGCONT);
    times.heal_us = monotonic_us();
    expect_line(b, "released", acquire_bound(ctx.ttl_ms));
    a.wait_exit(std::chrono::milliseconds(3 * ctx.ttl_ms + 10'000));
    b.wait_exit(std::chrono::seconds(10));
    return judge_run(ctx, times);
}

// S3, odd variants: A, holding, is paused right after its renewal went out, for 1.5 TTL,
// the reply waiting in its socket; B waits meanwhile and takes the lock once A's key
// expired. A runs on reading a reply older than its lease.
edgelock::nemesis::verdict run_paused_renewal(const run_context& ctx, deployment& where) {
    hold_fault fault;
    fault.proxied = true;
    fault.a_work_ms = 3 * ctx.ttl_ms;
    fault.b_first = true;
    fault.heal_at_once = true;
    fault.start = [&](child_process& a) {
        // A renews within ttl/3 of its acquire; a holder that never does is judged as is.
        pause_after_request(ctx, where, a.pid(), std::chrono::milliseconds(ctx.ttl_ms));
        std::this_thread::sleep_for(std::chrono::milliseconds(ctx.ttl_ms * 3 / 2));  // length
        signal_holder(ctx.a_kind, a.pid(), SIGCONT);
    };
    return run_fault(ctx, where, fault);
}

// S3: acquire or renewal in flight, alternating by run and configuration.
edgelock::nemesis::verdict run_paused_in_flight(const run_context& ctx, deployment& where) {
    where.proxy_to_master();
    if (!ctx.renewal_in_flight) return run_paused_acquire(ctx, where);
    return run_paused_renewal(ctx, where);
}

bool link_up(const redis_server& replica) {
    return edgelock::testing::eventually(
        [&] {
            redis_client admin(replica.port());
            return admin.info_field("replication", "master_link_status") == "up";
        },
        std::chrono::seconds(10));
}

// S6: split brain. Four servers of its own per run: n0 master, n1..n3 its replicas.
edgelock::nemesis::verdict run_s6(const run_context& ctx) {
    const std::vector<std::string> none;
    redis_server n0(none, persistence::volatile_);
    const std::vector<std::string> of_n0 = {"--replicaof", "127.0.0.1", std::to_string(n0.port())};
    redis_server n1(of_n0, persistence::volatile_);
    redis_server n2(of_n0, persistence::volatile_);
    redis_server n3(of_n0, persistence::volatile_);
    run_times times;
    if (!link_up(n1) || !link_up(n2) || !link_up(n3)) return judge_run(ctx, times);
    n0.freeze();
    times.fault_us = monotonic_us();
    redis_client(n1.port()).command({"REPLICAOF", "NO", "ONE"});
    redis_client(n3.port()).command({"REPLICAOF", "127.0.0.1", std::to_string(n1.port())});
    if (!link_up(n3)) return judge_run(ctx, times);
    const std::string work = "work_ms=" + std::to_string(3 * ctx.ttl_ms);
    child_process a = ctx.spawn("A", {"instances=" + n1.url()}, {work});
    if (!expect_line(a, "held", acquire_bound(ctx.ttl_ms))) return judge_run(ctx, times);
    n0.thaw();  // n2 still replicates from it and answers its WAIT
    times.heal_us = monotonic_us();
    child_process b = ctx.spawn("B", {"instances=" + n0.url()}, {"work_ms=300"});
    expect_line(b, "released", acquire_bound(ctx.ttl_ms));
    a.wait_exit(std::chrono::milliseconds(3 * ctx.ttl_ms + 10'000));
    b.wait_exit(std::chrono::seconds(10));
    return judge_run(ctx, times);
}

// S9 behind Sentinel: the minority side keeps the master n0, its replica n1 and holder A;
// n2 and n3 (replicating from n0 through a TCP proxy) are cut off from it with the
// sentinels, which promote n2 and re-point n3 to it. A goes on renewing on n0 (WAIT answered
// by n1); B locks on n2 once A's key there has expired (WAIT answered by n3).
edgelock::nemesis::verdict run_sentinel_partition(const run_context& ctx) {
    // Without AOF: an fsync on a disk shared with other work can hold a renewal's reply
    // past the lease, which would hide the split brain behind a slow disk.
    redis_server n0({}, persistence::volatile_);
    tcp_proxy across(n0.port());  // the link the partition cuts
    redis_server n1({"--replicaof", "127.0.0.1", std::to_string(n0.port())},
                    persistence::volatile_);
    const std::vector<std::string> of_across = {"--replicaof", "127.0.0.1",
                                                std::to_string(across.port())};
    redis_server n2(of_across, persistence::volatile_);
    redis_server n3(of_across, persistence::volatile_);
    run_times times;
    if (!link_up(n1) || !link_up(n2) || !link_up(n3)) return judge_run(ctx, times);
    const std::string work = "work_ms=" + std::to_string(3 * ctx.ttl_ms);
    child_process a = ctx.spawn("A", {"instances=" + n0.url()}, {work});
    if (!expect_line(a, "held", acquire_bound(ctx.ttl_ms))) return judge_run(ctx, times);
    across.blackhole();
    times.fault_us = monotonic_us();
    redis_client(n2.port()).command({"REPLICAOF", "NO", "ONE"});
    redis_client(n3.port()).command({"REPLICAOF", "127.0.0.1", std::to_string(n2.port())});
    if (!link_up(n3)) return judge_run(ctx, times);
    child_process b = ctx.spawn("B", {"instances=" + n2.url()}, {"work_ms=300"});
    expect_line(b, "released", acquire_bound(ctx.ttl_ms));
    across.pass();
    times.heal_us = monotonic_us();
    a.wait_exit(std::chrono::milliseconds(3 * ctx.ttl_ms + 10'000));
    b.wait_exit(std::chrono::seconds(10));
    return judge_run(ctx, times);
}

// Waits (bounded) until every node of `cluster` has been up for longer than `age_ms`.
void wait_until_older_than(redis_cluster& cluster, std::int64_t age_ms) {
    const auto old_enough = [&] {
        for (std::size_t n = 0; n < cluster.size(); ++n) {
            try {
                const std::string up = cluster.admin(n).info_field("server", "uptime_in_seconds");
                if (up.empty() || std::stoll(up) * 1000 <= age_ms) return false;
            } catch (const std::exception&) {
                return false;
            }
        }
        return true;
    };
    edgelock::testing::eventually(old_enough, std::chrono::milliseconds(age_ms + 5000));
}

// S6 on Redis Cluster: the lock's master is SIGSTOPped during A's hold until its replica is
// promoted (the node timeout, then the election), then SIGCONTed: it learns its demotion and
// replicates from the new master. A's lease (ttl_for: 10 s) outlasts the failover, so A must
// keep its hold by renewing on the promoted master (kept: judged from a renewal interval and
// its timeouts after the failover ended, so a slow failover is forgiven).
edgelock::nemesis::verdict run_cluster_failover(const run_context& ctx, deployment& where) {
    // The restart guard counts a node only a lease after its start, and the replica started
    // with the cluster moments ago: as the simulator's nodes, the cluster is older than that.
    if (ctx.spec->guard) wait_until_older_than(*where.cluster, ctx.ttl_ms * 11 / 10 + 1000);
    hold_fault fault;
    // The failover (2-3 s), and renewals after it until the lease would have ended unrenewed.
    fault.a_work_ms = ctx.ttl_ms * 4 / 3;
    fault.b_first = true;
    fault.heal_at_once = true;
    fault.start = [&](child_process&) {
        redis_cluster& cluster = *where.cluster;
        cluster.pause_master(cluster.owner_of(edgelock::testing::key_slot(ctx.name)));
    };
    return run_fault(ctx, where, fault);
}

// A master of `cluster` other than `not_this`, as the nodes' roles are now (S6 moves them).
std::size_t another_master(redis_cluster& cluster, std::size_t not_this) {
    for (std::size_t n = 0; n < cluster.size(); ++n) {
        if (n != not_this && cluster.admin(n).role() == "master") return n;
    }
    throw std::runtime_error("nemesis: the cluster has one master");
}

// S8 on Redis Cluster: during A's hold the lock's slot moves to another master, as the
// simulator's cluster family of S8 moves it once: IMPORTING and MIGRATING with A's key moved
// (the old master answers ASK for it), 1.5 TTL later the move completed (MOVED).
edgelock::nemesis::verdict run_cluster_migration(const run_context& ctx, deployment& where) {
    hold_fault fault;
    fault.a_work_ms = 3 * ctx.ttl_ms;
    fault.b_first = true;
    fault.heal_at_once = true;
    fault.start = [&](child_process&) {
        redis_cluster& cluster = *where.cluster;
        const std::uint16_t slot = edgelock::testing::key_slot(ctx.name);
        const std::size_t from = cluster.owner_of(slot);
        const std::size_t to = another_master(cluster, from);
        cluster.migrate_slot(slot, from, to, edgelock::testing::migration::half_way);
        // The lock's key among those moved (the CLI's lock has three keys in the slot).
        if (cluster.admin(from).exists(ctx.name)) cluster.migrate_key(ctx.name, from, to);
        // The fault's shape: for longer than a lease, every renewal (ttl/3 apart) is asked
        // to the importing master, so a holder that does not follow ASK loses its lock.
        std::this_thread::sleep_for(std::chrono::milliseconds(ctx.ttl_ms * 3 / 2));
        cluster.migrate_slot(slot, from, to, edgelock::testing::migration::complete);
    };
    return run_fault(ctx, where, fault);
}

// The scenarios real processes can play (docs: tests/nemesis/README.md, "Faults"). A cluster
// client reaches the nodes its slot map names, never a proxy, so S3 and S9 have no path to
// cut there and S8 is the slot's migration; S5 and the cluster row's S6 are left out for the
// reasons the README gives.
bool scenario_applies(const std::string& scenario, const config_spec& spec) {
    if (spec.kind == topology_kind::cluster) {
        return scenario == "S1" || scenario == "S2" || scenario == "S8" ||
               (scenario == "S6" && spec.wait > 0);
    }
    return scenario == "S1" || scenario == "S2" || scenario == "S3" || scenario == "S5" ||
           scenario == "S6" || scenario == "S8" || scenario == "S9";
}

// A restarted master is found again by its replica only at the replica's next cron tick
// (once a second) and then resynced, and WAIT needs that replica: with a short TTL the
// holder's renewal (every ttl/3) always finds the restart first. A TTL of several seconds
// lets the real timing land where the simulator's does.
//
// S6 and S9 with WAIT break the lock only when the holders' WAITs are answered on both sides.
// A WAIT's timeout is a fraction of the TTL (the CLI's ttl/20, the holders' ttl/8 up to
// 999 ms), and
// redis-server 7.0 here answered WAIT 1 on a master with a linked replica in 80-100 ms in
// about half the runs (0 after its 62 ms timeout, then 1 within 9 ms; a loop of SET and
// WAIT 1 62 from the runner): with a 500 ms TTL the renewal fails and the lock is lost
// before the split can show. 3 s gives the CLI's WAIT 150 ms. Redis Cluster's S8 judges every
// lost hold (available), so neither a WAIT answered late nor a renewal's ASK, ASKING and
// NOSCRIPT round trips within the default attempt timeout (ttl/10) may cost one there.
//
// Redis Cluster's S6 judges lost holds too: the lease must outlast the failover (the node
// timeout of 1 s, the failure's report, the election's 0.5-1 s, the old master's return).
std::int64_t ttl_for(const std::string& scenario, const config_spec& spec,
                     const runner_options& options) {
    constexpr std::int64_t resync_ttl_ms = 6000;
    constexpr std::int64_t slow_wait_ttl_ms = 3000;
    constexpr std::int64_t cluster_failover_ttl_ms = 10'000;
    const bool sentinel_wait = spec.kind == topology_kind::sentinel && spec.wait > 0;
    const bool cluster = spec.kind == topology_kind::cluster;
    if (scenario == "S5" && sentinel_wait) return std::max(options.ttl_ms, resync_ttl_ms);
    if (scenario == "S6" && cluster) return std::max(options.ttl_ms, cluster_failover_ttl_ms);
    const bool slow_wait =
        (sentinel_wait && (scenario == "S6" || scenario == "S9")) || (cluster && scenario == "S8");
    return slow_wait ? std::max(options.ttl_ms, slow_wait_ttl_ms) : options.ttl_ms;
}

std::string clients_of(const run_context& ctx) {
    return std::string(kind_name(ctx.a_kind)) + ", B " + kind_name(ctx.b_kind);
}

void record(edgelock::nemesis::real_cell& cell, const edgelock::nemesis::verdict& verdict,
            edgelock::nemesis::lost_check lost_against) {
    cell.errors += verdict.harness_error ? 1 : 0;
    cell.lost += verdict.lost ? 1 : 0;
    if (lost_against != edgelock::nemesis::lost_check::none) cell.lost_against = lost_against;
    ++cell.runs;
    cell.overlap += verdict.overlap ? 1 : 0;
    cell.stale += verdict.stale ? 1 : 0;
    cell.liveness += verdict.liveness_violated ? 1 : 0;
    if (cell.first_detail.empty()) cell.first_detail = verdict.detail;
}

edgelock::nemesis::verdict run_once(const std::string& scenario, const run_context& ctx,
                                    std::unique_ptr<deployment>& where) {
    const bool sentinel = ctx.spec->kind == topology_kind::sentinel;
    if (scenario == "S6" && sentinel) return run_s6(ctx);
    if (scenario == "S9" && sentinel) return run_sentinel_partition(ctx);
    if (!where) where = std::make_unique<deployment>(*ctx.spec);
    if (where->cluster && scenario == "S6") return run_cluster_failover(ctx, *where);
    if (where->cluster && scenario == "S8") return run_cluster_migration(ctx, *where);
    if (scenario == "S6") return run_node_pause(ctx, *where);
    if (scenario == "S9") return run_partition(ctx, *where);
    if (scenario == "S8") return run_lost_replies(ctx, *where);
    if (scenario == "S3") return run_paused_in_flight(ctx, *where);
    if (scenario == "S2") return run_s2(ctx, *where);
    return scenario == "S1" ? run_s1(ctx, *where) : run_s5(ctx, *where);
}

// One run of a cell. Runs rotate the holder kinds: A on kinds[(run + config) % n] and B on
// the next, so every kind holds first in some configuration even with one run per cell.
// One run's verdict. A harness failure (a server that would not start, a failover that did not
// come within the fixture's bound) is the run's error, on one line, not the end of the table;
// the deployment is started afresh for the next run.
edgelock::nemesis::verdict run_guarded(const std::string& scenario, const run_context& ctx,
                                       std::unique_ptr<deployment>& where) {
    try {
        return run_once(scenario, ctx, where);
    } catch (const std::exception& e) {
        where.reset();
        edgelock::nemesis::verdict failed;
        failed.harness_error = true;
        const std::string what = e.what();
        failed.detail = "harness error: " + what.substr(0, what.find('\n'));
        return failed;
    }
}

// The context of one run of a cell.
run_context context_for(const runner_options& options, const config_spec& spec,
                        std::size_t config_index, const std::string& scenario, int run) {
    const std::vector<holder_kind> kinds = options.kinds();
    const std::size_t first = (static_cast<std::size_t>(run) + config_index) % kinds.size();
    run_context ctx;
    ctx.options = &options;
    ctx.spec = &spec;
    ctx.ttl_ms = ttl_for(scenario, spec, options);
    ctx.run = run;
    ctx.a_kind = kinds[first];
    ctx.b_kind = kinds[(first + 1) % kinds.size()];
    ctx.renewal_in_flight = (static_cast<std::size_t>(run) + config_index) % 2 == 1;
    if (scenario == "S3") ctx.belief = edgelock::nemesis::belief_rule::through_checks;
    if (spec.kind == topology_kind::cluster) {
        using edgelock::nemesis::lost_check;
        if (scenario == "S6") ctx.lost_against = lost_check::kept;
        if (scenario == "S8") ctx.lost_against = lost_check::available;
    }
    // The CLI's command has no held() of its own: paused with edgelock during a hold, it
    // writes on its old belief until edgelock's SIGTERM lands, which is S1, not S3. The CLI
    // waits there (its acquire, before the command starts, is paused like any client's).
    if (scenario == "S3" && ctx.renewal_in_flight && ctx.a_kind == holder_kind::cli) {
        std::swap(ctx.a_kind, ctx.b_kind);
    }
    ctx.name = "nemesis:" + scenario + ":" + spec.name + ":" + std::to_string(run);
    ctx.dir = options.dir + "/" + spec.name + "-" + scenario + "-" + std::to_string(run);
    return ctx;
}

void run_cell_once(const runner_options& options, const config_spec& spec, std::size_t config_index,
                   const std::string& scenario, int run, std::unique_ptr<deployment>& where,
                   edgelock::nemesis::real_cell& cell) {
    const run_context ctx = context_for(options, spec, config_index, scenario, run);
    ::mkdir(ctx.dir.c_str(), 0755);
    const auto verdict = run_guarded(scenario, ctx, where);
    std::cout << scenario << " " << spec.name << " run " << run + 1 << " (A " << clients_of(ctx)
              << "): " << (verdict.detail.empty() ? "no violation" : verdict.detail) << std::endl;
    record(cell, verdict, ctx.lost_against);
}

constexpr int extra_runs_max = 4;

// Every scenario of one configuration, `runs` times each, on one deployment.
void run_config(const runner_options& options, const config_spec& spec, std::size_t config_index,
                const edgelock::nemesis::matrix_verdicts& matrix,
                std::vector<edgelock::nemesis::table_row>& rows) {
    std::unique_ptr<deployment> where;  // started on first use (S6 starts its own)
    for (const std::string& scenario : options.scenarios) {
        if (!scenario_applies(scenario, spec)) continue;
        edgelock::nemesis::table_row row;
        row.configuration = spec.name;
        row.scenario = scenario;
        const auto found = matrix.find({scenario, spec.name});
        row.matrix_known = found != matrix.end();
        if (row.matrix_known) row.matrix = found->second;
        const auto runs_of = options.runs_of.find(scenario);
        const int runs = runs_of == options.runs_of.end() ? options.runs : runs_of->second;
        // A violation the matrix shows may take a few tries on real processes, where
        // timing is the machine's (a loaded one lets a holder lose its lock first): up to
        // extra_runs_max more runs look for it. Cells the matrix calls ok get no more.
        for (int run = 0; run < runs ||
                          (edgelock::nemesis::violation_unseen(row) && run < runs + extra_runs_max);
             ++run) {
            run_cell_once(options, spec, config_index, scenario, run, where, row.real);
        }
        rows.push_back(row);
    }
}

// "S3=1,S8=1": runs per cell of those scenarios.
std::map<std::string, int> parse_runs_of(const std::string& text) {
    std::map<std::string, int> out;
    for (const std::string& part : split_commas(text)) {
        const auto eq = part.find('=');
        if (eq != std::string::npos) out[part.substr(0, eq)] = std::stoi(part.substr(eq + 1));
    }
    return out;
}

bool parse_options(int argc, char** argv, runner_options& options) {
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string key = argv[i];
        const std::string value = argv[i + 1];
        if (key == "--holder") options.holder_path = value;
        else if (key == "--holder-asio") options.holder_asio_path = value;
        else if (key == "--holder-cli") options.holder_cli_path = value;
        else if (key == "--edgelock") options.edgelock_path = value;
        else if (key == "--runs-of") options.runs_of = parse_runs_of(value);
        else if (key == "--sim") options.sim_path = value;
        else if (key == "--dir") options.dir = value;
        else if (key == "--runs") options.runs = std::stoi(value);
        else if (key == "--matrix-runs") options.matrix_runs = std::stoi(value);
        else if (key == "--ttl") options.ttl_ms = std::stoll(value);
        else if (key == "--configs") options.configs = split_commas(value);
        else if (key == "--scenarios") options.scenarios = split_commas(value);
        else return false;
    }
    return (argc % 2) == 1 && !options.holder_path.empty() && !options.sim_path.empty();
}

}  // namespace

int main(int argc, char** argv) {
    runner_options options;
    if (!parse_options(argc, argv, options)) {
        std::cerr << "usage: nemesis_runner --holder PATH --sim PATH [--holder-asio PATH] "
                     "[--holder-cli PATH --edgelock PATH] [--runs N] [--runs-of S3=1,S8=1] "
                     "[--ttl MS] [--configs a,b] [--scenarios S1,S2,S3,S5,S6,S8,S9] "
                     "[--matrix-runs R] [--dir D]\n";
        return 64;
    }
    // A directory made here is removed when every cell agrees; one given (--dir) is kept.
    const bool own_dir = options.dir.empty();
    if (own_dir) {
        char pattern[] = "/tmp/nemesis.XXXXXX";
        if (::mkdtemp(pattern) == nullptr) return 70;
        options.dir = pattern;
    }
    const auto matrix = edgelock::nemesis::read_matrix(options.sim_path, options.matrix_runs);
    std::cout << "matrix: " << matrix.size() << " cells from " << options.sim_path << "; logs in "
              << options.dir << std::endl;
    std::vector<edgelock::nemesis::table_row> rows;
    for (std::size_t i = 0; i < all_configs().size(); ++i) {
        const config_spec& spec = all_configs()[i];
        const bool chosen = options.configs.empty() ||
                            std::find(options.configs.begin(), options.configs.end(), spec.name) !=
                                options.configs.end();
        if (chosen) run_config(options, spec, i, matrix, rows);
    }
    if (edgelock::nemesis::print_table(rows) != 0) {
        std::cout << "logs kept in " << options.dir << std::endl;
        return 1;
    }
    if (own_dir) std::filesystem::remove_all(options.dir);
    return 0;
}
