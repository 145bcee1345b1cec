// SPDX-License-Identifier: Apache-2.0
// edgelock: a distributed lock from the shell. `edgelock --help` and docs/CLI.md say how.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "admin.hpp"
#include "check.hpp"
#include "edgelock/tls_context.hpp"
#include "errors.hpp"
#include "exit_codes.hpp"
#include "help.hpp"
#include "options.hpp"
#include "quote.hpp"
#include "run.hpp"
#include "simulator.hpp"

#ifndef EDGELOCK_VERSION
#define EDGELOCK_VERSION "unknown"
#endif

namespace {

using namespace edgelock::cli;

environment read_environment() {
    environment env;
    if (const char* value = std::getenv("EDGELOCK_REDIS")) env.redis = value;
    if (const char* value = std::getenv("EDGELOCK_SENTINEL")) env.sentinel = value;
    if (const char* value = std::getenv("EDGELOCK_CLUSTER")) env.cluster = value;
    if (const char* value = std::getenv("EDGELOCK_MASTER")) env.master = value;
    if (const char* value = std::getenv("EDGELOCK_TLS_CA")) env.tls.ca_file = value;
    if (const char* value = std::getenv("EDGELOCK_TLS_CA_DIR")) env.tls.ca_dir = value;
    if (const char* value = std::getenv("EDGELOCK_TLS_CERT")) env.tls.cert_file = value;
    if (const char* value = std::getenv("EDGELOCK_TLS_KEY")) env.tls.key_file = value;
    if (const char* value = std::getenv("EDGELOCK_TLS_SERVER_NAME")) env.tls.server_name = value;
    if (const char* value = std::getenv("EDGELOCK_WAIT_REPLICAS")) env.wait_replicas = value;
    if (const char* value = std::getenv("EDGELOCK_WAIT_REPLICAS_TIMEOUT"))
        env.wait_replicas_timeout = value;
    if (const char* value = std::getenv("EDGELOCK_PASSWORD")) env.password = value;
    return env;
}

int forward_to_simulator(const options& o) {
    std::string why;
    const std::string path = find_simulator(why);
    if (path.empty()) {
        std::fprintf(stderr, "edgelock: %s\n", why.c_str());
        return exit_not_found;
    }
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(simulator_name));
    for (const std::string& arg : o.program) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    ::execv(path.c_str(), argv.data());
    std::fprintf(stderr, "edgelock: cannot run %s: %s\n", shown(path).c_str(),
                 std::strerror(errno));
    return exit_cannot_execute;
}

// The TLS files the options name, each readable (and --tls-ca-dir a directory), and each
// accepted by OpenSSL: otherwise the one-line reason, naming the flag (or variable), the file
// and what is wrong with it. The parser does no I/O, and a client's open() error only says
// that some TLS file could not be loaded: the load it makes is made here first, and its
// tls_load_error names the file.
std::string unusable_tls_file(const options& o) {
    const struct {
        const char* source;
        const std::string& path;
        bool directory;
        edgelock::tls_file field;
    } files[] = {
        {"--tls-ca (EDGELOCK_TLS_CA)", o.tls.ca_file, false, edgelock::tls_file::ca_file},
        {"--tls-ca-dir (EDGELOCK_TLS_CA_DIR)", o.tls.ca_dir, true, edgelock::tls_file::ca_dir},
        {"--tls-cert (EDGELOCK_TLS_CERT)", o.tls.cert_file, false, edgelock::tls_file::cert_file},
        {"--tls-key (EDGELOCK_TLS_KEY)", o.tls.key_file, false, edgelock::tls_file::key_file}};
    bool any = false;
    for (const auto& file : files) {
        if (file.path.empty()) continue;
        any = true;
        struct stat info {};
        const bool readable =
            ::stat(file.path.c_str(), &info) == 0 && ::access(file.path.c_str(), R_OK) == 0;
        const char* why = !readable ? std::strerror(errno)
                          : file.directory != S_ISDIR(info.st_mode)
                              ? (file.directory ? "not a directory" : "a directory")
                              : nullptr;
        if (why != nullptr)
            return std::string("cannot use ") + file.source + " " + shown(file.path) + ": " + why;
    }
    edgelock::tls_context context;
    if (!any || context.load(o.tls) != edgelock::transport_errc::tls_files) return "";
    const edgelock::tls_load_error& refused = context.load_error();
    for (const auto& file : files) {
        if (file.field == refused.file) {
            return std::string("cannot use ") + file.source + " " + shown(file.path) + ": " +
                   shown(refused.reason);
        }
    }
    return shown(describe(refused));
}

