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
//
// No allocation, no I/O, no clock.
#pragma once

#include <cstdint>

namespace edgelock::session {

enum class fault_point : std::uint8_t { close_after_reply };

class fault_points {
public:
    // Whether point `p`, reached now, fires.
    virtual bool fire(fault_point p) noexcept = 0;

protected:
    ~fault_points() = default;
};

}  // namespace edgelock::session
