// SPDX-License-Identifier: Apache-2.0
// Runs a program for a test and collects what a shell user would see: exit status, stdout,
// stderr, elapsed time. Used by the CLI tests and the example tests.
//
// The child gets PR_SET_PDEATHSIG = SIGKILL (it dies with a crashed test), stdin from
// /dev/null, and the test's environment with `env` applied ("NAME=value" sets, "NAME" alone
// unsets). A program still running at `timeout` is killed and reported as timed_out. Errors
// setting up (fork, pipes) throw std::runtime_error: this is test code.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace edgelock::cli_tests {

struct program_options {
    std::vector<std::string> env;
    std::chrono::milliseconds timeout{30'000};
    bool stderr_on_terminal = false;  // stderr is a pseudo-terminal (isatty() true), read back
};

struct program_result {
    int exit_code = -1;  // the exit status, or 128+N after signal N (as a shell reports it)
    bool timed_out = false;
    std::string out;
    std::string err;
    std::chrono::milliseconds elapsed{0};

    // stderr's lines (without empty ones), for "exactly one line" checks.
    std::vector<std::string> err_lines() const;
};

// A started program; wait() collects it. The destructor kills a program not yet waited for.
class program {
public:
    explicit program(const std::vector<std::string>& argv, const program_options& options = {});
    ~program();
    program(const program&) = delete;
    program& operator=(const program&) = delete;

    pid_t pid() const noexcept { return pid_; }
    program_result wait();

private:
    pid_t pid_ = -1;
    int out_fd_ = -1;
    int err_fd_ = -1;
    bool pty_ = false;
    std::chrono::milliseconds timeout_;
    std::chrono::steady_clock::time_point started_;
};

// Starts and waits.
program_result run_program(const std::vector<std::string>& argv,
                           const program_options& options = {});

// The lines of `out` that start with `prefix`.
std::vector<std::string> lines_starting(const std::string& out, const std::string& prefix);

// The first line of `out` that starts with `prefix`, or "" (a missing line fails an EXPECT).
std::string first_line(const std::string& out, const std::string& prefix);

}  // namespace edgelock::cli_tests
