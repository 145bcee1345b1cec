// SPDX-License-Identifier: Apache-2.0
// lock_cycle: what the async client costs over the physical limit of one Redis connection.
//
// Starts its own redis-server(s) (tests/support), pins every server thread and this process
// to one CPU (cross-core wake-ups would otherwise dominate and vary), then measures in one run:
//
//   1. single lock, one connection: acquire + release cycles with edgelock::async::client,
//      against raw hiredis doing `SET key token NX PX ttl` + `EVALSHA <compare-and-delete>`
//      on its own connection (the same two round trips, nothing else): cycles/s, p50/p99 of
//      one cycle, and `ratio edgelock/raw`. A second baseline sends through raw hiredis the
//      very commands edgelock sends (SET NX PX GET, whose GET the lock reads to tell its own
//      key from another's), so `ratio edgelock/raw-same-commands` is the transport's own
//      cost. Rounds
//      alternate; the median round of each is reported.
//   2. many locks: 1000 locks on one connection, each acquiring and releasing in a loop;
//      lock operations (acquires + releases) per second, beside raw hiredis pipelining
//      batches of 1000 (SET NX PX, and SET NX PX GET) with the compare-and-delete.
//   3. Redlock: one lock over 5 local masters, acquire + release cycles/s, the masters sharing
//      the CPU and the client on another (so the masters are the limit: `ratio redlock
//      edgelock/masters-limit`, against one cycle per the five masters' CPU per cycle).
//   4. TLS: the single-lock cycle over rediss:// (verified against a test CA) beside the same
//      cycle over plain TCP, each against its own server, rounds alternating: cycles/s and
//      `ratio tls/plain`; then what one connection costs, TLS against plain: the time to
//      open a client and have it connected (TCP, TLS and the Redis handshake), and the heap
//      each connected client holds (mallinfo2, every allocator in the process: edgelock's,
//      Asio's and OpenSSL's).
//   5. Redis Cluster: 999 locks over three local masters (a link each), against raw hiredis
//      sending the same commands to each key's master, pipelined on a connection per master
//      (the batches on the three overlapping): lock operations/s, `ratio cluster
//      edgelock/raw-same-commands`, and the CPU per operation of the client and of the
//      three masters together.
//   6. The blocking client and the C API (blocking_cycle.hpp): the single-lock cycle of each
//      against raw hiredis sending the same commands, and their heap allocations per cycle.
//
// Usage: lock_cycle [--cycles N] [--rounds R] [--seconds S] [--redlock-cycles N] [--cpu C]
//                   [--no-pin] [--only single|many|redlock|tls|cluster|blocking|semaphore]
//                   [--only edgelock-alone|raw-asio-alone]  (one loop of 1. alone, to be traced)
#include <hiredis.h>
#include <malloc.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <asio/ip/tcp.hpp>
#include <asio/steady_timer.hpp>

#include "edgelock/async_client.hpp"
#include "edgelock/entropy.hpp"
#include "edgelock/scripts.hpp"
#include "edgelock/keys.hpp"
#include "edgelock/testing/redis_client.hpp"
#include "edgelock/testing/redis_cluster.hpp"
#include "edgelock/testing/redis_process.hpp"
#include "edgelock/testing/tls_material.hpp"
#include "edgelock/tls_context.hpp"
#include "blocking_cycle.hpp"
#include "cycle_measure.hpp"

namespace {

using namespace edgelock::bench;
using edgelock::async::client;
using edgelock::async::lock_handle;

struct options {
    int cycles = 20'000;  // per round, single-lock
    int rounds = 5;
    double seconds = 2.0;  // many-lock measuring window
    int redlock_cycles = 5'000;
    int cpu = 0;
    bool pin = true;
    std::string only;  // "single", "many", ... or "blocking": that alone (or a loop, "...-alone")
};

options parse(int argc, char** argv) {
    options o;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        auto value = [&]() -> const char* {
            if (i + 1 >= argc) throw std::runtime_error("missing value after " + arg);
            return argv[++i];
        };
        if (arg == "--cycles") {
            o.cycles = std::atoi(value());
        } else if (arg == "--rounds") {
            o.rounds = std::atoi(value());
        } else if (arg == "--seconds") {
            o.seconds = std::atof(value());
        } else if (arg == "--redlock-cycles") {
            o.redlock_cycles = std::atoi(value());
        } else if (arg == "--cpu") {
            o.cpu = std::atoi(value());
        } else if (arg == "--no-pin") {
            o.pin = false;
        } else if (arg == "--only") {
            o.only = value();
        } else {
            throw std::runtime_error(
                "unknown argument " + arg +
                " (use --cycles N --rounds R --seconds S --redlock-cycles N --cpu C --no-pin "
                "--only single|many|redlock|tls|cluster|blocking|semaphore|edgelock-alone|"
                "raw-asio-alone)");
        }
    }
    if (o.cycles <= 0 || o.rounds <= 0 || o.seconds <= 0 || o.redlock_cycles <= 0) {
        throw std::runtime_error("counts and durations must be positive");
    }
    return o;
}

