// SPDX-License-Identifier: Apache-2.0
// What both nemesis holders share (nemesis_holder.cpp, blocking client; nemesis_holder_asio.cpp,
// async client): their arguments, the fenced store and the event log. See nemesis_holder.cpp
// for the arguments and the log's lines.
#pragma once

#include <fcntl.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
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

// What every holder takes from its arguments, and the settings all of them share.
struct holder_settings {
    std::string name;
    std::vector<std::string> instances;
    std::vector<std::string> sentinels;
    std::vector<std::string> cluster;  // Redis Cluster seeds
    std::string master_name;           // with sentinels only
    std::int64_t ttl_ms = 1000;
    bool fencing = false;
    bool restart_guard = false;
    std::int64_t replicas_to_wait = 0;
    // WAIT's timeout (half the attempt timeout) must leave room for a replica's ack, which
    // the default attempt timeout (ttl / 10) may not on a loaded machine; 0: the default.
    std::int64_t attempt_timeout_ms = 0;
    static constexpr std::int64_t connect_timeout_ms = 500;
    static constexpr std::int64_t command_timeout_ms = 1000;
    static constexpr std::int64_t reconnect_delay_min_ms = 10;
    static constexpr std::int64_t reconnect_delay_max_ms = 50;
    // Waiters retry often, so one that may take the lock does so within milliseconds.
    static constexpr std::int64_t retry_delay_ms_min = 2;
    static constexpr std::int64_t retry_delay_ms_max = 10;
};

inline holder_settings settings_from(const holder_args& args) {
    holder_settings settings;
    settings.name = args.text("name", "nemesis");
    settings.instances = split_commas(args.text("instances"));
    settings.sentinels = split_commas(args.text("sentinels"));
    settings.cluster = split_commas(args.text("cluster"));
    if (!settings.sentinels.empty()) settings.master_name = args.text("master", "mymaster");
    settings.ttl_ms = args.number("ttl", 1000);
    settings.fencing = args.number("fencing", 0) != 0;
    settings.restart_guard = args.number("guard", 0) != 0;
    settings.replicas_to_wait = args.number("wait", 0);
    // WAIT blocks on the server for half the attempt, which must end within the command
    // timeout (a longer one is refused as invalid_config).
    if (settings.replicas_to_wait > 0) {
        settings.attempt_timeout_ms =
            std::min(settings.ttl_ms / 4, 2 * holder_settings::command_timeout_ms - 2);
    }
    return settings;
}

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

// Writes `fence` to the store and logs the write with the time of the held() check it
// follows, read just after that check said yes ("landed": one the network delivered after
// the holder released, S2). After, not before: a holder stopped while its check waits for the
// lock's mutex checks on resuming, and that check is what S3 judges.
inline void logged_write(const holder_args& args, event_log& log, std::int64_t fence,
                         std::int64_t checked_us, const std::string& kind = "write") {
    const store_result wrote = fenced_store_write(args.text("store"), fence);
    log.line(kind + " " + args.text("id") + " " + std::to_string(fence) + " " +
             std::to_string(wrote.t_us) + " " + (wrote.accepted ? "1" : "0") + " " +
             std::to_string(checked_us));
}

// S2's write in flight: sent while held, it reaches the store when the runner says so (a
// line on stdin) after the holder released; nothing if stdin closes first. "landed" on
// stdout tells the runner the log is complete (the CLI holder lands it from a process the
// runner does not wait for).
inline void land_delayed_write(const holder_args& args, event_log& log, std::int64_t fence) {
    std::string go;
    if (!std::getline(std::cin, go)) return;
    logged_write(args, log, fence, monotonic_us(), "landed");  // a belief of no one's
    std::cout << "landed" << std::endl;
}

}  // namespace edgelock::nemesis
