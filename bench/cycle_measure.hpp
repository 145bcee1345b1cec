// SPDX-License-Identifier: Apache-2.0
// What the single-lock benchmarks of lock_cycle share: pinning to one CPU, the CPU and sleep
// meters of this process and of the servers, latencies and round results, and the raw hiredis
// baseline that sends a lock's commands with nothing around them.
#pragma once

#include <hiredis.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "edgelock/entropy.hpp"
#include "edgelock/scripts.hpp"

namespace edgelock::bench {

using clock_type = std::chrono::steady_clock;

// Pins every thread of `pid` (0: this process) to `cpu`, as `taskset -a -p -c <cpu> <pid>`.
inline void pin_threads(pid_t pid, int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    const std::string tasks =
        pid == 0 ? "/proc/self/task" : "/proc/" + std::to_string(pid) + "/task";
    for (const auto& entry : std::filesystem::directory_iterator(tasks)) {
        const pid_t tid = static_cast<pid_t>(std::stol(entry.path().filename().string()));
        if (sched_setaffinity(tid, sizeof set, &set) != 0) {
            throw std::runtime_error("sched_setaffinity(" + std::to_string(tid) +
                                     ") failed: " + std::strerror(errno));
        }
    }
}

inline double seconds_since(clock_type::time_point start) {
    return std::chrono::duration<double>(clock_type::now() - start).count();
}

// CPU time (user + system) of this process, in microseconds.
inline double own_cpu_us() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    auto us = [](const timeval& t) {
        return static_cast<double>(t.tv_sec) * 1e6 + static_cast<double>(t.tv_usec);
    };
    return us(usage.ru_utime) + us(usage.ru_stime);
}

// CPU time (user + system) of another process, in microseconds (clock-tick resolution).
inline double process_cpu_us(pid_t pid) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    std::getline(stat, line);
    std::istringstream fields(line.substr(line.rfind(')') + 2));
    std::string field;
    double ticks = 0;
    for (int i = 3; i <= 15 && fields >> field; ++i) {
        if (i == 14 || i == 15) ticks += std::stod(field);  // utime, stime
    }
    return ticks * 1e6 / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// How many times another process's main thread gave up the CPU to wait
// (voluntary_ctxt_switches): for the server, its event loop sleeping in epoll_wait.
inline double process_sleeps(pid_t pid) {
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(status, line)) {
        if (line.rfind("voluntary_ctxt_switches:", 0) != 0) continue;
        return std::stod(line.substr(line.find(':') + 1));
    }
    return 0;
}

// The servers measured: one, or every master of a cluster (their CPU summed).
inline pid_t measured_server = 0;
inline std::vector<pid_t> measured_cluster;

// CPU spent by this process and by the server(s) over one measured stretch.
struct cpu_meter {
    std::vector<pid_t> servers;
    double own_start = 0;
    double server_start = 0;
    double sleeps_start = 0;
    explicit cpu_meter(pid_t server_pid) : cpu_meter(std::vector<pid_t>{server_pid}) {}
    explicit cpu_meter(std::vector<pid_t> pids)
        : servers(std::move(pids)),
          own_start(own_cpu_us()),
          server_start(servers_cpu_us()),
          sleeps_start(process_sleeps(servers.front())) {}
    double servers_cpu_us() const {
        double sum = 0;
        for (const pid_t pid : servers) sum += process_cpu_us(pid);
        return sum;
    }
    double own_us() const { return own_cpu_us() - own_start; }
    double server_us() const { return servers_cpu_us() - server_start; }
    double server_sleeps() const { return process_sleeps(servers.front()) - sleeps_start; }
};

inline std::unique_ptr<cpu_meter> measure_servers() {
    return measured_cluster.empty() ? std::make_unique<cpu_meter>(measured_server)
                                    : std::make_unique<cpu_meter>(measured_cluster);
}