// ---- raw Asio -------------------------------------------------------------------------------

// The same commands as raw_connection::same_commands_cycle over one Asio socket, as the asio
// client drives its own (a non-blocking write at once, then async_read_some): what Asio's
// reactor costs a request before any of edgelock's code, so `ratio edgelock/raw-asio` is
// edgelock's own cost and `raw-asio/raw` the reactor's. Relies on raw_connection having
// loaded the release script into the same server.
class raw_asio_connection {
public:
    raw_asio_connection(asio::io_context& io, std::uint16_t port) : io_(io), socket_(io) {
        std::error_code ec;
        socket_.connect({asio::ip::make_address("127.0.0.1"), port}, ec);
        if (!ec) socket_.set_option(asio::ip::tcp::no_delay(true), ec);
        if (!ec) socket_.non_blocking(true, ec);
        if (ec) throw std::runtime_error("raw asio connect: " + ec.message());
    }

    // Runs `cycles` cycles from inside the io_context; `tokens[i]` is cycle i's owner.
    round_result round(const std::vector<std::string>& tokens, latencies& lat) {
        tokens_ = &tokens;
        lat_ = &lat;
        done_ = 0;
        error_.clear();
        const cpu_meter cpu(measured_server);
        const auto start = clock_type::now();
        acquire();
        io_.restart();
        io_.run();
        if (error_) throw std::runtime_error("raw asio cycle failed: " + error_.message());
        const double elapsed = seconds_since(start);
        const double cycles = static_cast<double>(tokens.size());
        return {cycles / elapsed, cpu.own_us() / cycles, cpu.server_us() / cycles,
                cpu.server_sleeps() / cycles};
    }

private:
    static void bulk(std::string& out, std::string_view arg) {
        out += '$';
        out += std::to_string(arg.size());
        out += "\r\n";
        out += arg;
        out += "\r\n";
    }
    void acquire() {
        started_ = clock_type::now();
        const std::string& token = (*tokens_)[done_];
        request_ = "*7\r\n";
        for (std::string_view arg :
             {std::string_view("SET"), std::string_view(key_), std::string_view(token),
              std::string_view("NX"), std::string_view("PX"), std::string_view("30000"),
              std::string_view("GET")}) {
            bulk(request_, arg);
        }
        send_then_read("$-1\r\n", &raw_asio_connection::release);
    }
    void release() {
        const std::string& token = (*tokens_)[done_];
        const std::string_view sha(edgelock::release_script.digest.data(),
                                   edgelock::release_script.digest.size());
        request_ = "*5\r\n";
        for (std::string_view arg : {std::string_view("EVALSHA"), sha, std::string_view("1"),
                                     std::string_view(key_), std::string_view(token)}) {
            bulk(request_, arg);
        }
        send_then_read(":1\r\n", &raw_asio_connection::cycle_done);
    }
    void cycle_done() {
        lat_->us.push_back(
            std::chrono::duration<double, std::micro>(clock_type::now() - started_).count());
        if (++done_ < tokens_->size()) acquire();
    }
    void send_then_read(std::string_view expected, void (raw_asio_connection::*then)()) {
        std::error_code ec;
        const std::size_t sent = socket_.write_some(asio::buffer(request_), ec);
        if (ec || sent != request_.size()) return fail(ec ? ec : asio::error::would_block);
        expected_ = expected;
        then_ = then;
        received_ = 0;
        read();
    }
    void read() {
        socket_.async_read_some(asio::buffer(reply_.data() + received_, reply_.size() - received_),
                                [this](std::error_code ec, std::size_t size) {
                                    if (ec) return fail(ec);
                                    received_ += size;
                                    if (received_ < expected_.size()) return read();
                                    const std::string_view got(reply_.data(), received_);
                                    if (got != expected_) return fail(asio::error::fault);
                                    (this->*then_)();
                                });
    }
    void fail(std::error_code ec) { error_ = ec; }

    asio::io_context& io_;
    asio::ip::tcp::socket socket_;
    const std::string key_ = "bench:rawasio";
    const std::vector<std::string>* tokens_ = nullptr;
    latencies* lat_ = nullptr;
    std::size_t done_ = 0;
    std::error_code error_;
    clock_type::time_point started_;
    std::string request_;
    std::string_view expected_;
    void (raw_asio_connection::*then_)() = nullptr;
    std::array<char, 64> reply_{};
    std::size_t received_ = 0;
};

round_result raw_asio_round(raw_asio_connection& raw, int cycles, latencies& lat) {
    std::vector<std::string> tokens;
    tokens.reserve(static_cast<std::size_t>(cycles));
    for (int i = 0; i < cycles; ++i) tokens.push_back(hex_token());
    return raw.round(tokens, lat);
}

// ---- edgelock::async::client -------------------------------------------------------------------

// Acquire + release in a loop from inside the io_context, one cycle at a time.
struct cycler {
    client* owner = nullptr;
    lock_handle handle;
    int target = 0;
    int done = 0;
    latencies* lat = nullptr;
    clock_type::time_point started;
    std::error_code error;

