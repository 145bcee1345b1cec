// SPDX-License-Identifier: Apache-2.0
// A lock holder for the nemesis runner: one process the runner can SIGSTOP, whose holds and
// writes to a shared fenced store are logged with CLOCK_MONOTONIC microseconds (one clock for
// every process on this machine), so the runner can judge overlap, stale writes and liveness
// from the logs alone.
//
//   nemesis_holder key=value ...
//     id=A log=<file> store=<file> name=<lock name> ttl=<ms> fencing=0|1 guard=0|1
//     wait=<replicas for WAIT> instances=<url,url,...> | sentinels=<url,...> master=<name>
//     | cluster=<seed url,...>
//     holds=<count> work_ms=<ms> step_ms=<ms> gate=0|1 delay_write=0|1 acquire_wait_ms=<ms>
//
// Each hold: acquire (waiting), print "held <fence>", then every step_ms while held() write
// the fence token to the store, for work_ms; print "released" after release(). With gate=1
// the first hold checks held(), prints "checked" and waits for a line on stdin before its
// first write: the runner freezes the process there, so the write goes out on the strength
// of a check made before the pause (Kleppmann's GC pause). With delay_write=1 the first
// hold, held() checked, prints "sent" and ends at once (its write is in the network); after
// the release it waits for a line on stdin (the network delivering it) and writes, logged as
// "landed": the runner lands it once the next holder has written (S2).
//
// Log lines (one per event, appended):
//   hold <id> <fence> <t_us>          after acquire() returned ok
//   write <id> <fence> <t_us> <0|1> <checked_us>
//                                     t taken under the store's lock; 1 = accepted; checked_us
//                                     read just after the held() check the write followed
//   landed <id> <fence> <t_us> <0|1> <t_us>
//                                     the same for the write delivered late (delay_write=1)
//   lost <id> <t_us>                  held() found false during the work
//   end <id> <t_us>                   before release()
//   fail <id> <t_us> <message>        acquire() failed
#include <chrono>
#include <cstdint>
#include <iostream>
#include <string>
#include <thread>

#include "edgelock/blocking_lock.hpp"
#include "nemesis_holder_common.hpp"

namespace {

using edgelock::nemesis::event_log;
using edgelock::nemesis::holder_args;
using edgelock::nemesis::holder_settings;
using edgelock::nemesis::land_delayed_write;
using edgelock::nemesis::logged_write;
using edgelock::nemesis::monotonic_us;

edgelock::blocking::lock_options options_from(const holder_args& args) {
    const holder_settings settings = edgelock::nemesis::settings_from(args);
    edgelock::blocking::lock_options options;
    options.name = settings.name;
    options.instances = settings.instances;
    options.sentinels = settings.sentinels;
    options.cluster = settings.cluster;
    if (!settings.sentinels.empty()) options.master_name = settings.master_name;
    options.ttl_ms = settings.ttl_ms;
    options.fencing = settings.fencing;
    options.restart_guard = settings.restart_guard;
    options.replicas_to_wait = static_cast<std::uint8_t>(settings.replicas_to_wait);
    options.connect_timeout_ms = holder_settings::connect_timeout_ms;
    options.command_timeout_ms = holder_settings::command_timeout_ms;
    if (settings.attempt_timeout_ms > 0) options.attempt_timeout_ms = settings.attempt_timeout_ms;
    options.reconnect_delay_min_ms = holder_settings::reconnect_delay_min_ms;
    options.reconnect_delay_max_ms = holder_settings::reconnect_delay_max_ms;
    options.retry_delay_ms_min = holder_settings::retry_delay_ms_min;
    options.retry_delay_ms_max = holder_settings::retry_delay_ms_max;
    // What the lock's I/O did, on stderr (the runner keeps it beside the log), for reading
    // a run that went unexpectedly.
    options.on_event = [](const edgelock::blocking::lock_event& event) {
        std::cerr << monotonic_us() << " event " << static_cast<int>(event.kind) << " instance "
                  << static_cast<long long>(event.instance) << " "
                  << (event.code ? event.code.message() : "ok") << "\n";
    };
    return options;
}

// Writes while held() says yes, for work_ms. Returns false when the hold was lost.
bool work(edgelock::blocking::lock& lock, const holder_args& args, event_log& log,
          std::int64_t fence) {
    const std::string id = args.text("id");
    const std::int64_t until_us = monotonic_us() + args.number("work_ms", 500) * 1000;
    const auto step = std::chrono::milliseconds(args.number("step_ms", 20));
    while (monotonic_us() < until_us) {
        if (!lock.held()) {
            log.line("lost " + id + " " + std::to_string(monotonic_us()));
            return false;
        }
        logged_write(args, log, fence, monotonic_us());
        std::this_thread::sleep_for(step);
    }
    return true;
}

// The gated first write: held() is checked, then the runner freezes us before the write.
void gated_write(edgelock::blocking::lock& lock, const holder_args& args, event_log& log,
                 std::int64_t fence) {
    if (!lock.held()) return;
    const std::int64_t checked_us = monotonic_us();
    std::cout << "checked" << std::endl;
    std::string go;
    std::getline(std::cin, go);
    logged_write(args, log, fence, checked_us);
}

int run(const holder_args& args) {
    event_log log(args.text("log"));
    const std::string id = args.text("id");
    edgelock::blocking::lock lock;
    if (const auto ec = lock.open(options_from(args))) {
        log.line("fail " + id + " " + std::to_string(monotonic_us()) + " open: " + ec.message());
        std::cout << "open-failed " << ec.message() << std::endl;
        return 2;
    }
    const auto wait = std::chrono::milliseconds(args.number("acquire_wait_ms", 20'000));
    const std::int64_t holds = args.number("holds", 1);
    for (std::int64_t i = 0; i < holds; ++i) {
        edgelock::blocking::hold hold;
        if (const auto ec = lock.acquire(wait, &hold)) {
            log.line("fail " + id + " " + std::to_string(monotonic_us()) + " " + ec.message());
            std::cout << "failed " << ec.message() << std::endl;
            return 3;
        }
        log.line("hold " + id + " " + std::to_string(hold.fence) + " " +
                 std::to_string(monotonic_us()));
        std::cout << "held " << hold.fence << std::endl;
        if (i == 0 && args.number("gate", 0) != 0) gated_write(lock, args, log, hold.fence);
        // delay_write=1 (S2): the first write leaves while held and the job ends at once.
        const bool in_flight = i == 0 && args.number("delay_write", 0) != 0 && lock.held();
        if (in_flight) std::cout << "sent" << std::endl;
        if (in_flight || work(lock, args, log, hold.fence)) {
            log.line("end " + id + " " + std::to_string(monotonic_us()));
        }
        const std::error_code released = lock.release();
        std::cout << "released " << (released ? released.message() : "ok") << std::endl;
        if (in_flight) land_delayed_write(args, log, hold.fence);
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    holder_args args;
    if (!edgelock::nemesis::parse_holder_args(argc, argv, args)) {
        std::cerr << "usage: nemesis_holder key=value ... (see the source)" << std::endl;
        return 64;
    }
    return run(args);
}
