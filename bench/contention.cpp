// SPDX-License-Identifier: Apache-2.0
// contention: how the lock serves many waiters on one name.
//
// Starts its own redis-server (tests/support, no persistence: nothing here restarts), then W
// workers, each a thread with its own connection (a blocking edgelock::blocking::lock on the
// same name), loop acquire (wait up to 10 s) -> hold H ms -> release for S seconds. It prints:
//   acquisitions/s, and its ratio to the ideal 1 / (H + one round trip), the round trip being
//     the median of PINGs on one connection measured first;
//   acquire wait p50/p99: from the acquire() call to its return;
//   handover gap p50/p99: from the start of one holder's release() to the next holder's
//     acquire() returning (the key is deleted somewhere within the release call, so this
//     includes up to one round trip of the release itself), and split where the releaser's
//     release() returned: the release's own round trip, and what follows it to the next
//     holder's acquire() returning (its wake-up and acquire round trip, less whatever of
//     them overlapped the release; negative when the next holder had the lock first);
//   per-worker min/max acquisitions, and max/min;
//   the gap over a raw hiredis lock cycle after H ms idle (SET NX PX and the compare-and-delete
//     script after sleeping H ms, 200 times, measured first): a handover is a release and an
//     acquire after a hold, each meeting an idle server, an idle thread and perhaps an idle
//     core.
// It runs twice, with the same W, H and S, on the same server (each run on a name of its own):
//   polling mode: a busy acquire backs off (the lock's retry_delay) and tries again, so who
//     gets the lock next and how soon depends on backoff, not on when it became free. This is
//     the baseline.
//   fair mode (lock_options::fair, edgelock/lock.hpp "Fair waiting"): waiters line up in Redis
//     and each release wakes the head of the line through its subscriber connection, so the
//     next holder is the longest waiter and starts one wake-up and one attempt after the key
//     is gone.
// Then the fair figures as ratios of the polling ones.
//
// Usage: contention [--workers W] [--hold-ms H] [--seconds S] [--only polling|fair]
#include <hiredis.h>

#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "edgelock/blocking_lock.hpp"
#include "edgelock/testing/redis_process.hpp"
#include "cycle_measure.hpp"

namespace {

using clock_type = std::chrono::steady_clock;

struct options {
    int workers = 8;
    int hold_ms = 10;
    double seconds = 5.0;
    std::string only;  // "", "polling" or "fair"
};

struct figures {
    double rate = 0;   // acquisitions/s within the window
    double ideal = 0;  // 1 / (hold + round trip)
    double wait_p50_ms = 0;
    double wait_p99_ms = 0;
    double gap_p50_ms = 0;
    double gap_p99_ms = 0;
    // The gap split at the releaser's release() returning: its round trip, and what follows
    // it (the next holder's wake-up and acquire round trip, less what overlapped the release).
    double release_p50_ms = 0;
    double release_p99_ms = 0;
    double after_release_p50_ms = 0;
    double after_release_p99_ms = 0;
    std::size_t fewest = 0;
    std::size_t most = 0;
};

struct acquisition {
    std::int64_t called_us = 0;    // acquire() called
    std::int64_t acquired_us = 0;  // acquire() returned with the lock
    std::int64_t release_us = 0;   // release() called
    std::int64_t released_us = 0;  // release() returned
};

std::int64_t now_us() {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               clock_type::now().time_since_epoch())
        .count();
}

bool parse_options(int argc, char** argv, options& o) {
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string flag = argv[i];
        const char* value = argv[i + 1];
        if (flag == "--workers") {
            o.workers = std::atoi(value);
        } else if (flag == "--hold-ms") {
            o.hold_ms = std::atoi(value);
        } else if (flag == "--seconds") {
            o.seconds = std::atof(value);
        } else if (flag == "--only" &&
                   (std::string(value) == "polling" || std::string(value) == "fair")) {
            o.only = value;
        } else {
            return false;
        }
    }
    return argc % 2 == 1 && o.workers >= 1 && o.workers <= 64 && o.hold_ms >= 0 && o.seconds > 0;
}

// The median round trip of PING on one connection, in microseconds.
double round_trip_us(const edgelock::testing::redis_server& server) {
    redisContext* c = redisConnect("127.0.0.1", server.port());
    if (c == nullptr || c->err != 0) return 0;
    std::vector<std::int64_t> samples;
    for (int i = 0; i < 2000; ++i) {
        const std::int64_t start = now_us();
        auto* reply = static_cast<redisReply*>(redisCommand(c, "PING"));
        samples.push_back(now_us() - start);
        freeReplyObject(reply);
    }
    redisFree(c);
    std::sort(samples.begin(), samples.end());
    return static_cast<double>(samples[samples.size() / 2]);
}