    void next() {
        started = clock_type::now();
        owner->async_acquire(
            handle, std::chrono::milliseconds(0), [this](std::error_code ec, std::int64_t) {
                if (ec) return fail(ec);
                owner->async_release(handle, [this](std::error_code ec2) {
                    if (ec2) return fail(ec2);
                    if (lat != nullptr) {
                        lat->us.push_back(
                            std::chrono::duration<double, std::micro>(clock_type::now() - started)
                                .count());
                    }
                    if (++done == target) return owner->context().stop();
                    next();
                });
            });
    }
    void fail(std::error_code ec) {
        error = ec;
        owner->context().stop();
    }
};

round_result edgelock_round(client& owner, lock_handle handle, int cycles, latencies& lat) {
    cycler c;
    c.owner = &owner;
    c.handle = handle;
    c.target = cycles;
    c.lat = &lat;
    const std::unique_ptr<cpu_meter> cpu = measure_servers();
    const auto start = clock_type::now();
    c.next();
    owner.context().restart();
    owner.context().run();
    if (c.error) throw std::runtime_error("edgelock cycle failed: " + c.error.message());
    const double elapsed = seconds_since(start);
    return {cycles / elapsed, cpu->own_us() / cycles, cpu->server_us() / cycles,
            cpu->server_sleeps() / cycles};
}

void connect(client& owner, const edgelock::async::client_config& config) {
    if (const std::error_code ec = owner.open(config))
        throw std::runtime_error("open: " + ec.message());
    std::error_code result = make_error_code(std::errc::timed_out);
    bool done = false;
    owner.async_wait_ready([&](std::error_code ec) {
        result = ec;
        done = true;
    });
    owner.context().restart();
    owner.context().run_for(std::chrono::seconds(5));
    if (!done || result) throw std::runtime_error("connect: " + result.message());
}

edgelock::lock_config lock_named(const std::string& name) {
    edgelock::lock_config config;
    config.name = name;
    config.ttl_ms = 30'000;
    return config;
}

// Many locks, each cycling acquire/release, for a measured window after a warm-up.
struct many_locks {
    client* owner = nullptr;
    std::vector<lock_handle> handles;
    std::size_t operations = 0;
    bool stopping = false;
    int running = 0;
    std::error_code error;

    void cycle(std::size_t i) {
        owner->async_acquire(handles[i], std::chrono::milliseconds(0),
                             [this, i](std::error_code ec, std::int64_t) {
                                 if (ec) return finish(ec);
                                 ++operations;
                                 owner->async_release(handles[i], [this, i](std::error_code ec2) {
                                     if (ec2) return finish(ec2);
                                     ++operations;
                                     if (stopping) return finish({});
                                     cycle(i);
                                 });
                             });
    }
    void finish(std::error_code ec) {
        if (ec && !error) error = ec;
        if (--running == 0) owner->context().stop();
    }
};

round_result many_lock_ops_per_s(client& owner, std::size_t locks, double window_s,
                                 const std::string& prefix = "bench:many:") {
    many_locks m;
    m.owner = &owner;
    std::vector<std::string> names;
    for (std::size_t i = 0; i < locks; ++i) names.push_back(prefix + std::to_string(i));
    m.handles.resize(locks);
    for (std::size_t i = 0; i < locks; ++i) {
        if (owner.add_lock(lock_named(names[i]), m.handles[i]))
            throw std::runtime_error("add_lock failed");
    }
    asio::steady_timer warm(owner.context());
    asio::steady_timer finish(owner.context());
    std::size_t ops_at_start = 0;
    std::size_t ops_at_end = 0;
    clock_type::time_point window_start;
    clock_type::time_point window_end;
    std::unique_ptr<cpu_meter> cpu;
    double client_cpu = 0;
    double server_cpu = 0;
    warm.expires_after(std::chrono::milliseconds(300));
    warm.async_wait([&](std::error_code) {
        ops_at_start = m.operations;
        window_start = clock_type::now();
        cpu = measure_servers();
    });
    finish.expires_after(std::chrono::milliseconds(300) +
                         std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::duration<double>(window_s)));
    finish.async_wait([&](std::error_code) {
        ops_at_end = m.operations;
        window_end = clock_type::now();
        client_cpu = cpu->own_us();
        server_cpu = cpu->server_us();
        m.stopping = true;
    });
    m.running = static_cast<int>(locks);
    for (std::size_t i = 0; i < locks; ++i) m.cycle(i);
    owner.context().restart();
    owner.context().run();
    if (m.error) throw std::runtime_error("many-lock cycle failed: " + m.error.message());
    const double ops = static_cast<double>(ops_at_end - ops_at_start);
    return {ops / std::chrono::duration<double>(window_end - window_start).count(),
            client_cpu / ops, server_cpu / ops};
}

