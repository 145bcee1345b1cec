// SPDX-License-Identifier: Apache-2.0
// edgelock sim: the simulated network.
//
// Endpoints are the clients, the servers (the Redis nodes, then the sentinels, numbered as
// addresses.hpp does) and the resource. Every ordered pair of endpoints is a path with its
// own latency (drawn once), jitter and occasional long-tail delays. A path delivers in the
// order it was given messages, as one TCP connection does: a message held up in the tail
// holds up the ones behind it.
//
// Between a client and a server the network also keeps the state of the TCP connection: an
// epoch (a new one per connect) and whether it is still open. A message carries the epoch
// it was sent on and is dropped on arrival when that connection is gone, which is how
// losses, partitions, resets and crashes reach the lock: as a connection failure, never as
// silently missing replies on a live connection.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "edgelock/sim/configuration.hpp"
#include "edgelock/sim/prng.hpp"
#include "edgelock/sim/redis_model.hpp"

namespace edgelock::sim {

// A client holds up to three connections to one server: its command connection, a fair lock's
// subscriber and (to a sentinel) the watch of +switch-master. Each has its own paths (the same
// latency, their own order and jitter), so the one's messages never queue behind another's.
enum class lane : std::uint8_t { command, subscriber, watch };
inline constexpr std::size_t lanes = 3;

enum class message_kind : std::uint8_t {
    request,           // client -> server: RESP bytes (one or more requests)
    reply,             // server -> client: RESP bytes (one reply)
    resource_request,  // client -> resource
    resource_reply,    // resource -> client
    replication,       // master -> replica: one write
    replication_ack,   // replica -> master: the offset applied
};

struct message {
    message_kind kind = message_kind::request;
    std::uint32_t epoch = 0;  // connection (client-server) or the master's incarnation
    lane on = lane::command;  // request, reply: which of the client's connections
    std::int64_t deliver_us = 0;
    std::string bytes;             // request, reply
    std::uint32_t request_id = 0;  // resource: matches a reply to its request
    std::uint32_t hold = 0;        // resource: the sender's hold (for the checker only)
    bool write = false;            // resource: write (else read)
    bool fenced = false;           // resource: the token is to be checked
    bool accepted = false;         // resource reply
    std::int64_t token = 0;        // resource: fence token
    std::int64_t value = 0;        // resource: value written, or the value read
    repl_op op;                    // replication
    std::int64_t offset = 0;       // replication, replication_ack
};

class network {
public:
    struct tcp_state {  // a client-server connection as the network sees it
        std::uint32_t epoch = 0;
        bool open = false;
        // Closed by the server: what it sent before its FIN still arrives, until the FIN does.
        std::int64_t drained_at_us = -1;
    };

    void init(std::uint8_t clients, std::uint8_t nodes, std::uint8_t sentinels,
              const world_params& params, std::uint64_t seed);

    std::uint8_t servers() const noexcept { return static_cast<std::uint8_t>(nodes_ + sentinels_); }
    std::uint8_t client_endpoint(std::uint8_t client) const noexcept { return client; }
    std::uint8_t server_endpoint(std::uint8_t server) const noexcept {
        return static_cast<std::uint8_t>(clients_ + server);
    }
    std::uint8_t node_endpoint(std::uint8_t node) const noexcept { return server_endpoint(node); }
    std::uint8_t resource_endpoint() const noexcept {
        return static_cast<std::uint8_t>(clients_ + servers());
    }
    bool is_client(std::uint8_t endpoint) const noexcept { return endpoint < clients_; }
    bool is_node(std::uint8_t endpoint) const noexcept {
        return endpoint >= clients_ && endpoint < clients_ + nodes_;
    }
    // A server index is a node's index when below the node count, else a sentinel's.
    bool is_node_server(std::uint8_t server) const noexcept { return server < nodes_; }
    std::uint8_t endpoint_count() const noexcept {
        return static_cast<std::uint8_t>(clients_ + servers() + 1);
    }
    // The command lane's paths come first, then the subscriber's, then the watch's, so a run
    // without subscribers or watches draws as before.
    std::size_t path_id(std::uint8_t from, std::uint8_t to,
                        lane on = lane::command) const noexcept {
        return static_cast<std::size_t>(on) * pairs() +
               static_cast<std::size_t>(from) * endpoint_count() + to;
    }
    std::uint8_t path_from(std::size_t path) const noexcept {
        return static_cast<std::uint8_t>(path % pairs() / endpoint_count());
    }
    std::uint8_t path_to(std::size_t path) const noexcept {
        return static_cast<std::uint8_t>(path % pairs() % endpoint_count());
    }
    lane path_lane(std::size_t path) const noexcept { return static_cast<lane>(path / pairs()); }

    // Queues `m` from -> to and returns its arrival time: the path's latency, jitter and
    // tail, plus extra_us, and never before the message queued before it on that path.
    // A request or reply takes its lane's path (m.on).
    std::int64_t send(std::uint8_t from, std::uint8_t to, message&& m, std::int64_t now_us,
                      std::int64_t extra_us);
    // The last send() met the long tail.
    bool last_send_tailed() const noexcept { return last_send_tailed_; }
    // Removes and returns the oldest message on the path (the one arriving next).
    message take(std::size_t path);
    // The path's latency without jitter: what a reset takes to reach the other side.
    std::int64_t latency_us(std::uint8_t from, std::uint8_t to) const noexcept;
    // When an orderly close (a FIN) sent now arrives: after its latency, and after every
    // message sent before it on the path, as TCP keeps the stream's order.
    std::int64_t close_arrives_us(std::uint8_t from, std::uint8_t to, lane on,
                                  std::int64_t now_us) const noexcept;

    tcp_state& conn(std::uint8_t client, std::uint8_t server, lane on = lane::command) noexcept;
    // A new connection between them; returns its epoch.
    std::uint32_t open(std::uint8_t client, std::uint8_t server, lane on = lane::command) noexcept;

private:
    std::size_t pairs() const noexcept {
        return static_cast<std::size_t>(endpoint_count()) * endpoint_count();
    }

    struct path {
        std::deque<message> queue;
        std::int64_t last_deliver_us = 0;
        std::int64_t latency_us = 0;
        bool tail = true;  // replication paths have latency but no long tail
        prng jitter;
    };

    std::uint8_t clients_ = 0;
    std::uint8_t nodes_ = 0;
    std::uint8_t sentinels_ = 0;
    std::uint32_t tail_per_million_ = 0;
    std::int64_t tail_us_max_ = 0;
    bool last_send_tailed_ = false;
    std::vector<path> paths_;
    std::vector<tcp_state> connections_;
    std::uint32_t next_epoch_ = 1;
};

}  // namespace edgelock::sim
