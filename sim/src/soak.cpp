#include "edgelock/sim/soak.hpp"

#include "edgelock/sim/parallel.hpp"

namespace edgelock::sim {
namespace {

constexpr std::uint64_t soak_salt = 0x50a4;

struct soak_run_result {
    std::size_t config_index = 0;
    std::size_t scenario_index = 0;
    verdict checks;
    std::uint64_t events = 0;
    std::uint32_t anomalies = 0;
};

// claimed[scenario][config][check]: the matrix saw the check hold in that cell.
using claims = std::array<std::array<std::array<bool, check_count>, 7>, scenario_count>;

claims matrix_claims(const soak_options& options) {
    claims claimed{};
    matrix_options m;
    m.random_runs = options.matrix_runs;
    m.seed = options.seed;
    m.jobs = options.jobs;
    std::size_t cell = 0;
    run_matrix(m, [&](const matrix_cell& c) {
        for (std::size_t k = 0; k < check_count; ++k) {
            claimed[cell / 7][cell % 7][k] = c.checks.checks[k].ok;
        }
        ++cell;
    });
    return claimed;
}

}  // namespace

run_request soak_run(std::uint64_t seed, std::size_t index) {
    run_request request;
    request.config = &configurations()[index % 7];
    request.scenario = &scenarios()[(index / 7) % scenario_count];
    request.mode = run_mode::random;
    request.seed = mix_seed(seed ^ soak_salt, index + 1);
    return request;
}

soak_result run_soak(const soak_options& options) {
    const claims claimed = matrix_claims(options);
    soak_result result;
    std::array<std::array<std::array<soak_surprise, check_count>, 7>, scenario_count> found{};
    run_in_order<soak_run_result>(
        options.runs, options.jobs,
        [&](std::size_t i) {
            const run_result r = run(make_spec(soak_run(options.seed, i)));
            return soak_run_result{i % 7, (i / 7) % scenario_count, r.checks, r.events, r.anomalies};
        },
        [&](std::size_t i, soak_run_result&& r) {
            ++result.runs;
            result.events += r.events;
            result.anomalies += r.anomalies;
            for (std::size_t k = 0; k < check_count; ++k) {
                if (r.checks.checks[k].ok) continue;
                ++result.violations[r.config_index][k];
                if (!claimed[r.scenario_index][r.config_index][k]) continue;
                soak_surprise& s = found[r.scenario_index][r.config_index][k];
                if (s.runs++ == 0) s.replay = replay_command(soak_run(options.seed, i));
            }
            return true;
        });
    for (std::size_t s = 0; s < scenario_count; ++s) {
        for (std::size_t c = 0; c < 7; ++c) {
            for (std::size_t k = 0; k < check_count; ++k) {
                soak_surprise surprise = found[s][c][k];
                if (surprise.runs == 0) continue;
                surprise.scenario = &scenarios()[s];
                surprise.config = &configurations()[c];
                surprise.check = static_cast<check_kind>(k);
                result.surprises.push_back(surprise);
            }
        }
    }
    return result;
}

}  // namespace edgelock::sim