round_result raw_pipelined_ops_per_s(raw_connection& raw, std::size_t locks, double window_s,
                                     bool same_commands) {
    std::vector<std::string> keys;
    for (std::size_t i = 0; i < locks; ++i) keys.push_back("bench:rawmany:" + std::to_string(i));
    batch_tokens tokens(locks);
    const auto batch = [&] {
        tokens.renew();
        raw.pipelined_batch(keys, tokens, same_commands);
    };
    const auto warm_until = clock_type::now() + std::chrono::milliseconds(300);
    while (clock_type::now() < warm_until) batch();
    std::size_t operations = 0;
    const cpu_meter cpu(measured_server);
    const auto start = clock_type::now();
    while (seconds_since(start) < window_s) {
        batch();
        operations += 2 * locks;
    }
    const double ops = static_cast<double>(operations);
    return {ops / seconds_since(start), cpu.own_us() / ops, cpu.server_us() / ops};
}

void print_single(const options& o, const series& raw, const series& same, const series& asio_raw,
                  const series& edge) {
    std::printf("single lock, one connection, %d rounds x %d cycles (median round):\n", o.rounds,
                o.cycles);
    for (const series* s : {&raw, &same, &asio_raw, &edge}) {
        std::printf("  %-44s %9.0f cycles/s   p50 %6.1f us   p99 %7.1f us\n", s->label,
                    s->median().cycles_per_s, s->lat.percentile(0.50), s->lat.percentile(0.99));
    }
    const double edge_rate = edge.median().cycles_per_s;
    std::printf("ratio edgelock/raw = %.2f\n", edge_rate / raw.median().cycles_per_s);
    std::printf("ratio edgelock/raw-same-commands = %.2f\n",
                edge_rate / same.median().cycles_per_s);
    // The reactor's share apart from edgelock's (docs/BENCHMARKS.md, "The gap, split").
    std::printf("ratio edgelock/raw-asio = %.2f\n", edge_rate / asio_raw.median().cycles_per_s);
    std::printf("ratio raw-asio/raw-same-commands = %.2f\n",
                asio_raw.median().cycles_per_s / same.median().cycles_per_s);
    std::printf("CPU per cycle (median round), client + server:\n");
    for (const series* s : {&raw, &same, &asio_raw, &edge}) {
        std::printf("  %-44s client %5.1f us   server %5.1f us\n", s->label,
                    s->median().client_cpu_us, s->median().server_cpu_us);
    }
    // Of a cycle's two requests, how often the server found the next one not yet sent and slept
    // in epoll_wait: on one CPU, who sleeps and who is preempted moves the scheduler's cost
    // between client and server (docs/BENCHMARKS.md, "The single-lock gap").
    std::printf(
        "server sleeps per cycle (median round): raw %.2f, raw same commands %.2f, raw asio %.2f, "
        "edgelock %.2f\n",
        raw.median().server_sleeps, same.median().server_sleeps, asio_raw.median().server_sleeps,
        edge.median().server_sleeps);
}

// One lock acquired and released in a loop, against raw hiredis and raw Asio doing the same
// commands.
void bench_single(const options& o, client& owner, lock_handle single, raw_connection& raw,
                  raw_asio_connection& asio_raw) {
    // Warm every path (script caches, socket buffers, branch predictors), then alternate.
    latencies warm;
    warm.reserve(static_cast<std::size_t>(8000));
    raw_round(raw, 2000, warm);
    raw_round(raw, 2000, warm, true);
    raw_asio_round(asio_raw, 2000, warm);
    edgelock_round(owner, single, 2000, warm);
    series raw_s{"raw hiredis SET NX PX + EVALSHA del", {}, {}};
    series same_s{"raw hiredis SET NX PX GET + EVALSHA del", {}, {}};
    series asio_s{"raw asio SET NX PX GET + EVALSHA del", {}, {}};
    series edge_s{"edgelock asio acquire + release", {}, {}};
    for (series* s : {&raw_s, &same_s, &asio_s, &edge_s})
        s->lat.reserve(static_cast<std::size_t>(o.cycles * o.rounds));
    for (int r = 0; r < o.rounds; ++r) {
        raw_s.rounds.push_back(raw_round(raw, o.cycles, raw_s.lat));
        edge_s.rounds.push_back(edgelock_round(owner, single, o.cycles, edge_s.lat));
        same_s.rounds.push_back(raw_round(raw, o.cycles, same_s.lat, true));
        asio_s.rounds.push_back(raw_asio_round(asio_raw, o.cycles, asio_s.lat));
    }
    print_single(o, raw_s, same_s, asio_s, edge_s);
}

