// SPDX-License-Identifier: Apache-2.0
// nemesis: the simulator's safety matrix checked against real processes under real faults.
//
//   nemesis_runner --holder <nemesis_holder> --sim <edgelock-sim> [--holder-asio <path>]
//                  [--runs N] [--ttl MS] [--configs a,b,...] [--scenarios S1,S5,S6,S9]
//                  [--matrix-runs R] [--dir D]
//
// For each configuration it starts real redis-server (and redis-sentinel) processes on
// loopback, runs each scenario N times with two holder processes, A and B (the blocking
// client; with --holder-asio, run 1 puts B on the asio client, run 2 A, and so on), judges
// each run from the holders' logs (nemesis_history.hpp) and prints the agreement table
// against `edgelock-sim matrix`. Exit status 1 when a cell disagrees (cells whose matrix
// verdict is known to be changing are shown but do not fail).
//
// Faults, as the simulator's scenarios (docs/SIMULATION.md) land them:
//   S1  holder A checks held(), is SIGSTOPped before its write, past the TTL; B acquires
//       and writes; A is SIGCONTed and writes on the strength of its old check.
//   S5  during A's hold the node (Redlock: the node two majorities share) is killed with
//       SIGKILL and restarted without persistence (delayed-restart: after 1.5 TTL).
//   S6  Sentinel: split brain after a forced promotion: the master n0 is SIGSTOPped, replica
//       n1 is promoted (REPLICAOF NO ONE) and n3 re-pointed to it, A locks on n1; n0 is
//       SIGCONTed while n2 still replicates from it, and B locks on n0 (WAIT 1 answered by
//       n2). Each client is pointed at the master its sentinel would name during the
//       failover. Without replicas: the node is paused for 1.5 TTL during A's hold (SIGSTOP,
//       or CLIENT PAUSE ALL), then runs what waited.
//   S9  A, holding, is cut off by a TCP proxy that swallows everything from every node it
//       reaches, until B has held and released. Sentinel: the partition leaves A with the
//       master and one replica, and the other side promotes a replica of its own (see
//       run_sentinel_partition).
// Redlock runs partition the holders as the simulator does: A reaches n0..n2 only, B n2..n4
// only (the other two addresses are ports nothing listens on).
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "edgelock/testing/child_process.hpp"
#include "edgelock/testing/redis_client.hpp"
#include "edgelock/testing/redis_process.hpp"
#include "edgelock/testing/tcp_proxy.hpp"
#include "nemesis_history.hpp"
#include "nemesis_matrix.hpp"

namespace {

using edgelock::nemesis::monotonic_us;
using edgelock::testing::child_process;
using edgelock::testing::persistence;
using edgelock::testing::redis_client;
using edgelock::testing::redis_masters;
using edgelock::testing::redis_server;
using edgelock::testing::sentinel_topology;
using edgelock::testing::tcp_proxy;

enum class topology_kind { single, sentinel, redlock };

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
    };
    return configs;
}

struct runner_options {
    std::string holder_path;
    std::string holder_asio_path;  // when set, runs alternate which client holds first
    std::string sim_path;
    std::string dir;
    int runs = 1;
    int matrix_runs = 20;
    std::int64_t ttl_ms = 1000;
    std::vector<std::string> configs;
    std::vector<std::string> scenarios = {"S1", "S5", "S6", "S9"};
};

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

std::string dead_url() {
    // Free a moment ago and never bound by us: connections to it are refused (a partition).
    return "redis://127.0.0.1:" + std::to_string(edgelock::testing::free_port());
}

// The servers of one configuration, started once and reused by its runs (each run uses a
// lock name and a store of its own).
struct deployment {
    std::unique_ptr<redis_server> single;
    std::unique_ptr<redis_masters> masters;
    std::unique_ptr<sentinel_topology> topology;
    std::vector<std::string> dead_urls;
    // A's way to the nodes it reaches, for S9 (a partition cuts it off from them).
    std::vector<std::unique_ptr<tcp_proxy>> proxies;

