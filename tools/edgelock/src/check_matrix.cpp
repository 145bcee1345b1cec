// SPDX-License-Identifier: Apache-2.0
#include "check_matrix.hpp"

#include <algorithm>
#include <string_view>
#include <utility>

#include "simulator.hpp"

namespace edgelock::cli {
namespace {

// edgelock-sim's exit status for a usage error (an unknown configuration among them).
constexpr int usage_error_status = 2;
// The replicas behind the master in the simulator's Sentinel rows.
constexpr int simulated_replicas = 2;

// The matrix row closest to the deployment's own, for an edgelock-sim that does not know
// the latter (one older than its one-off configurations).
std::string nearest_matrix_row(const options& o) {
    if (!o.sentinel_urls.empty()) {
        if (o.replicas_to_wait == 0) return "sentinel";
        return o.restart_guard ? "sentinel+WAIT+guard" : "sentinel+WAIT";
    }
    if (o.redis_urls.size() == 1) return simulated_row(o);
    return std::string("redlock-5") + (o.fencing ? "+fencing" : "") +
           (o.restart_guard ? "+guard" : "");
}

// A row's name in its "+"-separated parts, the first the topology ("redlock-3").
std::vector<std::string> row_parts(const std::string& name) {
    std::vector<std::string> out;
    for (std::size_t start = 0; start <= name.size();) {
        const std::size_t plus = std::min(name.find('+', start), name.size());
        out.push_back(name.substr(start, plus - start));
        start = plus + 1;
    }
    return out;
}

// How the row `simulated` differs from the row `wanted`.
std::vector<std::string> name_differences(const std::string& wanted, const std::string& simulated) {
    const std::vector<std::string> want = row_parts(wanted);
    const std::vector<std::string> got = row_parts(simulated);
    const auto has = [](const std::vector<std::string>& parts, const std::string& part) {
        return std::find(parts.begin() + 1, parts.end(), part) != parts.end();
    };
    std::vector<std::string> out;
    if (want[0] != got[0]) out.push_back("simulated as " + got[0] + ", not " + want[0]);
    for (std::size_t i = 1; i < want.size(); ++i) {
        if (!has(got, want[i])) out.push_back("simulated without " + want[i]);
    }
    for (std::size_t i = 1; i < got.size(); ++i) {
        if (!has(want, got[i])) out.push_back("simulated with " + got[i]);
    }
    return out;
}

// The verdicts of one line of `edgelock-sim matrix` ("S4 row runs=21 ... oracle=VIOLATED").
bool parse_cell(const std::string& line, verdict& v) {
    if (line.size() < 2 || line[0] != 'S') return false;
    v.scenario = line.substr(0, line.find(' '));
    for (const auto& [check, letter] :
         {std::pair{"overlap=VIOLATED", 'O'}, std::pair{"stale=VIOLATED", 'S'},
          std::pair{"order=VIOLATED", 'F'}, std::pair{"liveness=VIOLATED", 'L'},
          std::pair{"oracle=VIOLATED", 'H'}, std::pair{"kept=VIOLATED", 'K'},
          std::pair{"available=VIOLATED", 'A'}, std::pair{"claim=VIOLATED", 'C'},
          std::pair{"wakeup=VIOLATED", 'W'}, std::pair{"fifo=VIOLATED", 'Q'}}) {
        if (line.find(check) != std::string::npos) v.failed += letter;
    }
    return true;
}

}  // namespace

// Where the deployment read is not what the row models (Sentinel's replica count, a WAIT
// count beyond the row's one), so a reader weighs the verdict knowing it.
std::vector<std::string> row_differences(const options& o, const std::vector<node_report>& nodes) {
    std::vector<std::string> out;
    if (o.replicas_to_wait > 1) {
        out.push_back("the row waits for 1 replica, not " + std::to_string(o.replicas_to_wait));
    }
    if (!o.sentinel_urls.empty()) {
        if (!nodes.empty() && !nodes[0].problem.ec &&
            nodes[0].facts.replicas != simulated_replicas) {
            out.push_back("the row's master has " + std::to_string(simulated_replicas) +
                          " replicas behind 3 sentinels; this one has " +
                          std::to_string(nodes[0].facts.replicas));
        }
        return out;
    }
    if (o.replicas_to_wait == 0 || !o.cluster_urls.empty()) return out;
    // One Redis or Redlock with WAIT: each master with one replica of its own, no failover.
    for (const node_report& n : nodes) {
        if (n.problem.ec || n.facts.replicas == 1) continue;
        out.push_back("the row's masters have 1 replica each; " + n.address + " has " +
                      std::to_string(n.facts.replicas));
    }
    return out;
}

// Runs edgelock-sim on `row`: 0 with `out` filled, else the simulator's exit status (2: it
// does not know the row) or -1, with `why` set.
int run_row(const std::string& row, std::vector<verdict>& out, std::string& why) {
    const std::string path = find_simulator(why);
    if (path.empty()) return -1;
    std::string text;
    const int status = capture_simulator(
        path, {"matrix", "--config", row, "--runs", matrix_runs, "--seed", "1"}, text);
    if (status != 0) {
        why = std::string(simulator_name) + " matrix --config " + row + " failed";
        return status;
    }
    std::size_t start = 0;
    while (start < text.size()) {
        const std::size_t end = std::min(text.find('\n', start), text.size());
        verdict v;
        if (parse_cell(text.substr(start, end - start), v)) out.push_back(v);
        start = end + 1;
    }
    if (out.empty()) why = std::string(simulator_name) + " printed no cell for " + row;
    return out.empty() ? -1 : 0;
}

// Simulates the deployment's own row; an edgelock-sim that does not know it (exit 2, a usage
// error) gets the nearest matrix row, and the report says how that one differs.
bool simulate(const options& o, row_choice& row, std::vector<verdict>& out, std::string& why) {
    const int status = run_row(row.name, out, why);
    if (status != usage_error_status) return status == 0;
    const std::string nearest = nearest_matrix_row(o);
    if (nearest == row.name) return false;
    for (std::string& difference : name_differences(row.name, nearest)) {
        row.differences.push_back(std::move(difference));
    }
    row.name = nearest;
    return run_row(row.name, out, why) == 0;
}

// The simulator lists its configurations in `edgelock-sim --help`, on lines starting
// "configurations".
bool names_configuration(const std::string& help, const std::string& row) {
    for (std::size_t start = 0; start < help.size();) {
        const std::size_t end = std::min(help.find('\n', start), help.size());
        const std::string line = help.substr(start, end - start);
        start = end + 1;
        const std::size_t colon = line.find(':');
        if (line.rfind("configurations", 0) != 0 || colon == std::string::npos) continue;
        for (const std::string& name : split_list(std::string_view(line).substr(colon + 1))) {
            if (name == row) return true;
        }
    }
    return false;
}

}  // namespace edgelock::cli