struct latencies {
    std::vector<double> us;
    void reserve(std::size_t n) { us.reserve(n); }
    double percentile(double p) const {
        std::vector<double> sorted = us;
        std::sort(sorted.begin(), sorted.end());
        if (sorted.empty()) return 0;
        const std::size_t at = std::min(
            sorted.size() - 1, static_cast<std::size_t>(p * static_cast<double>(sorted.size())));
        return sorted[at];
    }
};

struct round_result {
    double cycles_per_s = 0;
    double client_cpu_us = 0;  // per cycle
    double server_cpu_us = 0;  // per cycle
    double server_sleeps = 0;  // per cycle: times the server waited for the client
};

inline std::string hex_token() {
    edgelock::owner_token token{};
    if (edgelock::random_token(token) != edgelock::errc::ok)
        throw std::runtime_error("getrandom failed");
    static constexpr char digits[] = "0123456789abcdef";
    std::string hex(32, '0');
    for (std::size_t i = 0; i < token.size(); ++i) {
        hex[2 * i] = digits[token[i] >> 4];
        hex[2 * i + 1] = digits[token[i] & 0xf];
    }
    return hex;
}

// One token per key of a pipelined batch, all new at every batch, as a lock client brings a
// new token to every acquire: the raw side sends the same commands as edgelock, token
// included (the single-lock rounds draw one per cycle too). Distinct by a counter after a
// random prefix, so that making them costs no system call.
class batch_tokens {
public:
    explicit batch_tokens(std::size_t count)
        : tokens_(count, hex_token().substr(0, 16) + std::string(16, '0')) {}
    void renew() {
        static constexpr char digits[] = "0123456789abcdef";
        for (std::string& token : tokens_) {
            std::uint64_t n = next_++;
            for (std::size_t i = 31; i >= 16; --i, n >>= 4) token[i] = digits[n & 0xf];
        }
    }
    const std::string& operator[](std::size_t i) const { return tokens_[i]; }

private:
    std::vector<std::string> tokens_;
    std::uint64_t next_ = 0;
};

// ---- raw hiredis ----------------------------------------------------------------------------

class raw_connection {
public:
    explicit raw_connection(std::uint16_t port) {
        context_ = redisConnect("127.0.0.1", port);
        if (context_ == nullptr || context_->err != 0)
            throw std::runtime_error("hiredis connect failed");
        for (const edgelock::script* s :
             {&edgelock::acquire_script, &edgelock::release_script,
              &edgelock::permit_acquire_script, &edgelock::permit_release_script}) {
            redisReply* reply = static_cast<redisReply*>(
                redisCommand(context_, "SCRIPT LOAD %b", s->text.data(), s->text.size()));
            if (reply == nullptr || reply->type != REDIS_REPLY_STRING)
                throw std::runtime_error("SCRIPT LOAD failed");
            freeReplyObject(reply);
        }
    }
    ~raw_connection() { redisFree(context_); }
    raw_connection(const raw_connection&) = delete;
    raw_connection& operator=(const raw_connection&) = delete;

    // One lock cycle: SET NX PX, then the compare-and-delete script by digest.
    void cycle(const std::string& key, const std::string& token) {
        const std::string sha(edgelock::release_script.digest.data(),
                              edgelock::release_script.digest.size());
        const char* set_argv[] = {"SET", key.c_str(), token.c_str(), "NX", "PX", "30000"};
        const std::size_t set_lens[] = {3, key.size(), token.size(), 2, 2, 5};
        expect(static_cast<redisReply*>(redisCommandArgv(context_, 6, set_argv, set_lens)),
               REDIS_REPLY_STATUS);
        const char* del_argv[] = {"EVALSHA", sha.c_str(), "1", key.c_str(), token.c_str()};
        const std::size_t del_lens[] = {7, sha.size(), 1, key.size(), token.size()};
        expect(static_cast<redisReply*>(redisCommandArgv(context_, 5, del_argv, del_lens)),
               REDIS_REPLY_INTEGER);
    }

