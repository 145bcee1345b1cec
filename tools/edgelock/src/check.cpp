#include "check.hpp"

#include <sys/time.h>

#include <cstdio>
#include <string>
#include <vector>

#include "edgelock/hiredis_commands.hpp"
#include "edgelock/session/node_facts.hpp"
#include "endpoints.hpp"
#include "errors.hpp"
#include "exit_codes.hpp"
#include "quote.hpp"
#include "simulator.hpp"

namespace edgelock::cli {
namespace {

using hiredis::command_connection;
using hiredis::command_reply;

// The simulator's sample behind the verdicts: enough runs per cell that every known failure
// shows (the matrix's unsafe cells fail in far more than 1 run in 20), quick enough to wait for.
constexpr const char* matrix_runs = "20";
// The scenario of nodes evicting keys under memory pressure (maxmemory-policy).
constexpr const char* eviction_scenario = "S10";

struct node_report {
    std::string address;
    failure problem;
    session::node_facts facts;
    std::string role;             // master, slave
    std::string rdb;              // CONFIG GET save: "" for no snapshots
    int replicas = 0;
    long long max_lag_s = 0;      // the largest lag INFO replication shows
    long long clock_offset_ms = 0;  // the node's TIME against this host's clock
    long long round_trip_ms = 0;
};

struct verdict {
    std::string scenario;  // S1..S10
    std::string failed;    // "" when every run kept every check, else O, S, F, L, H letters
};

long long wall_us() {
    timeval now{};
    ::gettimeofday(&now, nullptr);
    return static_cast<long long>(now.tv_sec) * 1'000'000 + now.tv_usec;
}

// The value of "name:value" in INFO's text ("" when absent).
std::string info_field(const std::string& text, const std::string& name) {
    const std::string key = "\n" + name + ":";
    const std::size_t at = ("\n" + text).find(key);
    if (at == std::string::npos) return "";
    const std::size_t start = at + key.size() - 1;
    const std::size_t end = text.find_first_of("\r\n", start);
    return text.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

// The largest "lag=N" of the slaveN lines of INFO replication.
long long max_lag(const std::string& text, int replicas) {
    long long lag = 0;
    for (int i = 0; i < replicas; ++i) {
        const std::string line = info_field(text, "slave" + std::to_string(i));
        const std::size_t at = line.find("lag=");
        if (at != std::string::npos) lag = std::max(lag, std::atoll(line.c_str() + at + 4));
    }
    return lag;
}

// One command; false (with r.problem set) when it failed or Redis refused it.
bool ask(command_connection& c, const std::vector<std::string>& args, command_reply& out, node_report& r) {
    r.problem.ec = c.call(args, out);
    return !r.problem.ec && !error_reply(out, r.problem);
}

std::string config_value(command_connection& c, const std::string& name, node_report& r) {
    command_reply reply;
    if (!ask(c, {"CONFIG", "GET", name}, reply, r)) {
        r.problem = {};  // an ACL may refuse CONFIG: the value stays unknown
        return "?";
    }
    return reply.elements.size() == 2 ? reply.elements[1].text : "";
}

void read_clock(command_connection& c, node_report& r) {
    command_reply time;
    const long long before = wall_us();
    if (!ask(c, {"TIME"}, time, r) || time.elements.size() != 2) return;
    const long long after = wall_us();
    const long long node_us = std::atoll(time.elements[0].text.c_str()) * 1'000'000 +
                              std::atoll(time.elements[1].text.c_str());
    r.round_trip_ms = (after - before) / 1000;
    r.clock_offset_ms = (node_us - (before + after) / 2) / 1000;
}

node_report read_node(endpoint ep, const options& o) {
    node_report r;
    command_connection c;
    const bool opened = open(c, ep, o, r.problem);
    r.address = ep.address;
    if (!opened) return r;
    command_reply info;
    // The default sections (replication among them): several in one INFO need Redis 7.0.
    if (!ask(c, {"INFO"}, info, r)) return r;
    r.facts = session::parse_info(info.text);
    r.role = info_field(info.text, "role");
    r.replicas = std::atoi(info_field(info.text, "connected_slaves").c_str());
    r.max_lag_s = max_lag(info.text, r.replicas);
    const std::string fsync = config_value(c, "appendfsync", r);
    r.facts.fsync = fsync == "always" ? session::fsync_policy::always
                  : fsync == "everysec" ? session::fsync_policy::everysec
                  : fsync == "no" ? session::fsync_policy::no
                                  : session::fsync_policy::unknown;
    r.rdb = config_value(c, "save", r);
    read_clock(c, r);
    return r;
}

// The simulator's configuration closest to this deployment and client settings.
std::string matrix_row(const options& o) {
    const std::string guard = o.restart_guard ? "+guard" : "";
    if (!o.sentinel_urls.empty()) {
        if (o.replicas_to_wait == 0) return "sentinel";  // the only row without WAIT
        return "sentinel+WAIT" + guard;
    }
    const std::string fencing = o.fencing ? "+fencing" : "";
    if (o.redis_urls.size() == 1) return "single" + fencing + guard;
    return "redlock-5" + fencing + guard;
}

// Runs edgelock-sim on the row; false when it cannot.
bool run_row(const std::string& row, std::vector<verdict>& out, std::string& why) {
    const std::string path = find_simulator();
    if (path.empty()) {
        why = std::string(simulator_name) + " not found next to edgelock or on PATH";
        return false;
    }
    std::string text;
    if (capture_simulator(path, {"matrix", "--config", row, "--runs", matrix_runs, "--seed", "1"}, text) != 0) {
        why = std::string(simulator_name) + " matrix failed";
        return false;
    }
    std::size_t start = 0;
    while (start < text.size()) {
        const std::size_t end = std::min(text.find('\n', start), text.size());
        const std::string line = text.substr(start, end - start);
        start = end + 1;
        if (line.size() < 2 || line[0] != 'S') continue;
        verdict v;
        v.scenario = line.substr(0, line.find(' '));
        for (const auto& [check, letter] : {std::pair{"overlap=VIOLATED", 'O'}, std::pair{"stale=VIOLATED", 'S'},
                                            std::pair{"order=VIOLATED", 'F'}, std::pair{"liveness=VIOLATED", 'L'},
                                            std::pair{"oracle=VIOLATED", 'H'}}) {
            if (line.find(check) != std::string::npos) v.failed += letter;
        }
        out.push_back(v);
    }
    return !out.empty();
}

std::string persistence_text(const node_report& r) {
    std::string text;
    if (r.facts.aof_enabled) {
        const char* policy = r.facts.fsync == session::fsync_policy::always     ? "always"
                             : r.facts.fsync == session::fsync_policy::everysec ? "everysec"
                             : r.facts.fsync == session::fsync_policy::no       ? "no"
                                                                                : "unknown (CONFIG GET refused)";
        text = std::string("AOF, appendfsync ") + policy;
    }
    if (!r.rdb.empty() && r.rdb != "?") text += (text.empty() ? "" : ", ") + std::string("RDB snapshots (save ") + r.rdb + ")";
    if (text.empty()) text = "none: a restart forgets every key";
    return text;
}

std::string eviction_text(const node_report& r) {
    if (r.facts.may_evict()) return std::string(session::eviction_warning(r.facts).view());
    if (r.facts.maxmemory_bytes == 0) return "no memory limit";
    return "maxmemory " + std::to_string(r.facts.maxmemory_bytes) + " bytes, " +
           std::string(r.facts.maxmemory_policy.view());
}

// What to change, per node and for the client, beyond the row's own limits.
std::vector<std::string> advice_for(const std::vector<node_report>& nodes, const options& o,
                                    const std::vector<verdict>& verdicts) {
    std::vector<std::string> advice;
    for (const node_report& r : nodes) {
        if (r.facts.may_evict()) advice.push_back(r.address + ": set maxmemory-policy noeviction");
        if (!r.facts.durable() && !o.restart_guard) {
            advice.push_back(r.address + ": a restart forgets keys: turn the restart guard on, or AOF appendfsync always");
        } else if (!r.facts.durable()) {
            advice.push_back(r.address + ": after a restart locks wait a TTL (restart guard); AOF appendfsync always avoids it");
        }
    }
    bool stale = false;
    for (const verdict& v : verdicts) stale = stale || v.failed.find('S') != std::string::npos;
    if (stale && o.sentinel_urls.empty()) advice.push_back("enable fencing, and have the storage check the token");
    if (!o.sentinel_urls.empty() && o.replicas_to_wait == 0) advice.push_back("use WAIT (replicas_to_wait 1): a failover loses keys without it");
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

std::string json_string(const std::string& text) {
    std::string out = "\"";
    for (const char c : text) {
        if (c == '"' || c == '\\') out += '\\';
        if (static_cast<unsigned char>(c) < 0x20) continue;
        out += c;
    }
    return out + "\"";
}

std::string json_list(const std::vector<std::string>& items) {
    std::string out = "[";
    for (std::size_t i = 0; i < items.size(); ++i) out += (i > 0 ? "," : "") + json_string(items[i]);
    return out + "]";
}

struct report {
    std::string row;
    std::vector<node_report> nodes;
    std::vector<verdict> verdicts;
    std::vector<std::string> not_exposed;  // scenarios this deployment cannot meet
    std::vector<std::string> advice;
    bool worse = false;
};

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

void print_text(const report& r) {
    std::printf("matrix row   %s (edgelock-sim matrix --config %s --runs %s --seed 1)\n", r.row.c_str(),
                r.row.c_str(), matrix_runs);
    for (const node_report& n : r.nodes) {
        std::printf("\nnode         %s\nrole         %s\nversion      %s\nuptime       %s\n", n.address.c_str(),
                    n.role.c_str(), std::string(n.facts.version.view()).c_str(),
                    format_duration(n.facts.uptime_s * 1000).c_str());
        std::printf("persistence  %s\neviction     %s\nreplication  %d replica(s), lag up to %llds\n",
                    persistence_text(n).c_str(), eviction_text(n).c_str(), n.replicas, n.max_lag_s);
        std::printf("clock        %+lld ms against this host (round trip %lld ms)\n", n.clock_offset_ms,
                    n.round_trip_ms);
    }
    std::printf("\nsurvives     %s\nfails        %s\n", scenarios(r.verdicts, false).c_str(),
                scenarios(r.verdicts, true).c_str());
    for (const std::string& s : r.not_exposed) std::printf("not exposed  %s: no node may evict keys\n", s.c_str());
    for (const std::string& a : r.advice) std::printf("advice       %s\n", a.c_str());
    std::printf("verdict      %s\n", r.worse ? "worse than the row's other limits: a node may evict lock keys (S10)"
                                             : "ok: exposed to nothing beyond the row's limits in the simulator");
}

void print_json(const report& r) {
    std::printf("{\"row\":%s,\"nodes\":[", json_string(r.row).c_str());
    for (std::size_t i = 0; i < r.nodes.size(); ++i) {
        const node_report& n = r.nodes[i];
        std::printf("%s{\"address\":%s,\"role\":%s,\"version\":%s,\"uptime_s\":%lld,\"persistence\":%s,"
                    "\"durable\":%s,\"may_evict\":%s,\"eviction\":%s,\"replicas\":%d,\"max_lag_s\":%lld,"
                    "\"clock_offset_ms\":%lld,\"round_trip_ms\":%lld}",
                    i > 0 ? "," : "", json_string(n.address).c_str(), json_string(n.role).c_str(),
                    json_string(std::string(n.facts.version.view())).c_str(), static_cast<long long>(n.facts.uptime_s),
                    json_string(persistence_text(n)).c_str(), n.facts.durable() ? "true" : "false",
                    n.facts.may_evict() ? "true" : "false", json_string(eviction_text(n)).c_str(), n.replicas,
                    n.max_lag_s, n.clock_offset_ms, n.round_trip_ms);
    }
    std::vector<std::string> survives;
    std::vector<std::string> fails;
    for (const verdict& v : r.verdicts) (v.failed.empty() ? survives : fails).push_back(v.scenario + (v.failed.empty() ? "" : ":" + v.failed));
    std::printf("],\"survives\":%s,\"fails\":%s,\"not_exposed\":%s,\"advice\":%s,\"verdict\":%s}\n",
                json_list(survives).c_str(), json_list(fails).c_str(), json_list(r.not_exposed).c_str(),
                json_list(r.advice).c_str(), json_string(r.worse ? "worse" : "ok").c_str());
}

}  // namespace

int check_deployment(const options& o) {
    report r;
    r.row = matrix_row(o);
    for (const endpoint& ep : endpoints_of(o)) {
        r.nodes.push_back(read_node(ep, o));
        const node_report& n = r.nodes.back();
        if (n.problem.ec) {
            std::fprintf(stderr, "edgelock: cannot check %s: %s\n", n.address.c_str(), describe(n.problem).c_str());
            return exit_code_for(n.problem.ec);
        }
        r.worse = r.worse || n.facts.may_evict();
    }
    std::string why;
    if (!run_row(r.row, r.verdicts, why)) {
        std::fprintf(stderr, "edgelock: cannot check the deployment: %s\n", why.c_str());
        return exit_not_found;
    }
    set_aside_eviction(r);
    r.advice = advice_for(r.nodes, o, r.verdicts);
    if (o.json) {
        print_json(r);
    } else {
        print_text(r);
    }
    return r.worse ? exit_deployment_worse : exit_ok;
}

}  // namespace edgelock::cli
