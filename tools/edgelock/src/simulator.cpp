// SPDX-License-Identifier: Apache-2.0
#include "simulator.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "quote.hpp"

namespace edgelock::cli {
namespace {

bool executable(const std::string& path) { return ::access(path.c_str(), X_OK) == 0; }

}  // namespace

std::string find_simulator(std::string& why) {
    const char* chosen = std::getenv("EDGELOCK_SIM");
    if (chosen != nullptr && *chosen != '\0') {
        if (executable(chosen)) return chosen;
        const int error = errno;
        why = "EDGELOCK_SIM names " + shown(chosen) +
              ", which cannot be run: " + std::strerror(error);
        return "";
    }
    std::vector<char> self(4096);
    const ssize_t size = ::readlink("/proc/self/exe", self.data(), self.size() - 1);
    if (size > 0) {
        std::string dir(self.data(), static_cast<std::size_t>(size));
        dir.erase(dir.rfind('/') + 1);
        if (executable(dir + simulator_name)) return dir + simulator_name;
    }
    const char* path_variable = std::getenv("PATH");
    const std::string path = path_variable != nullptr ? path_variable : "";
    std::size_t start = 0;
    while (start < path.size()) {
        const std::size_t colon = std::min(path.find(':', start), path.size());
        const std::string candidate = path.substr(start, colon - start) + "/" + simulator_name;
        if (colon > start && executable(candidate)) return candidate;
        start = colon + 1;
    }
    why = std::string(simulator_name) + " not found next to edgelock or on PATH";
    return "";
}

int capture_simulator(const std::string& path, const std::vector<std::string>& args,
                      std::string& output) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return -1;
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(simulator_name));
    for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    const pid_t child = ::fork();
    if (child < 0) {
        ::close(fds[0]);
        ::close(fds[1]);
        return -1;
    }
    if (child == 0) {
        ::dup2(fds[1], STDOUT_FILENO);
        ::execv(path.c_str(), argv.data());
        ::_exit(127);
    }
    ::close(fds[1]);
    char buffer[4096];
    for (ssize_t got; (got = ::read(fds[0], buffer, sizeof buffer)) != 0;) {
        if (got < 0) {
            if (errno == EINTR) continue;
            break;
        }
        output.append(buffer, static_cast<std::size_t>(got));
    }
    ::close(fds[0]);
    int status = 0;
    while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace edgelock::cli
