// SPDX-License-Identifier: Apache-2.0
// edgelock sim: a Redis Sentinel process, modelled for what a client asks it.
//
// In the Sentinel configurations a lock's connection does not know the master: it asks a sentinel
// `SENTINEL get-master-addr-by-name <name>`, connects to the node named and checks with ROLE
// that it is a master (session/connection.hpp). This model answers that question (and
// PING) from its own view of which node is master, as a real sentinel answers from its own
// state: the node it names may be down, or no longer the master, and the client's connection then
// goes back to the sentinels. Everything else is refused, as Sentinel refuses data commands.
// A client's watch subscribes to +switch-master, and the world publishes each change of view
// to it as Redis 7.0's sentinels do: the leader at the failover's end, each other sentinel
// when its hello messages teach it the new configuration.
//
// The views are set by the world, which plays Sentinel's failover (world::sentinel_promote):
// each sentinel learns of a promotion at a time of its own (Redis 7.0's sentinels hear of it
// from the leader's hello messages), so for a while a stale sentinel still names the old
// master while the others name the new one, and the clients' rotation must cope.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace edgelock::sim {

class sentinel_node {
public:
    sentinel_node(std::uint8_t id, std::string_view master_name, std::uint8_t master) noexcept;

    // The reply to one request (a RESP array of bulk strings):
    //   SENTINEL get-master-addr-by-name <name>   [host, port] of the master it believes in,
    //                                              a nil array for a name it does not monitor
    //   PING                                       +PONG
    //   SUBSCRIBE +switch-master                   the confirmation (the world then sends
    //                                              this connection switch_message()s)
    // anything else an error reply.
    std::string answer(std::string_view request) const;
    // The request subscribes to +switch-master.
    static bool subscribes_to_switches(std::string_view request);
    // What the sentinel publishes on +switch-master when it learns that `to` replaced `from`:
    // "<name> <old host> <old port> <new host> <new port>", as a pub/sub message.
    std::string switch_message(std::uint8_t from, std::uint8_t to) const;

    // A failover promoted `node`: this sentinel names it from now on.
    void believe(std::uint8_t node) noexcept { master_ = node; }
    // The news of the failover numbered `epoch` (Sentinel's configuration epoch): news older
    // than what this sentinel already knows, arriving late, changes nothing.
    void learn(std::uint8_t node, std::uint32_t epoch) noexcept {
        if (epoch <= epoch_) return;
        epoch_ = epoch;
        master_ = node;
    }
    std::uint8_t believed_master() const noexcept { return master_; }
    std::uint8_t id() const noexcept { return id_; }

private:
    std::uint8_t id_ = 0;
    std::string master_name_;
    std::uint8_t master_ = 0;
    std::uint32_t epoch_ = 0;
};

}  // namespace edgelock::sim
