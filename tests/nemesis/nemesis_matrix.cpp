// SPDX-License-Identifier: Apache-2.0
#include "nemesis_matrix.hpp"

#include <cstdio>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>

namespace edgelock::nemesis {

namespace {

bool violated(const std::string& line, const std::string& check) {
    return line.find(" " + check + "=VIOLATED") != std::string::npos;
}

std::string matrix_text(const matrix_cell& cell) {
    std::string text;
    if (cell.overlap) text += "overlap ";
    if (cell.stale) text += "stale ";
    if (cell.liveness) text += "liveness ";
    if (cell.kept) text += "kept ";
    if (cell.available) text += "available ";
    return text.empty() ? "ok" : text.substr(0, text.size() - 1);
}

std::string real_text(const real_cell& cell) {
    std::ostringstream out;
    out << "overlap " << cell.overlap << ", stale " << cell.stale << ", liveness " << cell.liveness;
    if (cell.lost_against != lost_check::none) out << ", lost " << cell.lost;
    if (cell.errors > 0) out << ", errors " << cell.errors;
    return out.str();
}

bool check_agrees(bool matrix_violated, int real_count) {
    return matrix_violated ? real_count > 0 : real_count == 0;
}

// What the matrix says of the check a cell's lost holds are set against.
bool matrix_lost(const table_row& row) {
    if (row.real.lost_against == lost_check::kept) return row.matrix.kept;
    return row.real.lost_against == lost_check::available && row.matrix.available;
}

}  // namespace

matrix_verdicts read_matrix(const std::string& sim_path, int runs) {
    matrix_verdicts verdicts;
    const std::string command = sim_path + " matrix --runs " + std::to_string(runs) + " --seed 1";
    std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen(command.c_str(), "r"), ::pclose);
    if (!pipe) return verdicts;
    char buffer[1024];
    while (std::fgets(buffer, sizeof buffer, pipe.get()) != nullptr) {
        const std::string line = buffer;
        std::istringstream words(line);
        std::string scenario;
        std::string configuration;
        words >> scenario >> configuration;
        if (scenario.size() < 2 || scenario[0] != 'S') continue;
        matrix_cell cell;
        cell.overlap = violated(line, "overlap");
        cell.stale = violated(line, "stale");
        cell.liveness = violated(line, "liveness");
        cell.kept = violated(line, "kept");
        cell.available = violated(line, "available");
        verdicts[{scenario, configuration}] = cell;
    }
    return verdicts;
}

bool violation_unseen(const table_row& row) {
    const matrix_cell& m = row.matrix;
    const real_cell& r = row.real;
    return row.matrix_known &&
           ((m.overlap && r.overlap == 0) || (m.stale && r.stale == 0) ||
            (m.liveness && r.liveness == 0) || (matrix_lost(row) && r.lost == 0));
}

bool agrees(const table_row& row) {
    return row.matrix_known && row.real.runs > 0 && row.real.errors == 0 &&
           check_agrees(row.matrix.overlap, row.real.overlap) &&
           check_agrees(row.matrix.stale, row.real.stale) &&
           check_agrees(row.matrix.liveness, row.real.liveness) &&
           (row.real.lost_against == lost_check::none ||
            check_agrees(matrix_lost(row), row.real.lost));
}

int print_table(const std::vector<table_row>& rows) {
    int disagreeing = 0;
    std::cout << "\nnemesis agreement (matrix verdict vs real processes; real: runs with each "
                 "violation)\n";
    std::cout << std::left << std::setw(28) << "configuration" << std::setw(5) << "scen"
              << std::setw(24) << "matrix" << std::setw(6) << "runs" << std::setw(44)
              << "real violations"
              << "agreement\n";
    for (const table_row& row : rows) {
        const bool ok = agrees(row);
        std::string word = ok ? "agree" : "DISAGREE";
        if (!row.matrix_known) word = "DISAGREE (no matrix row)";
        if (!ok) ++disagreeing;
        std::cout << std::left << std::setw(28) << row.configuration << std::setw(5) << row.scenario
                  << std::setw(24) << matrix_text(row.matrix) << std::setw(6) << row.real.runs
                  << std::setw(44) << real_text(row.real) << word << "\n";
        if (!row.real.first_detail.empty()) {
            std::cout << "    first violation: " << row.real.first_detail << "\n";
        }
    }
    std::cout << (disagreeing == 0 ? "all cells agree" : "cells disagree: ")
              << (disagreeing == 0 ? "" : std::to_string(disagreeing)) << std::endl;
    return disagreeing;
}

}  // namespace edgelock::nemesis
