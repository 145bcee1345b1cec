// SPDX-License-Identifier: Apache-2.0
#include "run.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "edgelock/error_code.hpp"
#include "edgelock/blocking_lock.hpp"
#include "edgelock/limits.hpp"
#include "edgelock/session/reconnect.hpp"
#include "edgelock/session/reply_class.hpp"
#include "nodes.hpp"
#include "errors.hpp"
#include "exit_codes.hpp"
#include "metrics_file.hpp"
#include "owner.hpp"
#include "quote.hpp"

extern char** environ;

namespace edgelock::cli {
namespace {

using blocking::now_ms;

constexpr std::int64_t progress_delay_ms = 1'000;  // a quick acquire shows nothing
constexpr std::int64_t progress_period_ms = 250;
constexpr std::int64_t supervise_poll_ms_max = 1'000;  // re-check even if a wake-up were missed
constexpr std::size_t inherited_fds_max = 1'024;
constexpr const char* permit_env = "EDGELOCK_PERMIT";    // a semaphore's permit, for CMD
constexpr std::int64_t restart_guard_note_ms_min = 100;  // shorter restart guard waits: silent

// Signals edgelock handles while CMD runs. CMD starts with all of them at their defaults.
constexpr int forwarded_signals[] = {SIGTERM, SIGHUP, SIGUSR1, SIGUSR2};
constexpr int left_to_cmd_signals[] = {SIGINT, SIGQUIT};
// Signals that end edgelock while it waits (and `hold` while it holds): a waiter leaves the line
// first, so those behind it need not wait for its entry to expire.
constexpr int stopping_signals[] = {SIGINT, SIGTERM, SIGHUP};

std::vector<int> inherited;

// The self-pipe: signal handlers and the lost callback write a byte; the supervising loop
// polls the other end, so no wake-up is lost between a check and the wait.
int wake_read_fd = -1;
int wake_write_fd = -1;
volatile std::sig_atomic_t pending_signal = 0;
// The lock whose acquire a stopping signal cancels (blocking::lock::cancel is async-signal-safe).
std::atomic<blocking::lock*> cancel_on_signal{nullptr};
// The signal edgelock ended by, for main() to raise once every object is destroyed.
int ending_signal = 0;

void wake() noexcept {
    const int saved_errno = errno;
    const char byte = 1;
    [[maybe_unused]] const ssize_t written = ::write(wake_write_fd, &byte, 1);
    errno = saved_errno;
}

void on_signal(int signal) {
    if (signal != SIGCHLD) pending_signal = signal;
    wake();
}

void on_stopping_signal(int signal) {
    pending_signal = signal;
    if (blocking::lock* waiting = cancel_on_signal.load(); waiting != nullptr) waiting->cancel();
    wake();
}

void install_stopping_handlers() {
    struct sigaction action {};
    action.sa_handler = on_stopping_signal;
    sigemptyset(&action.sa_mask);
    for (int s : stopping_signals) sigaction(s, &action, nullptr);
}

void drain_wake_pipe() {
    char bytes[64];
    while (::read(wake_read_fd, bytes, sizeof bytes) > 0) {
    }
}

void install_handlers() {
    struct sigaction action {};
    action.sa_handler = on_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_NOCLDSTOP;
    sigaction(SIGCHLD, &action, nullptr);
    for (int s : forwarded_signals) sigaction(s, &action, nullptr);
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    for (int s : left_to_cmd_signals) sigaction(s, &ignore, nullptr);
}

std::vector<int> open_fds() {
    std::vector<int> fds;
    DIR* dir = ::opendir("/proc/self/fd");
    if (dir == nullptr) return fds;
    const int own = ::dirfd(dir);
    while (const dirent* entry = ::readdir(dir)) {
        const char* const name = entry->d_name;
        const char* const last = name + std::strlen(name);
        int fd = -1;  // "." and "..", and any name not wholly a descriptor, are skipped
        const auto [end, error] = std::from_chars(name, last, fd);
        if (error != std::errc{} || end != last || fd < 0) continue;
        if (fd != own && fds.size() < inherited_fds_max) fds.push_back(fd);
    }
    ::closedir(dir);
    return fds;
}

// Descriptors edgelock opened itself (Redis connections, the wake pipe) stay out of CMD.
void close_own_fds_on_exec() {
    for (int fd : open_fds()) {
        if (std::find(inherited.begin(), inherited.end(), fd) != inherited.end()) continue;
        const int flags = ::fcntl(fd, F_GETFD);
        if (flags >= 0) ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
    }
}

// Shows "waited / deadline" on a terminal while a long acquire blocks.
class wait_progress {
public:
    wait_progress(const std::string& name, std::int64_t started_ms, std::int64_t wait_ms)
        : name_(quote(name)), started_ms_(started_ms), wait_ms_(wait_ms) {
        if (::isatty(STDERR_FILENO) == 1) thread_ = std::thread([this] { loop(); });
    }
    ~wait_progress() {
        {
            std::lock_guard<std::mutex> guard(mutex_);
            stopping_ = true;
        }
        changed_.notify_all();
        if (thread_.joinable()) thread_.join();
        if (shown_) std::fputs("\r\033[K", stderr);
    }
    wait_progress(const wait_progress&) = delete;
    wait_progress& operator=(const wait_progress&) = delete;

