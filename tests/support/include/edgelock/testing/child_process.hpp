// SPDX-License-Identifier: Apache-2.0
// edgelock test support: child processes started by the tests, stopped by PID.
//
// A child_process owns one PID. Its destructor sends SIGKILL and reaps it, so a test that
// fails (or throws) still leaves nothing running. Children are also started with
// PR_SET_PDEATHSIG = SIGKILL: if the test process dies without running destructors (a crash,
// ctest's timeout), the kernel kills them too. That signal follows the *thread* that started
// the child, so start children from the test's own thread, not from a short-lived one.
//
// Errors (fork/exec failures, timeouts) are reported by throwing std::runtime_error: this is
// test code, and a failed set-up must fail the test loudly.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace edgelock::testing {

struct spawn_options {
    // Where the child's stdout and stderr go: a file path (appended), or, when empty and
    // `pipe_stdio` is false, /dev/null.
    std::string output_path;
    // Give the child a stdin pipe (write_line) and a stdout pipe (read_line); stderr then goes
    // to output_path or /dev/null.
    bool pipe_stdio = false;
};

class child_process {
public:
    child_process() = default;
    // Starts argv[0] (looked up in PATH when it has no '/') with argv. Throws on failure.
    child_process(const std::vector<std::string>& argv, const spawn_options& options = {});
    ~child_process();
    child_process(child_process&& other) noexcept;
    child_process& operator=(child_process&& other) noexcept;
    child_process(const child_process&) = delete;
    child_process& operator=(const child_process&) = delete;

    pid_t pid() const noexcept { return pid_; }
    // True until the child has been reaped (by kill(), wait_exit() or exited()).
    bool running() noexcept;

    // SIGSTOP / SIGCONT: freeze and resume the whole process (a GC pause, a hung server).
    void freeze();
    void thaw();
    // Sends `signal` (SIGKILL by default), then reaps the child. Safe to call twice.
    void kill(int signal = 9) noexcept;
    // Waits for the child to exit on its own; returns its wait status (as from waitpid), or
    // nullopt after `timeout` (the child is left running).
    std::optional<int> wait_exit(std::chrono::milliseconds timeout);

    // With pipe_stdio: writes `line` and a newline to the child's stdin.
    void write_line(const std::string& line);
    // With pipe_stdio: the next line of the child's stdout (without the newline), or nullopt
    // on end of file or after `timeout`.
    std::optional<std::string> read_line(std::chrono::milliseconds timeout);

private:
    void reset() noexcept;

    pid_t pid_ = -1;
    int stdin_fd_ = -1;
    int stdout_fd_ = -1;
    std::string stdout_buffer_;
};

// Finds an executable by name in PATH ("redis-server"); returns its path, or "" if absent.
std::string find_in_path(const std::string& name);

}  // namespace edgelock::testing