// A semaphore of three permits, one holder cycling: its cost against raw hiredis
// running the same scripts, the permit acquire and release by digest on both sides.
void bench_semaphore(const options& o, client& owner, raw_connection& raw) {
    edgelock::lock_config config = lock_named("bench:permits");
    config.permits = 3;
    lock_handle handle;
    if (owner.add_lock(config, handle)) throw std::runtime_error("add_lock (permits) failed");
    const auto raw_permits = [&raw](int cycles, latencies& lat) {
        return timed_round(cycles, lat, [&raw](const std::string& token) {
            raw.permit_cycle("bench:rawpermits", token, "3");
        });
    };
    latencies warm;
    warm.reserve(static_cast<std::size_t>(4000));
    raw_permits(2000, warm);
    edgelock_round(owner, handle, 2000, warm);
    series raw_s{"raw hiredis EVALSHA permit acquire + release", {}, {}};
    series edge_s{"edgelock asio semaphore acquire + release", {}, {}};
    for (series* s : {&raw_s, &edge_s})
        s->lat.reserve(static_cast<std::size_t>(o.cycles * o.rounds));
    for (int r = 0; r < o.rounds; ++r) {
        raw_s.rounds.push_back(raw_permits(o.cycles, raw_s.lat));
        edge_s.rounds.push_back(edgelock_round(owner, handle, o.cycles, edge_s.lat));
    }
    std::printf("semaphore of 3 permits, one holder, one connection, %d rounds x %d cycles:\n",
                o.rounds, o.cycles);
    for (const series* s : {&raw_s, &edge_s}) {
        std::printf("  %-44s %9.0f cycles/s   p50 %6.1f us   p99 %7.1f us   client %5.1f us\n",
                    s->label, s->median().cycles_per_s, s->lat.percentile(0.50),
                    s->lat.percentile(0.99), s->median().client_cpu_us);
    }
    std::printf("ratio edgelock/raw-same-scripts (semaphore) = %.2f\n",
                edge_s.median().cycles_per_s / raw_s.median().cycles_per_s);
}

// One loop of the single-lock section alone, `--only edgelock-alone` or `raw-asio-alone`:
// what `strace -c` or `perf` then counts is that loop's (and the setup's, which a run with
// other --cycles subtracts). Prints its cycles/s.
void bench_alone(const options& o, client& owner, lock_handle single,
                 raw_asio_connection& asio_raw) {
    const bool edgelock = o.only == "edgelock-alone";
    latencies lat;
    lat.reserve(static_cast<std::size_t>(o.cycles * o.rounds));
    std::vector<round_result> rounds;
    for (int r = 0; r < o.rounds; ++r) {
        rounds.push_back(edgelock ? edgelock_round(owner, single, o.cycles, lat)
                                  : raw_asio_round(asio_raw, o.cycles, lat));
    }
    std::sort(rounds.begin(), rounds.end(), [](const round_result& a, const round_result& b) {
        return a.cycles_per_s < b.cycles_per_s;
    });
    std::printf("%s alone, %d rounds of %d cycles: median %.0f cycles/s\n",
                edgelock ? "edgelock asio" : "raw asio", o.rounds, o.cycles,
                rounds[rounds.size() / 2].cycles_per_s);
}

// 1000 locks on one connection, against raw hiredis pipelining batches of the same commands.
void bench_many(const options& o, client& owner, raw_connection& raw) {
    constexpr std::size_t many = 1000;
    const round_result raw_r = raw_pipelined_ops_per_s(raw, many, o.seconds, false);
    const round_result same_r = raw_pipelined_ops_per_s(raw, many, o.seconds, true);
    const round_result edge_r = many_lock_ops_per_s(owner, many, o.seconds);
    const double raw_many = raw_r.cycles_per_s;
    const double same_many = same_r.cycles_per_s;
    const double edge_many = edge_r.cycles_per_s;
    std::printf("many locks, one connection, %.1f s window:\n", o.seconds);
    std::printf(
        "  raw hiredis, batches of %zu SET NX PX + %zu EVALSHA del            "
        "%9.0f lock operations/s\n",
        many, many, raw_many);
    std::printf(
        "  raw hiredis, batches of %zu SET NX PX GET + %zu EVALSHA del        "
        "%9.0f lock operations/s\n",
        many, many, same_many);
    std::printf(
        "  edgelock asio, %zu locks each acquiring and releasing             "
        "%9.0f lock operations/s\n",
        many, edge_many);
    std::printf("ratio many-lock edgelock/raw = %.2f\n", edge_many / raw_many);
    std::printf("ratio many-lock edgelock/raw-same-commands = %.2f\n", edge_many / same_many);
    std::printf("CPU per lock operation, client + server:\n");
    std::printf(
        "  raw hiredis SET NX PX + EVALSHA del          client %5.2f us   server %5.2f us\n",
        raw_r.client_cpu_us, raw_r.server_cpu_us);
    std::printf("  raw hiredis SET NX PX GET + EVALSHA del     client %5.2f us   server %5.2f us\n",
                same_r.client_cpu_us, same_r.server_cpu_us);
    std::printf(
        "  edgelock asio                                client %5.2f us   server %5.2f us\n",
        edge_r.client_cpu_us, edge_r.server_cpu_us);
}

