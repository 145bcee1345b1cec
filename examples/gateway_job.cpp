// SPDX-License-Identifier: Apache-2.0
// gateway_job: a periodic job that only one gateway of a fleet runs, with edgelock's asio
// client; the lost handler aborts a job whose lock is gone.
//
//   gateway_job [redis://127.0.0.1:6379] [--ignore-lost]
//
// Three gateways tick every 250 ms (three clients with their own connections, in one process
// here; in a fleet, one per machine). On a tick, an idle gateway tries the lock
// "fleet:upload-job" without waiting. The one that gets it runs the job, four steps of 100 ms,
// then commits the upload with its fence token; the others skip the tick. The lease is
// 600 ms, renewed by the watchdog every 200 ms while the job runs.
//
// During the third job the lock key is deleted behind the holder's back, as an operator's
// `edgelock release` or a failover to a replica that never saw the key would. The holder's next
// renewal finds its token gone, the lost handler runs, and the job is aborted before it
// commits. Meanwhile another gateway may already hold the lock and run the job again: the
// upload store only accepts fence tokens higher than any it has seen, so even a job that
// missed the loss could not overwrite newer work.
//
// Stops after five committed jobs. Exits 0 when they committed with increasing fence tokens
// and the job that lost its lock was aborted without committing, 1 otherwise. With
// --ignore-lost the handler only logs, the job runs on without its lock, and the run fails.
#include <asio/steady_timer.hpp>

#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "app_store.hpp"
#include "edgelock/async_client.hpp"

namespace {

using namespace std::chrono_literals;
using edgelock::async::client;
using edgelock::async::lock_handle;

constexpr int gateways = 3;
constexpr int job_steps = 4;
constexpr int commits_wanted = 5;
constexpr int stolen_job = 3;  // the job whose key is deleted after its first step
constexpr std::chrono::milliseconds tick_period = 250ms;
constexpr std::chrono::milliseconds step_time = 100ms;
const std::string job_lock = "fleet:upload-job";

// Where finished uploads go. It refuses a commit whose fence is not above the last one.
struct upload_store {
    std::int64_t last_fence = 0;
    std::vector<std::string> commits;
    bool commit(const std::string& gateway, std::int64_t fence) {
        if (fence <= last_fence) return false;
        last_fence = fence;
        commits.push_back(gateway + "/" + std::to_string(fence));
        return true;
    }
};

struct fleet_state {
    std::string redis_url;
    bool ignore_lost = false;
    upload_store uploads;
    int jobs_started = 0;
    std::vector<std::string> aborted;  // "g2/3 (token_gone)"
    bool aborted_job_committed = false;
    bool done = false;
};

class gateway {
public:
    gateway(asio::io_context& io, std::string id, fleet_state& fleet)
        : id_(std::move(id)), fleet_(fleet), client_(io), tick_(io), step_(io) {}

    bool start(std::chrono::milliseconds offset) {
        edgelock::async::client_config config;
        config.instances = {fleet_.redis_url};
        edgelock::lock_config job;
        job.name = job_lock;
        job.ttl_ms = 600;
        job.fencing = true;
        if (client_.open(config) || client_.add_lock(job, lock_)) return false;
        if (client_.set_lost_handler(lock_, [this](std::error_code why) { abort_job(why); })) {
            return false;
        }
        schedule_tick(offset);
        return true;
    }

    void stop() {
        tick_.cancel();
        step_.cancel();
        client_.close();
    }

private:
    void schedule_tick(std::chrono::milliseconds after) {
        tick_.expires_after(after);
        tick_.async_wait([this](std::error_code ec) {
            if (ec || fleet_.done) return;
            if (!running_) try_job();
            schedule_tick(tick_period);
        });
    }

    void try_job() {
        client_.async_acquire(lock_, 0ms, [this](std::error_code ec, std::int64_t fence) {
            if (ec) return;  // busy: another gateway runs the job now
            running_ = true;
            fence_ = fence;
            job_number_ = ++fleet_.jobs_started;
            std::printf("  %s: job %d starts, fence %lld\n", id_.c_str(), job_number_,
                        static_cast<long long>(fence));
            run_step(0);
        });
    }