    // One semaphore cycle, the scripts edgelock sends for `permits` > 1, by digest: the
    // permit acquire (answers 0), then the permit release (answers 1).
    void permit_cycle(const std::string& key, const std::string& token, const std::string& n) {
        const std::string take(edgelock::permit_acquire_script.digest.data(),
                               edgelock::permit_acquire_script.digest.size());
        const std::string give(edgelock::permit_release_script.digest.data(),
                               edgelock::permit_release_script.digest.size());
        const char* take_argv[] = {"EVALSHA",     take.c_str(), "1",      key.c_str(),
                                   token.c_str(), "30000",      n.c_str()};
        const std::size_t take_lens[] = {7, take.size(), 1, key.size(), token.size(), 5, n.size()};
        expect(static_cast<redisReply*>(redisCommandArgv(context_, 7, take_argv, take_lens)),
               REDIS_REPLY_INTEGER, 0);
        const char* give_argv[] = {"EVALSHA", give.c_str(), "1", key.c_str(), token.c_str()};
        const std::size_t give_lens[] = {7, give.size(), 1, key.size(), token.size()};
        expect(static_cast<redisReply*>(redisCommandArgv(context_, 5, give_argv, give_lens)),
               REDIS_REPLY_INTEGER);
    }

    // The commands edgelock itself sends: SET NX PX GET, then the release script. The
    // difference to cycle() is GET's cost alone.
    void same_commands_cycle(const std::string& key, const std::string& token) {
        append_acquire(key, token);
        expect(take(), REDIS_REPLY_NIL);
        append_release_script(key, token);
        expect(take(), REDIS_REPLY_INTEGER);
    }

    // `keys.size()` claims pipelined, then as many deletes: 2 * keys.size() lock operations,
    // key i with token i. The claims are SET NX PX, or with `same_commands` edgelock's
    // SET NX PX GET.
    void pipelined_batch(const std::vector<std::string>& keys, const batch_tokens& tokens,
                         bool same_commands) {
        for (std::size_t k = 0; k < keys.size(); ++k) {
            const std::string& key = keys[k];
            const std::string& token = tokens[k];
            if (same_commands) {
                append_acquire(key, token);
                continue;
            }
            const char* argv[] = {"SET", key.c_str(), token.c_str(), "NX", "PX", "30000"};
            const std::size_t lens[] = {3, key.size(), token.size(), 2, 2, 5};
            redisAppendCommandArgv(context_, 6, argv, lens);
        }
        for (std::size_t i = 0; i < keys.size(); ++i) {
            if (same_commands) {
                expect(take(), REDIS_REPLY_NIL);
            } else {
                expect(take(), REDIS_REPLY_STATUS);
            }
        }
        const std::string sha(edgelock::release_script.digest.data(),
                              edgelock::release_script.digest.size());
        for (std::size_t k = 0; k < keys.size(); ++k) {
            const std::string& key = keys[k];
            const std::string& token = tokens[k];
            const char* argv[] = {"EVALSHA", sha.c_str(), "1", key.c_str(), token.c_str()};
            const std::size_t lens[] = {7, sha.size(), 1, key.size(), token.size()};
            redisAppendCommandArgv(context_, 5, argv, lens);
        }
        for (std::size_t i = 0; i < keys.size(); ++i) expect(take(), REDIS_REPLY_INTEGER);
    }

