// SPDX-License-Identifier: Apache-2.0
// edgelock test support: a fake Redis that answers with whatever the test scripts.
//
// For replies a real Redis never sends to the lock's commands (a wrong type, garbage bytes,
// half a reply then a close). It listens on 127.0.0.1:<free port>, parses each incoming
// command (RESP arrays of bulk strings, with the core's parser) and calls `respond` with its
// arguments on the connection's thread. `respond` returns the raw bytes to send back:
//   - "" sends nothing (the command hangs unanswered),
//   - the action `close_after` closes the connection after sending the bytes.
// Throws std::runtime_error only when it cannot listen.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace edgelock::testing {

struct scripted_reply {
    std::string bytes;         // sent as is
    bool close_after = false;  // then close the connection (a reset if more was sent to us)
};

// The handshake's node queries (INFO, CONFIG GET appendfsync: the restart guard) answered as
// a node up for a day without AOF would: it counts at once. Empty bytes for anything else.
scripted_reply long_running_node_reply(const std::vector<std::string>& args);

class scripted_server {
public:
    using responder = std::function<scripted_reply(const std::vector<std::string>& args)>;

    explicit scripted_server(responder respond);
    ~scripted_server();
    scripted_server(const scripted_server&) = delete;
    scripted_server& operator=(const scripted_server&) = delete;

    std::uint16_t port() const noexcept { return port_; }
    std::string url() const;
    // Commands received so far, over all connections (first argument upper-cased as sent).
    std::size_t commands_received() const noexcept { return commands_.load(); }

private:
    void accept_loop();
    void serve(int fd);

    responder respond_;
    std::uint16_t port_ = 0;
    int listen_fd_ = -1;
    std::atomic<bool> stopping_{false};
    std::atomic<std::size_t> commands_{0};
    std::mutex threads_mutex_;
    std::list<std::thread> threads_;
    std::thread acceptor_;
};

}  // namespace edgelock::testing
