// SPDX-License-Identifier: Apache-2.0
// The nemesis holder on the asio client (edgelock::async::client): the same arguments, the
// same stdout lines and the same log as nemesis_holder.cpp (the blocking client), so the
// runner can give either client either role. The work runs on a steady_timer: every step_ms
// while status().held, a write to the fenced store. The gate (gate=1) blocks the io_context's
// one thread on stdin, which is what the runner's SIGSTOP does to the whole process anyway.
#include <asio.hpp>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <string>

#include "edgelock/asio_client.hpp"
#include "nemesis_holder_common.hpp"

namespace {

using edgelock::nemesis::event_log;
using edgelock::nemesis::holder_args;
using edgelock::nemesis::logged_write;
using edgelock::nemesis::monotonic_us;
using edgelock::nemesis::split_commas;

edgelock::async::client_config client_config_from(const holder_args& args) {
    edgelock::async::client_config config;
    config.instances = split_commas(args.text("instances"));
    config.sentinels = split_commas(args.text("sentinels"));
    if (!config.sentinels.empty()) config.master_name = args.text("master", "mymaster");
    config.restart_guard = args.number("guard", 0) != 0;
    config.connect_timeout_ms = 500;
    config.command_timeout_ms = 1000;
    config.reconnect_delay_min_ms = 10;
    config.reconnect_delay_max_ms = 50;
    // As the blocking holder: what the lock's I/O did, on stderr, for reading a run.
    config.on_event = [](const edgelock::lock_event& event) {
        std::cerr << monotonic_us() << " event " << static_cast<int>(event.kind) << " instance "
                  << static_cast<long long>(event.instance) << " "
                  << (event.code ? event.code.message() : "ok") << "\n";
    };
    return config;
}

edgelock::lock_config lock_config_from(const holder_args& args, const std::string& name,
                                       std::size_t instances) {
    edgelock::lock_config config;
    config.name = name;
    config.ttl_ms = args.number("ttl", 1000);
    config.instances = static_cast<std::uint8_t>(instances);
    config.fencing = args.number("fencing", 0) != 0;
    config.replicas_to_wait = static_cast<std::uint8_t>(args.number("wait", 0));
    // As the blocking holder: room for WAIT, and waiters that retry within milliseconds.
    if (config.replicas_to_wait > 0) config.attempt_timeout_ms = config.ttl_ms / 4;
    config.retry_delay_ms_min = 2;
    config.retry_delay_ms_max = 10;
    return config;
}

class holder {
public:
    holder(asio::io_context& io, const holder_args& args)
        : args_(args), log_(args.text("log")), client_(io), timer_(io) {}

    int start() {
        const auto config = client_config_from(args_);
        name_ = args_.text("name", "nemesis");
        std::error_code ec = client_.open(config);
        if (!ec) {
            const std::size_t instances = config.sentinels.empty() ? config.instances.size() : 1;
            ec = client_.add_lock(lock_config_from(args_, name_, instances), handle_);
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
            std::cout << "checked" << std::endl;
            std::string go;
            std::getline(std::cin, go);
            logged_write(args_, log_, fence_);
        }
        first_hold_ = false;
        work_until_us_ = monotonic_us() + args_.number("work_ms", 500) * 1000;
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
        logged_write(args_, log_, fence_);
        timer_.expires_after(std::chrono::milliseconds(args_.number("step_ms", 20)));
        timer_.async_wait([this](const std::error_code& ec) {
            if (!ec) step();
        });
    }

    void release() {
        client_.async_release(handle_, [this](std::error_code ec) {
            std::cout << "released " << (ec ? ec.message() : "ok") << std::endl;
            if (--holds_left_ > 0) {
                acquire();
            } else {
                client_.close();
            }
        });
    }

    const holder_args& args_;
    event_log log_;
    edgelock::async::client client_;
    asio::steady_timer timer_;
    std::string name_;  // lock_config::name views it
    edgelock::async::lock_handle handle_;
    std::int64_t holds_left_ = 0;
    std::int64_t fence_ = 0;
    std::int64_t work_until_us_ = 0;
    bool first_hold_ = true;
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
