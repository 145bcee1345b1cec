// SPDX-License-Identifier: Apache-2.0
// order_grab: drivers race for one ride order (the 抢单 scenario), with edgelock's blocking client.
//
//   order_grab [redis://127.0.0.1:6379] [--no-lock] [--no-fencing]
//
// Part 1. Eight drivers see order 1001 open and press "grab" at the same moment. Each reads
// the order, spends 50 ms on other business, and takes the order if it was still open. Each
// driver is a thread with its own lock object, as if on its own phone or server. With the
// lock exactly one driver wins; with --no-lock several are told they won the same order.
//
// Part 2. Fencing. Driver A takes the lock and checks it still holds it, then pauses for
// longer than the lease (a GC pause, a frozen VM: nothing of A runs, not even its renewal).
// The lease ends, driver B takes the lock with a higher fence token and assigns the order to
// itself. Then A wakes and writes, believing it still holds the lock. The order table keeps the
// highest fence token it has accepted and refuses A's lower one; with --no-fencing it
// accepts A's write and the order silently changes hands.
//
// Exits 0 when exactly one driver won and the late write was refused, 1 otherwise.
#include <chrono>
#include <csignal>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "app_store.hpp"
#include "edgelock/blocking_lock.hpp"

namespace {

using namespace std::chrono_literals;

constexpr int drivers = 8;
const std::string order = "order:1001";

// Takes the order for `driver` only if `fence` is higher than any fence the order has seen:
// what the storage must do for fencing tokens to mean anything. Returns 1 (written) or 0.
const std::string fenced_assign =
    "local seen = tonumber(redis.call('HGET', KEYS[1], 'fence') or '0')\n"
    "if ARGV[3] == 'check' and tonumber(ARGV[1]) <= seen then return 0 end\n"
    "redis.call('HSET', KEYS[1], 'fence', ARGV[1], 'driver', ARGV[2], 'status', 'taken')\n"
    "return 1\n";

edgelock::blocking::lock_options lock_options(const std::string& url) {
    edgelock::blocking::lock_options options;
    options.name = order + ":lock";
    options.instances = {url};
    options.ttl_ms = 5'000;
    options.fencing = true;
    return options;
}

// Releases every driver thread at once, so their reads really race.
class start_line {
public:
    void wait() {
        std::unique_lock<std::mutex> held(mutex_);
        changed_.wait(held, [this] { return open_; });
    }
    void open() {
        std::lock_guard<std::mutex> guard(mutex_);
        open_ = true;
        changed_.notify_all();
    }

private:
    std::mutex mutex_;
    std::condition_variable changed_;
    bool open_ = false;
};

// One driver's grab, as the seed's OrderService.grab(): read, think, write if still open.
bool grab(const std::string& url, int driver, bool use_lock, start_line& start) {
    app_store db(url);
    edgelock::blocking::lock lock;
    if (lock.open(lock_options(url))) return false;
    start.wait();
    if (use_lock && lock.try_acquire()) return false;  // busy: another driver is grabbing it
    bool won = false;
    if (db.hget(order, "status") == "open") {
        std::this_thread::sleep_for(50ms);  // other business: pricing, route, notifications
        db.command({"HSET", order, "status", "taken", "driver", std::to_string(driver)});
        won = true;
    }
    // The order is decided either way; a release that fails leaves the key to end with its TTL.
    if (use_lock) (void)lock.release();
    return won;
}

int race(const std::string& url, bool use_lock) {
    app_store db(url);
    db.del(order);
    db.command({"HSET", order, "status", "open"});
    start_line start;
    std::vector<int> won(drivers, 0);
    std::vector<std::thread> threads;
    for (int d = 0; d < drivers; ++d) {
        threads.emplace_back([&, d] { won[d] = grab(url, d + 1, use_lock, start) ? 1 : 0; });
    }
    start.open();
    for (std::thread& t : threads) t.join();
    int winners = 0;
    std::string names;
    for (int d = 0; d < drivers; ++d) {
        if (won[d] == 0) continue;
        ++winners;
        names += (names.empty() ? "" : ", ") + std::to_string(d + 1);
    }
    std::printf(
        "part 1, %d drivers grab %s %s: %d told they won (driver %s), the order is driver %s's\n",
        drivers, order.c_str(), use_lock ? "with the lock" : "WITHOUT the lock", winners,
        names.c_str(), db.hget(order, "driver").c_str());
    return winners;
}

bool fencing(const std::string& url, bool check_fence) {
    app_store db(url);
    db.del(order);
    db.command({"HSET", order, "status", "open"});
    const std::string check = check_fence ? "check" : "trust";

    edgelock::blocking::lock_options a_options = lock_options(url);
    a_options.ttl_ms = 1'000;
    a_options.watchdog = false;  // A is frozen: its renewal thread does not run either
    edgelock::blocking::lock a;
    edgelock::blocking::hold a_hold;
    if (a.open(a_options) || a.acquire(0ms, &a_hold) || !a.held()) return false;
    std::printf(
        "part 2, driver A holds the lock, fence token %lld; A pauses for 1.5 s (lease 1 s)\n",
        static_cast<long long>(a_hold.fence));
    const auto a_wakes = std::chrono::steady_clock::now() + 1500ms;

    edgelock::blocking::lock b;
    edgelock::blocking::hold b_hold;
    if (b.open(lock_options(url)) || b.acquire(5s, &b_hold)) return false;
    const long long b_written =
        db.eval(fenced_assign, order, {std::to_string(b_hold.fence), "B", check});
    std::printf(
        "        driver B took the lock after A's lease ended, fence %lld, and assigned the "
        "order: %s\n",
        static_cast<long long>(b_hold.fence), b_written == 1 ? "accepted" : "refused");
    (void)b.release();  // B's write is done; a release that fails leaves the key to its TTL

    std::this_thread::sleep_until(a_wakes);
    const long long a_written =
        db.eval(fenced_assign, order, {std::to_string(a_hold.fence), "A", check});
    std::printf("        driver A wakes and writes with fence %lld: %s; the order is driver %s's\n",
                static_cast<long long>(a_hold.fence), a_written == 1 ? "ACCEPTED" : "refused",
                db.hget(order, "driver").c_str());
    (void)a.release();  // returns expired: A's lease ran out while it slept, nothing to undo
    return b_written == 1 && a_written == 0;
}

}  // namespace

int main(int argc, char** argv) {
    std::signal(SIGPIPE, SIG_IGN);  // a reset Redis connection is an error code, not the end
    std::string url = "redis://127.0.0.1:6379";
    bool use_lock = true;
    bool check_fence = true;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--no-lock") use_lock = false;
        else if (arg == "--no-fencing") check_fence = false;
        else url = arg;
    }
    const int winners = race(url, use_lock);
    const bool stale_refused = fencing(url, check_fence);
    const bool ok = winners == 1 && stale_refused;
    std::printf(
        "order_grab: %s: %d of %d drivers won the order; the paused driver's late write was %s\n",
        ok ? "OK" : "FAILED", winners, drivers, stale_refused ? "refused" : "NOT refused");
    return ok ? 0 : 1;
}
