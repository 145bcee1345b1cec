// SPDX-License-Identifier: Apache-2.0
// What both nemesis holders share (nemesis_holder.cpp, blocking client; nemesis_holder_asio.cpp,
// asio client): their arguments, the fenced store and the event log. See nemesis_holder.cpp
// for the arguments and the log's lines.
#pragma once

#include <fcntl.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace edgelock::nemesis {

inline std::int64_t monotonic_us() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return std::int64_t{ts.tv_sec} * 1'000'000 + ts.tv_nsec / 1000;
}

inline std::vector<std::string> split_commas(const std::string& text) {
    std::vector<std::string> out;
    std::stringstream in(text);
    std::string part;
    while (std::getline(in, part, ',')) {
        if (!part.empty()) out.push_back(part);
    }
    return out;
}

// The fenced store: one file holding the highest token accepted. A write with a lower token
// is refused; flock() orders the writers of every process.
struct store_result {
    bool accepted = false;
    std::int64_t t_us = 0;
};

inline store_result fenced_store_write(const std::string& path, std::int64_t token) {
    store_result result;
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT, 0644);
    if (fd < 0) return result;
    ::flock(fd, LOCK_EX);
    char buffer[32] = {};
    const ssize_t got = ::pread(fd, buffer, sizeof buffer - 1, 0);
    const std::int64_t highest = got > 0 ? std::strtoll(buffer, nullptr, 10) : 0;
    result.t_us = monotonic_us();
    if (token >= highest) {
        const std::string text = std::to_string(token) + "\n";
        if (::ftruncate(fd, 0) == 0 &&
            ::pwrite(fd, text.data(), text.size(), 0) == static_cast<ssize_t>(text.size())) {
            result.accepted = true;
        }
    }
    ::flock(fd, LOCK_UN);
    ::close(fd);
    return result;
}

struct holder_args {
    std::map<std::string, std::string> values;
    std::string text(const std::string& key, const std::string& fallback = "") const {
        const auto it = values.find(key);
        return it == values.end() ? fallback : it->second;
    }
    std::int64_t number(const std::string& key, std::int64_t fallback) const {
        const auto it = values.find(key);
        return it == values.end() ? fallback : std::stoll(it->second);
    }
};

class event_log {
public:
    explicit event_log(const std::string& path) : file_(std::fopen(path.c_str(), "a")) {}
    ~event_log() {
        if (file_ != nullptr) std::fclose(file_);
    }
    event_log(const event_log&) = delete;
    event_log& operator=(const event_log&) = delete;
    // Flushed at once: a holder killed later must leave every line it wrote.
    void line(const std::string& text) {
        if (file_ == nullptr) return;
        std::fputs((text + "\n").c_str(), file_);
        std::fflush(file_);
    }

private:
    std::FILE* file_;
};

// Parses key=value arguments; false on anything else.
inline bool parse_holder_args(int argc, char** argv, holder_args& args) {
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        const auto eq = arg.find('=');
        if (eq == std::string::npos) return false;
        args.values[arg.substr(0, eq)] = arg.substr(eq + 1);
    }
    return true;
}

// Writes `fence` to the store and logs the write.
inline void logged_write(const holder_args& args, event_log& log, std::int64_t fence) {
    const store_result wrote = fenced_store_write(args.text("store"), fence);
    log.line("write " + args.text("id") + " " + std::to_string(fence) + " " +
             std::to_string(wrote.t_us) + " " + (wrote.accepted ? "1" : "0"));
}

}  // namespace edgelock::nemesis