    // Why edgelock waits, when not for the lock: "Redis 127.0.0.1:6379 unreachable, retrying".
    void set_reason(std::string reason) {
        std::lock_guard<std::mutex> guard(mutex_);
        reason_ = std::move(reason);
    }

private:
    void loop() {
        std::unique_lock<std::mutex> held(mutex_);
        while (!changed_.wait_for(held, std::chrono::milliseconds(progress_period_ms),
                                  [this] { return stopping_; })) {
            const std::int64_t waited_ms = now_ms() - started_ms_;
            if (waited_ms < progress_delay_ms) continue;
            const std::string waited = format_duration(waited_ms / 100 * 100);
            if (reason_.empty()) {
                std::fprintf(stderr, "\redgelock: waiting for lock %s: %s / %s\033[K",
                             name_.c_str(), waited.c_str(), format_duration(wait_ms_).c_str());
            } else {
                std::fprintf(stderr, "\redgelock: %s: %s / %s\033[K", reason_.c_str(),
                             waited.c_str(), format_duration(wait_ms_).c_str());
            }
            std::fflush(stderr);
            shown_ = true;
        }
    }

    std::string name_;  // quoted, for the message
    std::int64_t started_ms_;
    std::int64_t wait_ms_;
    std::mutex mutex_;
    std::condition_variable changed_;
    std::string reason_;
    bool stopping_ = false;
    bool shown_ = false;
    std::thread thread_;
};

// The one instance of a lock on Redis Cluster, as messages name it.
constexpr const char* cluster_instance = "the master of the lock's slot";

// "127.0.0.1:6379", or "master \"mymaster\"" behind Sentinel: instance i as messages name it.
std::string instance_name(const options& o, std::size_t i) {
    if (!o.cluster_urls.empty()) return cluster_instance;
    if (!o.sentinel_urls.empty()) return "master " + quote(o.master_name);
    if (i < o.redis_urls.size()) return display_address(o.redis_urls[i]);
    return "instance " + std::to_string(i);
}

std::string valid_for(std::int64_t valid_until_ms) {
    return format_duration(std::max<std::int64_t>(valid_until_ms - now_ms(), 0));
}

// A failed attempt: a lock verdict (busy, too few instances) as it is; one instance's own
// error (a single Redis, or Sentinel's master) with the instance named.
std::string attempt_failure(const options& o, std::error_code ec) {
    if (ec.category() == error_category() && ec != errc::error_reply) return describe(ec);
    return instance_name(o, 0) + ": " + describe(ec);
}

// Set once the verdict is printed: the cleanup the lock's destructor still sends (deleting
// what a failed attempt may have written) is not news to whoever reads the verdict last.
std::atomic<bool> verbose_silenced{false};

// -v: one line per connection, attempt, renewal and loss, from the client's I/O thread
// (lock_options::on_event: it must not block, and stderr lines are short writes).
class verbose_printer {
public:
    explicit verbose_printer(const options& o)
        : o_(o), up_(std::max<std::size_t>(o.redis_urls.size(), 1), false) {}
    void operator()(const blocking::lock_event& e);

private:
    void connection(const blocking::lock_event& e);
    options o_;
    std::vector<bool> up_;  // connected, as told
};

void verbose_printer::connection(const blocking::lock_event& e) {
    const std::size_t i = std::min(e.instance, up_.size() - 1);
    const std::string node = instance_name(o_, i);
    if (e.kind == blocking::lock_event_kind::connected) {
        up_[i] = true;
        std::fprintf(stderr, "edgelock: connected to %s\n", node.c_str());
        return;
    }
    const std::string why = e.code ? describe(e.code) : std::string("closed");
    const char* format =
        up_[i] ? "edgelock: connection to %s lost: %s\n" : "edgelock: cannot connect to %s: %s\n";
    std::fprintf(stderr, format, node.c_str(), why.c_str());
    up_[i] = false;
}

void verbose_printer::operator()(const blocking::lock_event& e) {
    if (verbose_silenced.load()) return;
    const std::string name = quote(o_.name);
    switch (e.kind) {
        case blocking::lock_event_kind::connected:
        case blocking::lock_event_kind::disconnected: return connection(e);
        case blocking::lock_event_kind::attempt:
            if (!e.code) {
                std::fprintf(stderr, "edgelock: acquired lock %s (valid for %s)\n", name.c_str(),
                             valid_for(e.valid_until_ms).c_str());
            } else {
                std::fprintf(stderr, "edgelock: attempt failed: %s\n",
                             attempt_failure(o_, e.code).c_str());
            }
            return;
        case blocking::lock_event_kind::renewed:
            std::fprintf(stderr, "edgelock: renewed lock %s: valid for %s\n", name.c_str(),
                         valid_for(e.valid_until_ms).c_str());
            return;
        case blocking::lock_event_kind::renewal_failed:
            std::fprintf(stderr,
                         "edgelock: renewal of lock %s failed on %s: %s; valid for another %s\n",
                         name.c_str(), instance_name(o_, e.instance).c_str(),
                         describe(e.code).c_str(), valid_for(e.valid_until_ms).c_str());
            return;
        case blocking::lock_event_kind::released: return;  // the command reports it itself
        case blocking::lock_event_kind::lost:
            std::fprintf(stderr, "edgelock: lock %s lost: %s\n", name.c_str(),
                         describe(e.code).c_str());
            return;
    }
}

// What --metrics-file shows, read on the metrics writer's thread: metrics(), held() and fence()
// are safe from any thread and never wait for I/O.
metrics_snapshot snapshot_of(const blocking::lock& lock) {
    return metrics_snapshot{lock.metrics(), lock_state{lock.held(), lock.fence()}};
}

// -v's lines and --metrics-file's rewrites (`changed`: metrics_writer::notifier()), on the
// lock's I/O thread: neither blocks nor calls the lock.
std::function<void(const blocking::lock_event&)> event_handler(const options& o,
                                                               std::function<void()> changed) {
    if (!o.verbose && !changed) return {};
    std::optional<verbose_printer> printer;
    if (o.verbose) printer.emplace(o);
    return [printer, changed](const blocking::lock_event& e) mutable {
        if (printer) (*printer)(e);
        if (changed) changed();
    };
}

// The lock the parser already checked (run_lock_config), handed to the transport field by field.
blocking::lock_options lock_options_for(const options& o, std::function<void()> metrics_changed) {
    const lock_config config = run_lock_config(o);
    blocking::lock_options lo;
    static_cast<deployment&>(lo) = deployment_of(o);
    lo.name = o.name;
    lo.ttl_ms = config.ttl_ms;
    lo.fencing = config.fencing;
    lo.permits = config.permits;
    lo.watchdog = config.watchdog;
    lo.replicas_to_wait = config.replicas_to_wait;
    lo.replica_wait_ms = config.replica_wait_ms;
    lo.renew_interval_ms = config.renew_interval_ms;
    lo.drift_ms = config.drift_ms;
    lo.attempt_timeout_ms = config.attempt_timeout_ms;
    lo.retry_delay_ms_min = config.retry_delay_ms_min;
    lo.retry_delay_ms_max = config.retry_delay_ms_max;
    lo.restart_guard_ms = config.restart_guard_ms;
    lo.fair = config.fair;
    lo.recheck_ms = config.recheck_ms;
    lo.queue_entry_ttl_ms = config.queue_entry_ttl_ms;
    lo.on_lost = [](std::error_code) { wake(); };
    lo.on_event = event_handler(o, std::move(metrics_changed));
    // A node that may evict lock keys is worth a line on stderr, once per connection.
    const std::vector<std::string> where =
        o.sentinel_urls.empty() ? o.redis_urls : std::vector<std::string>{};
    const std::string master =
        o.cluster_urls.empty() ? "master " + quote(o.master_name) : cluster_instance;
    lo.on_warning = [where, master](std::size_t instance, std::string_view warning) {
        const std::string node =
            instance < where.size() ? display_address(where[instance]) : master;
        std::fprintf(stderr, "edgelock: warning: %s: %.*s\n", node.c_str(),
                     static_cast<int>(warning.size()), warning.data());
    };
    return lo;
}

// One Redis (or Sentinel's master) that did not answer in time: a short --ttl gives each
// attempt little time (a slow connect, a failover under way), which "too few instances
// answered" would hide.
std::string single_instance_failure(const blocking::lock& lock, const options& o,
                                    std::error_code ec) {
    const std::error_code cause = ec == errc::no_quorum ? lock.instance_error(0) : ec;
    if (cause) return describe(cause, lock, 0);
    const std::int64_t attempt_ms = resolve(run_lock_config(o)).attempt_timeout_ms;
    return "no reply before the attempt ended (each attempt may take " +
           format_duration(attempt_ms) + " with this --ttl)";
}

// "127.0.0.1:6380 is a replica (of 127.0.0.1:6379); point --redis at the master": the cause of
// not_master on an instance named directly (the connection read its role), its master asked.
std::string replica_failure(const options& o, std::size_t i) {
    const std::string master = master_of_replica(o, i);
    return display_address(o.redis_urls[i]) + " is a replica" +
           (master.empty() ? "" : " (of " + master + ")") + "; point --redis at the master";
}

// "127.0.0.1:6379: connection refused", one entry per instance that reported an error.
std::string instance_failures(const blocking::lock& lock, const options& o, std::error_code ec) {
    if (!o.cluster_urls.empty()) {
        return std::string(cluster_instance) + ": " + single_instance_failure(lock, o, ec);
    }
    if (!o.sentinel_urls.empty()) {
        return "master " + quote(o.master_name) +
               " via Sentinel: " + single_instance_failure(lock, o, ec);
    }
    if (o.redis_urls.size() == 1) {
        if (lock.instance_error(0) == transport_errc::not_master) return replica_failure(o, 0);
        return display_address(o.redis_urls[0]) + ": " + single_instance_failure(lock, o, ec);
    }
    std::string text;
    for (std::size_t i = 0; i < o.redis_urls.size(); ++i) {
        const std::error_code instance_ec = lock.instance_error(i);
        if (!instance_ec) continue;
        if (!text.empty()) text += ", ";
        text += instance_ec == transport_errc::not_master
                    ? replica_failure(o, i)
                    : display_address(o.redis_urls[i]) + ": " + describe(instance_ec, lock, i);
    }
    if (text.empty()) return describe(ec);
    if (o.redis_urls.size() > 1)
        return describe(make_error_code(errc::no_quorum)) + " (" + text + ")";
    return text;
}

// Instance i as the subject of a sentence: "Redis node 127.0.0.1:6379", "Redis master
// \"mymaster\"" behind Sentinel, "the master of the lock's slot" in a cluster.
std::string node_subject(const options& o, std::size_t i) {
    if (!o.cluster_urls.empty()) return cluster_instance;
    if (!o.sentinel_urls.empty()) return "Redis master " + quote(o.master_name);
    return "Redis node " + instance_name(o, i);
}

// "Redis node 127.0.0.1:6379 started 4.2s ago": the latest start without durable data the
// client read. Neither the client nor the core can tell a first start from a restart that
// lost everything (lock.hpp, "Restarts"), and the guard applies to both: "restarted" only when
// this client saw the node's run_id change.
std::string guarded_start(const blocking::lock& lock, const options& o) {
    const std::size_t count = o.redis_urls.empty() ? 1 : o.redis_urls.size();
    node_start latest;
    std::size_t which = count;
    for (std::size_t i = 0; i < count; ++i) {
        node_start start;
        if (!lock.instance_start(i, start) || start.durable) continue;
        if (which == count || start.started_ms > latest.started_ms) {
            latest = start;
            which = i;
        }
    }
    if (which == count) return "a Redis node started";
    const std::int64_t ago_ms = std::max<std::int64_t>(now_ms() - latest.started_ms, 0);
    const std::string ago = ago_ms < 1'000 ? "under 1s" : format_duration(ago_ms / 100 * 100);
    const char* how = latest.restarted ? " restarted " : " started ";
    return node_subject(o, which) + how + ago + " ago";
}

// The restart guard keeps a node that restarted without durable data out for a while: when
// --wait reaches its end, says so (a wait of a whole TTL must not look like a hang) and waits.
std::error_code wait_out_restart_guard(blocking::lock& lock, const options& o, blocking::hold& hold,
                                       std::int64_t started_ms) {
    const std::int64_t left_ms = o.wait_ms - (now_ms() - started_ms);
    const std::int64_t guard_left_ms = std::max<std::int64_t>(lock.guard_until_ms() - now_ms(), 0);
    if (guard_left_ms > left_ms) return make_error_code(errc::restart_guard);
    // A wait too short to notice is not worth a line (it would read "waiting 0ms").
    if (guard_left_ms >= restart_guard_note_ms_min) {
        std::fprintf(stderr,
                     "edgelock: waiting %s for lock %s: %s without AOF appendfsync always, so it "
                     "counts only then (restart guard: a lease from before that start may still "
                     "run; --restart-guard off skips the wait, for a test server)\n",
                     format_duration(guard_left_ms / 100 * 100).c_str(), quote(o.name).c_str(),
                     guarded_start(lock, o).c_str());
    }
    return lock.acquire(std::chrono::milliseconds(left_ms), &hold);
}

// A cluster moving the lock's slot or electing its master answers TRYAGAIN or CLUSTERDOWN for
// a while (the lock lives on one master there, instance 0).
bool cluster_settling(const blocking::lock& lock, const options& o, std::error_code ec) {
    return !o.cluster_urls.empty() && ec == errc::error_reply &&
           session::cluster_settling(lock.instance_error_text(0));
}

// Failures worth another try within --wait: Redis could not be reached or could not serve
// yet (refused, timed out, closed, LOADING, MASTERDOWN, no master or too few instances during
// a failover, a cluster settling). A refusal that another try cannot mend (AUTH, TLS, a bad
// reply) fails at once, and so do replicas named by --redis when too many are left for a
// quorum: unlike one a sentinel named during a failover, such a replica stays one.
bool outage(const blocking::lock& lock, const options& o, std::error_code ec) {
    if (cluster_settling(lock, o, ec)) return true;
    std::size_t replicas = 0;
    for (std::size_t i = 0; i < o.redis_urls.size(); ++i) {
        if (lock.instance_error(i) == transport_errc::not_master) ++replicas;
    }
    const std::size_t instances = o.redis_urls.size();
    if (replicas > 0 && replicas > instances - quorum_of(instances)) return false;
    return ec != errc::busy && ec != errc::restart_guard && exit_code_for(ec) == exit_unavailable;
}

// "Redis 127.0.0.1:6379 unreachable (connection refused), retrying", for the progress line.
std::string outage_reason(const blocking::lock& lock, const options& o, std::error_code ec) {
    if (o.sentinel_urls.empty() && o.redis_urls.size() == 1) {
        const std::error_code cause = lock.instance_error(0) ? lock.instance_error(0) : ec;
        return "Redis " + display_address(o.redis_urls[0]) + " unreachable (" + describe(cause) +
               "), retrying";
    }
    const char* what =
        cluster_settling(lock, o, ec) ? "Redis Cluster settling" : "Redis unreachable";
    return std::string(what) + " for lock " + quote(o.name) + " (" +
           instance_failures(lock, o, ec) + "), retrying";
}

// Waits out the client's reconnect delay after an outage (full jitter below a cap that
// doubles), or less when --wait ends first; a stopping signal ends it early.
void pause_after_outage(session::reconnect_backoff& backoff, std::int64_t deadline_ms) {
    const std::int64_t now = now_ms();
    backoff.failed(now, session::timing{});
    const std::int64_t until = std::min(backoff.not_before_ms(), deadline_ms);
    pollfd p{wake_read_fd, POLLIN, 0};
    while (pending_signal == 0 && now_ms() < until) {
        ::poll(&p, 1, static_cast<int>(until - now_ms()));
        drain_wake_pipe();
    }
}

int conflict_code(const options& o, int code) {
    return o.conflict_exit_code == conflict_exit_code_unset ? code : o.conflict_exit_code;
}

// The one line a failed acquire prints; returns its exit code.
int report_failure(blocking::lock& lock, const options& o, std::error_code ec) {
    if (ec == errc::busy) {
        if (o.wait_ms == 0) {
            std::fprintf(stderr, "edgelock: lock %s is held by another owner (--wait 0)\n",
                         quote(o.name).c_str());
            return conflict_code(o, exit_busy);
        }
        std::fprintf(
            stderr, "edgelock: gave up waiting for lock %s after %s: still held by another owner\n",
            quote(o.name).c_str(), format_duration(o.wait_ms).c_str());
        return conflict_code(o, exit_wait_timeout);
    }
    if (ec == errc::restart_guard) {
        const std::int64_t guard_left_ms =
            std::max<std::int64_t>(lock.guard_until_ms() - now_ms(), 0);
        std::fprintf(stderr,
                     "edgelock: cannot acquire lock %s yet: %s without AOF appendfsync always, "
                     "so it counts only in %s, beyond --wait %s (restart guard: a lease from "
                     "before that start may still run; --restart-guard off skips it, unsafely)\n",
                     quote(o.name).c_str(), guarded_start(lock, o).c_str(),
                     format_duration(guard_left_ms / 100 * 100).c_str(),
                     format_duration(o.wait_ms).c_str());
        return exit_code_for(ec);
    }
    std::fprintf(stderr, "edgelock: cannot acquire lock %s: %s\n", quote(o.name).c_str(),
                 instance_failures(lock, o, ec).c_str());
    return exit_code_for(ec, lock.instance_error_text(0));
}

// Acquires within --wait: one attempt first, then, while --wait lasts, the client's wait on a
// held lock, the restart guard's wait, and new attempts after an outage (the client's reconnect
// delays between them). Returns the last attempt's error, or ok.
std::error_code acquire_within_wait(blocking::lock& lock, const options& o, blocking::hold& hold) {
    const std::int64_t started_ms = now_ms();
    const std::int64_t deadline_ms = started_ms + o.wait_ms;
    std::error_code ec = lock.try_acquire(&hold);
    if (!ec || o.wait_ms == 0 ||
        !(ec == errc::busy || ec == errc::restart_guard || outage(lock, o, ec)))
        return ec;
    session::reconnect_backoff backoff;
    backoff.seed(static_cast<std::uint64_t>(::getpid()) ^ static_cast<std::uint64_t>(started_ms));
    wait_progress progress(o.name, started_ms, o.wait_ms);
    while (ec && pending_signal == 0 && now_ms() < deadline_ms) {
        if (ec == errc::restart_guard) {
            ec = wait_out_restart_guard(lock, o, hold, started_ms);
            if (ec == errc::restart_guard) return ec;  // beyond --wait: say so at once
            continue;
        }
        if (outage(lock, o, ec)) {
            progress.set_reason(outage_reason(lock, o, ec));
            pause_after_outage(backoff, deadline_ms);
        } else if (ec != errc::busy) {
            return ec;
        }
        const std::int64_t left_ms = deadline_ms - now_ms();
        if (left_ms <= 0 || pending_signal != 0) break;
        ec = lock.acquire(std::chrono::milliseconds(left_ms), &hold);
        if (!outage(lock, o, ec)) {
            progress.set_reason("");
            backoff.reset();  // Redis answered: the next outage starts from the shortest delay
        }
    }
    return ec;
}

// How an acquire ended: held, or not with the code to exit with. The two stay apart because
// -E may make a failure's code 0, which must never read as "acquired": CMD starts, and `hold`
// prints a hold, only when `held` is true.
struct acquire_outcome {
    bool held = false;
    int exit_code = exit_internal;  // when not held
};

// Acquires within --wait, or prints why not.
acquire_outcome acquire(blocking::lock& lock, const options& o, blocking::hold& hold) {
    const std::error_code ec = acquire_within_wait(lock, o, hold);
    if (!ec) return {true, exit_ok};
    if (ec == errc::cancelled || pending_signal != 0)
        return {false, exit_internal};  // the caller ends by the signal
    verbose_silenced = true;
    return {false, report_failure(lock, o, ec)};
}

// CMD's environment: ours, with the fence token in --fence-env and, for a semaphore, the
// permit it stands for (0..N-1) in EDGELOCK_PERMIT; neither inherited from whoever started
// edgelock.
std::vector<std::string> child_environment(const options& o, std::int64_t fence) {
    std::vector<std::string> env;
    const std::string prefix = o.fence_env + "=";
    const std::string permit_prefix = std::string(permit_env) + "=";
    for (char** entry = environ; *entry != nullptr; ++entry) {
        if (std::strncmp(*entry, prefix.c_str(), prefix.size()) == 0) continue;
        if (std::strncmp(*entry, permit_prefix.c_str(), permit_prefix.size()) == 0) continue;
        env.emplace_back(*entry);
    }
    env.push_back(prefix + std::to_string(fence));
    if (o.permits > 1) env.push_back(permit_prefix + std::to_string(permit_of(fence, o.permits)));
    return env;
}

std::vector<char*> pointers_to(std::vector<std::string>& strings) {
    std::vector<char*> pointers;
    pointers.reserve(strings.size() + 1);
    for (std::string& s : strings) pointers.push_back(s.data());
    pointers.push_back(nullptr);
    return pointers;
}

// Starts CMD with every signal edgelock touches back at its default and nothing blocked.
// Returns 0 or an errno value (ENOENT, EACCES, ...).
int spawn(const options& o, std::int64_t fence, pid_t& pid) {
    std::vector<std::string> argv_strings = o.program;
    std::vector<std::string> env_strings = child_environment(o, fence);
    std::vector<char*> argv = pointers_to(argv_strings);
    std::vector<char*> envp = pointers_to(env_strings);

    posix_spawnattr_t attr;
    if (posix_spawnattr_init(&attr) != 0) return ENOMEM;
    sigset_t defaults;
    sigemptyset(&defaults);
    for (int s : forwarded_signals) sigaddset(&defaults, s);
    for (int s : left_to_cmd_signals) sigaddset(&defaults, s);
    sigaddset(&defaults, SIGCHLD);
    sigaddset(&defaults, SIGPIPE);
    sigset_t nothing_blocked;
    sigemptyset(&nothing_blocked);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setsigmask(&attr, &nothing_blocked);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
    close_own_fds_on_exec();
    const int error = posix_spawnp(&pid, argv[0], nullptr, &attr, argv.data(), envp.data());
    posix_spawnattr_destroy(&attr);
    return error;
}

std::string lost_why(std::error_code reason) {
    return reason ? describe(reason) : describe(make_error_code(errc::expired));
}

// Waits for CMD while the helper thread renews; on a loss, signals CMD, then SIGKILL after
// --kill-after. Returns CMD's wait status and whether the lock was lost meanwhile.
int supervise(blocking::lock& lock, const options& o, pid_t pid, bool& signalled_for_loss) {
    std::int64_t kill_at_ms = 0;
    bool killed = false;
    for (;;) {
        int status = 0;
        const pid_t reaped = ::waitpid(pid, &status, WNOHANG);
        if (reaped == pid) return status;
        if (reaped < 0 && errno != EINTR) return -1;
        if (const int s = pending_signal; s != 0) {
            pending_signal = 0;
            ::kill(pid, s);
        }
        const std::int64_t now = now_ms();
        if (!signalled_for_loss && lock.lost()) {
            std::fprintf(stderr, "edgelock: lost lock %s while CMD ran (%s); sending %s to CMD\n",
                         quote(o.name).c_str(), lost_why(lock.lost_reason()).c_str(),
                         signal_name(o.lost_signal).c_str());
            ::kill(pid, o.lost_signal);
            signalled_for_loss = true;
            kill_at_ms = now + o.kill_after_ms;
        }
        if (signalled_for_loss && !killed && now >= kill_at_ms) {
            ::kill(pid, SIGKILL);
            killed = true;
        }
        std::int64_t timeout_ms = supervise_poll_ms_max;
        if (signalled_for_loss && !killed)
            timeout_ms = std::clamp<std::int64_t>(kill_at_ms - now, 0, timeout_ms);
        pollfd p{wake_read_fd, POLLIN, 0};
        ::poll(&p, 1, static_cast<int>(timeout_ms));
        drain_wake_pipe();
    }
}

int exit_code_of(int status) {
    if (status < 0) return exit_internal;
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return exit_internal;
}

}  // namespace

void note_inherited_fds() { inherited = open_fds(); }

int signal_to_end_by() { return ending_signal; }

namespace {

// --metrics-file in a directory that does not exist is a mistake better heard before the lock
// is taken than once per run on stderr.
int check_metrics_file(const options& o) {
    if (o.metrics_file.empty()) return exit_ok;
    const std::string problem = metrics_file_problem(o.metrics_file);
    if (problem.empty()) return exit_ok;
    std::fprintf(stderr, "edgelock: %s\n", problem.c_str());
    return exit_usage;
}

// Opens the lock and acquires it within --wait, a stopping signal cancelling the wait (the
// client then leaves the line). Held, or not held with the code to exit with (after a signal,
// ending_signal is set and the lock is released). `metrics` starts writing once the lock is open.
acquire_outcome open_and_acquire(blocking::lock& lock, const options& o, blocking::hold& hold,
                                 metrics_writer& metrics) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
        std::fprintf(stderr, "edgelock: cannot create a pipe: %s\n", std::strerror(errno));
        return {false, exit_internal};
    }
    wake_read_fd = fds[0];
    wake_write_fd = fds[1];
    if (const std::error_code ec = lock.open(lock_options_for(o, metrics.notifier()))) {
        std::fprintf(stderr, "edgelock: cannot set up lock %s: %s\n", quote(o.name).c_str(),
                     describe(ec).c_str());
        return {false, exit_code_for(ec)};
    }
    metrics.start([&lock] { return snapshot_of(lock); });
    cancel_on_signal = &lock;
    install_stopping_handlers();
    const acquire_outcome outcome = acquire(lock, o, hold);
    cancel_on_signal = nullptr;  // before the lock can be destroyed
    if (const int s = pending_signal; s != 0) {
        if (outcome.held) static_cast<void>(lock.release());  // acquired as the signal came
        ending_signal = s;
        return {false, 128 + s};
    }
    return outcome;
}

