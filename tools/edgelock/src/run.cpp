#include "run.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "edgelock/error_code.hpp"
#include "edgelock/hiredis_lock.hpp"
#include "errors.hpp"
#include "exit_codes.hpp"
#include "quote.hpp"

extern char** environ;

namespace edgelock::cli {
namespace {

using hiredis::now_ms;

constexpr std::int64_t progress_delay_ms = 1'000;   // a quick acquire shows nothing
constexpr std::int64_t progress_period_ms = 250;
constexpr std::int64_t supervise_poll_ms_max = 1'000;  // re-check even if a wake-up were missed
constexpr std::size_t inherited_fds_max = 1'024;

// Signals edgelock handles while CMD runs. CMD starts with all of them at their defaults.
constexpr int forwarded_signals[] = {SIGTERM, SIGHUP, SIGUSR1, SIGUSR2};
constexpr int left_to_cmd_signals[] = {SIGINT, SIGQUIT};

std::vector<int> inherited;

// The self-pipe: signal handlers and the lost callback write a byte; the supervising loop
// polls the other end, so no wake-up is lost between a check and the wait.
int wake_read_fd = -1;
int wake_write_fd = -1;
volatile std::sig_atomic_t pending_signal = 0;

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

void drain_wake_pipe() {
    char bytes[64];
    while (::read(wake_read_fd, bytes, sizeof bytes) > 0) {
    }
}

void install_handlers() {
    struct sigaction action{};
    action.sa_handler = on_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_NOCLDSTOP;
    sigaction(SIGCHLD, &action, nullptr);
    for (int s : forwarded_signals) sigaction(s, &action, nullptr);
    struct sigaction ignore{};
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
        if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
        const int fd = std::atoi(entry->d_name);
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

private:
    void loop() {
        std::unique_lock<std::mutex> held(mutex_);
        while (!changed_.wait_for(held, std::chrono::milliseconds(progress_period_ms), [this] { return stopping_; })) {
            const std::int64_t waited_ms = now_ms() - started_ms_;
            if (waited_ms < progress_delay_ms) continue;
            std::fprintf(stderr, "\redgelock: waiting for lock %s: %s / %s\033[K", name_.c_str(),
                         format_duration(waited_ms / 100 * 100).c_str(), format_duration(wait_ms_).c_str());
            std::fflush(stderr);
            shown_ = true;
        }
    }

    std::string name_;  // quoted, for the message
    std::int64_t started_ms_;
    std::int64_t wait_ms_;
    std::mutex mutex_;
    std::condition_variable changed_;
    bool stopping_ = false;
    bool shown_ = false;
    std::thread thread_;
};

// The lock the parser already checked (run_lock_config), handed to the transport field by field.
hiredis::lock_options lock_options_for(const options& o) {
    const lock_config config = run_lock_config(o);
    hiredis::lock_options lo;
    lo.name = o.name;
    lo.instances = o.redis_urls;
    lo.sentinels = o.sentinel_urls;
    lo.master_name = o.master_name;
    lo.tls = o.tls;
    lo.ttl_ms = config.ttl_ms;
    lo.fencing = config.fencing;
    lo.watchdog = config.watchdog;
    lo.replicas_to_wait = config.replicas_to_wait;
    lo.replica_wait_ms = config.replica_wait_ms;
    lo.renew_interval_ms = config.renew_interval_ms;
    lo.drift_ms = config.drift_ms;
    lo.attempt_timeout_ms = config.attempt_timeout_ms;
    lo.retry_delay_ms_min = config.retry_delay_ms_min;
    lo.retry_delay_ms_max = config.retry_delay_ms_max;
    lo.restart_guard = o.restart_guard;
    lo.restart_guard_ms = config.restart_guard_ms;
    lo.fair = config.fair;
    lo.recheck_ms = config.recheck_ms;
    lo.queue_entry_ttl_ms = config.queue_entry_ttl_ms;
    lo.connect_timeout_ms = o.redis_timeout_ms;
    lo.command_timeout_ms = o.redis_timeout_ms;
    lo.on_lost = [](std::error_code) { wake(); };
    // A node that may evict lock keys is worth a line on stderr, once per connection.
    const std::vector<std::string> where = o.sentinel_urls.empty() ? o.redis_urls : std::vector<std::string>{};
    lo.on_warning = [where, master = o.master_name](std::size_t instance, std::string_view warning) {
        const std::string node = instance < where.size() ? display_address(where[instance]) : "master " + quote(master);
        std::fprintf(stderr, "edgelock: warning: %s: %.*s\n", node.c_str(), static_cast<int>(warning.size()),
                     warning.data());
    };
    return lo;
}

// "127.0.0.1:6379: connection refused", one entry per instance that reported an error.
std::string instance_failures(const hiredis::lock& lock, const options& o, std::error_code ec) {
    if (!o.sentinel_urls.empty()) return "master " + quote(o.master_name) + " via Sentinel: " + describe(ec);
    std::string text;
    for (std::size_t i = 0; i < o.redis_urls.size(); ++i) {
        const std::error_code instance_ec = lock.instance_error(i);
        if (!instance_ec) continue;
        if (!text.empty()) text += ", ";
        text += display_address(o.redis_urls[i]) + ": " + describe(instance_ec);
    }
    if (text.empty()) return describe(ec);
    if (o.redis_urls.size() > 1) return describe(make_error_code(errc::no_quorum)) + " (" + text + ")";
    return text;
}

// The restart guard keeps a node that restarted without durable data out for a while: when
// --wait reaches its end, says so (a wait of a whole TTL must not look like a hang) and waits.
std::error_code wait_out_restart_guard(hiredis::lock& lock, const options& o, hiredis::hold& hold,
                                       std::int64_t started_ms) {
    const std::int64_t left_ms = o.wait_ms - (now_ms() - started_ms);
    const std::int64_t guard_left_ms = std::max<std::int64_t>(lock.guard_until_ms() - now_ms(), 0);
    if (guard_left_ms > left_ms) return make_error_code(errc::restart_guard);
    std::fprintf(stderr,
                 "edgelock: waiting %s for lock %s: a Redis node (re)started without AOF appendfsync always "
                 "counts only then (restart guard: a lease the restart forgot may still run)\n",
                 format_duration(guard_left_ms / 100 * 100).c_str(), quote(o.name).c_str());
    wait_progress progress(o.name, started_ms, o.wait_ms);
    return lock.acquire(std::chrono::milliseconds(left_ms), &hold);
}

// The first attempt also makes the connections, within its budget (a tenth of the TTL). A
// slow CPU (a TLS handshake on a small ARM core) can take longer than that: the attempt then
// ends as no_quorum while no instance failed. The connections stay up, and the next attempts
// wait only for replies, so that is no reason to give up while --wait lasts.
bool only_slow_to_connect(const hiredis::lock& lock, const options& o, std::error_code ec) {
    if (ec != errc::no_quorum) return false;
    const std::size_t instances = std::max<std::size_t>(o.redis_urls.size(), 1);
    for (std::size_t i = 0; i < instances; ++i) {
        if (lock.instance_error(i)) return false;
    }
    return true;
}

// Acquires within --wait. Returns exit_ok, or the exit code after printing why not.
int acquire(hiredis::lock& lock, const options& o, hiredis::hold& hold) {
    const std::int64_t started_ms = now_ms();
    // One attempt first: an unreachable Redis fails at once instead of after the whole wait.
    std::error_code ec = lock.try_acquire(&hold);
    if (ec == errc::restart_guard) ec = wait_out_restart_guard(lock, o, hold, started_ms);
    if ((ec == errc::busy || only_slow_to_connect(lock, o, ec)) && o.wait_ms > 0) {
        const std::int64_t left_ms = o.wait_ms - (now_ms() - started_ms);
        if (left_ms > 0) {
            wait_progress progress(o.name, started_ms, o.wait_ms);
            ec = lock.acquire(std::chrono::milliseconds(left_ms), &hold);
        }
    }
    if (!ec) return exit_ok;
    if (ec == errc::busy) {
        if (o.wait_ms == 0) {
            std::fprintf(stderr, "edgelock: lock %s is held by another owner (--wait 0)\n", quote(o.name).c_str());
            return exit_busy;
        }
        std::fprintf(stderr, "edgelock: gave up waiting for lock %s after %s: still held by another owner\n",
                     quote(o.name).c_str(), format_duration(o.wait_ms).c_str());
        return exit_wait_timeout;
    }
    if (ec == errc::restart_guard) {
        const std::int64_t guard_left_ms = std::max<std::int64_t>(lock.guard_until_ms() - now_ms(), 0);
        std::fprintf(stderr,
                     "edgelock: cannot acquire lock %s yet: a Redis node (re)started without AOF appendfsync always "
                     "counts only in %s, beyond --wait %s (restart guard: a lease the restart forgot may still run; "
                     "--restart-guard off skips it, unsafely)\n",
                     quote(o.name).c_str(), format_duration(guard_left_ms / 100 * 100).c_str(),
                     format_duration(o.wait_ms).c_str());
        return exit_code_for(ec);
    }
    std::fprintf(stderr, "edgelock: cannot acquire lock %s: %s\n", quote(o.name).c_str(),
                 instance_failures(lock, o, ec).c_str());
    return exit_code_for(ec);
}

std::vector<std::string> child_environment(const options& o, std::int64_t fence) {
    std::vector<std::string> env;
    const std::string prefix = o.fence_env + "=";
    for (char** entry = environ; *entry != nullptr; ++entry) {
        if (std::strncmp(*entry, prefix.c_str(), prefix.size()) != 0) env.emplace_back(*entry);
    }
    env.push_back(prefix + std::to_string(fence));
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
int supervise(hiredis::lock& lock, const options& o, pid_t pid, bool& signalled_for_loss) {
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
        if (signalled_for_loss && !killed) timeout_ms = std::clamp<std::int64_t>(kill_at_ms - now, 0, timeout_ms);
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

int run_locked(const options& o) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
        std::fprintf(stderr, "edgelock: cannot create a pipe: %s\n", std::strerror(errno));
        return exit_internal;
    }
    wake_read_fd = fds[0];
    wake_write_fd = fds[1];

    hiredis::lock lock;
    if (const std::error_code ec = lock.open(lock_options_for(o))) {
        std::fprintf(stderr, "edgelock: cannot set up lock %s: %s\n", quote(o.name).c_str(), describe(ec).c_str());
        return exit_code_for(ec);
    }
    hiredis::hold hold;
    if (const int code = acquire(lock, o, hold); code != exit_ok) return code;

    install_handlers();
    pid_t pid = -1;
    if (const int error = spawn(o, hold.fence, pid); error != 0) {
        lock.release();
        std::fprintf(stderr, "edgelock: cannot run %s: %s\n", shown(o.program[0]).c_str(), std::strerror(error));
        return error == ENOENT ? exit_not_found : exit_cannot_execute;
    }

    bool signalled_for_loss = false;
    const int status = supervise(lock, o, pid, signalled_for_loss);
    const bool lost = signalled_for_loss || lock.lost();
    const std::error_code reason = lock.lost_reason();
    const std::error_code released = lock.release();
    if (lost || released == errc::expired) {
        if (!signalled_for_loss) {
            std::fprintf(stderr, "edgelock: lost lock %s before CMD finished (%s)\n", quote(o.name).c_str(),
                         lost_why(reason).c_str());
        }
        return exit_lost;
    }
    if (released && released != errc::not_held) {
        std::fprintf(stderr, "edgelock: could not release lock %s (%s); it ends by its ttl, %s\n",
                     quote(o.name).c_str(), describe(released).c_str(), format_duration(o.ttl_ms).c_str());
    }
    return exit_code_of(status);
}

}  // namespace edgelock::cli
