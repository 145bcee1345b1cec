// SPDX-License-Identifier: Apache-2.0
// edgelock test support: a user-space TCP proxy for network faults (this kernel has no netem).
//
// The proxy listens on 127.0.0.1:<free port> and forwards every accepted connection to
// 127.0.0.1:<upstream port>. One thread accepts; each connection gets a thread that forwards
// both directions. The fault mode can be changed at any time and applies to the connections
// already open as well as to new ones:
//
//   pass()               forward as is (the default)
//   delay(d)             every chunk, in either direction, is forwarded d after it arrived
//                        (order kept): a slow network, or a reply arriving after the lease
//   blackhole()          keep accepting and reading, forward nothing either way: the peer
//                        looks alive (connect succeeds) but never answers
//   reset_after(bytes)   forward at most `bytes` more bytes from the server on each connection,
//                        then reset the client connection (RST): a reply cut in the middle
//   drop_replies()       forward what clients send, drop what the server answers: requests
//                        take effect, their replies are lost
//
// on_next_request(hook, containing) calls `hook` once, from the forwarding thread, right after
// the next chunk a client sent that contains `containing` (any chunk when empty) has gone to
// the server: a fault landed while that request's reply is in flight.
// close_all() resets every open connection now. retarget(port) sends the connections accepted
// from then on to another upstream port (a fault replaced by a healthy server behind the same
// address); those already open keep theirs. The destructor stops the threads and closes
// every socket. Throws std::runtime_error only when it cannot listen.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace edgelock::testing {

class tcp_proxy {
public:
    explicit tcp_proxy(std::uint16_t upstream_port);
    ~tcp_proxy();
    tcp_proxy(const tcp_proxy&) = delete;
    tcp_proxy& operator=(const tcp_proxy&) = delete;

    std::uint16_t port() const noexcept { return port_; }
    std::string url() const;  // "redis://127.0.0.1:<port>"

    void pass();
    void delay(std::chrono::milliseconds d);
    void blackhole();
    void reset_after(std::size_t bytes);
    void drop_replies();
    void close_all();
    void on_next_request(std::function<void()> hook, std::string containing = "");
    void retarget(std::uint16_t upstream_port) noexcept { upstream_port_.store(upstream_port); }

    // Connections accepted since construction.
    std::size_t connections_accepted() const noexcept { return accepted_.load(); }

private:
    struct connection;
    enum class mode : int { pass, delay, blackhole, reset_after, drop_replies };

    void accept_loop();
    void forward_loop(connection& c);
    void set_mode(mode m, std::int64_t delay_ms, std::size_t bytes);
    void run_request_hook(const std::string& sent);

    std::atomic<std::uint16_t> upstream_port_;
    std::uint16_t port_ = 0;
    int listen_fd_ = -1;
    std::atomic<bool> stopping_{false};
    std::atomic<std::size_t> accepted_{0};

    // The mode, its parameters, and a generation counter bumped on every change (so each
    // connection restarts its reset_after budget) or close_all() (close_generation_).
    std::atomic<int> mode_{0};
    std::atomic<std::int64_t> delay_ms_{0};
    std::atomic<std::size_t> reset_bytes_{0};
    std::atomic<std::uint64_t> generation_{0};
    std::atomic<std::uint64_t> close_generation_{0};

    std::mutex hook_mutex_;
    std::function<void()> request_hook_;
    std::string request_hook_containing_;

    std::mutex connections_mutex_;
    std::list<std::unique_ptr<connection>> connections_;
    std::thread acceptor_;
};

}  // namespace edgelock::testing