// Takes the lock (open_and_acquire) and describes its holder in the owner key. That takes up
// to --redis-timeout per node, while the helper renews: the lock may be lost, or a stopping
// signal come, meanwhile. So the lock is looked at again after it, and only a lock still held
// with no signal pending comes back held: CMD starts, and hold prints, only then. `what`
// names what the lock was taken for, for the loss's message ("CMD started").
acquire_outcome take_lock(blocking::lock& lock, const options& o, blocking::hold& hold,
                          metrics_writer& metrics, const char* what) {
    const acquire_outcome acquired = open_and_acquire(lock, o, hold, metrics);
    if (!acquired.held) return acquired;
    describe_holder(o, hold.token, hold.fence);
    if (const int s = pending_signal; s != 0) {
        static_cast<void>(lock.release());
        ending_signal = s;
        return {false, 128 + s};
    }
    if (lock.held() && !lock.lost()) return acquired;
    std::fprintf(stderr, "edgelock: lost lock %s before %s (%s)\n", quote(o.name).c_str(), what,
                 lost_why(lock.lost_reason()).c_str());
    static_cast<void>(lock.release());
    return {false, exit_lost};
}

// What `hold` and `run` share: the lock, its metrics file and the hold, taken as the command
// starts. The metrics writer comes after the lock, so it is destroyed before it: its last
// write (at every return, after a loss, a signal or CMD's end) reads the lock as the command
// leaves it.
struct taken_lock {
    blocking::lock lock;
    metrics_writer metrics;
    blocking::hold hold;
    acquire_outcome acquired;
    taken_lock(const options& o, const char* what)
        : metrics(o.metrics_file, o.name), acquired(take_lock(lock, o, hold, metrics, what)) {}
};

