// SPDX-License-Identifier: Apache-2.0
// Runs computed on several threads report exactly what one thread reports.
#include "edgelock/sim/parallel.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "edgelock/sim/explore.hpp"
#include "edgelock/sim/soak.hpp"

namespace {

using namespace edgelock::sim;

std::vector<std::string> matrix_lines(unsigned jobs) {
    matrix_options m;
    m.random_runs = 1;  // the scripted run and one random run per cell: enough to interleave
    m.seed = 11;
    m.jobs = jobs;
    std::vector<std::string> lines;
    run_matrix(m, [&](const matrix_cell& cell) { lines.push_back(cell_line(cell)); });
    return lines;
}

TEST(parallel, matrix_with_two_jobs_prints_what_one_job_prints) {
    const std::vector<std::string> one = matrix_lines(1);
    EXPECT_EQ(one.size(), scenario_count * configurations().size());
    EXPECT_EQ(matrix_lines(2), one);
    EXPECT_EQ(matrix_lines(3), one);
}

TEST(parallel, explore_finds_and_shrinks_the_same_run_with_any_jobs) {
    explore_options e;
    e.config = find_configuration("single");
    e.runs = 40;
    e.seed = 5;
    e.jobs = 1;
    const explore_result one = explore(e);
    ASSERT_TRUE(one.found) << "random faults on a single Redis break it";
    e.jobs = 2;
    const explore_result two = explore(e);
    EXPECT_EQ(two.violating_runs, one.violating_runs);
    EXPECT_EQ(two.first_run, one.first_run);
    EXPECT_EQ(replay_command(two.shrunk), replay_command(one.shrunk));
}

TEST(parallel, soak_counts_the_same_with_any_jobs) {
    soak_options s;
    s.runs = 40;
    s.seed = 2;
    s.matrix_runs = 1;
    s.jobs = 1;
    const soak_result one = run_soak(s);
    std::size_t violations = 0;
    for (const auto& per_config : one.violations)
        for (const std::size_t count : per_config) violations += count;
    ASSERT_GT(violations, 0u) << "too few runs to compare what the soak counts";
    s.jobs = 2;
    const soak_result two = run_soak(s);
    EXPECT_EQ(two.violations, one.violations);
    ASSERT_EQ(two.surprises.size(), one.surprises.size());
    for (std::size_t i = 0; i < one.surprises.size(); ++i)
        EXPECT_EQ(two.surprises[i].replay, one.surprises[i].replay);
    for (std::size_t sc = 0; sc < scenario_count; ++sc) {
        for (std::size_t c = 0; c < configuration_count; ++c) {
            EXPECT_EQ(soak_cell_line(two, sc, c), soak_cell_line(one, sc, c));
        }
    }
}

TEST(parallel, results_arrive_in_index_order_and_stop_when_asked) {
    std::vector<std::size_t> seen;
    run_in_order<std::size_t>(
        100, 4, [](std::size_t i) { return i * i; },
        [&](std::size_t i, std::size_t&& square) {
            EXPECT_EQ(square, i * i);
            seen.push_back(i);
            return i < 41;
        });
    ASSERT_EQ(seen.size(), 42u);
    for (std::size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], i);
}

}  // namespace
