// SPDX-License-Identifier: Apache-2.0
// edgelock sim: fault schedules, the faults of the Kleppmann/antirez debate as data.
//
// A schedule is a list of faults. Each fault fires once, either at a true time or when a
// client reaches a point of its workload for the nth time (plus an offset): "pause client 0
// right after it checked it still holds the lock" is how a GC pause between the check and
// the write is written down, independent of how long the run took to get there.
//
// Schedules have a one-line text form that `edgelock-sim run --schedule` reads back, so a
// shrunk counterexample can be replayed from its printed command:
//
//   pause.c0@c0.checked#1+0,d=2500;partition.c0@t0,to=n3n4,d=4000;crash.n2@t1200,d=50,p=none
//
//   isolate.n0@c1.acquired#1+0,d=900;power_off.n2@t300,d=100,p=none;pause.n1@t50,d=400
//
//   evict.n0@c1.acquired#2+30,x=1
//
// kind.target@trigger then key=value pairs: d duration (ms), x amount (ms, ppm or per
// million, by kind), to the peers (nodes "n0n1", or "R" for the resource), p persistence,
// k count, wall=1 (clock_rate of the wall clock), rst=1 (loss seen as a reset, not a timeout).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace edgelock::sim {

// Points of a client's workload a fault can be tied to.
enum class point : std::uint8_t {
    acquire_sent,    // an acquire attempt's requests were written
    acquired,        // the `acquired` event arrived
    read_done,       // the resource answered the job's read
    checked,         // held() said yes; the write is about to go out
    write_sent,      // the write to the resource was sent
    release_called,  // the job called release()
    renew_sent,      // a watchdog renewal was written
};
inline constexpr std::size_t point_count = 7;
const char* to_string(point p) noexcept;

enum class fault_kind : std::uint8_t {
    pause,       // client or node: stops for d ms (GC, SIGSTOP); its messages wait in the socket
    slow_link,   // client: its messages to `to` sent within d ms get x ms more delay
    partition,   // client: messages between it and `to` are lost for d ms; connects fail
    drop_reply,  // client: the next k replies from `to` are lost (the connection breaks)
    loss,        // client: for d ms each message to or from `to` is lost with x per million
    crash,       // node: crashes, restarts after d ms (or later, with delayed restart)
    wall_step,   // client or node: the wall clock jumps by x ms
    clock_rate,  // client or node: the monotonic (or wall) clock runs at x ppm from now on
    repl_lag,    // node mask `to`: replication to those replicas gets x ms more delay for d ms
    power_off,   // node: its host dies without a word (no RST reaches anyone), back after d ms
    isolate,     // node (and the nodes in `to`, its side): cut off from the sentinels and the
                 // other nodes for d ms; clients reach it
    evict,       // node: memory pressure, a master evicts every key its maxmemory-policy may:
                 // x=0 a volatile-* policy (keys with a TTL: lock keys), x=1 allkeys-* (fence
                 // counters too). The node runs that policy from the start (INFO says so)
    slow_subscribe,  // client: its SUBSCRIBEs to `to` sent within d ms get x ms more delay
                     // (a subscription confirmed late: what was published before is lost);
                     // rst=1: its subscriber connections to `to` are reset first, so it
                     // subscribes again at once.
                     // Not a fault to heal from: every check, wakeup included, is judged
                     // across it
    migrate,         // node (Redis Cluster: the master serving the lock's slot): the slot moves to
                     // the master `to` as redis-cli moves it: SETSLOT IMPORTING on `to`, MIGRATING
    // on the node, then one MIGRATE per key, x ms apart, then SETSLOT NODE on both;
    // the other nodes hear of the new owner d ms later
    replace,  // node: another server takes its address (a VIP or DNS name re-pointed, a
              // container replaced) after d ms: a new run_id, up for x ms already, the data
              // its persistence p kept (none: empty); the old one's connections are reset
};
const char* to_string(fault_kind kind) noexcept;

enum class persistence : std::uint8_t { none, everysec, always };
const char* to_string(persistence p) noexcept;

struct trigger {
    bool at_point = false;
    std::int64_t at_ms = 0;   // time trigger: true time
    std::uint8_t client = 0;  // point trigger: whose workload
    point where = point::acquired;
    std::uint16_t nth = 1;       // the nth time that client reaches the point (from 1)
    std::int64_t offset_ms = 0;  // fires this long after the point
};

// One bit per node (configuration.hpp, nodes_max).
using node_mask = std::uint16_t;

struct fault {
    fault_kind kind = fault_kind::pause;
    trigger when;
    bool on_node = false;  // the target is a node (else a client)
    std::uint8_t target = 0;
    node_mask nodes = 0;    // peers as a node bit mask
    bool resource = false;  // slow_link: the resource is a peer
    std::int64_t duration_ms = 0;
    std::int64_t amount = 0;
    persistence persist = persistence::none;
    bool wall = false;
    bool reset = false;
    std::uint16_t count = 1;
    bool sentinels = false;  // partition: every sentinel is a peer too (to=S)

    bool operator==(const fault& other) const noexcept;
};

using schedule = std::vector<fault>;

std::string to_text(const fault& f);
std::string to_text(const schedule& s);
// Reads the text form back. On failure returns false and says why in `error`.
bool parse_schedule(std::string_view text, schedule& out, std::string& error);

}  // namespace edgelock::sim
