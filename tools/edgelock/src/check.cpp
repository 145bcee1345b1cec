// SPDX-License-Identifier: Apache-2.0
#include "check.hpp"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "edgelock/blocking_commands.hpp"
#include "edgelock/keys.hpp"
#include "edgelock/lock.hpp"
#include "edgelock/session/node_facts.hpp"
#include "check_matrix.hpp"
#include "check_probe.hpp"
#include "nodes.hpp"
#include "errors.hpp"
#include "exit_codes.hpp"
#include "quote.hpp"
#include "simulator.hpp"

namespace edgelock::cli {
namespace {

using blocking::command_connection;
using blocking::command_reply;

// The scenario of nodes evicting keys under memory pressure (maxmemory-policy).
constexpr const char* eviction_scenario = "S10";

std::string persistence_text(const node_report& r) {
    std::string text;
    if (r.facts.aof_enabled) {
        const char* policy = r.facts.fsync == session::fsync_policy::always     ? "always"
                             : r.facts.fsync == session::fsync_policy::everysec ? "everysec"
                             : r.facts.fsync == session::fsync_policy::no
                                 ? "no"
                                 : "unknown (CONFIG GET refused)";
        text = std::string("AOF, appendfsync ") + policy;
    }
    if (!r.rdb.empty() && r.rdb != "?") {
        text += (text.empty() ? "" : ", ") + std::string("RDB snapshots (save ") + r.rdb + ")";
    }
    if (text.empty()) text = "none: a restart forgets every key";
    return text;
}

std::string eviction_text(const node_report& r) {
    if (r.facts.may_evict()) return std::string(session::eviction_warning(r.facts).view());
    if (r.facts.maxmemory_bytes == 0) return "no memory limit";
    return "maxmemory " + std::to_string(r.facts.maxmemory_bytes) + " bytes, " +
           std::string(r.facts.maxmemory_policy.view());
}

// A replica is read-only: `run` refuses it (not_master), so it counts toward no quorum.
bool holds_locks(const node_report& r) { return !r.problem.ec && role_of(r) == "master"; }

std::string role_text(const node_report& r) {
    if (role_of(r) != "slave") return role_of(r);
    return "slave: a read-only replica of " + master_of(r) + ", it cannot hold locks";
}

// What to change, per node and for the client, beyond the row's own limits.
std::vector<std::string> advice_for(const std::vector<node_report>& nodes, const options& o,
                                    const std::vector<verdict>& verdicts) {
    std::vector<std::string> advice;
    for (const node_report& r : nodes) {
        if (r.problem.ec) continue;
        if (role_of(r) == "slave") {
            advice.push_back(r.address + ": point edgelock at the master, " + master_of(r));
            continue;
        }
        if (r.facts.may_evict()) advice.push_back(r.address + ": set maxmemory-policy noeviction");
        if (!r.facts.durable() && !o.restart_guard) {
            advice.push_back(r.address +
                             ": a restart forgets keys: turn the restart guard on, "
                             "or AOF appendfsync always");
        } else if (!r.facts.durable()) {
            advice.push_back(r.address +
                             ": after a restart locks wait a TTL (restart guard); "
                             "AOF appendfsync always avoids it");
        }
    }
    bool stale = false;
    for (const verdict& v : verdicts) stale = stale || v.failed.find('S') != std::string::npos;
    if (stale && !o.fencing) {
        advice.push_back("enable fencing, and have the storage check the token");
    }
    if (!o.sentinel_urls.empty() && o.replicas_to_wait == 0) {
        advice.push_back("use WAIT (--wait-replicas 1): a failover loses keys without it");
    }
    if (!o.sentinel_urls.empty() && !o.fencing) {
        // Redis 7.0's Sentinel re-points replicas after the promotion: an old master that
        // comes back first has its WAITs acknowledged, and grants a lock a second time.
        advice.push_back("a failover can grant a lock twice, WAIT or not: enable fencing");
    }
    return advice;
}

std::string scenarios(const std::vector<verdict>& verdicts, bool failed) {
    std::string text;
    for (const verdict& v : verdicts) {
        if (v.failed.empty() == failed) continue;
        text += (text.empty() ? "" : " ") + v.scenario + (failed ? ":" + v.failed : "");
    }
    return text.empty() ? "-" : text;
}

// The README's letters and scenarios, short, for the legend under `fails`.
const char* letter_meaning(char letter, bool semaphore) {
    switch (letter) {
        case 'O':
            return semaphore ? "O more clients held a permit at once than there are permits"
                             : "O two clients held the lock at once";
        case 'S': return "S the storage accepted a stale holder's write";
        case 'F': return "F a later holder got a lower fence token";
        case 'L': return "L the lock was never acquired again";
        case 'K': return "K a holder lost the lock while its master still kept it";
        case 'A':
            return "A a holder lost the lock, or a free lock waited past its bound, through "
                   "what its configuration rides out (a slot moving, a failover with WAIT)";
        case 'C':
            return "C a claim was counted without the server's evidence (a WAIT on another "
                   "connection than the one that wrote it, a replica never asked ROLE)";
        case 'W': return "W a waiter at its turn was not served within the fair line's bound";
        case 'Q': return "Q the fair line served a waiter out of its order";
        default: return "H held() said yes after Redis lost the key";
    }
}

const char* scenario_title(const std::string& scenario) {
    static const std::pair<const char*, const char*> titles[] = {
        {"S1", "a holder pauses past its lease"},
        {"S2", "a holder's write is delayed past it"},
        {"S3", "a pause while replies are in flight"},
        {"S4", "a Redis clock jumps forward"},
        {"S5", "Redis restarts empty, or a new server takes its address"},
        {"S6", "the master goes, Sentinel fails over"},
        {"S7", "a client clock runs slow"},
        {"S8", "release and renew replies are lost"},
        {"S9", "the network splits"},
        {"S10", "a node evicts keys"},
        {"S11", "a waiter misses its wake-up"}};
    for (const auto& [code, title] : titles) {
        if (scenario == code) return title;
    }
    return "";
}

// What protects against a scenario this row fails, given the settings and the deployment.
std::string protection(const verdict& v, const options& o) {
    const bool sentinel = !o.sentinel_urls.empty();
    if (v.scenario == eviction_scenario) return "maxmemory-policy noeviction";
    if (v.scenario == "S5" && !o.restart_guard)
        return "the restart guard or AOF appendfsync always";
    if (v.scenario == "S9" && sentinel) return "Redlock over independent masters";
    // S6 under Sentinel included: WAIT makes a promoted replica hold the key, but an old
    // master back before it is reconfigured still has its WAITs acknowledged.
    // The overlap itself (O) no Redis deployment avoids: only the storage can refuse the
    // stale holder's write, with a fence token.
    if (o.permits > 1) {
        return o.fencing ? "storage that refuses a stale fence token of its permit"
                         : "fencing (--fencing on) and storage that checks the token per permit";
    }
    return o.fencing ? "storage that refuses a stale fence token"
                     : "fencing (--fencing on) and storage that checks the token";
}

std::string json_list(const std::vector<std::string>& items) {
    std::string out = "[";
    for (std::size_t i = 0; i < items.size(); ++i)
        out += (i > 0 ? "," : "") + json_string(items[i]);
    return out + "]";
}

struct report {
    row_choice row;
    std::vector<node_report> nodes;
    std::vector<verdict> verdicts;
    std::vector<std::string> not_exposed;  // scenarios this deployment cannot meet
    std::vector<std::string> advice;
    std::size_t holding = 0;  // nodes that can hold locks: answered, and masters
    std::size_t needed = 1;   // of them, for a lock: a majority of the instances
    bool simulated = false;
    bool worse = false;
};

bool quorum_left(const report& r) { return r.holding >= r.needed; }

// Eviction (S10) hurts only a node that may evict: without one, it is not this deployment's.
void set_aside_eviction(report& r) {
    if (r.worse) return;
    for (auto v = r.verdicts.begin(); v != r.verdicts.end(); ++v) {
        if (v->scenario != eviction_scenario) continue;
        r.not_exposed.push_back(v->scenario);
        r.verdicts.erase(v);
        return;
    }
}

std::string quorum_text(const report& r) {
    return std::to_string(r.holding) + " of " + std::to_string(r.nodes.size()) +
           " node(s) can hold locks, " + std::to_string(r.needed) +
           " needed: " + (quorum_left(r) ? "a quorum is left" : "no quorum");
}

// Why each node that cannot hold locks cannot: "127.0.0.1:6380 is a replica of ...".
std::string missing_text(const report& r) {
    std::string text;
    for (const node_report& n : r.nodes) {
        if (holds_locks(n)) continue;
        text += text.empty() ? "" : "; ";
        if (n.problem.ec) text += n.address + ": " + describe(n.problem);
        else text += n.address + " is a replica of " + master_of(n);
    }
    return text;
}

// "safe against ...; not safe against ...; protect with X (S1 S4), Y (S10)", or why the
// deployment cannot hold locks at all.
std::string verdict_text(const report& r, const options& o) {
    if (!quorum_left(r))
        return "cannot hold locks: " + quorum_text(r) + " (" + missing_text(r) + ")";
    std::string text = "safe against " + scenarios(r.verdicts, false);
    if (r.holding < r.nodes.size()) {
        text = "degraded, " + std::to_string(r.holding) + " of " + std::to_string(r.nodes.size()) +
               " nodes hold locks (" + missing_text(r) + "); " + text;
    }
    std::string unsafe;
    std::string fair_only;  // scenarios where only the fair line's promises fail (W, Q)
    std::vector<std::pair<std::string, std::string>> remedies;  // remedy, its scenarios
    for (const verdict& v : r.verdicts) {
        if (v.failed.empty()) continue;
        if (v.failed.find_first_not_of("WQ") == std::string::npos) {
            fair_only += (fair_only.empty() ? "" : " ") + v.scenario;
            continue;
        }
        unsafe += (unsafe.empty() ? "" : " ") + v.scenario;
        const std::string remedy = protection(v, o);
        auto at = std::find_if(remedies.begin(), remedies.end(),
                               [&](const auto& entry) { return entry.first == remedy; });
        if (at == remedies.end()) at = remedies.insert(remedies.end(), {remedy, ""});
        at->second += (at->second.empty() ? "" : " ") + v.scenario;
    }
    // The fair line's wake-up and order are not exclusion: waiters still re-check the lock.
    const std::string fair_text = fair_only.empty()
                                      ? ""
                                      : "; the fair line's wake-up or order fails in " + fair_only +
                                            " (exclusion holds there)";
    if (unsafe.empty()) return text + fair_text;
    text += "; not safe against " + unsafe + "; protect with ";
    for (std::size_t i = 0; i < remedies.size(); ++i) {
        text += (i > 0 ? ", " : "") + remedies[i].first + " for " + remedies[i].second;
    }
    return text + fair_text;
}

// The letters and the scenarios the `fails` line shows, in words.
void print_legend(const report& r, const options& o) {
    std::string letters;
    std::string titles;
    for (const verdict& v : r.verdicts) {
        if (v.failed.empty()) continue;
        titles += (titles.empty() ? "" : "; ") + v.scenario + " " + scenario_title(v.scenario);
        for (const char letter : v.failed) {
            if (letters.find(letter) == std::string::npos) letters += letter;
        }
    }
    if (titles.empty()) return;
    std::string meanings;
    for (const char letter : std::string("OSFLHKACWQ")) {
        if (letters.find(letter) == std::string::npos) continue;
        meanings +=
            (meanings.empty() ? "" : "; ") + std::string(letter_meaning(letter, o.permits > 1));
    }
    std::printf("legend       %s\nscenarios    %s\n", meanings.c_str(), titles.c_str());
}

// How long from now the restart guard keeps this node out of a lease of --ttl, as the core
// decides it: a scratch lock told the node's start answers an acquire, so no default (ttl +
// drift) is restated here. 0 when the node counts now.
std::int64_t guard_left_ms(const node_report& n, const options& o) {
    lock_config config = run_lock_config(o);
    config.name = "check";
    config.instances = 1;
    config.fair = false;
    config.replicas_to_wait = 0;
    config.replica_wait_ms = 0;
    edgelock::lock scratch;
    constexpr std::int64_t now_ms = 1'000'000'000;  // any instant: only differences count
    const node_start start = session::node_start_of(n.facts, now_ms, false);
    if (scratch.configure(config) != errc::ok ||
        scratch.on_node_started(0, start, now_ms) != errc::ok ||
        scratch.acquire(now_ms, 0, owner_token{}) != errc::ok) {
        return 0;
    }
    event e;
    while (scratch.poll_event(e)) {
        if (e.type == event_type::acquire_failed && e.code == errc::restart_guard) {
            return e.guard_until_ms - now_ms;
        }
    }
    return 0;
}

// "counts now", or how long the restart guard still keeps the node out of a lease of --ttl.
std::string guard_text(const node_report& n, const options& o) {
    if (!o.restart_guard) return "off (--restart-guard off)";
    if (n.facts.durable()) return "none: AOF appendfsync always keeps every key across a restart";
    const std::int64_t left_ms = guard_left_ms(n, o);
    const std::string lease = "for leases of " + format_duration(o.ttl_ms);
    if (left_ms <= 0) return "counts now " + lease;
    return "counts only in " + format_duration((left_ms + 99) / 100 * 100) + " " + lease + " (up " +
           format_duration(n.facts.uptime_s * 1000) +
           " without durable data: a lease from before its start may still run)";
}

void print_node(const node_report& n, const options& o) {
    std::printf("\nnode         %s\n", n.address.c_str());
    if (n.problem.ec) {
        std::printf("error        %s\n", describe(n.problem).c_str());
        return;
    }
    std::printf("role         %s\nversion      %s\nuptime       %s\n", role_text(n).c_str(),
                std::string(n.facts.version.view()).c_str(),
                format_duration(n.facts.uptime_s * 1000).c_str());
    std::printf("persistence  %s\neviction     %s\nreplication  %d replica(s), lag up to %llds\n",
                persistence_text(n).c_str(), eviction_text(n).c_str(),
                static_cast<int>(n.facts.replicas),
                static_cast<long long>(n.facts.replica_lag_s_max));
    std::printf("clock        %+lld ms against this host (round trip %lld ms)\n", n.clock_offset_ms,
                n.round_trip_ms);
    if (role_of(n) == "master") std::printf("guard        %s\n", guard_text(n, o).c_str());
}

void print_text(const report& r, const options& o) {
    if (r.simulated) {
        std::printf("matrix row   %s (edgelock-sim matrix --config %s --runs %s --seed 1)\n",
                    r.row.name.c_str(), r.row.name.c_str(), matrix_runs);
    } else {
        std::printf("matrix row   %s: not simulated, the deployment cannot hold locks\n",
                    r.row.name.c_str());
    }
    for (const std::string& d : r.row.differences) std::printf("row differs  %s\n", d.c_str());
    for (const node_report& n : r.nodes) print_node(n, o);
    std::printf("\n");
    if (r.nodes.size() > 1 || !quorum_left(r))
        std::printf("quorum       %s\n", quorum_text(r).c_str());
    if (r.simulated) {
        std::printf("survives     %s\nfails        %s\n", scenarios(r.verdicts, false).c_str(),
                    scenarios(r.verdicts, true).c_str());
        print_legend(r, o);
    }
    for (const std::string& s : r.not_exposed) {
        std::printf("not exposed  %s: no node may evict keys\n", s.c_str());
    }
    for (const std::string& a : r.advice) std::printf("advice       %s\n", a.c_str());
    std::printf("verdict      %s\n", verdict_text(r, o).c_str());
}

std::string node_json(const node_report& n, const options& o) {
    if (n.problem.ec) {
        return "{\"address\":" + json_string(n.address) +
               ",\"error\":" + json_string(describe(n.problem)) + "}";
    }
    const auto number = [](long long value) { return std::to_string(value); };
    const std::string master = master_of(n);
    return "{\"address\":" + json_string(n.address) + ",\"role\":" + json_string(role_of(n)) +
           (master.empty() ? "" : ",\"master\":" + json_string(master)) +
           ",\"version\":" + json_string(std::string(n.facts.version.view())) +
           ",\"uptime_s\":" + number(n.facts.uptime_s) +
           ",\"persistence\":" + json_string(persistence_text(n)) +
           ",\"durable\":" + (n.facts.durable() ? "true" : "false") +
           ",\"may_evict\":" + (n.facts.may_evict() ? "true" : "false") +
           ",\"eviction\":" + json_string(eviction_text(n)) +
           ",\"replicas\":" + number(n.facts.replicas) +
           ",\"max_lag_s\":" + number(n.facts.replica_lag_s_max) +
           ",\"clock_offset_ms\":" + number(n.clock_offset_ms) +
           ",\"round_trip_ms\":" + number(n.round_trip_ms) +
           ",\"guard_left_ms\":" + number(o.restart_guard ? guard_left_ms(n, o) : 0) + "}";
}

void print_json(const report& r, const options& o) {
    std::string nodes;
    for (const node_report& n : r.nodes) nodes += (nodes.empty() ? "" : ",") + node_json(n, o);
    std::vector<std::string> survives;
    std::vector<std::string> fails;
    for (const verdict& v : r.verdicts) {
        if (v.failed.empty()) survives.push_back(v.scenario);
        else fails.push_back(v.scenario + ":" + v.failed);
    }
    const char* verdict = !quorum_left(r) ? "cannot_hold_locks" : r.worse ? "worse" : "ok";
    std::printf(
        "{\"row\":%s,\"simulated\":%s,\"row_differences\":%s,\"nodes\":[%s],"
        "\"holding\":%zu,\"needed\":%zu,\"survives\":%s,\"fails\":%s,\"not_exposed\":%s,"
        "\"advice\":%s,\"verdict\":%s,\"verdict_text\":%s}\n",
        json_string(r.row.name).c_str(), r.simulated ? "true" : "false",
        json_list(r.row.differences).c_str(), nodes.c_str(), r.holding, r.needed,
        json_list(survives).c_str(), json_list(fails).c_str(), json_list(r.not_exposed).c_str(),
        json_list(r.advice).c_str(), json_string(verdict).c_str(),
        json_string(verdict_text(r, o)).c_str());
}

// Reads every node, reporting each one that cannot be read on stderr's one line.
void read_nodes(const options& o, report& r) {
    for (const node& where : nodes_of(o)) {
        r.nodes.push_back(read_node(where, o));
        const node_report& n = r.nodes.back();
        r.worse = r.worse || (!n.problem.ec && n.facts.may_evict());
        if (holds_locks(n)) ++r.holding;
    }
    r.needed = r.nodes.size() / 2 + 1;
}

// The exit code: a node that cannot be read first (the report shows the rest), then a
// deployment that cannot hold locks (a replica pointed at: `run` fails there with 69), then
// a node that may evict keys.
int exit_code_of(const report& r) {
    std::size_t unreadable = 0;
    const node_report* first = nullptr;
    for (const node_report& n : r.nodes) {
        if (!n.problem.ec) continue;
        if (first == nullptr) first = &n;
        ++unreadable;
    }
    if (first != nullptr) {
        std::fprintf(stderr, "edgelock: cannot check %s: %s%s\n", first->address.c_str(),
                     describe(first->problem).c_str(),
                     unreadable > 1 ? (" (and " + std::to_string(unreadable - 1) +
                                       " more node(s): see the report)")
                                          .c_str()
                                    : "");
        return exit_code_for(first->problem.ec);
    }
    if (!quorum_left(r)) {
        std::fprintf(stderr, "edgelock: the deployment cannot hold locks: %s (%s)\n",
                     quorum_text(r).c_str(), missing_text(r).c_str());
        return exit_unavailable;
    }
    return r.worse ? exit_deployment_worse : exit_ok;
}

// Redis Cluster: every master with its slots and replicas, each node read as above, which
// slots a master that answers serves, and the simulator's verdicts when it has the row.

// One master of CLUSTER SLOTS, with its slot ranges and its replicas.
struct shard {
    std::string key;  // the master's address as CLUSTER SLOTS names it
    node_report master;
    std::vector<std::string> slots;  // "0-5460", one per range
    std::vector<node_report> replicas;
};

struct cluster_report {
    report base;       // the row, verdicts and advice; its nodes: the masters
    std::string seed;  // the node whose CLUSTER SLOTS is shown
    std::vector<shard> shards;
    std::size_t served = 0;            // slots whose master answers as a master
    std::vector<std::string> missing;  // the other slots, in runs, each with why
    std::string not_simulated;         // why there are no verdicts; "" when simulated
};

std::string range_text(std::uint32_t first, std::uint32_t last) {
    return first == last ? std::to_string(first)
                         : std::to_string(first) + "-" + std::to_string(last);
}

// Adds `range` to its master's shard, reading the master and its replicas the first time.
void add_range(const cluster_layout& layout, const cluster_range& range, const options& o,
               std::vector<shard>& out) {
    const node master = cluster_node(layout, range.master);
    auto at = std::find_if(out.begin(), out.end(),
                           [&](const shard& s) { return s.key == master.address; });
    if (at == out.end()) {
        shard s;
        s.key = master.address;
        s.master = read_node(master, o);
        for (const cluster_member& replica : range.replicas)
            s.replicas.push_back(read_node(cluster_node(layout, replica), o));
        at = out.insert(out.end(), std::move(s));
    }
    at->slots.push_back(range_text(range.first, range.last));
}

// Why no lock on the slots of shard `owner` (-1: none in CLUSTER SLOTS) can be taken.
std::string unserved_text(const cluster_report& r, int owner) {
    if (owner < 0) return "no master in CLUSTER SLOTS";
    const node_report& m = r.shards[static_cast<std::size_t>(owner)].master;
    if (m.problem.ec) return "master " + m.address + ": " + describe(m.problem);
    return "master " + m.address + " answers as " + role_of(m);
}

// Counts the slots a master that answers serves; the others go to r.missing in runs.
void cover_slots(const cluster_layout& layout, cluster_report& r) {
    std::vector<int> owner(cluster_slots, -1);  // the shard of each slot
    for (const cluster_range& range : layout.ranges) {
        const std::string key = cluster_node(layout, range.master).address;
        for (std::size_t i = 0; i < r.shards.size(); ++i) {
            if (r.shards[i].key != key) continue;
            for (std::uint32_t slot = range.first; slot <= range.last; ++slot)
                owner[slot] = static_cast<int>(i);
        }
    }
    const auto served = [&](std::uint32_t slot) {
        return owner[slot] >= 0 &&
               holds_locks(r.shards[static_cast<std::size_t>(owner[slot])].master);
    };
    for (std::uint32_t slot = 0; slot < cluster_slots;) {
        if (served(slot)) {
            ++r.served;
            ++slot;
            continue;
        }
        std::uint32_t last = slot;
        while (last + 1 < cluster_slots && !served(last + 1) && owner[last + 1] == owner[slot])
            ++last;
        r.missing.push_back(range_text(slot, last) + " (" + unserved_text(r, owner[slot]) + ")");
        slot = last + 1;
    }
}

// The row's verdicts when the simulator has the row, else why there are none (r.not_simulated).
// False, with `why`, when edgelock-sim cannot be run.
bool simulate_cluster(cluster_report& r, std::string& why) {
    if (r.served < cluster_slots) {
        r.not_simulated = "the cluster does not serve every slot";
        return true;
    }
    const std::string path = find_simulator(why);
    if (path.empty()) return false;
    std::string help;
    if (capture_simulator(path, {"--help"}, help) != 0 ||
        !names_configuration(help, r.base.row.name)) {
        r.not_simulated = std::string(simulator_name) + " has no configuration " + r.base.row.name +
                          " yet: no verdict on the fault scenarios";
        return true;
    }
    if (run_row(r.base.row.name, r.base.verdicts, why) != 0) return false;
    r.base.simulated = true;
    set_aside_eviction(r.base);
    return true;
}

// Every node read, masters first, each followed by its replicas.
std::vector<const node_report*> cluster_nodes(const cluster_report& r) {
    std::vector<const node_report*> out;
    for (const shard& s : r.shards) {
        out.push_back(&s.master);
        for (const node_report& replica : s.replicas) out.push_back(&replica);
    }
    return out;
}

std::string join(const std::vector<std::string>& items, const char* separator) {
    std::string out;
    for (const std::string& item : items) out += (out.empty() ? "" : separator) + item;
    return out;
}

std::string cluster_verdict_text(const cluster_report& r, const options& o) {
    if (r.served < cluster_slots) {
        return "cannot hold locks on every name: " + std::to_string(cluster_slots - r.served) +
               " of " + std::to_string(cluster_slots) + " slots have no master that answers";
    }
    if (!r.base.simulated) return "none: " + r.not_simulated;
    return verdict_text(r.base, o);
}

std::vector<std::string> replica_addresses(const shard& s) {
    std::vector<std::string> out;
    for (const node_report& replica : s.replicas) out.push_back(replica.address);
    return out;
}

void print_cluster_text(const cluster_report& r, const options& o) {
    const std::string& row = r.base.row.name;
    if (r.base.simulated) {
        std::printf("matrix row   %s (edgelock-sim matrix --config %s --runs %s --seed 1)\n",
                    row.c_str(), row.c_str(), matrix_runs);
    } else {
        std::printf("matrix row   %s: not simulated, %s\n", row.c_str(), r.not_simulated.c_str());
    }
    std::printf("seed         %s (CLUSTER SLOTS)\n", r.seed.c_str());
    for (const shard& s : r.shards) {
        const std::vector<std::string> replicas = replica_addresses(s);
        std::printf("master       %s  slots %s  replicas %s\n", s.key.c_str(),
                    join(s.slots, ",").c_str(),
                    replicas.empty() ? "none" : join(replicas, ", ").c_str());
    }
    for (const node_report* n : cluster_nodes(r)) print_node(*n, o);
    std::printf("\n");
    if (r.missing.empty()) {
        std::printf("slots        all %u served\n", static_cast<unsigned>(cluster_slots));
    } else {
        std::printf("slots        %zu of %u served; missing %s\n", r.served,
                    static_cast<unsigned>(cluster_slots), join(r.missing, ", ").c_str());
    }
    if (r.base.simulated) {
        std::printf("survives     %s\nfails        %s\n", scenarios(r.base.verdicts, false).c_str(),
                    scenarios(r.base.verdicts, true).c_str());
        print_legend(r.base, o);
    }
    for (const std::string& s : r.base.not_exposed) {
        std::printf("not exposed  %s: no node may evict keys\n", s.c_str());
    }
    for (const std::string& a : r.base.advice) std::printf("advice       %s\n", a.c_str());
    std::printf("verdict      %s\n", cluster_verdict_text(r, o).c_str());
}

void print_cluster_json(const cluster_report& r, const options& o) {
    std::string masters;
    for (const shard& s : r.shards) {
        masters += (masters.empty() ? "{" : ",{") + std::string("\"address\":") +
                   json_string(s.key) + ",\"slots\":" + json_list(s.slots) +
                   ",\"replicas\":" + json_list(replica_addresses(s)) + "}";
    }
    std::string nodes;
    for (const node_report* n : cluster_nodes(r))
        nodes += (nodes.empty() ? "" : ",") + node_json(*n, o);
    std::vector<std::string> survives;
    std::vector<std::string> fails;
    for (const verdict& v : r.base.verdicts) {
        if (v.failed.empty()) survives.push_back(v.scenario);
        else fails.push_back(v.scenario + ":" + v.failed);
    }
    const char* verdict = r.served < cluster_slots ? "cannot_hold_locks"
                          : !r.base.simulated      ? "not_simulated"
                          : r.base.worse           ? "worse"
                                                   : "ok";
    std::printf(
        "{\"row\":%s,\"simulated\":%s,\"not_simulated\":%s,\"seed\":%s,\"masters\":[%s],"
        "\"nodes\":[%s],\"slots_served\":%zu,\"slots_missing\":%s,\"survives\":%s,\"fails\":%s,"
        "\"not_exposed\":%s,\"advice\":%s,\"verdict\":%s,\"verdict_text\":%s}\n",
        json_string(r.base.row.name).c_str(), r.base.simulated ? "true" : "false",
        r.base.simulated ? "null" : json_string(r.not_simulated).c_str(),
        json_string(r.seed).c_str(), masters.c_str(), nodes.c_str(), r.served,
        json_list(r.missing).c_str(), json_list(survives).c_str(), json_list(fails).c_str(),
        json_list(r.base.not_exposed).c_str(), json_list(r.base.advice).c_str(),
        json_string(verdict).c_str(), json_string(cluster_verdict_text(r, o)).c_str());
}

// As exit_code_of: a node that cannot be read first, then slots no master serves, then a
// node that may evict keys.
int cluster_exit_code(const cluster_report& r) {
    std::size_t unreadable = 0;
    const node_report* first = nullptr;
    for (const node_report* n : cluster_nodes(r)) {
        if (!n->problem.ec) continue;
        if (first == nullptr) first = n;
        ++unreadable;
    }
    if (first != nullptr) {
        const std::string more = unreadable > 1 ? " (and " + std::to_string(unreadable - 1) +
                                                      " more node(s): see the report)"
                                                : "";
        std::fprintf(stderr, "edgelock: cannot check %s: %s%s\n", first->address.c_str(),
                     describe(first->problem).c_str(), more.c_str());
        return exit_code_for(first->problem.ec);
    }
    if (r.served < cluster_slots) {
        std::fprintf(stderr, "edgelock: the cluster cannot hold every lock: slots missing %s\n",
                     join(r.missing, ", ").c_str());
        return exit_unavailable;
    }
    return r.base.worse ? exit_deployment_worse : exit_ok;
}

// The masters hold the locks (advice_for's node advice); replicas matter for failover.
std::vector<std::string> cluster_advice(const cluster_report& r, const options& o) {
    std::vector<std::string> advice = advice_for(r.base.nodes, o, r.base.verdicts);
    bool replicas = false;
    for (const shard& s : r.shards) replicas = replicas || !s.replicas.empty();
    if (replicas && o.replicas_to_wait == 0) {
        advice.push_back("use WAIT (--wait-replicas 1): a failover loses keys without it");
    }
    return advice;
}

int check_cluster(const options& o) {
    cluster_layout layout;
    node failed;
    command_failure f;
    if (!read_cluster(o, layout, failed, f)) {
        std::fprintf(stderr,
                     "edgelock: cannot check the cluster: no --cluster seed answered CLUSTER "
                     "SLOTS (last %s: %s)\n",
                     failed.address.c_str(), describe(f).c_str());
        return exit_code_for(f.ec);
    }
    cluster_report r;
    r.seed = layout.seed.address;
    r.base.row.name = simulated_row(o);
    for (const cluster_range& range : layout.ranges) add_range(layout, range, o, r.shards);
    for (const shard& s : r.shards) {
        r.base.nodes.push_back(s.master);
        if (holds_locks(s.master)) ++r.base.holding;
    }
    r.base.needed = r.base.nodes.size();  // every master serves locks no other can
    for (const node_report* n : cluster_nodes(r))
        r.base.worse = r.base.worse || (!n->problem.ec && n->facts.may_evict());
    cover_slots(layout, r);
    std::string why;
    if (!simulate_cluster(r, why)) {
        std::fprintf(stderr, "edgelock: cannot check the deployment: %s\n", why.c_str());
        return exit_not_found;
    }
    r.base.advice = cluster_advice(r, o);
    if (o.json) {
        print_cluster_json(r, o);
    } else {
        print_cluster_text(r, o);
    }
    return cluster_exit_code(r);
}

}  // namespace

int check_deployment(const options& o) {
    if (!o.cluster_urls.empty()) return check_cluster(o);
    report r;
    r.row.name = simulated_row(o);
    read_nodes(o, r);
    r.row.differences = row_differences(o, r.nodes);
    if (quorum_left(r)) {
        std::string why;
        if (!simulate(o, r.row, r.verdicts, why)) {
            std::fprintf(stderr, "edgelock: cannot check the deployment: %s\n", why.c_str());
            return exit_not_found;
        }
        r.simulated = true;
        set_aside_eviction(r);
    }
    r.advice = advice_for(r.nodes, o, r.verdicts);
    if (o.json) {
        print_json(r, o);
    } else {
        print_text(r, o);
    }
    return exit_code_of(r);
}

}  // namespace edgelock::cli