// A release refused for another reason than the lock being gone already: said on one line; the
// key ends by its TTL.
void tell_release_failed(const options& o, std::error_code released) {
    if (!released || released == errc::not_held) return;
    std::fprintf(stderr, "edgelock: could not release lock %s (%s); it ends by its ttl, %s\n",
                 quote(o.name).c_str(), describe(released).c_str(),
                 format_duration(o.ttl_ms).c_str());
}

}  // namespace

int hold_locked(const options& o) {
    if (const int code = check_metrics_file(o); code != exit_ok) return code;
    taken_lock taken(o, "its lines were printed");
    if (!taken.acquired.held) return taken.acquired.exit_code;
    blocking::lock& lock = taken.lock;
    std::printf("name=%s\ntoken=%s\nfence=%lld\n", o.name.c_str(), taken.hold.token.c_str(),
                static_cast<long long>(taken.hold.fence));
    if (o.permits > 1) std::printf("permit=%u\n", unsigned{permit_of(taken.hold.fence, o.permits)});
    std::fflush(stdout);
    // The stopping handlers stay: SIGINT, SIGTERM or SIGHUP ends the hold with a release.
    while (pending_signal == 0 && !lock.lost()) {
        pollfd p{wake_read_fd, POLLIN, 0};
        ::poll(&p, 1, static_cast<int>(supervise_poll_ms_max));
        drain_wake_pipe();
    }
    const bool lost = lock.lost();
    const std::error_code reason = lock.lost_reason();
    const std::error_code released = lock.release();
    if (lost || released == errc::expired) {
        std::fprintf(stderr, "edgelock: lost lock %s (%s)\n", quote(o.name).c_str(),
                     lost_why(reason).c_str());
        return exit_lost;
    }
    tell_release_failed(o, released);
    return exit_ok;
}

