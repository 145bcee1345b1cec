// SPDX-License-Identifier: Apache-2.0
// The simulator's verdicts, read from `edgelock-sim matrix` (never typed in by hand), and the
// agreement table that sets them beside what real processes did.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace edgelock::nemesis {

// Which checks the matrix shows violated for one scenario x configuration.
struct matrix_cell {
    bool overlap = false;
    bool stale = false;
    bool liveness = false;
    bool kept = false;
    bool available = false;
};

// The matrix check a cell's lost holds are set against, in the runs that judge them
// (nemesis_history.hpp, lost_holds()): none elsewhere.
enum class lost_check : std::uint8_t { none, kept, available };

using matrix_verdicts = std::map<std::pair<std::string, std::string>, matrix_cell>;

// Runs `<sim> matrix --runs <runs> --seed 1` and parses its lines ("S1 single runs=6 ...
// overlap=VIOLATED stale=ok ... liveness=ok ..."). Empty when the simulator cannot be run.
matrix_verdicts read_matrix(const std::string& sim_path, int runs);

// What real runs of one cell showed.
struct real_cell {
    int runs = 0;
    int overlap = 0;
    int stale = 0;
    int liveness = 0;
    int lost = 0;  // runs with a hold lost where the runs judge it
    lost_check lost_against = lost_check::none;
    int errors = 0;  // runs the harness could not carry out: never agreement
    std::string first_detail;
};

struct table_row {
    std::string configuration;
    std::string scenario;
    matrix_cell matrix;
    bool matrix_known = false;
    real_cell real;
};

// A check agrees when the matrix shows it violated and real runs saw it at least once, or
// the matrix shows it kept and no real run broke it.
bool agrees(const table_row& row);
// Whether a violation the matrix shows has not been seen in any real run yet.
bool violation_unseen(const table_row& row);

// Prints the table; returns the number of rows that disagree.
int print_table(const std::vector<table_row>& rows);

}  // namespace edgelock::nemesis