// One worker's loop; false when its lock could not be opened or failed other than busy.
bool work(const std::string& url, const options& o, bool fair, std::int64_t end_us,
          std::vector<acquisition>& out) {
    edgelock::blocking::lock_options lo;
    lo.name = fair ? "bench:contention:fair" : "bench:contention";
    lo.instances = {url};
    lo.ttl_ms = 10'000;
    lo.restart_guard = false;
    lo.fair = fair;
    edgelock::blocking::lock lock;
    if (lock.open(lo)) return false;
    while (now_us() < end_us) {
        acquisition a;
        a.called_us = now_us();
        const std::error_code ec = lock.acquire(std::chrono::seconds(10));
        if (ec) return ec == edgelock::errc::wait_timeout || ec == edgelock::errc::busy;
        a.acquired_us = now_us();
        std::this_thread::sleep_for(std::chrono::milliseconds(o.hold_ms));
        a.release_us = now_us();
        if (lock.release()) return false;
        a.released_us = now_us();
        out.push_back(a);
    }
    return true;
}

double percentile(std::vector<std::int64_t> values, double p) {
    if (values.empty()) return 0;
    std::sort(values.begin(), values.end());
    const auto at = static_cast<std::size_t>(p * static_cast<double>(values.size() - 1));
    return static_cast<double>(values[at]);
}

// Counts what was acquired within the window [start_us, end_us): workers still waiting at
// its end finish their turn, and that tail is not part of the rate.
figures measure(const options& o, const std::vector<std::vector<acquisition>>& per_worker,
                double rtt_us, std::int64_t end_us) {
    std::vector<acquisition> all;
    std::size_t fewest = SIZE_MAX;
    std::size_t most = 0;
    for (const auto& w : per_worker) {
        all.insert(all.end(), w.begin(), w.end());
        fewest = std::min(fewest, w.size());
        most = std::max(most, w.size());
    }
    std::sort(all.begin(), all.end(), [](const acquisition& a, const acquisition& b) {
        return a.acquired_us < b.acquired_us;
    });
    std::vector<std::int64_t> waits;
    std::vector<std::int64_t> gaps;
    std::vector<std::int64_t> releases;
    std::vector<std::int64_t> after_releases;
    for (std::size_t i = 0; i < all.size(); ++i) {
        waits.push_back(all[i].acquired_us - all[i].called_us);
        releases.push_back(all[i].released_us - all[i].release_us);
        if (i == 0) continue;
        gaps.push_back(all[i].acquired_us - all[i - 1].release_us);
        after_releases.push_back(all[i].acquired_us - all[i - 1].released_us);
    }
    const auto in_window = std::count_if(
        all.begin(), all.end(), [end_us](const acquisition& a) { return a.acquired_us < end_us; });
    figures f;
    f.rate = static_cast<double>(in_window) / o.seconds;
    f.ideal = 1e6 / (o.hold_ms * 1000.0 + rtt_us);
    f.wait_p50_ms = percentile(waits, 0.50) / 1000;
    f.wait_p99_ms = percentile(waits, 0.99) / 1000;
    f.gap_p50_ms = percentile(gaps, 0.50) / 1000;
    f.gap_p99_ms = percentile(gaps, 0.99) / 1000;
    f.release_p50_ms = percentile(releases, 0.50) / 1000;
    f.release_p99_ms = percentile(releases, 0.99) / 1000;
    f.after_release_p50_ms = percentile(after_releases, 0.50) / 1000;
    f.after_release_p99_ms = percentile(after_releases, 0.99) / 1000;
    f.fewest = fewest;
    f.most = most;
    return f;
}

// Raw hiredis lock cycles (SET NX PX, then the compare-and-delete script by digest: what a
// lock's acquire and release cost with nothing around them) after the connection, the server
// and this thread sat idle for `idle_ms`, as a handover meets them after a hold (an idle core
// may be slow to wake, a virtual one slower): p50 and p99, in microseconds.
struct idle_cycles {
    double p50_us = 0;
    double p99_us = 0;
};

idle_cycles raw_cycles_after_idle(const edgelock::testing::redis_server& server, int idle_ms) {
    edgelock::bench::raw_connection raw(server.port());
    std::vector<std::int64_t> samples;
    for (int i = 0; i < 200; ++i) {
        const std::string token = edgelock::bench::hex_token();
        std::this_thread::sleep_for(std::chrono::milliseconds(idle_ms));
        const std::int64_t start = now_us();
        raw.cycle("bench:contention:raw", token);
        samples.push_back(now_us() - start);
    }
    return {percentile(samples, 0.50), percentile(samples, 0.99)};
}

