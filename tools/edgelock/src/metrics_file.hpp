// SPDX-License-Identifier: Apache-2.0
// edgelock CLI: one lock's metrics (session::lock_metrics) as a file for node_exporter's
// textfile collector (`run` and `hold` with --metrics-file), in the Prometheus text exposition
// format 0.0.4. docs/CLI.md lists every metric; tests/cli checks the text with promtool and
// with a strict parser of its own.
//
// Names start with edgelock_ and end with their unit (seconds, as Prometheus wants base units,
// though the struct counts milliseconds) or _total for counters; each family has its # HELP and
// # TYPE lines; every sample carries lock="NAME". Histogram buckets are cumulative (the struct's
// are not: the text sums them), bounded by session::latency_bounds_ms, then le="+Inf".
//
// The collector may read the file at any moment, so it is replaced whole (write_metrics_file):
// a reader sees the previous text or the next, never a part of one.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "edgelock/session/lock_metrics.hpp"

namespace edgelock::cli {

// What the counters do not say: whether the lock is held now, and the fence of the current
// or last hold (0 before any).
struct lock_state {
    bool held = false;
    std::int64_t fence = 0;
};

// The whole file: every family, in a fixed order, every sample present even when 0 (a series
// that appears only once it is non-zero breaks rate() over its first increase).
std::string metrics_text(const session::lock_metrics& metrics, std::string_view lock_name,
                         const lock_state& state);

// A label value as the format quotes it: backslash, double quote and newline escaped.
std::string escape_label_value(std::string_view value);

// 1 -> "0.001", 2500 -> "2.5", 30000 -> "30": milliseconds as exact decimal seconds (no
// floating point: the bounds must read the same in every file). Negative counts as 0.
std::string format_seconds(std::int64_t ms);

// Writes `text` to a new file `path.tmp.XXXXXX` in the same directory (six random characters,
// created exclusively: a symlink or a file planted there is never followed nor overwritten),
// makes it 0644 whatever the umask (the collector may run as another user), fsyncs it, renames
// it over `path` (atomic within a file system; the collector reads only *.prom, so it skips the
// temporary) and fsyncs the directory, so that after a power cut `path` holds the previous text
// or the new one, never an empty file. Returns "" or the reason, one line ("cannot write
// /x/y.prom.tmp.a1B2c3: No space left on device").
std::string write_metrics_file(const std::string& path, std::string_view text);

// Why `path` cannot be a metrics file, checked before the lock is taken: its directory does not
// exist or is not a directory, `path` itself is a directory, or no file can be created in the
// directory ("... is not writable: Permission denied"; found by creating and removing a
// temporary as write_metrics_file would, since access(2) says yes to root where nobody may
// write). "" when it may be written.
std::string metrics_file_problem(const std::string& path);

// What each write reads: the lock's counters and state.
struct metrics_snapshot {
    session::lock_metrics metrics;
    lock_state state;
};

// Keeps --metrics-file current: rewrites it on a thread of its own each time it is told
// something changed, and once more when it stops (the state at exit).
//
// Why a thread: the lock's on_event runs on the lock's I/O thread, must not block and must not
// call the lock (blocking_lock.hpp), yet the counters come from the lock (metrics()). So the
// event only raises a flag (notifier()), and this thread, which may wait, reads the lock and
// writes the file; events that come while it writes are folded into the next write. A write
// that fails is one line on stderr, once; the command goes on (metrics are not worth a job).
class metrics_writer {
public:
    using source = std::function<metrics_snapshot()>;

    // An empty path: a writer that never writes.
    metrics_writer(std::string path, std::string lock_name);
    ~metrics_writer();  // stop()
    metrics_writer(const metrics_writer&) = delete;
    metrics_writer& operator=(const metrics_writer&) = delete;

    // Writes once, then starts the thread; `read` is called on it for every write until stop().
    // Call once, when `read` may be called (the lock is open); later calls do nothing.
    void start(source read);
    // Thread-safe and never waits for a write: for on_event. It shares the flag, not this
    // object, so it may be called after this object is gone (the lock's destructor reports
    // events too); it then does nothing. Empty without a path.
    std::function<void()> notifier() const;
    // Stops the thread, then writes the last state. Once started, the caller must keep what
    // `read` reads alive until this returns.
    void stop();

private:
    struct flag {
        std::mutex mutex;
        std::condition_variable changed_cv;
        bool changed = false;
        bool stopping = false;
    };
    void loop();
    void write_now();

    std::string path_;
    std::string lock_name_;
    std::shared_ptr<flag> flag_;
    source read_;
    std::thread thread_;
    bool reported_ = false;  // a failed write was reported: later failures stay quiet
};

}  // namespace edgelock::cli
