// SPDX-License-Identifier: Apache-2.0
#include "edgelock/sim/explore.hpp"

#include <functional>
#include <vector>

#include "edgelock/assert.hpp"
#include "edgelock/sim/parallel.hpp"

namespace edgelock::sim {
namespace {

constexpr std::uint64_t explore_schedule_stream = 9;

// Values to try instead of `value`, simplest first: zero, then ever closer to the value.
std::vector<std::int64_t> smaller_values(std::int64_t value) {
    std::vector<std::int64_t> out;
    if (value == 0) return out;
    out.push_back(0);
    for (std::int64_t step = value / 2; step != 0; step /= 2) out.push_back(value - step);
    return out;
}

class shrinker {
public:
    shrinker(const run_request& failing, check_kind target) : best_(failing), target_(target) {}

    explore_result run_all() {
        explore_result result;
        result.shrunk = best_;
        bool progress = true;
        while (progress && runs_ < shrink_runs_max) {
            progress = drop_faults() || simplify_faults();
        }
        result.found = true;
        result.target = target_;
        result.shrunk = best_;
        result.shrunk_checks = run(make_spec(best_)).checks;
        result.shrink_steps = steps_;
        result.shrink_runs = runs_;
        return result;
    }

private:
    // True when `candidate` still violates the target check; then it becomes the best.
    bool try_candidate(const schedule& candidate) {
        if (runs_ >= shrink_runs_max) return false;
        ++runs_;
        run_request request = best_;
        request.faults = candidate;
        if (run(make_spec(request)).checks.ok(target_)) return false;
        best_ = request;
        ++steps_;
        return true;
    }

    bool drop_faults() {
        for (std::size_t i = best_.faults.size(); i-- > 0;) {
            schedule candidate = best_.faults;
            candidate.erase(candidate.begin() + static_cast<std::ptrdiff_t>(i));
            if (try_candidate(candidate)) return true;
        }
        return false;
    }

    // Tries simpler values for one numeric field of fault i; true if one was kept.
    bool simplify_number(std::size_t i, const std::function<std::int64_t&(fault&)>& field) {
        const std::int64_t current = field(best_.faults[i]);
        for (const std::int64_t value : smaller_values(current)) {
            schedule candidate = best_.faults;
            field(candidate[i]) = value;
            if (try_candidate(candidate)) return true;
        }
        return false;
    }

    bool simplify_fault(std::size_t i) {
        const fault f = best_.faults[i];
        bool changed = false;
        changed |= simplify_number(i, [](fault& x) -> std::int64_t& { return x.duration_ms; });
        changed |= simplify_number(i, [](fault& x) -> std::int64_t& { return x.amount; });
        if (f.when.at_point) {
            changed |=
                simplify_number(i, [](fault& x) -> std::int64_t& { return x.when.offset_ms; });
            for (std::uint16_t nth = 1; nth < best_.faults[i].when.nth; ++nth) {
                schedule candidate = best_.faults;
                candidate[i].when.nth = nth;
                if (try_candidate(candidate)) {
                    changed = true;
                    break;
                }
            }
        } else {
            changed |= simplify_number(i, [](fault& x) -> std::int64_t& { return x.when.at_ms; });
        }
        if (best_.faults[i].count > 1) {
            schedule candidate = best_.faults;
            candidate[i].count = 1;
            changed |= try_candidate(candidate);
        }
        if (best_.faults[i].reset) {
            schedule candidate = best_.faults;
            candidate[i].reset = false;
            changed |= try_candidate(candidate);
        }
        for (std::size_t n = 0; n < nodes_max; ++n) {
            const node_mask nodes = best_.faults[i].nodes;
            const auto without = static_cast<node_mask>(nodes & ~(1u << n));
            if (without == nodes || without == 0) continue;
            schedule candidate = best_.faults;
            candidate[i].nodes = without;
            changed |= try_candidate(candidate);
        }
        return changed;
    }

    bool simplify_faults() {
        bool changed = false;
        for (std::size_t i = 0; i < best_.faults.size(); ++i) changed |= simplify_fault(i);
        return changed;
    }

    run_request best_;
    check_kind target_;
    std::size_t runs_ = 0;
    std::size_t steps_ = 0;
};

}  // namespace

explore_result shrink(const run_request& failing, check_kind target) {
    EDGELOCK_ASSERT(failing.mode == run_mode::schedule);
    shrinker s(failing, target);
    explore_result result = s.run_all();
    result.original = failing;
    return result;
}

namespace {

// Random run `index` (from 0) of an exploration: its seed, parameters and schedule.
run_request exploration_run(const explore_options& options, std::size_t index) {
    run_request request;
    request.config = options.config;
    request.mode = run_mode::schedule;
    request.seed = mix_seed(options.seed, index + 1);
    // make_spec draws the parameters from the seed the same way; the faults need them.
    const world_params params = make_spec(request).params;
    prng rng = prng::stream(request.seed, explore_schedule_stream);
    request.faults = options.family != nullptr
                         ? random_schedule(options.family->id, *options.config, params, rng)
                         : random_faults(*options.config, params, rng);
    return request;
}

bool violates(const explore_options& options, const verdict& v) {
    return options.any_check ? !v.all_ok() : !v.ok(options.check);
}

struct explored_run {
    run_request request;
    verdict checks;
};

}  // namespace

explore_result explore(const explore_options& options) {
    EDGELOCK_ASSERT(options.config != nullptr);
    explore_result result;
    run_in_order<explored_run>(
        options.runs, options.jobs,
        [&](std::size_t i) {
            explored_run r{exploration_run(options, i), {}};
            r.checks = run(make_spec(r.request)).checks;
            return r;
        },
        [&](std::size_t i, explored_run&& r) {
            result.runs = i + 1;
            if (!violates(options, r.checks)) return true;
            ++result.violating_runs;
            if (result.violating_runs == 1) {
                result.first_run = i + 1;
                result.original = std::move(r.request);
                result.original_checks = r.checks;
            }
            return true;
        });
    if (result.violating_runs == 0) return result;
    check_kind target = options.check;
    if (options.any_check) {
        std::size_t first = 0;
        while (result.original_checks.checks[first].ok) ++first;
        target = static_cast<check_kind>(first);
    }
    explore_result shrunk = shrink(result.original, target);
    shrunk.runs = result.runs;
    shrunk.violating_runs = result.violating_runs;
    shrunk.first_run = result.first_run;
    shrunk.original_checks = result.original_checks;
    return shrunk;
}

}  // namespace edgelock::sim