double spread(const figures& f) {
    return f.fewest > 0 ? static_cast<double>(f.most) / static_cast<double>(f.fewest) : HUGE_VAL;
}

void print(const char* mode, const figures& f) {
    std::printf("%s mode\n", mode);
    std::printf(
        "  acquisitions/s            %8.1f   (ideal 1/(hold + round trip) %.1f, ratio %.2f)\n",
        f.rate, f.ideal, f.rate / f.ideal);
    std::printf("  acquire wait p50/p99      %8.2f / %.2f ms\n", f.wait_p50_ms, f.wait_p99_ms);
    std::printf("  handover gap p50/p99      %8.2f / %.2f ms\n", f.gap_p50_ms, f.gap_p99_ms);
    std::printf("    release() p50/p99       %8.2f / %.2f ms\n", f.release_p50_ms,
                f.release_p99_ms);
    std::printf("    after it returned       %8.2f / %.2f ms\n", f.after_release_p50_ms,
                f.after_release_p99_ms);
    std::printf("  per worker min/max        %8zu / %zu   (max/min %.2f)\n", f.fewest, f.most,
                spread(f));
}

void print_ratios(const figures& fair, const figures& polling) {
    std::printf("fair / polling\n");
    std::printf("  acquisitions/s            %8.2f\n", fair.rate / polling.rate);
    std::printf("  acquire wait p50 / p99    %8.2f / %.2f\n",
                fair.wait_p50_ms / polling.wait_p50_ms, fair.wait_p99_ms / polling.wait_p99_ms);
    std::printf("  handover gap p50 / p99    %8.2f / %.2f\n", fair.gap_p50_ms / polling.gap_p50_ms,
                fair.gap_p99_ms / polling.gap_p99_ms);
    std::printf("  per worker max/min        %8.3f\n", spread(fair) / spread(polling));
}

// One mode's run: W workers for S seconds. False when a worker's lock failed.
bool run(const edgelock::testing::redis_server& server, const options& o, bool fair, double rtt_us,
         figures& out) {
    const std::int64_t end_us = now_us() + static_cast<std::int64_t>(o.seconds * 1e6);
    std::vector<std::vector<acquisition>> per_worker(static_cast<std::size_t>(o.workers));
    std::vector<char> ok(per_worker.size(), 0);
    std::vector<std::thread> threads;
    for (std::size_t w = 0; w < per_worker.size(); ++w) {
        threads.emplace_back(
            [&, w] { ok[w] = work(server.url(), o, fair, end_us, per_worker[w]) ? 1 : 0; });
    }
    for (std::thread& t : threads) t.join();
    if (std::count(ok.begin(), ok.end(), 0) > 0) return false;
    out = measure(o, per_worker, rtt_us, end_us);
    return true;
}

}  // namespace

int main(int argc, char** argv) {
    options o;
    if (!parse_options(argc, argv, o)) {
        std::fprintf(
            stderr,
            "usage: contention [--workers W] [--hold-ms H] [--seconds S] [--only polling|fair]\n");
        return 2;
    }
    const edgelock::testing::redis_server server({}, edgelock::testing::persistence::volatile_);
    const double rtt_us = round_trip_us(server);
    const idle_cycles idle = raw_cycles_after_idle(server, o.hold_ms);
    std::printf(
        "%d workers, hold %d ms, %.1f s per mode, round trip %.0f us; raw hiredis lock cycle "
        "after %d ms idle: p50 %.0f us, p99 %.0f us\n",
        o.workers, o.hold_ms, o.seconds, rtt_us, o.hold_ms, idle.p50_us, idle.p99_us);
    figures polling;
    figures fair;
    for (const bool fair_mode : {false, true}) {
        if (!o.only.empty() && (o.only == "fair") != fair_mode) continue;
        figures& f = fair_mode ? fair : polling;
        if (!run(server, o, fair_mode, rtt_us, f)) {
            std::fprintf(stderr, "contention: a worker's lock failed (%s mode)\n",
                         fair_mode ? "fair" : "polling");
            return 1;
        }
        print(fair_mode ? "fair" : "polling", f);
        // A handover is at least a lock cycle's two round trips after a hold: the release's
        // and the next holder's acquire (fair: and the wake-up between them).
        std::printf("  gap / raw cycle after idle %7.2f / %.2f   (p50 / p99)\n",
                    f.gap_p50_ms * 1000 / idle.p50_us, f.gap_p99_ms * 1000 / idle.p99_us);
    }
    if (o.only.empty()) print_ratios(fair, polling);
    return 0;
}