// Keys pipelined over several connections, each holding its own keys: every batch goes out on
// every connection before any reply is read, so the nodes work side by side as they do
// for the client.
round_result raw_cluster_ops_per_s(std::vector<std::unique_ptr<raw_connection>>& raw,
                                   const std::vector<std::vector<std::string>>& keys,
                                   double window_s) {
    std::vector<batch_tokens> tokens;
    std::size_t per_batch = 0;
    for (const auto& k : keys) {
        tokens.emplace_back(k.size());
        per_batch += 2 * k.size();
    }
    const auto batch = [&] {
        for (batch_tokens& t : tokens) t.renew();
        for (std::size_t n = 0; n < raw.size(); ++n) raw[n]->send_claims(keys[n], tokens[n]);
        for (std::size_t n = 0; n < raw.size(); ++n) raw[n]->read_claims(keys[n].size());
        for (std::size_t n = 0; n < raw.size(); ++n) raw[n]->send_deletes(keys[n], tokens[n]);
        for (std::size_t n = 0; n < raw.size(); ++n) raw[n]->read_deletes(keys[n].size());
    };
    const auto warm_until = clock_type::now() + std::chrono::milliseconds(300);
    while (clock_type::now() < warm_until) batch();
    std::size_t operations = 0;
    const std::unique_ptr<cpu_meter> cpu = measure_servers();
    const auto start = clock_type::now();
    while (seconds_since(start) < window_s) {
        batch();
        operations += per_batch;
    }
    const double ops = static_cast<double>(operations);
    return {ops / seconds_since(start), cpu->own_us() / ops, cpu->server_us() / ops};
}

// Many locks over a three-master cluster: the client's links, one per master, against raw
// hiredis sending the same commands (SET NX PX GET, the compare-and-delete) to each key's
// master on a connection per master.
void bench_cluster(const options& o) {
    edgelock::testing::redis_cluster cluster;
    std::vector<pid_t> pids;
    for (std::size_t m = 0; m < cluster.masters_at_start(); ++m) {
        pids.push_back(cluster.node(m).pid());
        if (o.pin) pin_threads(pids.back(), o.cpu);
    }
    measured_cluster = pids;
    constexpr std::size_t many = 999;
    std::vector<std::unique_ptr<raw_connection>> raw;
    std::vector<std::vector<std::string>> keys(cluster.masters_at_start());
    for (std::size_t m = 0; m < cluster.masters_at_start(); ++m)
        raw.push_back(std::make_unique<raw_connection>(cluster.node(m).port()));
    for (std::size_t i = 0; i < many; ++i) {
        const std::string key = "bench:rawcluster:" + std::to_string(i);
        keys.at(cluster.owner_of(edgelock::cluster_slot(key))).push_back(key);
    }
    const round_result raw_r = raw_cluster_ops_per_s(raw, keys, o.seconds);
    asio::io_context cluster_io{1};
    client sharded(cluster_io);
    edgelock::async::client_config config;
    config.cluster = {"redis://127.0.0.1:" + std::to_string(cluster.node(0).port())};
    config.restart_guard = false;  // fresh volatile servers: see run()
    config.locks_max = many;
    connect(sharded, config);
    const round_result edge_r = many_lock_ops_per_s(sharded, many, o.seconds, "bench:cluster:");
    measured_cluster.clear();
    std::printf("many locks over a 3-master cluster, %.1f s window:\n", o.seconds);
    std::printf(
        "  raw hiredis, a connection per master, %zu SET NX PX GET + EVALSHA del per batch"
        " %9.0f lock operations/s\n",
        many, raw_r.cycles_per_s);
    std::printf(
        "  edgelock asio, %zu locks each acquiring and releasing             "
        "%9.0f lock operations/s\n",
        many, edge_r.cycles_per_s);
    std::printf("ratio cluster edgelock/raw-same-commands = %.2f\n",
                edge_r.cycles_per_s / raw_r.cycles_per_s);
    std::printf("CPU per lock operation, client + the three masters:\n");
    std::printf(
        "  raw hiredis                                  client %5.2f us   servers %5.2f us\n",
        raw_r.client_cpu_us, raw_r.server_cpu_us);
    std::printf(
        "  edgelock asio                                client %5.2f us   servers %5.2f us\n",
        edge_r.client_cpu_us, edge_r.server_cpu_us);
}

// The CPU other than `cpu` the client takes while the servers share `cpu`.
int other_cpu(int cpu) {
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    return cpus > 1 ? static_cast<int>((cpu + 1) % cpus) : cpu;
}