    // The halves of a pipelined batch of edgelock's own commands, so that batches on several
    // connections can overlap: claims (SET NX PX GET) sent, their replies read, deletes
    // (the compare-and-delete script) sent, their replies read.
    void send_claims(const std::vector<std::string>& keys, const batch_tokens& tokens) {
        for (std::size_t k = 0; k < keys.size(); ++k) append_acquire(keys[k], tokens[k]);
    }
    void read_claims(std::size_t count) {
        for (std::size_t i = 0; i < count; ++i) expect(take(), REDIS_REPLY_NIL);
    }
    void send_deletes(const std::vector<std::string>& keys, const batch_tokens& tokens) {
        for (std::size_t k = 0; k < keys.size(); ++k) append_release_script(keys[k], tokens[k]);
    }
    void read_deletes(std::size_t count) {
        for (std::size_t i = 0; i < count; ++i) expect(take(), REDIS_REPLY_INTEGER);
    }

private:
    void append_acquire(const std::string& key, const std::string& token) {
        const char* argv[] = {"SET", key.c_str(), token.c_str(), "NX", "PX", "30000", "GET"};
        const std::size_t lens[] = {3, key.size(), token.size(), 2, 2, 5, 3};
        redisAppendCommandArgv(context_, 7, argv, lens);
    }
    void append_release_script(const std::string& key, const std::string& token) {
        const std::string sha(edgelock::release_script.digest.data(),
                              edgelock::release_script.digest.size());
        const char* argv[] = {"EVALSHA", sha.c_str(), "1", key.c_str(), token.c_str()};
        const std::size_t lens[] = {7, sha.size(), 1, key.size(), token.size()};
        redisAppendCommandArgv(context_, 5, argv, lens);
    }
    redisReply* take() {
        void* reply = nullptr;
        if (redisGetReply(context_, &reply) != REDIS_OK)
            throw std::runtime_error("hiredis read failed");
        return static_cast<redisReply*>(reply);
    }
    static void expect(redisReply* reply, int type, long long integer = 1) {
        if (reply == nullptr) throw std::runtime_error("hiredis: no reply");
        const bool good =
            reply->type == type && (type != REDIS_REPLY_INTEGER || reply->integer == integer);
        freeReplyObject(reply);
        if (!good) throw std::runtime_error("hiredis: unexpected reply");
    }

    redisContext* context_ = nullptr;
};

// `cycles` calls of cycle(token), each with a fresh token, timed one by one.
template <typename Cycle>
round_result timed_round(int cycles, latencies& lat, Cycle&& cycle) {
    std::vector<std::string> tokens;
    tokens.reserve(static_cast<std::size_t>(cycles));
    for (int i = 0; i < cycles; ++i) tokens.push_back(hex_token());
    const cpu_meter cpu(measured_server);
    const auto start = clock_type::now();
    for (int i = 0; i < cycles; ++i) {
        const auto t0 = clock_type::now();
        cycle(tokens[static_cast<std::size_t>(i)]);
        lat.us.push_back(std::chrono::duration<double, std::micro>(clock_type::now() - t0).count());
    }
    const double elapsed = seconds_since(start);
    return {cycles / elapsed, cpu.own_us() / cycles, cpu.server_us() / cycles,
            cpu.server_sleeps() / cycles};
}

inline round_result raw_round(raw_connection& raw, int cycles, latencies& lat,
                              bool same_commands = false) {
    const std::string key = same_commands ? "bench:rawsame" : "bench:raw";
    return timed_round(cycles, lat, [&](const std::string& token) {
        if (same_commands) {
            raw.same_commands_cycle(key, token);
        } else {
            raw.cycle(key, token);
        }
    });
}

// Each figure's median over the rounds, taken separately.
inline round_result median_of(const std::vector<round_result>& rounds) {
    auto pick = [&](double round_result::*field) {
        std::vector<double> values;
        for (const round_result& r : rounds) values.push_back(r.*field);
        std::sort(values.begin(), values.end());
        return values[values.size() / 2];
    };
    return {pick(&round_result::cycles_per_s), pick(&round_result::client_cpu_us),
            pick(&round_result::server_cpu_us), pick(&round_result::server_sleeps)};
}

// One series of the single-lock bench: its rounds and every cycle's latency.
struct series {
    const char* label;
    latencies lat;
    std::vector<round_result> rounds;
    round_result median() const { return median_of(rounds); }
};

}  // namespace edgelock::bench
