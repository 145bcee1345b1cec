// SPDX-License-Identifier: Apache-2.0
// edgelock-sim: the deterministic simulator's command line.
//
//   edgelock-sim run --scenario S1 --config single --seed 7 [--random] [--svg FILE]
//   edgelock-sim run --config C --seed S --schedule 'TEXT' [--svg FILE]
//   edgelock-sim matrix [--runs N] [--seed S] [--scenario S] [--config C] [--jobs N]
//   edgelock-sim explore --config C --runs N [--seed S] [--check K] [--family S] [--jobs N]
//   edgelock-sim soak --runs N [--seed S] [--jobs N]
//
// soak exits 1 when a run violated a check in a cell the matrix reports as safe (ok in
// every check: the claim would be wrong) or the lock refused a call; explore exits 1 when it found
// a violation; run exits 1 when its run violated a check. A usage error (an unknown command,
// option, configuration, scenario, check or family, a missing value, a bad schedule) exits 2,
// with the usage on stderr.
// `run` prints the run's seed, parameters and schedule, a timeline (true time, each
// process's own clocks, lock events, faults, resource writes accepted or rejected), the
// holds, the five checks and the trace hash. `--behaviour B` runs deliberately broken
// clients (ignores-validity, skips-fencing, deletes-without-compare, never-releases).
// Output for a given seed is identical between runs and for any --jobs (runs are computed
// in parallel, reported in order), except the last line of matrix and soak (wall and CPU
// time, and the rates per CPU second).
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <string_view>

#include "edgelock/sim/explore.hpp"
#include "edgelock/sim/matrix.hpp"
#include "edgelock/sim/parallel.hpp"
#include "edgelock/sim/soak.hpp"
#include "edgelock/sim/svg.hpp"

