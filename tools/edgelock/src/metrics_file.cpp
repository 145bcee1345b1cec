// SPDX-License-Identifier: Apache-2.0
#include "metrics_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "quote.hpp"

namespace edgelock::cli {
namespace {

constexpr int metrics_file_mode = 0644;  // the collector may run as another user

class writer {
public:
    explicit writer(std::string_view lock_name) : lock_(escape_label_value(lock_name)) {}

    void family(const char* name, const char* type, const char* help) {
        text_ +=
            std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
    }
    // name{lock="...",label="value"} value; no extra label when `label` is null.
    void sample(const std::string& name, const char* label, const std::string& label_value,
                const std::string& value) {
        text_ += name + "{lock=\"" + lock_ + "\"";
        if (label != nullptr) text_ += std::string(",") + label + "=\"" + label_value + "\"";
        text_ += "} " + value + "\n";
    }
    void counter(const char* name, const char* help, std::uint64_t value) {
        family(name, "counter", help);
        sample(name, nullptr, "", std::to_string(value));
    }
    void gauge(const char* name, const char* help, std::int64_t value) {
        family(name, "gauge", help);
        sample(name, nullptr, "", std::to_string(value));
    }
    template <typename Array, typename Enum>
    void counters_by(const char* name, const char* label, const char* help, const Array& counts) {
        family(name, "counter", help);
        for (std::size_t i = 0; i < counts.size(); ++i) {
            const char* value_name = session::to_string(static_cast<Enum>(i));
            sample(name, label, value_name, std::to_string(counts[i]));
        }
    }
    void histogram(const char* name, const char* help, const session::latency_histogram& h);
    std::string take() { return std::move(text_); }

private:
    std::string lock_;  // escaped
    std::string text_;
};

void writer::histogram(const char* name, const char* help, const session::latency_histogram& h) {
    family(name, "histogram", help);
    const std::string bucket = std::string(name) + "_bucket";
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i < session::latency_bounds_ms.size(); ++i) {
        cumulative += h.counts[i];
        sample(bucket, "le", format_seconds(session::latency_bounds_ms[i]),
               std::to_string(cumulative));
    }
    // +Inf and _count are the same number, as the format requires: both from the buckets.
    cumulative += h.counts.back();
    sample(bucket, "le", "+Inf", std::to_string(cumulative));
    sample(std::string(name) + "_sum", nullptr, "", format_seconds(h.sum_ms));
    sample(std::string(name) + "_count", nullptr, "", std::to_string(cumulative));
}

void acquire_families(writer& w, const session::lock_metrics& m) {
    w.counters_by<decltype(m.acquires), session::acquire_outcome>(
        "edgelock_acquires_total", "outcome", "Acquire calls by verdict.", m.acquires);
    w.histogram("edgelock_acquire_latency_seconds",
                "Acquire call to acquired, for acquires that succeeded at their first attempt.",
                m.acquire_latency);
    w.histogram("edgelock_acquire_wait_seconds",
                "Acquire call to verdict, for acquires that made more than one attempt.",
                m.acquire_wait);
    w.histogram("edgelock_handover_gap_seconds",
                "Fair waiting: wake-up by the release before this waiter to acquired.",
                m.handover_gap);
}

void hold_families(writer& w, const session::lock_metrics& m, const lock_state& state) {
    w.counter("edgelock_renewals_total", "Renewals a quorum confirmed.", m.renewals_ok);
    w.counter("edgelock_renewals_late_total",
              "Of edgelock_renewals_total, those confirmed with less than one renew interval "
              "of the previous lease left.",
              m.renewals_late);
    w.counter("edgelock_renewal_failures_total", "Instances that failed their part of a renewal.",
              m.renewal_failures);
    w.counters_by<decltype(m.losses), session::loss_cause>(
        "edgelock_losses_total", "cause", "Holds that ended without a release, by cause.",
        m.losses);
    w.counters_by<decltype(m.releases), session::release_outcome>(
        "edgelock_releases_total", "outcome", "Releases of the last hold, by verdict.", m.releases);
    w.gauge("edgelock_held", "1 while the lock is held within its validity, else 0.",
            state.held ? 1 : 0);
    w.gauge("edgelock_fence", "The fence token of the current or last hold (0 before any).",
            state.fence);
}

void connection_families(writer& w, const session::lock_metrics& m) {
    w.counter("edgelock_connects_total", "Connections made (handshake done).", m.connects);
    w.counter("edgelock_reconnects_total",
              "Of edgelock_connects_total, those made again after an earlier connection of the "
              "same instance or node ended.",
              m.reconnects);
    w.counter("edgelock_failovers_total",
              "Moves to a different master for the same instance or slot after losing the old "
              "one.",
              m.failovers);
    w.family("edgelock_redirects_total", "counter",
             "Redis Cluster redirects followed, by kind (moved, ask).");
    w.sample("edgelock_redirects_total", "kind", "moved", std::to_string(m.redirects_moved));
    w.sample("edgelock_redirects_total", "kind", "ask", std::to_string(m.redirects_ask));
    w.gauge("edgelock_requests_in_flight", "Requests written and not yet answered.",
            static_cast<std::int64_t>(m.requests_in_flight));
}

std::string errno_problem(const char* what, const std::string& path) {
    return std::string(what) + " " + shown(path) + ": " + std::strerror(errno);
}

std::string directory_of(const std::string& path) {
    const std::size_t slash = path.rfind('/');
    if (slash == std::string::npos) return ".";
    return slash == 0 ? "/" : path.substr(0, slash);
}

// mkostemp replaces the six X with random characters and creates the file with O_EXCL (never
// through a symlink, never over an existing file), retrying names that are taken: someone who
// may create files in the directory can neither plant a link at the name nor guess it.
constexpr const char* temporary_suffix = ".tmp.XXXXXX";

// The temporary's descriptor (mode 0600), its name in `temporary`; -1 with errno on failure.
int create_temporary(const std::string& path, std::string& temporary) {
    temporary = path + temporary_suffix;
    return ::mkostemp(temporary.data(), O_CLOEXEC);
}

bool write_all(int fd, std::string_view text) {
    std::size_t done = 0;
    while (done < text.size()) {
        const ssize_t written = ::write(fd, text.data() + done, text.size() - done);
        if (written < 0 && errno == EINTR) continue;
        if (written < 0) return false;
        if (written == 0) {
            errno = EIO;
            return false;
        }
        done += static_cast<std::size_t>(written);
    }
    return true;
}

// Writes and closes `fd`. fchmod, because mkostemp's 0600 (or any umask) would hide the file
// from a collector running as another user; fsync, because a rename may reach the disk before
// the data does, and a power cut would then leave an empty file under the real name.
std::string fill_temporary(int fd, const std::string& temporary, std::string_view text) {
    if (::fchmod(fd, metrics_file_mode) != 0 || !write_all(fd, text) || ::fsync(fd) != 0) {
        std::string problem = errno_problem("cannot write", temporary);
        ::close(fd);
        return problem;
    }
    if (::close(fd) != 0) return errno_problem("cannot write", temporary);
    return "";
}

// The rename is kept over a power cut only once the directory is on disk too.
std::string sync_directory(const std::string& directory) {
    const int fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return errno_problem("cannot open directory", directory);
    std::string problem;
    // EINVAL: a file system that has nothing to sync for a directory.
    if (::fsync(fd) != 0 && errno != EINVAL) problem = errno_problem("cannot sync", directory);
    ::close(fd);
    return problem;
}

}  // namespace

