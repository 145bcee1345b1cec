// edgelock-sim: the deterministic simulator's command line.
//
//   edgelock-sim run --scenario S1 --config single --seed 7 [--random] [--svg FILE]
//   edgelock-sim run --config C --seed S --schedule 'TEXT' [--svg FILE]
//   edgelock-sim matrix [--runs N] [--seed S]
//   edgelock-sim explore --config C --runs N [--seed S]
//
// `run` prints the run's seed, parameters and schedule, a timeline (true time, each
// process's own clocks, lock events, faults, resource writes accepted or rejected), the
// holds, the four checks and the trace hash. `--behaviour B` runs deliberately broken
// clients (ignores-validity, skips-fencing, deletes-without-compare, never-releases).
// Output for a given seed is identical between runs, except the matrix's last line (wall and
// CPU time, and the rates per CPU second).
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
#include "edgelock/sim/svg.hpp"

namespace {

using namespace edgelock::sim;

struct options {
    std::string command;
    std::string scenario;
    std::string config;
    std::string schedule_text;
    std::string svg;
    std::string behaviour_name = "correct";
    std::uint64_t seed = 1;
    bool seed_given = false;
    std::size_t runs = 50;
    bool random = false;
    bool has_schedule = false;
    bool quiet = false;
};

int usage() {
    std::fputs(
        "usage:\n"
        "  edgelock-sim run --scenario S1..S8 --config NAME --seed N [--random] [--svg FILE]\n"
        "  edgelock-sim run --config NAME --seed N --schedule 'TEXT' [--svg FILE]\n"
        "                   [--behaviour correct|ignores-validity|skips-fencing|\n"
        "                                deletes-without-compare|never-releases] [--quiet]\n"
        "  edgelock-sim matrix [--runs N] [--seed N]\n"
        "  edgelock-sim explore --config NAME --runs N [--seed N]\n"
        "configurations:",
        stderr);
    for (const configuration& c : configurations()) std::fprintf(stderr, " %s", std::string(c.name).c_str());
    std::fputs("\n", stderr);
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
        } else if (arg == "--random") {
            o.random = true;
        } else if (arg == "--quiet") {
            o.quiet = true;
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

int command_run(const options& o) {
    run_request request;
    request.config = find_configuration(o.config);
    if (request.config == nullptr) {
        std::fprintf(stderr, "unknown configuration \"%s\"\n", o.config.c_str());
        return usage();
    }
    if (!parse_behaviour(o.behaviour_name, request.clients)) {
        std::fprintf(stderr, "unknown behaviour \"%s\"\n", o.behaviour_name.c_str());
        return usage();
    }
    request.seed = o.seed;
    if (o.has_schedule) {
        std::string error;
        if (!parse_schedule(o.schedule_text, request.faults, error)) {
            std::fprintf(stderr, "bad schedule: %s\n", error.c_str());
            return 2;
        }
        request.mode = run_mode::schedule;
    } else {
        request.scenario = find_scenario(o.scenario);
        if (request.scenario == nullptr) {
            std::fprintf(stderr, "unknown scenario \"%s\"\n", o.scenario.c_str());
            return usage();
        }
        request.mode = o.random ? run_mode::random : run_mode::scripted;
    }
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
    std::printf("schedule %s\n", spec.faults.empty() ? "(no faults)" : to_text(spec.faults).c_str());
    if (!o.quiet) {
        std::printf("\ntimeline (true ms, process, [its monotonic and wall clocks in ms])\n%s",
                    r.timeline.c_str());
        std::printf("\nholds (true time; the belief ends when held() turned false, at release or loss)\n");
        for (const hold_record& h : r.past.holds) {
            std::printf("  #%u c%u fence=%lld  %s .. %s  %s, valid until mono %lld\n", h.index,
                        unsigned{h.client}, static_cast<long long>(h.fence), seconds(h.start_us).c_str(),
                        seconds(h.end_us).c_str(), to_string(h.end),
                        static_cast<long long>(h.valid_until_ms));
        }
    }
    std::printf("\nchecks %s\n", checks_text(r.checks).c_str());
    for (std::size_t k = 0; k < check_count; ++k) {
        if (!r.checks.checks[k].ok) {
            std::printf("  %s: %s\n", to_string(static_cast<check_kind>(k)), r.checks.checks[k].detail.c_str());
        }
    }
    std::printf("events %llu, simulated %s, anomalies %u\n", static_cast<unsigned long long>(r.events),
                seconds(r.simulated_us).c_str(), r.anomalies);
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

int command_matrix(const options& o) {
    // The only real clocks the simulator reads: wall and CPU time of the whole matrix, for
    // its last line. Rates are per CPU second (this machine's cores may be shared).
    const auto started = std::chrono::steady_clock::now();
    const std::clock_t cpu_started = std::clock();
    const matrix_totals totals = run_matrix(o.runs, o.seed, [](const matrix_cell& cell) {
        std::printf("%s\n", cell_line(cell).c_str());
        std::fflush(stdout);
    });
    const double wall_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    const double cpu_s = static_cast<double>(std::clock() - cpu_started) / CLOCKS_PER_SEC;
    const double seconds = cpu_s > 0 ? cpu_s : wall_s;
    const double events_per_s = seconds > 0 ? static_cast<double>(totals.events) / seconds : 0;
    const double runs_per_s = seconds > 0 ? static_cast<double>(totals.runs) / seconds : 0;
    std::printf("total runs=%zu events=%llu simulated=%.1fs wall=%.2fs cpu=%.2fs events/s=%.0f runs/s=%.0f\n",
                totals.runs, static_cast<unsigned long long>(totals.events),
                static_cast<double>(totals.simulated_us) / 1e6, wall_s, cpu_s, events_per_s, runs_per_s);
    if (totals.anomalies != 0) std::printf("anomalies=%u (the lock refused calls it should take)\n", totals.anomalies);
    return 0;
}

int command_explore(const options& o) {
    const configuration* config = find_configuration(o.config);
    if (config == nullptr) {
        std::fprintf(stderr, "unknown configuration \"%s\"\n", o.config.c_str());
        return usage();
    }
    const explore_result e = explore(*config, o.runs, o.seed);
    std::printf("explore %s: %zu random schedule(s) from seed %llu\n", std::string(config->name).c_str(),
                e.runs, static_cast<unsigned long long>(o.seed));
    if (!e.found) {
        std::printf("no violation found\n");
        return 0;
    }
    std::printf("violation at run %zu: %s\n", e.runs, checks_text(e.original_checks).c_str());
    std::printf("  schedule (%zu fault(s)): %s\n", e.original.faults.size(), to_text(e.original.faults).c_str());
    std::printf("shrunk in %zu step(s) to %zu fault(s): %s\n", e.shrink_steps, e.shrunk.faults.size(),
                to_text(e.shrunk.faults).c_str());
    std::printf("  %s\n", checks_text(e.shrunk_checks).c_str());
    for (std::size_t k = 0; k < check_count; ++k) {
        if (!e.shrunk_checks.checks[k].ok) {
            std::printf("  %s: %s\n", to_string(static_cast<check_kind>(k)), e.shrunk_checks.checks[k].detail.c_str());
        }
    }
    std::printf("replay: %s\n", replay_command(e.shrunk).c_str());
    return 1;
}

}  // namespace

int main(int argc, char** argv) {
    options o;
    if (!parse_options(argc, argv, o)) return usage();
    if (o.command == "run") return command_run(o);
    if (o.command == "matrix") return command_matrix(o);
    if (o.command == "explore") {
        if (o.config.empty()) return usage();
        return command_explore(o);
    }
    return usage();
}
