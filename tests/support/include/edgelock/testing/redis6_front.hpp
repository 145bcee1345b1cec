// SPDX-License-Identifier: Apache-2.0
// edgelock test support: a real redis-server that answers as Redis 6.2 does where 7.0 differs
// in what edgelock sends.
//
// No Redis 6 can be installed here (Debian bookworm ships 7.0), so this front stands between
// a client and a real redis-server on 127.0.0.1 and refuses, with 6.2's own reply
// "-ERR syntax error", the two forms that 6.2 does not know:
//   - INFO naming several sections ("INFO server persistence"): one section or none is fine;
//   - SET with both NX and GET.
// Every other command is forwarded on a connection of its own to the server, one at a time,
// and its one reply relayed back, so replies keep their order. Commands that answer more than
// once (SUBSCRIBE, MONITOR) are not supported. One thread per connection; the destructor
// closes them all. Throws std::runtime_error only when it cannot listen.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <list>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace edgelock::testing {

class redis6_front {
public:
    explicit redis6_front(std::uint16_t upstream_port);
    ~redis6_front();
    redis6_front(const redis6_front&) = delete;
    redis6_front& operator=(const redis6_front&) = delete;

    std::uint16_t port() const noexcept { return port_; }
    std::string url() const;  // "redis://127.0.0.1:<port>"
    // Commands refused as 6.2 refuses them, over all connections.
    std::size_t refused() const noexcept { return refused_.load(); }

    // True when Redis 6.2 answers this command with a syntax error where 7.0 runs it.
    static bool unknown_to_redis_6(const std::vector<std::string>& args);

private:
    void accept_loop();
    void serve(int client_fd);

    std::uint16_t upstream_port_;
    std::uint16_t port_ = 0;
    int listen_fd_ = -1;
    std::atomic<bool> stopping_{false};
    std::atomic<std::size_t> refused_{0};
    std::mutex threads_mutex_;
    std::list<std::thread> threads_;
    std::thread acceptor_;
};

}  // namespace edgelock::testing