std::string metrics_text(const session::lock_metrics& metrics, std::string_view lock_name,
                         const lock_state& state) {
    writer w(lock_name);
    acquire_families(w, metrics);
    hold_families(w, metrics, state);
    connection_families(w, metrics);
    return w.take();
}

std::string escape_label_value(std::string_view value) {
    std::string escaped;
    escaped.reserve(value.size());
    for (const char c : value) {
        if (c == '\\') escaped += "\\\\";
        else if (c == '"') escaped += "\\\"";
        else if (c == '\n') escaped += "\\n";
        else escaped += c;
    }
    return escaped;
}

std::string format_seconds(std::int64_t ms) {
    if (ms < 0) ms = 0;
    std::string text = std::to_string(ms / 1'000);
    std::int64_t fraction_ms = ms % 1'000;
    if (fraction_ms == 0) return text;
    char digits[4];
    std::snprintf(digits, sizeof digits, "%03d", static_cast<int>(fraction_ms));
    std::string fraction(digits);
    while (fraction.back() == '0') fraction.pop_back();
    return text + "." + fraction;
}

std::string write_metrics_file(const std::string& path, std::string_view text) {
    std::string temporary;
    const int fd = create_temporary(path, temporary);
    if (fd < 0) return errno_problem("cannot write", path + temporary_suffix);
    std::string problem = fill_temporary(fd, temporary, text);
    if (problem.empty() && ::rename(temporary.c_str(), path.c_str()) != 0)
        problem = errno_problem("cannot rename to", path);
    if (!problem.empty()) {
        ::unlink(temporary.c_str());
        return problem;
    }
    return sync_directory(directory_of(path));
}

std::string metrics_file_problem(const std::string& path) {
    const std::string directory = directory_of(path);
    struct stat info {};
    if (::stat(directory.c_str(), &info) != 0) {
        return "bad --metrics-file " + shown(path) + ": directory " + shown(directory) + ": " +
               std::strerror(errno);
    }
    if (!S_ISDIR(info.st_mode))
        return "bad --metrics-file " + shown(path) + ": " + shown(directory) +
               " is not a directory";
    if (::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode))
        return "bad --metrics-file " + shown(path) + ": it is a directory";
    // Only creating a file tells: access(W_OK) answers from the permission bits and the real
    // uid, and says yes to root where nobody may create a file (sysfs, procfs).
    std::string temporary;
    const int fd = create_temporary(path, temporary);
    if (fd < 0) {
        return "bad --metrics-file " + shown(path) + ": directory " + shown(directory) +
               " is not writable: " + std::strerror(errno);
    }
    ::close(fd);
    ::unlink(temporary.c_str());
    return "";
}