    explicit deployment(const config_spec& spec) {
        if (spec.kind == topology_kind::single) {
            single =
                std::make_unique<redis_server>(std::vector<std::string>{}, persistence::volatile_);
            proxies.push_back(std::make_unique<tcp_proxy>(single->port()));
        } else if (spec.kind == topology_kind::redlock) {
            masters = std::make_unique<redis_masters>(5, std::vector<std::string>{},
                                                      persistence::volatile_);
            dead_urls = {dead_url(), dead_url()};
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
    // proxies when `proxied`.
    std::vector<std::string> where(const std::string& who, bool proxied = false) const {
        const bool via = proxied && who == "A";
        if (single) return {"instances=" + (via ? proxies[0]->url() : single->url())};
        if (topology) return {"sentinels=" + join(topology->sentinel_urls()), "master=mymaster"};
        auto& m = *masters;
        if (who == "A") {
            std::vector<std::string> urls;
            for (std::size_t i = 0; i < 3; ++i) {
                urls.push_back(via ? proxies[i]->url() : m[i].url());
            }
            return {"instances=" + join({urls[0], urls[1], urls[2], dead_urls[0], dead_urls[1]})};
        }
        return {"instances=" +
                join({dead_urls[0], dead_urls[1], m[2].url(), m[3].url(), m[4].url()})};
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
    bool a_on_asio = false;  // A on the asio client and B on the blocking one, or the reverse

    std::string program(const std::string& who) const {
        if (options->holder_asio_path.empty()) return options->holder_path;
        return (who == "A") == a_on_asio ? options->holder_asio_path : options->holder_path;
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
        edgelock::testing::spawn_options spawn;
        spawn.pipe_stdio = true;
        spawn.output_path = dir + "/" + who + ".stderr";
        return child_process(argv, spawn);
    }
};

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
    return edgelock::nemesis::judge(holds, times.fault_us, times.heal_us,
                                    acquire_bound(ctx.ttl_ms).count() * 1000);
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
    a.freeze();
    times.fault_us = monotonic_us();
    a.write_line("go");  // read once A runs again: its write follows the old check
    child_process b = ctx.spawn("B", where.where("B"), {"work_ms=300"});
    // B can hold only once A's key expired, so the pause outlasts the TTL by construction.
    expect_line(b, "released", acquire_bound(ctx.ttl_ms));
    a.thaw();
    times.heal_us = monotonic_us();
    a.wait_exit(std::chrono::seconds(10));
    b.wait_exit(std::chrono::seconds(10));
    return judge_run(ctx, times);
}

// S5: the node is killed during A's hold and comes back empty (after 1.5 TTL when delayed).
edgelock::nemesis::verdict run_s5(const run_context& ctx, deployment& where) {
    const std::int64_t ttl_ms = ctx.ttl_ms;
    child_process a = ctx.spawn("A", where.where("A"), {"work_ms=" + std::to_string(3 * ttl_ms)});
    run_times times;
    if (!expect_line(a, "held", acquire_bound(ctx.ttl_ms))) return judge_run(ctx, times);
    child_process b = ctx.spawn("B", where.where("B"), {"work_ms=300"});
    redis_server& target = where.crash_target();
    target.stop();
    times.fault_us = monotonic_us();
    if (ctx.spec->delayed_restart) {
        // The fault's length, not synchronization: the node stays down past the TTL.
        std::this_thread::sleep_for(std::chrono::milliseconds(ttl_ms * 3 / 2));
    }
    target.start();
    times.heal_us = monotonic_us();
    expect_line(b, "released", acquire_bound(ctx.ttl_ms));
    a.wait_exit(std::chrono::milliseconds(3 * ttl_ms + 10'000));
    b.wait_exit(std::chrono::seconds(10));
    return judge_run(ctx, times);
}

// S6 without replicas: the node (Redlock: the one both majorities share) stops answering
// for 1.5 TTL during A's hold: SIGSTOP in even runs, CLIENT PAUSE ALL (which also holds
// back expiry) in odd runs. Then it runs what waited.
edgelock::nemesis::verdict run_node_pause(const run_context& ctx, deployment& where) {
    const std::int64_t ttl_ms = ctx.ttl_ms;
    child_process a = ctx.spawn("A", where.where("A"), {"work_ms=" + std::to_string(3 * ttl_ms)});
    run_times times;
    if (!expect_line(a, "held", acquire_bound(ctx.ttl_ms))) return judge_run(ctx, times);
    child_process b = ctx.spawn("B", where.where("B"), {"work_ms=300"});
    redis_server& target = where.crash_target();
    const auto pause = std::chrono::milliseconds(ttl_ms * 3 / 2);
    times.fault_us = monotonic_us();
    if (ctx.run % 2 == 0) {
        target.freeze();
        std::this_thread::sleep_for(pause);  // the fault's length
        target.thaw();
    } else {
        redis_client(target.port())
            .command({"CLIENT", "PAUSE", std::to_string(pause.count()), "ALL"});
        std::this_thread::sleep_for(pause);  // the fault's length (the server ends it)
    }
    times.heal_us = monotonic_us();
    expect_line(b, "released", acquire_bound(ctx.ttl_ms));
    a.wait_exit(std::chrono::milliseconds(3 * ttl_ms + 10'000));
    b.wait_exit(std::chrono::seconds(10));
    return judge_run(ctx, times);
}

// S9: A, holding, is cut off from every node it reaches (its proxies swallow everything)
// until B has held and released; then the partition heals.
edgelock::nemesis::verdict run_partition(const run_context& ctx, deployment& where) {
    const std::int64_t ttl_ms = ctx.ttl_ms;
    child_process a =
        ctx.spawn("A", where.where("A", true), {"work_ms=" + std::to_string(3 * ttl_ms)});
    run_times times;
    if (!expect_line(a, "held", acquire_bound(ctx.ttl_ms))) return judge_run(ctx, times);
    for (auto& proxy : where.proxies) proxy->blackhole();
    times.fault_us = monotonic_us();
    child_process b = ctx.spawn("B", where.where("B"), {"work_ms=300"});
    expect_line(b, "released", acquire_bound(ctx.ttl_ms));
    for (auto& proxy : where.proxies) {
        proxy->pass();
        proxy->close_all();
    }
    times.heal_us = monotonic_us();
    a.wait_exit(std::chrono::milliseconds(3 * ttl_ms + 10'000));
    b.wait_exit(std::chrono::seconds(10));
    return judge_run(ctx, times);
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

bool scenario_applies(const std::string& scenario, const config_spec& spec) {
    const bool sentinel = spec.kind == topology_kind::sentinel;
    if (scenario == "S6") return !sentinel || !spec.guard;
    if (scenario == "S9") return true;
    return scenario == "S1" || scenario == "S5";
}

// A restarted master is found again by its replica only at the replica's next cron tick
// (once a second) and then resynced, and WAIT needs that replica: with a short TTL the
// holder's renewal (every ttl/3) always finds the restart first. A TTL of several seconds
// lets the real timing land where the simulator's does.
std::int64_t ttl_for(const std::string& scenario, const config_spec& spec,
                     const runner_options& options) {
    constexpr std::int64_t resync_ttl_ms = 6000;
    if (scenario == "S5" && spec.kind == topology_kind::sentinel && spec.wait > 0) {
        return std::max(options.ttl_ms, resync_ttl_ms);
    }
    return options.ttl_ms;
}

std::string clients_of(const run_context& ctx) {
    if (ctx.options->holder_asio_path.empty()) return "blocking, B blocking";
    return ctx.a_on_asio ? "asio, B blocking" : "blocking, B asio";
}

void record(edgelock::nemesis::real_cell& cell, const edgelock::nemesis::verdict& verdict) {
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
    if (scenario == "S6") return run_node_pause(ctx, *where);
    if (scenario == "S9") return run_partition(ctx, *where);
    return scenario == "S1" ? run_s1(ctx, *where) : run_s5(ctx, *where);
}

// Every scenario of one configuration, `runs` times each, on one deployment.
void run_config(const runner_options& options, const config_spec& spec,
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
        row.pending = scenario == "S6" && spec.name == "sentinel+WAIT";
        for (int run = 0; run < options.runs; ++run) {
            run_context ctx;
            ctx.options = &options;
            ctx.spec = &spec;
            ctx.ttl_ms = ttl_for(scenario, spec, options);
            ctx.run = run;
            ctx.a_on_asio = run % 2 == 1;
            ctx.name = "nemesis:" + scenario + ":" + spec.name + ":" + std::to_string(run);
            ctx.dir = options.dir + "/" + spec.name + "-" + scenario + "-" + std::to_string(run);
            ::mkdir(ctx.dir.c_str(), 0755);
            const auto verdict = run_once(scenario, ctx, where);
            std::cout << scenario << " " << spec.name << " run " << run + 1 << " (A "
                      << clients_of(ctx)
                      << "): " << (verdict.detail.empty() ? "no violation" : verdict.detail)
                      << std::endl;
            record(row.real, verdict);
        }
        rows.push_back(row);
    }
}

bool parse_options(int argc, char** argv, runner_options& options) {
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string key = argv[i];
        const std::string value = argv[i + 1];
        if (key == "--holder") options.holder_path = value;
        else if (key == "--holder-asio") options.holder_asio_path = value;
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
                     "[--runs N] [--ttl MS] [--configs a,b] [--scenarios S1,S5,S6,S9] "
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
    for (const config_spec& spec : all_configs()) {
        const bool chosen = options.configs.empty() ||
                            std::find(options.configs.begin(), options.configs.end(), spec.name) !=
                                options.configs.end();
        if (chosen) run_config(options, spec, matrix, rows);
    }
    if (edgelock::nemesis::print_table(rows) != 0) {
        std::cout << "logs kept in " << options.dir << std::endl;
        return 1;
    }
    if (own_dir) std::filesystem::remove_all(options.dir);
    return 0;
}
