// SPDX-License-Identifier: Apache-2.0
// The nemesis holder on the async client (edgelock::async::client): the same arguments, the
// same stdout lines and the same log as nemesis_holder.cpp (the blocking client), so the
// runner can give either client either role. The work runs on a steady_timer: every step_ms
// while status().held, a write to the fenced store. The gate (gate=1) blocks the io_context's
// one thread on stdin, which is what the runner's SIGSTOP does to the whole process anyway.
#include <asio.hpp>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <string>

#include "edgelock/async_client.hpp"
#include "nemesis_holder_common.hpp"

namespace {

using edgelock::nemesis::event_log;
using edgelock::nemesis::holder_args;
using edgelock::nemesis::holder_settings;
using edgelock::nemesis::land_delayed_write;
using edgelock::nemesis::logged_write;
using edgelock::nemesis::monotonic_us;

edgelock::async::client_config client_config_from(const holder_settings& settings) {
    edgelock::async::client_config config;
    config.instances = settings.instances;
    config.sentinels = settings.sentinels;
    config.cluster = settings.cluster;
    if (!settings.sentinels.empty()) config.master_name = settings.master_name;
    config.restart_guard = settings.restart_guard;
    config.connect_timeout_ms = holder_settings::connect_timeout_ms;
    config.command_timeout_ms = holder_settings::command_timeout_ms;
    config.reconnect_delay_min_ms = holder_settings::reconnect_delay_min_ms;
    config.reconnect_delay_max_ms = holder_settings::reconnect_delay_max_ms;
    // As the blocking holder: what the lock's I/O did, on stderr, for reading a run.
    config.on_event = [](const edgelock::lock_event& event) {
        std::cerr << monotonic_us() << " event " << static_cast<int>(event.kind) << " instance "
                  << static_cast<long long>(event.instance) << " "
                  << (event.code ? event.code.message() : "ok") << "\n";
    };
    return config;
}

edgelock::lock_config lock_config_from(const holder_settings& settings, std::size_t instances) {
    edgelock::lock_config config;
    config.name = settings.name;
    config.ttl_ms = settings.ttl_ms;
    config.instances = static_cast<std::uint8_t>(instances);
    config.fencing = settings.fencing;
    config.replicas_to_wait = static_cast<std::uint8_t>(settings.replicas_to_wait);
    if (settings.attempt_timeout_ms > 0) config.attempt_timeout_ms = settings.attempt_timeout_ms;
    config.retry_delay_ms_min = holder_settings::retry_delay_ms_min;
    config.retry_delay_ms_max = holder_settings::retry_delay_ms_max;
    return config;
}

class holder {
public:
    holder(asio::io_context& io, const holder_args& args)
        : args_(args),
          settings_(edgelock::nemesis::settings_from(args)),
          log_(args.text("log")),
          client_(io),
          timer_(io) {}

    int start() {
        const auto config = client_config_from(settings_);
        std::error_code ec = client_.open(config);
        if (!ec) {
            // Sentinel's master and a cluster's slot master are one instance each.
            const std::size_t instances = config.instances.empty() ? 1 : config.instances.size();
            ec = client_.add_lock(lock_config_from(settings_, instances), handle_);
        }
        if (ec) {
            log_.line("fail " + id() + " " + std::to_string(monotonic_us()) +
                      " open: " + ec.message());
            std::cout << "open-failed " << ec.message() << std::endl;
            return 2;
        }
        holds_left_ = args_.number("holds", 1);
        acquire();
        return 0;
    }

    int exit_code() const noexcept { return exit_code_; }

private:
    std::string id() const { return args_.text("id"); }

    void acquire() {
        const auto wait = std::chrono::milliseconds(args_.number("acquire_wait_ms", 20'000));
        client_.async_acquire(handle_, wait, [this](std::error_code ec, std::int64_t fence) {
            if (ec) {
                log_.line("fail " + id() + " " + std::to_string(monotonic_us()) + " " +
                          ec.message());
                std::cout << "failed " << ec.message() << std::endl;
                exit_code_ = 3;
                client_.close();
                return;
            }
            on_held(fence);
        });
    }

    void on_held(std::int64_t fence) {
        fence_ = fence;
        log_.line("hold " + id() + " " + std::to_string(fence) + " " +
                  std::to_string(monotonic_us()));
        std::cout << "held " << fence << std::endl;
        if (first_hold_ && args_.number("gate", 0) != 0 && client_.held(handle_)) {
            const std::int64_t checked_us = monotonic_us();
            std::cout << "checked" << std::endl;
            std::string go;
            std::getline(std::cin, go);
            logged_write(args_, log_, fence_, checked_us);
        }
        // As the blocking holder's delay_write=1 (S2): the write leaves, the job ends at once.
        in_flight_ = first_hold_ && args_.number("delay_write", 0) != 0 && client_.held(handle_);
        first_hold_ = false;
        work_until_us_ = monotonic_us() + args_.number("work_ms", 500) * 1000;
        if (in_flight_) {
            std::cout << "sent" << std::endl;
            work_until_us_ = 0;
        }
        step();
    }

    void step() {
        if (monotonic_us() >= work_until_us_) {
            log_.line("end " + id() + " " + std::to_string(monotonic_us()));
            release();
            return;
        }
        if (!client_.held(handle_)) {
            log_.line("lost " + id() + " " + std::to_string(monotonic_us()));
            release();
            return;
        }
        logged_write(args_, log_, fence_, monotonic_us());
        timer_.expires_after(std::chrono::milliseconds(args_.number("step_ms", 20)));
        timer_.async_wait([this](const std::error_code& ec) {
            if (!ec) step();
        });
    }

    void release() {
        client_.async_release(handle_, [this](std::error_code ec) {
            std::cout << "released " << (ec ? ec.message() : "ok") << std::endl;
            if (in_flight_) land_delayed_write(args_, log_, fence_);
            in_flight_ = false;
            if (--holds_left_ > 0) {
                acquire();
            } else {
                client_.close();
            }
        });
    }

    const holder_args& args_;
    const holder_settings settings_;  // lock_config::name views its name
    event_log log_;
    edgelock::async::client client_;
    asio::steady_timer timer_;
    edgelock::async::lock_handle handle_;
    std::int64_t holds_left_ = 0;
    std::int64_t fence_ = 0;
    std::int64_t work_until_us_ = 0;
    bool first_hold_ = true;
    bool in_flight_ = false;  // S2: the first write is in the network
    int exit_code_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
    holder_args args;
    if (!edgelock::nemesis::parse_holder_args(argc, argv, args)) {
        std::cerr << "usage: nemesis_holder_asio key=value ... (see nemesis_holder.cpp)"
                  << std::endl;
        return 64;
    }
    asio::io_context io{1};
    holder h(io, args);
    if (const int failed = h.start()) return failed;
    io.run();
    return h.exit_code();
}