metrics_writer::metrics_writer(std::string path, std::string lock_name)
    : path_(std::move(path)), lock_name_(std::move(lock_name)) {
    if (!path_.empty()) flag_ = std::make_shared<flag>();
}

metrics_writer::~metrics_writer() { stop(); }

void metrics_writer::start(source read) {
    if (!flag_ || read_) return;
    read_ = std::move(read);
    write_now();
    thread_ = std::thread([this] { loop(); });
}

std::function<void()> metrics_writer::notifier() const {
    if (!flag_) return {};
    return [shared = flag_] {
        {
            std::lock_guard<std::mutex> guard(shared->mutex);
            shared->changed = true;
        }
        shared->changed_cv.notify_one();
    };
}

void metrics_writer::stop() {
    if (!read_) return;
    {
        std::lock_guard<std::mutex> guard(flag_->mutex);
        flag_->stopping = true;
    }
    flag_->changed_cv.notify_one();
    if (thread_.joinable()) thread_.join();
    write_now();
    read_ = nullptr;
}

void metrics_writer::loop() {
    for (;;) {
        {
            std::unique_lock<std::mutex> held(flag_->mutex);
            flag_->changed_cv.wait(held, [this] { return flag_->changed || flag_->stopping; });
            if (flag_->stopping) return;
            flag_->changed = false;
        }
        write_now();
    }
}

void metrics_writer::write_now() {
    const metrics_snapshot now = read_();
    const std::string problem =
        write_metrics_file(path_, metrics_text(now.metrics, lock_name_, now.state));
    if (problem.empty() || reported_) return;
    reported_ = true;
    std::fprintf(stderr, "edgelock: --metrics-file: %s (not updated; the command goes on)\n",
                 problem.c_str());
}

}  // namespace edgelock::cli
