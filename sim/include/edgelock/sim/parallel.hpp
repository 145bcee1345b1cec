// SPDX-License-Identifier: Apache-2.0
// edgelock sim: independent runs on several cores, results in a fixed order.
//
// Runs are independent worlds (each owns its state and its generators), so they can run on
// any thread in any order; only the order in which their results are reported must not
// depend on the threads. run_in_order() computes task(0..count-1) on `jobs` threads and
// hands every result to `deliver` on the calling thread, in index order, so the output of
// `--jobs 8` is byte-identical to `--jobs 1`. `deliver` returns false to stop: no result
// after that index is reported, and workers stop taking new indices.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

namespace edgelock::sim {

// The default for --jobs: the CPU count (at least 1).
unsigned default_jobs() noexcept;

template <typename Result>
void run_in_order(std::size_t count, unsigned jobs, const std::function<Result(std::size_t)>& task,
                  const std::function<bool(std::size_t, Result&&)>& deliver) {
    if (jobs <= 1 || count <= 1) {
        for (std::size_t i = 0; i < count; ++i) {
            if (!deliver(i, task(i))) return;
        }
        return;
    }
    std::mutex mutex;
    std::condition_variable ready;
    std::map<std::size_t, Result> done;  // finished, not yet delivered
    std::atomic<std::size_t> next{0};
    std::atomic<bool> stop{false};
    // Workers stay at most this far ahead of delivery, so memory stays bounded.
    const std::size_t ahead_max = static_cast<std::size_t>(jobs) * 64;
    std::size_t delivered = 0;
    std::condition_variable room;

    const auto work = [&] {
        for (;;) {
            const std::size_t i = next.fetch_add(1);
            if (i >= count || stop.load()) return;
            {
                std::unique_lock<std::mutex> lock(mutex);
                room.wait(lock, [&] { return stop.load() || i < delivered + ahead_max; });
                if (stop.load()) return;
            }
            Result r = task(i);
            std::lock_guard<std::mutex> lock(mutex);
            done.emplace(i, std::move(r));
            ready.notify_one();
        }
    };
    std::vector<std::thread> workers;
    const unsigned threads = static_cast<unsigned>(std::min<std::size_t>(jobs, count));
    for (unsigned t = 0; t < threads; ++t) workers.emplace_back(work);
    for (std::size_t i = 0; i < count; ++i) {
        Result r;
        {
            std::unique_lock<std::mutex> lock(mutex);
            ready.wait(lock, [&] { return done.count(i) != 0; });
            r = std::move(done.at(i));
            done.erase(i);
            delivered = i + 1;
        }
        room.notify_all();
        if (!deliver(i, std::move(r))) {
            stop.store(true);
            room.notify_all();
            break;
        }
    }
    for (std::thread& t : workers) t.join();
}

}  // namespace edgelock::sim
