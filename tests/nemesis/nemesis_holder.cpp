// SPDX-License-Identifier: Apache-2.0
// A lock holder for the nemesis runner: one process the runner can SIGSTOP, whose holds and
// writes to a shared fenced store are logged with CLOCK_MONOTONIC microseconds (one clock for
// every process on this machine), so the runner can judge overlap, stale writes and liveness
// from the logs alone.
//
//   nemesis_holder key=value ...
//     id=A log=<file> store=<file> name=<lock name> ttl=<ms> fencing=0|1 guard=0|1
//     wait=<replicas for WAIT> instances=<url,url,...> | sentinels=<url,...> master=<name>
//     holds=<count> work_ms=<ms> step_ms=<ms> gate=0|1 acquire_wait_ms=<ms>
//
// Each hold: acquire (waiting), print "held <fence>", then every step_ms while held() write
// the fence token to the store, for work_ms; print "released" after release(). With gate=1
// the first hold checks held(), prints "checked" and waits for a line on stdin before its
// first write: the runner freezes the process there, so the write goes out on the strength
// of a check made before the pause (Kleppmann's GC pause).
//
// Log lines (one per event, appended):
//   hold <id> <fence> <t_us>          after acquire() returned ok
//   write <id> <fence> <t_us> <0|1>   t taken under the store's lock; 1 = accepted
//   lost <id> <t_us>                  held() found false during the work
//   end <id> <t_us>                   before release()
//   fail <id> <t_us> <message>        acquire() failed
#include <fcntl.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "edgelock/hiredis_lock.hpp"

namespace {

std::int64_t monotonic_us() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return std::int64_t{ts.tv_sec} * 1'000'000 + ts.tv_nsec / 1000;
}

std::vector<std::string> split_commas(const std::string& text) {
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

store_result fenced_store_write(const std::string& path, std::int64_t token) {
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

edgelock::hiredis::lock_options options_from(const holder_args& args) {
    edgelock::hiredis::lock_options options;
    options.name = args.text("name", "nemesis");
    options.instances = split_commas(args.text("instances"));
    options.sentinels = split_commas(args.text("sentinels"));
    if (!options.sentinels.empty()) options.master_name = args.text("master", "mymaster");
    options.ttl_ms = args.number("ttl", 1000);
    options.fencing = args.number("fencing", 0) != 0;
    options.restart_guard = args.number("guard", 0) != 0;
    options.replicas_to_wait = static_cast<std::uint8_t>(args.number("wait", 0));
    options.connect_timeout_ms = 500;
    options.command_timeout_ms = 1000;
    // WAIT's timeout (half the attempt timeout) must leave room for a replica's ack, which
    // the default attempt timeout (ttl / 10) may not on a loaded machine.
    if (options.replicas_to_wait > 0) options.attempt_timeout_ms = options.ttl_ms / 4;
    options.reconnect_delay_min_ms = 10;
    options.reconnect_delay_max_ms = 50;
    // Waiters retry often, so one that may take the lock does so within milliseconds.
    options.retry_delay_ms_min = 2;
    options.retry_delay_ms_max = 10;
    return options;
}

// Writes while held() says yes, for work_ms. Returns false when the hold was lost.
bool work(edgelock::hiredis::lock& lock, const holder_args& args, event_log& log,
          std::int64_t fence) {
    const std::string id = args.text("id");
    const std::string store = args.text("store");
    const std::int64_t until_us = monotonic_us() + args.number("work_ms", 500) * 1000;
    const auto step = std::chrono::milliseconds(args.number("step_ms", 20));
    while (monotonic_us() < until_us) {
        if (!lock.held()) {
            log.line("lost " + id + " " + std::to_string(monotonic_us()));
            return false;
        }
        const store_result wrote = fenced_store_write(store, fence);
        log.line("write " + id + " " + std::to_string(fence) + " " + std::to_string(wrote.t_us) +
                 " " + (wrote.accepted ? "1" : "0"));
        std::this_thread::sleep_for(step);
    }
    return true;
}

// The gated first write: held() is checked, then the runner freezes us before the write.
void gated_write(edgelock::hiredis::lock& lock, const holder_args& args, event_log& log,
                 std::int64_t fence) {
    const std::string id = args.text("id");
    if (!lock.held()) return;
    std::cout << "checked" << std::endl;
    std::string go;
    std::getline(std::cin, go);
    const store_result wrote = fenced_store_write(args.text("store"), fence);
    log.line("write " + id + " " + std::to_string(fence) + " " + std::to_string(wrote.t_us) +
             " " + (wrote.accepted ? "1" : "0"));
}

int run(const holder_args& args) {
    event_log log(args.text("log"));
    const std::string id = args.text("id");
    edgelock::hiredis::lock lock;
    if (const auto ec = lock.open(options_from(args))) {
        log.line("fail " + id + " " + std::to_string(monotonic_us()) + " open: " + ec.message());
        std::cout << "open-failed " << ec.message() << std::endl;
        return 2;
    }
    const auto wait = std::chrono::milliseconds(args.number("acquire_wait_ms", 20'000));
    const std::int64_t holds = args.number("holds", 1);
    for (std::int64_t i = 0; i < holds; ++i) {
        edgelock::hiredis::hold hold;
        if (const auto ec = lock.acquire(wait, &hold)) {
            log.line("fail " + id + " " + std::to_string(monotonic_us()) + " " + ec.message());
            std::cout << "failed " << ec.message() << std::endl;
            return 3;
        }
        log.line("hold " + id + " " + std::to_string(hold.fence) + " " +
                 std::to_string(monotonic_us()));
        std::cout << "held " << hold.fence << std::endl;
        if (i == 0 && args.number("gate", 0) != 0) gated_write(lock, args, log, hold.fence);
        if (work(lock, args, log, hold.fence)) {
            log.line("end " + id + " " + std::to_string(monotonic_us()));
        }
        const std::error_code released = lock.release();
        std::cout << "released " << (released ? released.message() : "ok") << std::endl;
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    holder_args args;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        const auto eq = arg.find('=');
        if (eq == std::string::npos) {
            std::cerr << "usage: nemesis_holder key=value ... (see the source)" << std::endl;
            return 64;
        }
        args.values[arg.substr(0, eq)] = arg.substr(eq + 1);
    }
    return run(args);
}
