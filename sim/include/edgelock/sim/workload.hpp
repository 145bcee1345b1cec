// edgelock sim: a client process, the real edgelock::lock and the job it protects.
//
// Each client drives one edgelock::lock exactly as a transport does: it writes the bytes
// write_request() produces onto its simulated connections, hands each reply back through
// on_reply() in order, reports a failed connection with on_io_error(), and arms one timer
// for the earliest of next_deadline_ms() and its own deadlines. All lock time is the
// client's monotonic clock. Connections fail by reset (noticed one link latency later) or by
// silence (noticed when a request has waited io_timeout_ms); the client then reconnects with
// a small backoff, to the current master when the configuration uses Sentinel.
//
// The job (the seeds' order grab / stock deduction) runs in a loop:
//   think -> acquire(wait) -> read the resource -> work -> check held(now) -> write value-1
//         -> release -> think ...
// A lost lock or an unanswered resource request ends the job early; the client never
// writes unless held() said yes just before (a pause right after that check is exactly
// Kleppmann's counterexample, and the simulator lets a fault land there).
//
// A client may be deliberately broken for the mutation tests (see behaviour); then the
// checks must catch it.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <string>

#include "edgelock/lock.hpp"
#include "edgelock/sim/checker.hpp"
#include "edgelock/sim/clock.hpp"
#include "edgelock/sim/network.hpp"
#include "edgelock/sim/prng.hpp"
#include "edgelock/sim/schedule.hpp"

namespace edgelock::sim {

class world;

enum class behaviour : std::uint8_t {
    correct,
    ignores_validity,         // writes without checking held(), ignores `lost`
    skips_fencing,            // sends its resource requests without the fence token
    deletes_without_compare,  // releases with a plain DEL instead of compare-and-delete
    never_releases,           // keeps the lock (and renews it) forever after its first job
};
const char* to_string(behaviour b) noexcept;
bool parse_behaviour(std::string_view text, behaviour& out) noexcept;

class client {
public:
    client(world& w, std::uint8_t id, const lock_config& config, const process_clocks& clocks,
           prng rng, behaviour b);
    client(const client&) = delete;
    client& operator=(const client&) = delete;

    void start(std::int64_t first_job_ms);
    void on_reply(std::uint8_t node, std::uint32_t epoch, std::string&& bytes);
    void on_resource_reply(message&& m);
    void on_timer(std::uint32_t generation);
    void on_resume();
    void on_probe(std::uint32_t generation);
    // Samples the lease oracle: when held() is true now, the world checks the lease is
    // backed. A paused process observes nothing.
    void observe();
    void pause(std::int64_t until_us);
    // The connection to `node` with `epoch` was reset; the client notices at at_us.
    void connection_reset(std::uint8_t node, std::uint32_t epoch, std::int64_t at_us);
    // A clock rate or step changed: timers must be converted again.
    void clocks_changed();
    // The run ends: close the open hold, if any.
    void finish(std::int64_t end_us);

    process_clocks& clocks() noexcept { return clocks_; }
    const process_clocks& clocks() const noexcept { return clocks_; }
    bool paused() const noexcept;
    std::uint32_t anomalies() const noexcept { return anomalies_; }

private:
    enum class job : std::uint8_t { thinking, acquiring, reading, working, writing, releasing, keeping };
    enum class step : std::uint8_t { none, send_read, start_work, send_write };

    struct connection {
        enum class state : std::uint8_t { up, connecting, down };
        state st = state::down;
        std::uint8_t node = 0;
        std::uint32_t epoch = 0;
        std::int64_t due_ms = 0;             // connecting: done; down: next attempt
        std::int64_t reset_at_us = -1;       // a reset of `reset_epoch` arrives then
        std::uint32_t reset_epoch = 0;
        std::deque<std::int64_t> sent_ms;    // requests in flight, oldest first
    };

    struct delivery {
        std::uint8_t node = 0;  // reply: the sender; resource replies ignore it
        message m;
    };

    std::int64_t now_us() const noexcept;
    std::int64_t now_ms() const noexcept;
    std::int64_t to_true_us(std::int64_t local_ms) const noexcept;

    void run();
    void pump();
    void drain();
    bool send_requests();
    void react(const event& e);
    void reschedule();
    void anomaly(const char* what, errc code);

    void service_connections();
    void fail_connection(std::uint8_t instance, const char* why);
    void handle_reply(std::uint8_t node, std::uint32_t epoch, const std::string& bytes);
    void handle_resource_reply(const message& m);

    void run_job_timer();
    void run_step(step s);
    void start_job();
    void on_acquired(const event& e);
    void on_lost(const event& e);
    void send_read();
    void start_work();
    void check_and_write();
    void send_write();
    void finish_job();
    void think();
    void close_hold(std::int64_t end_us, hold_end why);
    std::int64_t validity_end_us() const noexcept;
    void reach(point p);
    void schedule_probe();
    bool held_now();

    world& world_;
    std::uint8_t id_;
    lock lock_;
    std::string lock_name_;
    std::uint8_t instances_;
    process_clocks clocks_;
    prng rng_;
    behaviour behaviour_;

    std::array<connection, instances_max> conns_{};
    std::int64_t paused_until_us_ = 0;
    std::deque<delivery> inbox_;
    step pending_ = step::none;

    job job_ = job::thinking;
    std::int64_t job_due_ms_ = no_deadline_ms;
    bool holding_ = false;
    std::size_t hold_slot_ = 0;  // index of the open hold in the history
    std::uint32_t hold_index_ = 0;
    std::int64_t fence_ = 0;
    std::int64_t read_value_ = 0;
    std::int64_t check_us_ = 0;
    std::uint32_t request_id_ = 0;

    std::array<std::uint16_t, point_count> points_{};
    std::uint32_t timer_generation_ = 0;
    std::uint32_t probe_generation_ = 0;
    std::int64_t timer_at_us_ = -1;
    std::uint32_t anomalies_ = 0;
};

}  // namespace edgelock::sim