// One lock over five local masters (Redlock), the masters sharing one CPU and the client on
// another: the masters' CPU is then the limit, one cycle per the five masters' CPU per cycle
// (all measured in the same rounds).
void bench_redlock(const options& o) {
    edgelock::testing::redis_masters masters(5, {}, edgelock::testing::persistence::volatile_);
    std::vector<pid_t> pids;
    for (std::size_t i = 0; i < masters.size(); ++i) {
        pids.push_back(masters[i].pid());
        if (o.pin) pin_threads(pids.back(), o.cpu);
    }
    const int client_cpu = other_cpu(o.cpu);
    if (o.pin) pin_threads(0, client_cpu);
    asio::io_context redlock_io{1};
    client redlock(redlock_io);
    edgelock::async::client_config redlock_config;
    redlock_config.instances = masters.urls();
    redlock_config.restart_guard = false;  // fresh volatile servers: see run()
    connect(redlock, redlock_config);
    lock_handle spread;
    if (redlock.add_lock(lock_named("bench:redlock"), spread))
        throw std::runtime_error("add_lock failed");
    latencies redlock_lat;
    redlock_lat.reserve(static_cast<std::size_t>(o.redlock_cycles + 1000));
    edgelock_round(redlock, spread, std::min(o.redlock_cycles, 1000), redlock_lat);
    redlock_lat.us.clear();
    measured_cluster = pids;
    const round_result redlock_r = edgelock_round(redlock, spread, o.redlock_cycles, redlock_lat);
    measured_cluster.clear();
    if (o.pin) pin_threads(0, o.cpu);
    const double limit = 1e6 / redlock_r.server_cpu_us;
    std::printf("redlock, 5 local masters, %d cycles; %s:\n", o.redlock_cycles,
                o.pin ? ("masters on CPU " + std::to_string(o.cpu) + ", client on CPU " +
                         std::to_string(client_cpu))
                            .c_str()
                      : "not pinned");
    std::printf(
        "  edgelock asio acquire + release              %9.0f cycles/s"
        "   p50 %6.1f us   p99 %7.1f us\n",
        redlock_r.cycles_per_s, redlock_lat.percentile(0.50), redlock_lat.percentile(0.99));
    std::printf("  the masters' limit, one cycle per %.1f us   %9.0f cycles/s\n",
                redlock_r.server_cpu_us, limit);
    std::printf("  CPU per cycle: client %.1f us, the five masters %.1f us\n",
                redlock_r.client_cpu_us, redlock_r.server_cpu_us);
    std::printf("ratio redlock edgelock/masters-limit = %.2f\n", redlock_r.cycles_per_s / limit);
}

// A client of one instance at `url`, TLS verified against `ca_file` when it is rediss://.
edgelock::async::client_config one_instance(const std::string& url, const std::string& ca_file) {
    edgelock::async::client_config config;
    config.instances = {url};
    config.restart_guard = false;  // fresh volatile servers: see run()
    config.tls.ca_file = ca_file;
    return config;
}

struct connection_cost {
    double connect_us = 0;  // open() until ready, per client (median)
    double heap_bytes = 0;  // heap in use per connected client
};

// Opens `owner` and runs its io_context until it is connected (other clients on the same
// io_context keep it busy, so run_for would not return early).
void connect_among_others(client& owner, const edgelock::async::client_config& config) {
    if (const std::error_code ec = owner.open(config))
        throw std::runtime_error("open: " + ec.message());
    bool done = false;
    std::error_code result;
    owner.async_wait_ready([&](std::error_code ec) {
        result = ec;
        done = true;
    });
    const auto until = clock_type::now() + std::chrono::seconds(5);
    owner.context().restart();
    while (!done && clock_type::now() < until)
        owner.context().run_one_for(std::chrono::milliseconds(100));
    if (!done || result) throw std::runtime_error("connect: " + result.message());
}

// Opens `count` clients of `config` on one io_context, one after the other, and keeps them
// connected: the time each took, and the heap they hold together.
connection_cost cost_of_connections(const edgelock::async::client_config& config, int count) {
    asio::io_context io{1};
    std::vector<std::unique_ptr<client>> clients;
    clients.reserve(static_cast<std::size_t>(count));
    latencies connect_lat;
    const std::size_t heap_before = mallinfo2().uordblks;
    for (int i = 0; i < count; ++i) {
        clients.push_back(std::make_unique<client>(io));
        const auto start = clock_type::now();
        connect_among_others(*clients.back(), config);
        connect_lat.us.push_back(seconds_since(start) * 1e6);
    }
    const std::size_t heap_after = mallinfo2().uordblks;
    for (auto& c : clients) c->close();
    io.restart();
    io.run_for(std::chrono::seconds(1));
    return {connect_lat.percentile(0.5), static_cast<double>(heap_after - heap_before) / count};
}

// The heap one TLS context holds (one per client: the CA store it loaded, the settings).
double tls_context_bytes(const std::string& ca_file) {
    const std::size_t before = mallinfo2().uordblks;
    edgelock::tls_context context;
    edgelock::tls_options options;
    options.ca_file = ca_file;
    if (context.load(options)) throw std::runtime_error("tls_context: cannot load " + ca_file);
    return static_cast<double>(mallinfo2().uordblks - before);
}

