// SPDX-License-Identifier: Apache-2.0
#include "program_run.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace edgelock::cli_tests {
namespace {

// Output still arriving after the program exited (from a grandchild, say) is read this long.
constexpr std::chrono::milliseconds drain_after_exit{200};
constexpr int poll_slice_ms = 20;

[[noreturn]] void fail(const std::string& what) {
    throw std::runtime_error(what + ": " + std::strerror(errno));
}

std::vector<std::string> environment_with(const std::vector<std::string>& changes) {
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
    for (const std::string& change : changes) {
        const std::string name = change.substr(0, change.find('='));
        for (auto it = env.begin(); it != env.end();) {
            it = it->compare(0, name.size() + 1, name + "=") == 0 ? env.erase(it) : it + 1;
        }
        if (change.find('=') != std::string::npos) env.push_back(change);
    }
    return env;
}

std::vector<char*> pointers_to(std::vector<std::string>& strings) {
    std::vector<char*> pointers;
    for (std::string& s : strings) pointers.push_back(s.data());
    pointers.push_back(nullptr);
    return pointers;
}

// Appends what `fd` has now; false at end of file (or EIO from a pty whose slave closed).
bool read_some(int fd, std::string& into) {
    char buffer[4096];
    for (;;) {
        const ssize_t n = ::read(fd, buffer, sizeof buffer);
        if (n > 0) {
            into.append(buffer, static_cast<std::size_t>(n));
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) return true;
        return false;
    }
}

int shell_code(int status) {
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return -1;
}

}  // namespace

std::vector<std::string> program_result::err_lines() const {
    std::vector<std::string> lines;
    std::istringstream in(err);
    for (std::string line; std::getline(in, line);) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (!line.empty()) lines.push_back(line);
    }
    return lines;
}

program::program(const std::vector<std::string>& argv, const program_options& options)
    : pty_(options.stderr_on_terminal), timeout_(options.timeout) {
    std::vector<std::string> argv_strings = argv;
    std::vector<std::string> env_strings = environment_with(options.env);
    std::vector<char*> args = pointers_to(argv_strings);
    std::vector<char*> envp = pointers_to(env_strings);

    int out_pipe[2];
    int err_pipe[2];
    if (::pipe2(out_pipe, O_CLOEXEC) != 0) fail("pipe");
    if (pty_) {
        err_pipe[0] = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (err_pipe[0] < 0 || ::grantpt(err_pipe[0]) != 0 || ::unlockpt(err_pipe[0]) != 0)
            fail("posix_openpt");
        err_pipe[1] = ::open(::ptsname(err_pipe[0]), O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (err_pipe[1] < 0) fail("open pty");
    } else if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
        fail("pipe");
    }
    const pid_t parent = ::getpid();
    started_ = std::chrono::steady_clock::now();
    const pid_t pid = ::fork();
    if (pid < 0) fail("fork");
    if (pid == 0) {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent) ::_exit(127);
        const int null_fd = ::open("/dev/null", O_RDONLY);
        ::dup2(null_fd, 0);
        ::dup2(out_pipe[1], 1);
        ::dup2(err_pipe[1], 2);
        ::execvpe(args[0], args.data(), envp.data());
        ::_exit(127);
    }
    pid_ = pid;
    ::close(out_pipe[1]);
    ::close(err_pipe[1]);
    out_fd_ = out_pipe[0];
    err_fd_ = err_pipe[0];
    ::fcntl(out_fd_, F_SETFL, O_NONBLOCK);
    ::fcntl(err_fd_, F_SETFL, O_NONBLOCK);
}

program::~program() {
    if (pid_ > 0) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
    }
    if (out_fd_ >= 0) ::close(out_fd_);
    if (err_fd_ >= 0) ::close(err_fd_);
}

program_result program::wait() {
    program_result result;
    bool out_open = true;
    bool err_open = true;
    bool exited = false;
    std::chrono::steady_clock::time_point exited_at{};
    for (;;) {
        const auto now = std::chrono::steady_clock::now();
        if (!exited) {
            int status = 0;
            if (::waitpid(pid_, &status, WNOHANG) == pid_) {
                exited = true;
                exited_at = now;
                result.exit_code = shell_code(status);
                result.elapsed =
                    std::chrono::duration_cast<std::chrono::milliseconds>(now - started_);
                pid_ = -1;
            } else if (now - started_ > timeout_) {
                ::kill(pid_, SIGKILL);
                ::waitpid(pid_, nullptr, 0);
                pid_ = -1;
                result.timed_out = true;
                result.elapsed =
                    std::chrono::duration_cast<std::chrono::milliseconds>(now - started_);
                exited = true;
                exited_at = now;
            }
        }
        if (exited && ((!out_open && !err_open) || now - exited_at > drain_after_exit)) break;
        pollfd fds[2] = {{out_open ? out_fd_ : -1, POLLIN, 0},
                         {err_open ? err_fd_ : -1, POLLIN, 0}};
        ::poll(fds, 2, poll_slice_ms);
        if (out_open && fds[0].revents != 0) out_open = read_some(out_fd_, result.out);
        if (err_open && fds[1].revents != 0) err_open = read_some(err_fd_, result.err);
    }
    if (out_open) read_some(out_fd_, result.out);
    if (err_open) read_some(err_fd_, result.err);
    return result;
}

program_result run_program(const std::vector<std::string>& argv, const program_options& options) {
    program p(argv, options);
    return p.wait();
}

std::vector<std::string> lines_starting(const std::string& out, const std::string& prefix) {
    std::vector<std::string> found;
    std::size_t start = 0;
    while (start < out.size()) {
        const std::size_t end = std::min(out.find('\n', start), out.size());
        const std::string line = out.substr(start, end - start);
        if (line.rfind(prefix, 0) == 0) found.push_back(line);
        start = end + 1;
    }
    return found;
}

std::string first_line(const std::string& out, const std::string& prefix) {
    const std::vector<std::string> found = lines_starting(out, prefix);
    return found.empty() ? "" : found[0];
}

}  // namespace edgelock::cli_tests
