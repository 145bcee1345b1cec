// SPDX-License-Identifier: Apache-2.0
#include "edgelock/testing/tcp_proxy.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <deque>
#include <limits>
#include <string>
#include <utility>

#include "socket_util.hpp"

namespace edgelock::testing {
namespace {

using clock_type = std::chrono::steady_clock;
constexpr int poll_interval_ms = 10;

struct chunk {
    clock_type::time_point due;
    std::string bytes;
};

}  // namespace

struct tcp_proxy::connection {
    int client_fd = -1;
    int server_fd = -1;
    std::atomic<bool> done{false};
    std::thread thread;
};

tcp_proxy::tcp_proxy(std::uint16_t upstream_port) : upstream_port_(upstream_port) {
    listen_fd_ = detail::listen_loopback(port_);
    acceptor_ = std::thread([this] { accept_loop(); });
}

tcp_proxy::~tcp_proxy() {
    stopping_ = true;
    if (acceptor_.joinable()) acceptor_.join();
    std::lock_guard<std::mutex> guard(connections_mutex_);
    for (auto& c : connections_) {
        if (c->thread.joinable()) c->thread.join();
    }
    connections_.clear();
    ::close(listen_fd_);
}

std::string tcp_proxy::url() const { return "redis://127.0.0.1:" + std::to_string(port_); }

void tcp_proxy::set_mode(mode m, std::int64_t delay_ms, std::size_t bytes) {
    delay_ms_ = delay_ms;
    reset_bytes_ = bytes;
    mode_ = static_cast<int>(m);
    ++generation_;
}

void tcp_proxy::pass() { set_mode(mode::pass, 0, 0); }
void tcp_proxy::delay(std::chrono::milliseconds d) { set_mode(mode::delay, d.count(), 0); }
void tcp_proxy::blackhole() { set_mode(mode::blackhole, 0, 0); }
void tcp_proxy::reset_after(std::size_t bytes) { set_mode(mode::reset_after, 0, bytes); }
void tcp_proxy::drop_replies() { set_mode(mode::drop_replies, 0, 0); }
void tcp_proxy::close_all() { ++close_generation_; }

void tcp_proxy::on_next_request(std::function<void()> hook, std::string containing) {
    std::lock_guard<std::mutex> guard(hook_mutex_);
    request_hook_ = std::move(hook);
    request_hook_containing_ = std::move(containing);
}

void tcp_proxy::run_request_hook(const std::string& sent) {
    std::function<void()> hook;
    {
        std::lock_guard<std::mutex> guard(hook_mutex_);
        if (sent.find(request_hook_containing_) == std::string::npos) return;
        hook.swap(request_hook_);
    }
    if (hook) hook();
}

void tcp_proxy::accept_loop() {
    while (!stopping_) {
        pollfd p{listen_fd_, POLLIN, 0};
        if (::poll(&p, 1, poll_interval_ms) <= 0) continue;
        const int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (client < 0) continue;
        ++accepted_;
        const int one = 1;
        ::setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        const int server = detail::connect_loopback(upstream_port_.load());
        if (server < 0) {
            detail::close_with_reset(client);  // upstream down: the client sees a reset
            continue;
        }
        std::lock_guard<std::mutex> guard(connections_mutex_);
        // Reap finished connections so a long test does not pile up threads.
        for (auto it = connections_.begin(); it != connections_.end();) {
            if ((*it)->done) {
                (*it)->thread.join();
                it = connections_.erase(it);
            } else {
                ++it;
            }
        }
        auto c = std::make_unique<connection>();
        c->client_fd = client;
        c->server_fd = server;
        connection& ref = *c;
        connections_.push_back(std::move(c));
        ref.thread = std::thread([this, &ref] { forward_loop(ref); });
    }
}

void tcp_proxy::forward_loop(connection& c) {
    std::deque<chunk> to_server;
    std::deque<chunk> to_client;
    std::uint64_t generation = generation_.load();
    const std::uint64_t close_generation = close_generation_.load();
    auto budget_for = [this](mode m) {
        return m == mode::reset_after ? reset_bytes_.load()
                                      : std::numeric_limits<std::size_t>::max();
    };
    std::size_t budget = budget_for(static_cast<mode>(mode_.load()));
    bool reset_client = false;
    bool open = true;

    while (open && !stopping_) {
        if (close_generation_.load() != close_generation) {
            reset_client = true;
            break;
        }
        if (generation_.load() != generation) {
            generation = generation_.load();
            budget = budget_for(static_cast<mode>(mode_.load()));
        }
        const auto now = clock_type::now();

        while (open && !to_server.empty() && to_server.front().due <= now) {
            open = detail::send_all(c.server_fd, to_server.front().bytes.data(),
                                    to_server.front().bytes.size());
            run_request_hook(to_server.front().bytes);
            to_server.pop_front();
        }
        while (open && !to_client.empty() && to_client.front().due <= now) {
            const std::string& bytes = to_client.front().bytes;
            if (bytes.size() > budget) {
                detail::send_all(c.client_fd, bytes.data(), budget);
                reset_client = true;
                open = false;
                break;
            }
            if (budget != std::numeric_limits<std::size_t>::max()) budget -= bytes.size();
            open = detail::send_all(c.client_fd, bytes.data(), bytes.size());
            to_client.pop_front();
        }
        if (!open) break;

        int timeout_ms = poll_interval_ms;
        for (const std::deque<chunk>* q : {&to_server, &to_client}) {
            if (q->empty()) continue;
            const auto wait =
                std::chrono::duration_cast<std::chrono::milliseconds>(q->front().due - now);
            timeout_ms = std::max(0, std::min<int>(timeout_ms, static_cast<int>(wait.count())));
        }
        pollfd fds[2] = {{c.client_fd, POLLIN, 0}, {c.server_fd, POLLIN, 0}};
        if (::poll(fds, 2, timeout_ms) <= 0) continue;
        for (int side = 0; side < 2 && open; ++side) {
            if ((fds[side].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
            char buffer[16 * 1024];
            const ssize_t n = ::recv(fds[side].fd, buffer, sizeof buffer, 0);
            if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
            if (n <= 0) {
                // One side closed: pass the close on (after what is queued, unless blackholed).
                open = false;
                if (side == 1) reset_client = false;
                break;
            }
            // The mode as of now, not as of before poll(): a change applies to the next byte.
            const mode m = static_cast<mode>(mode_.load());
            if (m == mode::blackhole || (m == mode::drop_replies && side == 1)) continue;
            const std::int64_t delay = m == mode::delay ? delay_ms_.load() : 0;
            chunk next{clock_type::now() + std::chrono::milliseconds(delay),
                       std::string(buffer, static_cast<std::size_t>(n))};
            (side == 0 ? to_server : to_client).push_back(std::move(next));
        }
    }
    if (!reset_client) {
        // Deliver what was already due for the client before closing gracefully.
        for (const chunk& ch : to_client) {
            if (ch.due <= clock_type::now())
                detail::send_all(c.client_fd, ch.bytes.data(), ch.bytes.size());
        }
    }
    if (reset_client) {
        detail::close_with_reset(c.client_fd);
    } else {
        ::close(c.client_fd);
    }
    detail::close_with_reset(c.server_fd);
    c.done = true;
}

}  // namespace edgelock::testing