// The single-lock cycle over TLS beside plain TCP (see the header), then a connection's cost.
void bench_tls(const options& o, client& plain, lock_handle plain_lock,
               const edgelock::testing::redis_server& plain_server) {
    edgelock::testing::tls_material material;
    edgelock::testing::redis_server tls_server(material, {},
                                               edgelock::testing::persistence::volatile_);
    if (o.pin) pin_threads(tls_server.pid(), o.cpu);
    asio::io_context io{1};
    client secure(io);
    connect(secure, one_instance(tls_server.url(), material.ca_file()));
    lock_handle secure_lock;
    if (secure.add_lock(lock_named("bench:tls"), secure_lock))
        throw std::runtime_error("add_lock failed");
    latencies warm;
    measured_server = tls_server.pid();
    edgelock_round(secure, secure_lock, 2000, warm);
    measured_server = plain_server.pid();
    edgelock_round(plain, plain_lock, 2000, warm);
    latencies plain_lat;
    latencies tls_lat;
    std::vector<round_result> plain_rounds;
    std::vector<round_result> tls_rounds;
    for (int r = 0; r < o.rounds; ++r) {
        measured_server = plain_server.pid();
        plain_rounds.push_back(edgelock_round(plain, plain_lock, o.cycles, plain_lat));
        measured_server = tls_server.pid();
        tls_rounds.push_back(edgelock_round(secure, secure_lock, o.cycles, tls_lat));
    }
    const round_result plain_m = median_of(plain_rounds);
    const round_result tls_m = median_of(tls_rounds);
    std::printf("TLS, single lock, one connection, %d rounds x %d cycles (median round):\n",
                o.rounds, o.cycles);
    std::printf(
        "  edgelock asio over plain TCP                 %9.0f cycles/s"
        "   p50 %6.1f us   p99 %7.1f us\n",
        plain_m.cycles_per_s, plain_lat.percentile(0.50), plain_lat.percentile(0.99));
    std::printf(
        "  edgelock asio over TLS (rediss://)           %9.0f cycles/s"
        "   p50 %6.1f us   p99 %7.1f us\n",
        tls_m.cycles_per_s, tls_lat.percentile(0.50), tls_lat.percentile(0.99));
    std::printf("ratio tls/plain = %.2f\n", tls_m.cycles_per_s / plain_m.cycles_per_s);
    std::printf(
        "CPU per cycle (median round): plain client %.1f us server %.1f us; "
        "TLS client %.1f us server %.1f us\n",
        plain_m.client_cpu_us, plain_m.server_cpu_us, tls_m.client_cpu_us, tls_m.server_cpu_us);
    constexpr int clients = 20;
    const connection_cost plain_cost =
        cost_of_connections(one_instance(plain_server.url(), ""), clients);
    const connection_cost tls_cost =
        cost_of_connections(one_instance(tls_server.url(), material.ca_file()), clients);
    std::printf("one connected client (median of %d opened one after the other):\n", clients);
    std::printf("  plain TCP    open to ready %7.0f us   heap held %8.0f bytes\n",
                plain_cost.connect_us, plain_cost.heap_bytes);
    std::printf("  TLS          open to ready %7.0f us   heap held %8.0f bytes\n",
                tls_cost.connect_us, tls_cost.heap_bytes);
    const double context_bytes = tls_context_bytes(material.ca_file());
    std::printf(
        "TLS: %.0f more heap bytes per client, of which %.0f its TLS context (one per client) and\n"
        "  %.0f the connection; ratio connect tls/plain = %.2f\n",
        tls_cost.heap_bytes - plain_cost.heap_bytes, context_bytes,
        tls_cost.heap_bytes - plain_cost.heap_bytes - context_bytes,
        tls_cost.connect_us / plain_cost.connect_us);
}

int run(const options& o) {
    if (o.pin) pin_threads(0, o.cpu);
    // Servers without persistence (raw hiredis and the client then pay no fsync), and the
    // client's restart guard off: it would keep these fresh servers out for a TTL. The guard
    // costs one INFO and one CONFIG GET per connection, nothing per lock operation.
    edgelock::testing::redis_server server({}, edgelock::testing::persistence::volatile_);
    if (o.pin) pin_threads(server.pid(), o.cpu);
    measured_server = server.pid();
    const std::string version =
        edgelock::testing::redis_client(server.port()).info_field("server", "redis_version");
    std::printf("lock_cycle: redis-server %s on 127.0.0.1:%u; %s\n", version.c_str(), server.port(),
                o.pin ? ("server and client pinned to CPU " + std::to_string(o.cpu)).c_str()
                      : "not pinned");

    asio::io_context io{1};
    client owner(io);
    edgelock::async::client_config config;
    config.instances = {server.url()};
    config.restart_guard = false;
    config.locks_max = 1002;  // 1000 for the many-lock run, the single lock, the semaphore
    connect(owner, config);
    lock_handle single;
    if (owner.add_lock(lock_named("bench:edgelock"), single))
        throw std::runtime_error("add_lock failed");
    raw_connection raw(server.port());  // loads the scripts raw_asio_connection sends
    asio::io_context raw_io{1};
    raw_asio_connection asio_raw(raw_io, server.port());

    if (o.only == "edgelock-alone" || o.only == "raw-asio-alone") {
        bench_alone(o, owner, single, asio_raw);
        return 0;
    }
    const bool all = o.only.empty();
    if (all || o.only == "single") bench_single(o, owner, single, raw, asio_raw);
    if (all || o.only == "many") bench_many(o, owner, raw);
    if (all || o.only == "redlock") bench_redlock(o);
    if (all || o.only == "tls") bench_tls(o, owner, single, server);
    if (all || o.only == "cluster") bench_cluster(o);
    if (all || o.only == "blocking")
        bench_blocking(o.cycles, o.rounds, server.url(), server.port());
    if (all || o.only == "semaphore") bench_semaphore(o, owner, raw);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return run(parse(argc, argv));
    } catch (const std::exception& e) {
        std::fprintf(stderr, "lock_cycle: %s\n", e.what());
        return 1;
    }
}
