// SPDX-License-Identifier: Apache-2.0
#include "edgelock/testing/child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>

namespace edgelock::testing {
namespace {

[[noreturn]] void fail(const std::string& what) {
    throw std::runtime_error(what + ": " + std::strerror(errno));
}

bool is_executable(const std::string& path) { return ::access(path.c_str(), X_OK) == 0; }

}  // namespace

std::string find_in_path(const std::string& name) {
    if (name.find('/') != std::string::npos) return is_executable(name) ? name : "";
    const char* path = std::getenv("PATH");
    std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
    std::size_t start = 0;
    while (start <= dirs.size()) {
        const std::size_t end = std::min(dirs.find(':', start), dirs.size());
        std::string dir = dirs.substr(start, end - start);
        if (dir.empty()) dir = ".";
        const std::string candidate = dir + "/" + name;
        if (is_executable(candidate)) return candidate;
        start = end + 1;
    }
    return "";
}

child_process::child_process(const std::vector<std::string>& argv, const spawn_options& options) {
    if (argv.empty()) throw std::runtime_error("child_process: empty argv");
    const std::string program = find_in_path(argv[0]);
    if (program.empty())
        throw std::runtime_error("child_process: " + argv[0] + " not found in PATH");

    int in_pipe[2] = {-1, -1};
    int out_pipe[2] = {-1, -1};
    if (options.pipe_stdio) {
        if (::pipe2(in_pipe, O_CLOEXEC) != 0) fail("pipe");
        if (::pipe2(out_pipe, O_CLOEXEC) != 0) fail("pipe");
    }
    const int parent_pid = ::getpid();
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);

    const pid_t pid = ::fork();
    if (pid < 0) fail("fork");
    if (pid == 0) {
        // The child: only async-signal-safe calls until exec.
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent_pid) ::_exit(127);
        const char* out = options.output_path.empty() ? "/dev/null" : options.output_path.c_str();
        const int out_fd = ::open(out, O_WRONLY | O_CREAT | O_APPEND, 0644);
        const int null_fd = ::open("/dev/null", O_RDONLY);
        if (options.pipe_stdio) {
            ::dup2(in_pipe[0], 0);
            ::dup2(out_pipe[1], 1);
        } else {
            if (null_fd >= 0) ::dup2(null_fd, 0);
            if (out_fd >= 0) ::dup2(out_fd, 1);
        }
        if (out_fd >= 0) ::dup2(out_fd, 2);
        ::execv(program.c_str(), args.data());
        ::_exit(127);
    }
    pid_ = pid;
    if (options.pipe_stdio) {
        ::close(in_pipe[0]);
        ::close(out_pipe[1]);
        stdin_fd_ = in_pipe[1];
        stdout_fd_ = out_pipe[0];
    }
}

child_process::~child_process() { kill(); }

child_process::child_process(child_process&& other) noexcept { *this = std::move(other); }

child_process& child_process::operator=(child_process&& other) noexcept {
    if (this == &other) return *this;
    kill();
    pid_ = other.pid_;
    stdin_fd_ = other.stdin_fd_;
    stdout_fd_ = other.stdout_fd_;
    stdout_buffer_ = std::move(other.stdout_buffer_);
    other.pid_ = -1;
    other.stdin_fd_ = -1;
    other.stdout_fd_ = -1;
    return *this;
}

bool child_process::running() noexcept {
    if (pid_ <= 0) return false;
    int status = 0;
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_ || (r < 0 && errno == ECHILD)) {
        pid_ = -1;
        return false;
    }
    return true;
}

void child_process::freeze() {
    if (pid_ <= 0 || ::kill(pid_, SIGSTOP) != 0)
        throw std::runtime_error("freeze: no such process");
}

void child_process::thaw() {
    if (pid_ <= 0 || ::kill(pid_, SIGCONT) != 0) throw std::runtime_error("thaw: no such process");
}

void child_process::kill(int signal) noexcept {
    if (pid_ > 0) {
        ::kill(pid_, signal);
        if (signal != SIGKILL) ::kill(pid_, SIGCONT);  // a frozen process must see the signal
        int status = 0;
        while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
        }
    }
    reset();
}

void child_process::reset() noexcept {
    pid_ = -1;
    if (stdin_fd_ >= 0) ::close(stdin_fd_);
    if (stdout_fd_ >= 0) ::close(stdout_fd_);
    stdin_fd_ = -1;
    stdout_fd_ = -1;
    stdout_buffer_.clear();
}

std::optional<int> child_process::wait_exit(std::chrono::milliseconds timeout) {
    if (pid_ <= 0) throw std::runtime_error("wait_exit: no child");
    const auto until = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        int status = 0;
        const pid_t r = ::waitpid(pid_, &status, WNOHANG);
        if (r == pid_) {
            pid_ = -1;
            return status;
        }
        if (r < 0 && errno != EINTR) fail("waitpid");
        if (std::chrono::steady_clock::now() >= until) return std::nullopt;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
}

void child_process::write_line(const std::string& line) {
    if (stdin_fd_ < 0) throw std::runtime_error("write_line: no stdin pipe");
    const std::string data = line + "\n";
    std::size_t done = 0;
    while (done < data.size()) {
        const ssize_t n = ::write(stdin_fd_, data.data() + done, data.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) fail("write_line");
        done += static_cast<std::size_t>(n);
    }
}

std::optional<std::string> child_process::read_line(std::chrono::milliseconds timeout) {
    if (stdout_fd_ < 0) throw std::runtime_error("read_line: no stdout pipe");
    const auto until = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        const std::size_t newline = stdout_buffer_.find('\n');
        if (newline != std::string::npos) {
            std::string line = stdout_buffer_.substr(0, newline);
            stdout_buffer_.erase(0, newline + 1);
            return line;
        }
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            until - std::chrono::steady_clock::now());
        if (left.count() <= 0) return std::nullopt;
        pollfd p{stdout_fd_, POLLIN, 0};
        const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) return std::nullopt;
        char buffer[4096];
        const ssize_t n = ::read(stdout_fd_, buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return std::nullopt;
        stdout_buffer_.append(buffer, static_cast<std::size_t>(n));
    }
}

}  // namespace edgelock::testing