namespace {

// What an anomaly is (workload.cpp, sim_connection.cpp): a call the lock refused that it
// should take, or the client's own path found broken (a release naming a waiter's turn that
// never reached it, a server's refusal reported for another reason).
constexpr const char* anomalies_meaning =
    "(the lock refused calls it should take, a wake-up did not reach it, or a server's "
    "refusal was misread)";

using namespace edgelock::sim;

struct options {
    std::string command;
    std::string scenario;
    std::string config;
    std::string schedule_text;
    std::string svg;
    std::string behaviour_name = "correct";
    std::string check;
    std::string family;
    unsigned jobs = default_jobs();
    std::uint64_t seed = 1;
    bool seed_given = false;
    std::size_t runs = 50;
    bool random = false;
    bool has_schedule = false;
    bool quiet = false;
    bool one_off = false;  // soak: the configurations run only when named
};

constexpr const char* usage_text =
    "usage:\n"
    "  edgelock-sim run --scenario S1..S11 --config NAME --seed N [--random] [--svg FILE]\n"
    "  edgelock-sim run --config NAME --seed N --schedule 'TEXT' [--svg FILE]\n"
    "                   [--behaviour correct|ignores-validity|skips-fencing|\n"
    "                                deletes-without-compare|never-releases] [--quiet]\n"
    "  edgelock-sim matrix [--runs N] [--seed N] [--scenario S] [--config NAME] [--jobs N]\n"
    "  edgelock-sim explore --config NAME --runs N [--seed N] [--check CHECK] [--family S]\n"
    "                   [--jobs N]\n"
    "  edgelock-sim soak --runs N [--seed N] [--jobs N] [--one-off]\n"
    "  edgelock-sim --help\n"
    "checks: overlap stale order liveness oracle kept available claim (fair: wakeup fifo)\n"
    "scenarios and families (--family): S1..S11\n"
    "--jobs: runs computed in parallel (default: the CPU count); the output is the same\n"
    "exit status: 0 every check held, 1 a check was violated (run, explore) or a cell the\n"
    "matrix calls safe broke (soak), 2 a usage error\n"
    "soak --one-off: the configurations run only when named, each judged against its own\n"
    "matrix (--runs 50 with the soak's seed: with --seed 1, what edgelock check prints)\n"
    "configurations (the matrix):";

void print_usage(std::FILE* out) {
    std::fputs(usage_text, out);
    for (const configuration& c : configurations())
        std::fprintf(out, " %s", std::string(c.name).c_str());
    // Simulated only when named: not in the matrix or the README's grid (soak --one-off).
    std::fputs("\nconfigurations run only when named (run, explore, matrix --config):", out);
    for (const configuration& c : one_off_configurations()) {
        std::fprintf(out, " %s", std::string(c.name).c_str());
    }
    std::fputs("\n", out);
}

int usage() {
    print_usage(stderr);
    return 2;
}

bool parse_number(const char* text, std::uint64_t& out) {
    if (text == nullptr || *text == '\0') return false;
    char* end = nullptr;
    out = std::strtoull(text, &end, 10);
    return *end == '\0';
}

bool parse_options(int argc, char** argv, options& o) {
    if (argc < 2) return false;
    o.command = argv[1];
    for (int i = 2; i < argc; ++i) {
        const std::string_view arg = argv[i];
        const char* value = i + 1 < argc ? argv[i + 1] : nullptr;
        auto take = [&](std::string& out) {
            if (value == nullptr) return false;
            out = value;
            ++i;
            return true;
        };
        std::uint64_t number = 0;
        if (arg == "--scenario") {
            if (!take(o.scenario)) return false;
        } else if (arg == "--config") {
            if (!take(o.config)) return false;
        } else if (arg == "--schedule") {
            if (!take(o.schedule_text)) return false;
            o.has_schedule = true;
        } else if (arg == "--svg") {
            if (!take(o.svg)) return false;
        } else if (arg == "--behaviour") {
            if (!take(o.behaviour_name)) return false;
        } else if (arg == "--seed") {
            if (!parse_number(value, o.seed)) return false;
            o.seed_given = true;
            ++i;
        } else if (arg == "--runs") {
            if (!parse_number(value, number)) return false;
            o.runs = static_cast<std::size_t>(number);
            ++i;
        } else if (arg == "--check") {
            if (!take(o.check)) return false;
        } else if (arg == "--family") {
            if (!take(o.family)) return false;
        } else if (arg == "--jobs") {
            if (!parse_number(value, number) || number == 0 || number > 256) return false;
            o.jobs = static_cast<unsigned>(number);
            ++i;
        } else if (arg == "--random") {
            o.random = true;
        } else if (arg == "--quiet") {
            o.quiet = true;
        } else if (arg == "--one-off") {
            o.one_off = true;
        } else {
            std::fprintf(stderr, "unknown option %s\n", argv[i]);
            return false;
        }
    }
    return true;
}

std::string seconds(std::int64_t us) {
    char text[40];
    std::snprintf(text, sizeof text, "%lld.%06lld s", static_cast<long long>(us / 1'000'000),
                  static_cast<long long>(us % 1'000'000));
    return text;
}

// The run `o` asks for, or a usage error's exit status in `status`.
bool request_of(const options& o, run_request& request, int& status) {
    request.config = find_configuration(o.config);
    if (request.config == nullptr) {
        std::fprintf(stderr, "unknown configuration \"%s\"\n", o.config.c_str());
        status = usage();
        return false;
    }
    if (!parse_behaviour(o.behaviour_name, request.clients)) {
        std::fprintf(stderr, "unknown behaviour \"%s\"\n", o.behaviour_name.c_str());
        status = usage();
        return false;
    }
    request.seed = o.seed;
    if (o.has_schedule) {
        std::string error;
        if (!parse_schedule(o.schedule_text, request.faults, error)) {
            std::fprintf(stderr, "bad schedule: %s\n", error.c_str());
            status = 2;
            return false;
        }
        request.mode = run_mode::schedule;
    } else {
        request.scenario = find_scenario(o.scenario);
        if (request.scenario == nullptr) {
            std::fprintf(stderr, "unknown scenario \"%s\"\n", o.scenario.c_str());
            status = usage();
            return false;
        }
        request.mode = o.random ? run_mode::random : run_mode::scripted;
    }
    return true;
}

// The timeline and the holds, as the run recorded them.
void print_story(const run_result& r) {
    std::printf("\ntimeline (true ms, process, [its monotonic and wall clocks in ms])\n%s",
                r.timeline.c_str());
    std::printf(
        "\nholds (true time; the belief ends when held() turned false, at release or loss)\n");
    for (const hold_record& h : r.past.holds) {
        std::printf("  #%u c%u fence=%lld  %s .. %s  %s, valid until mono %lld\n", h.index,
                    unsigned{h.client}, static_cast<long long>(h.fence),
                    seconds(h.start_us).c_str(), seconds(h.end_us).c_str(), to_string(h.end),
                    static_cast<long long>(h.valid_until_ms));
    }
}

int command_run(const options& o) {
    run_request request;
    int status = 0;
    if (!request_of(o, request, status)) return status;
    run_spec spec = make_spec(request);
    spec.record = !o.quiet;
    const run_result r = run(spec);

    if (request.scenario != nullptr) {
        std::printf("scenario %s: %s (%s)\n", std::string(request.scenario->code).c_str(),
                    std::string(request.scenario->title).c_str(),
                    request.mode == run_mode::random ? "random schedule" : "scripted");
    }
    std::printf("config %s, seed %llu, clients %s\n", std::string(request.config->name).c_str(),
                static_cast<unsigned long long>(request.seed), to_string(request.clients));
    std::printf("params %s\n", to_text(spec.params).c_str());
    std::printf("schedule %s\n",
                spec.faults.empty() ? "(no faults)" : to_text(spec.faults).c_str());
    if (!o.quiet) print_story(r);
    std::printf("\nchecks %s\n", checks_text(r.checks, request.config->fair).c_str());
    if (request.config->fair) {
        std::printf("wake-up bounds told=%lldms due=%lldms\n",
                    static_cast<long long>(r.past.fair.told_bound_us / 1000),
                    static_cast<long long>(r.past.fair.due_bound_us / 1000));
    }
    for (std::size_t k = 0; k < check_count; ++k) {
        if (!r.checks.checks[k].ok) {
            std::printf("  %s: %s\n", to_string(static_cast<check_kind>(k)),
                        r.checks.checks[k].detail.c_str());
        }
    }
    std::printf("events %llu, simulated %s, anomalies %u\n",
                static_cast<unsigned long long>(r.events), seconds(r.simulated_us).c_str(),
                r.anomalies);
    std::printf("trace hash %016llx\n", static_cast<unsigned long long>(r.trace_hash));
    std::printf("replay: %s\n", replay_command(request).c_str());
    if (!o.svg.empty()) {
        std::ofstream file(o.svg, std::ios::binary);
        file << render_svg(spec, r);
        if (!file) {
            std::fprintf(stderr, "cannot write %s\n", o.svg.c_str());
            return 1;
        }
        std::printf("svg written to %s\n", o.svg.c_str());
    }
    return r.checks.all_ok() ? 0 : 1;
}

// The only real clocks the simulator reads: wall and CPU time of a whole matrix or soak,
// for its last line. Rates are per CPU second of the whole process (all --jobs threads).
class stopwatch {
public:
    std::string line(std::uint64_t events, std::size_t runs) const {
        const double wall_s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
        const double cpu_s = static_cast<double>(std::clock() - cpu_started_) / CLOCKS_PER_SEC;
        const double seconds = cpu_s > 0 ? cpu_s : wall_s;
        char text[200];
        std::snprintf(text, sizeof text, "wall=%.2fs cpu=%.2fs events/s=%.0f runs/s=%.0f", wall_s,
                      cpu_s, seconds > 0 ? static_cast<double>(events) / seconds : 0,
                      seconds > 0 ? static_cast<double>(runs) / seconds : 0);
        return text;
    }

private:
    std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
    std::clock_t cpu_started_ = std::clock();
};

int command_matrix(const options& o) {
    matrix_options m;
    m.random_runs = o.runs;
    m.seed = o.seed;
    m.jobs = o.jobs;
    if (!o.scenario.empty() && (m.scenario = find_scenario(o.scenario)) == nullptr) {
        std::fprintf(stderr, "unknown scenario \"%s\"\n", o.scenario.c_str());
        return usage();
    }
    if (!o.config.empty() && (m.config = find_configuration(o.config)) == nullptr) {
        std::fprintf(stderr, "unknown configuration \"%s\"\n", o.config.c_str());
        return usage();
    }
    const stopwatch clock;
    const run_tally totals = run_matrix(m, [](const matrix_cell& cell) {
        std::printf("%s\n", cell_line(cell).c_str());
        std::fflush(stdout);
    });
    std::printf("total runs=%zu events=%llu simulated=%.1fs %s\n", totals.runs,
                static_cast<unsigned long long>(totals.events),
                static_cast<double>(totals.simulated_us) / 1e6,
                clock.line(totals.events, totals.runs).c_str());
    if (totals.anomalies != 0)
        std::printf("anomalies=%u %s\n", totals.anomalies, anomalies_meaning);
    return 0;
}

bool explore_target(const options& o, explore_options& e) {
    e.config = find_configuration(o.config);
    if (e.config == nullptr) {
        std::fprintf(stderr, "unknown configuration \"%s\"\n", o.config.c_str());
        return false;
    }
    if (!o.check.empty()) {
        e.any_check = false;
        if (!parse_check(o.check, e.check)) {
            std::fprintf(stderr, "unknown check \"%s\"\n", o.check.c_str());
            return false;
        }
    }
    if (!o.family.empty() && (e.family = find_scenario(o.family)) == nullptr) {
        std::fprintf(stderr, "unknown family \"%s\"\n", o.family.c_str());
        return false;
    }
    return true;
}

int command_explore(const options& o) {
    explore_options eo;
    if (!explore_target(o, eo)) return usage();
    eo.runs = o.runs;
    eo.seed = o.seed;
    eo.jobs = o.jobs;
    const explore_result e = explore(eo);
    std::printf("explore %s: %zu random schedule(s) from seed %llu, faults %s, target %s\n",
                std::string(eo.config->name).c_str(), e.runs,
                static_cast<unsigned long long>(o.seed),
                eo.family != nullptr ? std::string(eo.family->code).c_str() : "any family",
                eo.any_check ? "any check" : to_string(eo.check));
    std::printf("violating runs: %zu of %zu\n", e.violating_runs, e.runs);
    if (!e.found) {
        std::printf("no violation found\n");
        return 0;
    }
    std::printf("first violation at run %zu: %s\n", e.first_run,
                checks_text(e.original_checks).c_str());
    std::printf("  schedule (%zu fault(s)): %s\n", e.original.faults.size(),
                to_text(e.original.faults).c_str());
    std::printf("shrunk in %zu step(s) to %zu fault(s): %s\n", e.shrink_steps,
                e.shrunk.faults.size(), to_text(e.shrunk.faults).c_str());
    std::printf("  %s\n", checks_text(e.shrunk_checks).c_str());
    for (std::size_t k = 0; k < check_count; ++k) {
        if (!e.shrunk_checks.checks[k].ok) {
            std::printf("  %s: %s\n", to_string(static_cast<check_kind>(k)),
                        e.shrunk_checks.checks[k].detail.c_str());
        }
    }
    std::printf("replay: %s\n", replay_command(e.shrunk).c_str());
    return 1;
}

// The claims `edgelock check` prints for a configuration run only when named
// (tools/edgelock/src/check_matrix.hpp, matrix_runs).
constexpr std::size_t check_matrix_runs = 50;

int command_soak(const options& o) {
    soak_options so;
    so.runs = o.runs;
    so.seed = o.seed;
    so.jobs = o.jobs;
    so.rows = o.one_off ? soak_rows::one_off : soak_rows::matrix;
    if (o.one_off) so.matrix_runs = check_matrix_runs;
    const std::size_t rows = soak_row_count(so.rows);
    const stopwatch clock;
    const soak_result r = run_soak(so);
    std::printf(
        "soak: %zu swarm run(s) from seed %llu over %zu configurations%s, %s (--runs %zu)\n",
        r.runs, static_cast<unsigned long long>(o.seed), rows,
        o.one_off ? " run only when named" : "",
        o.one_off ? "judged against the matrix of each cell where one violated a check"
                  : "after the matrix",
        so.matrix_runs);
    std::printf("soak runs violating each check, per configuration:\n");
    for (std::size_t c = 0; c < rows; ++c) {
        const int width = o.one_off ? 34 : 27;  // the longest name of the rows
        std::printf("  %-*s", width, std::string(soak_row(so.rows, c).name).c_str());
        for (std::size_t k = 0; k < check_count; ++k) {
            std::printf(" %s=%zu", to_string(static_cast<check_kind>(k)), r.violations[c][k]);
        }
        std::printf("\n");
    }
    std::printf("cells, the matrix and the soak together:\n");
    for (std::size_t s = 0; s < scenario_count; ++s) {
        for (std::size_t c = 0; c < rows; ++c) std::printf("%s\n", soak_cell_line(r, s, c).c_str());
    }
    std::printf("violations of checks the matrix saw hold: %zu\n", r.surprises.size());
    for (const soak_surprise& s : r.surprises) {
        std::printf("%s %s %s %s runs=%zu first: %s\n",
                    s.cell_claimed_safe ? "UNEXPECTED" : "MISSED",
                    std::string(s.scenario->code).c_str(), std::string(s.config->name).c_str(),
                    to_string(s.check), s.runs, s.replay.c_str());
    }
    std::printf("total runs=%zu events=%llu %s\n", r.runs,
                static_cast<unsigned long long>(r.events), clock.line(r.events, r.runs).c_str());
    if (r.anomalies != 0) std::printf("anomalies=%u %s\n", r.anomalies, anomalies_meaning);
    return !r.claims_broken() && r.anomalies == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc == 2 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0 ||
                      std::strcmp(argv[1], "help") == 0)) {
        print_usage(stdout);
        return 0;
    }
    options o;
    if (!parse_options(argc, argv, o)) return usage();
    if (o.command == "run") return command_run(o);
    if (o.command == "matrix") return command_matrix(o);
    if (o.command == "soak") return command_soak(o);
    if (o.command == "explore") {
        if (o.config.empty()) return usage();
        return command_explore(o);
    }
    return usage();
}