int run_locked(const options& o) {
    if (const int code = check_metrics_file(o); code != exit_ok) return code;
    taken_lock taken(o, "CMD started");
    if (!taken.acquired.held) return taken.acquired.exit_code;  // CMD never starts without it
    blocking::lock& lock = taken.lock;

    install_handlers();
    pid_t pid = -1;
    if (const int error = spawn(o, taken.hold.fence, pid); error != 0) {
        // Best effort: the exit code tells of the spawn; a key left behind ends with its TTL.
        (void)lock.release();
        std::fprintf(stderr, "edgelock: cannot run %s: %s\n", shown(o.program[0]).c_str(),
                     std::strerror(error));
        return error == ENOENT ? exit_not_found : exit_cannot_execute;
    }

    bool signalled_for_loss = false;
    const int status = supervise(lock, o, pid, signalled_for_loss);
    const bool lost = signalled_for_loss || lock.lost();
    const std::error_code reason = lock.lost_reason();
    const std::error_code released = lock.release();
    if (lost || released == errc::expired) {
        if (!signalled_for_loss) {
            std::fprintf(stderr, "edgelock: lost lock %s before CMD finished (%s)\n",
                         quote(o.name).c_str(), lost_why(reason).c_str());
        }
        return exit_lost;
    }
    tell_release_failed(o, released);
    return exit_code_of(status);
}

}  // namespace edgelock::cli