// A password is a line, far below this; the rest of a larger file is not read.
constexpr std::size_t password_file_bytes_max = 4'096;

// --password-file: the file's first line (without its newline). A file every user may read
// is refused: the password would be no better kept than on the command line. A group may
// share it (a deployment's secrets group).
std::string read_password_file(const std::string& path, std::string& password) {
    const std::string source = "--password-file " + shown(path);
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return "cannot use " + source + ": " + std::strerror(errno);
    struct stat info {};
    std::string problem;
    char bytes[password_file_bytes_max];
    ssize_t size = -1;
    if (::fstat(fd, &info) != 0) problem = std::strerror(errno);
    else if (!S_ISREG(info.st_mode)) problem = "not a regular file";
    else if ((info.st_mode & S_IROTH) != 0) problem = "every user may read it (chmod o-r)";
    else if ((size = ::read(fd, bytes, sizeof bytes)) < 0) problem = std::strerror(errno);
    ::close(fd);
    if (!problem.empty()) return "cannot use " + source + ": " + problem;
    const std::string_view text(bytes, static_cast<std::size_t>(size));
    password = std::string(text.substr(0, text.find('\n')));
    if (!password.empty() && password.back() == '\r') password.pop_back();
    if (password.empty()) return "cannot use " + source + ": its first line is empty";
    return "";
}

}  // namespace

int main(int argc, char** argv) {
    note_inherited_fds();
    // A Redis connection reset while writing must be an error code, not the end of edgelock.
    ::signal(SIGPIPE, SIG_IGN);

    const std::vector<std::string> args(argv + 1, argv + argc);
    const parse_result parsed = parse_command_line(args, read_environment());
    if (parsed.exit_code != 0) {
        std::fprintf(stderr, "edgelock: %s\n", parsed.error.c_str());
        return parsed.exit_code;
    }
    options o = parsed.parsed;
    note_tls_options(o.tls);
    if (const std::string problem = unusable_tls_file(o); !problem.empty()) {
        std::fprintf(stderr, "edgelock: %s\n", problem.c_str());
        return exit_usage;
    }
    if (!o.password_file.empty()) {
        if (const std::string problem = read_password_file(o.password_file, o.password);
            !problem.empty()) {
            std::fprintf(stderr, "edgelock: %s\n", problem.c_str());
            return exit_usage;
        }
        apply_password(o);
    }
    switch (o.command) {
        case command::help: {
            const std::string_view text = help_text(o.help_topic);
            std::fwrite(text.data(), 1, text.size(), stdout);
            if (o.help_topic.empty() || o.help_topic == "run" || o.help_topic == "hold") {
                const std::string_view codes = exit_code_table();
                std::fputs("\n", stdout);
                std::fwrite(codes.data(), 1, codes.size(), stdout);
            }
            return exit_ok;
        }
        case command::version: std::printf("edgelock %s\n", EDGELOCK_VERSION); return exit_ok;
        case command::run:
        case command::hold: {
            const int code = o.command == command::run ? run_locked(o) : hold_locked(o);
            if (const int s = signal_to_end_by(); s != 0) {
                ::signal(s, SIG_DFL);
                ::raise(s);
            }
            return code;
        }
        case command::status: return show_status(o);
        case command::list: return list_locks(o);
        case command::release: return release_token(o);
        case command::sim: return forward_to_simulator(o);
        case command::check: return check_deployment(o);
    }
    return exit_internal;
}
