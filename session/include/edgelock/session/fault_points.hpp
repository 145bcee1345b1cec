// SPDX-License-Identifier: Apache-2.0
// edgelock session: fault points, places in the session's own code where a simulation forces
// a rare path at a chosen instant (FoundationDB's BUGGIFY), so that the paths random fault
// schedules almost never build run in every soak. A client passes none (connection_setup's
// `faults` stays null), and each point then costs one pointer test; only the simulator
// passes one, and decides when each point fires.
//
//   close_after_reply   connection_driver::on_bytes: the connection fails (as if the server
//                       closed it) right after an answer was handed to the client and before
//                       anything else is read or written on it: what the answer led to (a
//                       claim's WAIT, the next request of a round) goes on the next
//                       connection, or is given up
//   delay_wait          write_requests (lock_traffic.hpp): a WAIT the lock is about to write
//                       is held back for delay_ms() (connection::holds_wait), as a process
//                       starved of the CPU between a claim's reply and its WAIT would: the
//                       round may be decided, the connection lost or the master failed over
//                       before it goes, and a WAIT still unwritten then must not go at all
//   late_node_start     lock_links::node_read: the restart guard's notice of the node's start
//                       is not told when the connection read it but at the lock's next write
//                       on that link (lock_links::hear_late_start), as a client whose links
//                       connect on demand hears it when an attempt's first request makes the
//                       connection: after the attempt began, its timers ran, other links
//                       answered
//   fail_map_read       cluster_links::read_answered: a CLUSTER SLOTS answer is not read (as
//                       if the node answered an error): the map stays as it was, stale, until
//                       a read after map_refresh's gap, and the locks meet MOVED and ASK
//                       meanwhile
//
// No allocation, no I/O, no clock.
#pragma once

#include <cstdint>

namespace edgelock::session {

enum class fault_point : std::uint8_t {
    close_after_reply,
    delay_wait,
    late_node_start,
    fail_map_read,
};
inline constexpr std::uint8_t fault_point_count = 4;

// The point's name, as listed above.
constexpr const char* to_string(fault_point p) noexcept {
    switch (p) {
        case fault_point::close_after_reply: return "close_after_reply";
        case fault_point::delay_wait: return "delay_wait";
        case fault_point::late_node_start: return "late_node_start";
        case fault_point::fail_map_read: return "fail_map_read";
    }
    return "unknown";
}

class fault_points {
public:
    // Whether point `p`, reached now, fires.
    virtual bool fire(fault_point p) noexcept = 0;
    // How long a delaying point that fired (delay_wait) holds what it delays, in ms (> 0).
    virtual std::int64_t delay_ms(fault_point p) noexcept = 0;

protected:
    ~fault_points() = default;
};

}  // namespace edgelock::session
