// contention: how the lock serves many waiters on one name.
//
// Starts its own redis-server (tests/support, no persistence: nothing here restarts), then W
// workers, each a thread with its own connection (a blocking edgelock::hiredis::lock on the
// same name), loop acquire (wait up to 10 s) -> hold H ms -> release for S seconds. It prints:
//   acquisitions/s, and its ratio to the ideal 1 / (H + one round trip), the round trip being
//     the median of PINGs on one connection measured first;
//   acquire wait p50/p99: from the acquire() call to its return;
//   handover gap p50/p99: from the start of one holder's release() to the next holder's
//     acquire() returning (the key is deleted somewhere within the release call, so this
//     includes up to one round trip of the release itself);
//   per-worker min/max acquisitions, and max/min.
// Waiters poll: a busy acquire backs off (the lock's retry_delay) and tries again, so who gets
// the lock next and how soon depends on backoff, not on when it became free. These figures
// are the baseline a notified, in-order handover is measured against.
//
// Usage: contention [--workers W] [--hold-ms H] [--seconds S]
#include <hiredis.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "edgelock/hiredis_lock.hpp"
#include "edgelock/testing/redis_process.hpp"

namespace {

using clock_type = std::chrono::steady_clock;

struct options {
    int workers = 8;
    int hold_ms = 10;
    double seconds = 5.0;
};

struct acquisition {
    std::int64_t called_us = 0;    // acquire() called
    std::int64_t acquired_us = 0;  // acquire() returned with the lock
    std::int64_t release_us = 0;   // release() called
};

std::int64_t now_us() {
    return std::chrono::duration_cast<std::chrono::microseconds>(clock_type::now().time_since_epoch()).count();
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
bool work(const std::string& url, const options& o, std::int64_t end_us, std::vector<acquisition>& out) {
    edgelock::hiredis::lock_options lo;
    lo.name = "bench:contention";
    lo.instances = {url};
    lo.ttl_ms = 10'000;
    lo.restart_guard = false;
    edgelock::hiredis::lock lock;
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
void report(const options& o, const std::vector<std::vector<acquisition>>& per_worker, double rtt_us,
            std::int64_t end_us) {
    std::vector<acquisition> all;
    std::size_t fewest = SIZE_MAX;
    std::size_t most = 0;
    for (const auto& w : per_worker) {
        all.insert(all.end(), w.begin(), w.end());
        fewest = std::min(fewest, w.size());
        most = std::max(most, w.size());
    }
    std::sort(all.begin(), all.end(), [](const acquisition& a, const acquisition& b) { return a.acquired_us < b.acquired_us; });
    std::vector<std::int64_t> waits;
    std::vector<std::int64_t> gaps;
    for (std::size_t i = 0; i < all.size(); ++i) {
        waits.push_back(all[i].acquired_us - all[i].called_us);
        if (i > 0) gaps.push_back(all[i].acquired_us - all[i - 1].release_us);
    }
    const auto in_window = std::count_if(all.begin(), all.end(), [end_us](const acquisition& a) {
        return a.acquired_us < end_us;
    });
    const double rate = static_cast<double>(in_window) / o.seconds;
    const double ideal = 1e6 / (o.hold_ms * 1000.0 + rtt_us);
    std::printf("polling mode: %d workers, hold %d ms, %.1f s, round trip %.0f us\n", o.workers, o.hold_ms,
                o.seconds, rtt_us);
    std::printf("  acquisitions/s            %8.1f   (ideal 1/(hold + round trip) %.1f, ratio %.2f)\n", rate,
                ideal, rate / ideal);
    std::printf("  acquire wait p50/p99      %8.2f / %.2f ms\n", percentile(waits, 0.50) / 1000,
                percentile(waits, 0.99) / 1000);
    std::printf("  handover gap p50/p99      %8.2f / %.2f ms\n", percentile(gaps, 0.50) / 1000,
                percentile(gaps, 0.99) / 1000);
    char spread[32] = "inf";
    if (fewest > 0) std::snprintf(spread, sizeof spread, "%.1f", static_cast<double>(most) / static_cast<double>(fewest));
    std::printf("  per worker min/max        %8zu / %zu   (max/min %s)\n", fewest, most, spread);
}

}  // namespace

int main(int argc, char** argv) {
    options o;
    if (!parse_options(argc, argv, o)) {
        std::fprintf(stderr, "usage: contention [--workers W] [--hold-ms H] [--seconds S]\n");
        return 2;
    }
    const edgelock::testing::redis_server server({}, edgelock::testing::persistence::volatile_);
    const double rtt_us = round_trip_us(server);
    const std::int64_t end_us = now_us() + static_cast<std::int64_t>(o.seconds * 1e6);
    std::vector<std::vector<acquisition>> per_worker(static_cast<std::size_t>(o.workers));
    std::vector<char> ok(per_worker.size(), 0);
    std::vector<std::thread> threads;
    for (std::size_t w = 0; w < per_worker.size(); ++w) {
        threads.emplace_back([&, w] { ok[w] = work(server.url(), o, end_us, per_worker[w]) ? 1 : 0; });
    }
    for (std::thread& t : threads) t.join();
    if (std::count(ok.begin(), ok.end(), 0) > 0) {
        std::fprintf(stderr, "contention: a worker's lock failed\n");
        return 1;
    }
    report(o, per_worker, rtt_us, end_us);
    return 0;
}