    void run_step(int step) {
        step_.expires_after(step_time);
        step_.async_wait([this, step](std::error_code ec) {
            if (ec || !running_) return;  // aborted by the lost handler
            if (step == 0 && job_number_ == stolen_job) steal_lock();
            if (step + 1 < job_steps) return run_step(step + 1);
            commit();
        });
    }

    void commit() {
        const bool accepted = fleet_.uploads.commit(id_, fence_);
        std::printf("  %s: job %d commits with fence %lld: %s\n", id_.c_str(), job_number_,
                    static_cast<long long>(fence_),
                    accepted ? "accepted" : "refused (a newer holder exists)");
        if (job_number_ == stolen_job && accepted) fleet_.aborted_job_committed = true;
        running_ = false;
        client_.async_release(lock_, [](std::error_code) {});
        if (fleet_.uploads.commits.size() >= static_cast<std::size_t>(commits_wanted))
            fleet_.done = true;
    }

    void abort_job(std::error_code why) {
        if (!running_) return;
        if (fleet_.ignore_lost) {
            std::printf("  %s: lost the lock (%s), and carries on regardless\n", id_.c_str(),
                        why.message().c_str());
            return;
        }
        running_ = false;
        step_.cancel();
        std::printf("  %s: lost the lock (%s): job %d aborted before its commit\n", id_.c_str(),
                    why.message().c_str(), job_number_);
        fleet_.aborted.push_back(id_ + "/" + std::to_string(fence_) + " (" + why.message() + ")");
    }

    // The fault: someone else deletes the key while this gateway works.
    void steal_lock() {
        app_store db(fleet_.redis_url);
        db.del(job_lock);
        std::printf("  (the key %s is deleted behind %s's back)\n", job_lock.c_str(), id_.c_str());
    }

    std::string id_;
    fleet_state& fleet_;
    client client_;
    lock_handle lock_;
    asio::steady_timer tick_;
    asio::steady_timer step_;
    bool running_ = false;
    std::int64_t fence_ = 0;
    int job_number_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
    fleet_state fleet;
    fleet.redis_url = "redis://127.0.0.1:6379";
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--ignore-lost") fleet.ignore_lost = true;
        else fleet.redis_url = arg;
    }
    app_store(fleet.redis_url).del(job_lock);

    asio::io_context io{1};
    std::vector<std::unique_ptr<gateway>> fleet_members;
    for (int g = 0; g < gateways; ++g) {
        fleet_members.push_back(std::make_unique<gateway>(io, "g" + std::to_string(g + 1), fleet));
        if (!fleet_members.back()->start(std::chrono::milliseconds(80 * g))) return 2;
    }
    // Stop when enough jobs committed, or after 20 s whatever happened.
    asio::steady_timer watch(io);
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    std::function<void(std::error_code)> check = [&](std::error_code) {
        if (!fleet.done && std::chrono::steady_clock::now() < deadline) {
            watch.expires_after(50ms);
            return watch.async_wait(check);
        }
        for (auto& g : fleet_members) g->stop();
    };
    watch.expires_after(50ms);
    watch.async_wait(check);
    io.run();

    std::string commits;
    for (const std::string& c : fleet.uploads.commits) commits += " " + c;
    const bool ok = fleet.uploads.commits.size() == static_cast<std::size_t>(commits_wanted) &&
                    fleet.aborted.size() == 1 && !fleet.aborted_job_committed;
    std::printf(
        "gateway_job: %s: %zu jobs committed (gateway/fence:%s); %zu aborted by the lost "
        "handler%s%s\n",
        ok ? "OK" : "FAILED", fleet.uploads.commits.size(), commits.c_str(), fleet.aborted.size(),
        fleet.aborted.empty() ? "" : ": ",
        fleet.aborted.empty() ? "" : fleet.aborted.front().c_str());
    return ok ? 0 : 1;
}
