// SPDX-License-Identifier: Apache-2.0
// --metrics-file without Redis: the exposition text of a hand-filled session::lock_metrics,
// read back by promtool (when scripts/setup.sh fetched it) and by the strict reader in
// exposition_check.hpp; each reader also shown refusing broken text. Then the atomic write and
// the writer thread.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "edgelock/testing/redis_process.hpp"
#include "exposition_check.hpp"
#include "metrics_file.hpp"
#include "program_run.hpp"

namespace {

using namespace std::chrono_literals;
using edgelock::cli::lock_state;
using edgelock::cli::metrics_text;
using edgelock::cli_tests::check_exposition;
using edgelock::cli_tests::exposition;
using edgelock::session::acquire_outcome;
using edgelock::session::lock_metrics;
using edgelock::testing::eventually;

std::string read_file(const std::filesystem::path& path) {
    std::ifstream in(path);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

// One acquire at 3 ms, one busy, one wait of 40 s (above every bound), two renewals.
lock_metrics small_metrics() {
    lock_metrics m;
    m.acquires[static_cast<std::size_t>(acquire_outcome::acquired)] = 1;
    m.acquires[static_cast<std::size_t>(acquire_outcome::busy)] = 1;
    m.acquire_latency.record(3);
    m.acquire_wait.record(40'000);
    m.renewals_ok = 2;
    m.renewals_late = 1;
    m.connects = 1;
    return m;
}

// The lines of one family: its # HELP and # TYPE, then its samples.
std::string family(const std::string& text, const std::string& name) {
    std::istringstream lines(text);
    std::string line;
    std::string found;
    bool inside = false;
    while (std::getline(lines, line)) {
        if (line.rfind("# HELP ", 0) == 0) inside = line.rfind("# HELP " + name + " ", 0) == 0;
        if (inside) found += line + "\n";
    }
    return found;
}

const std::string quoted_lock = "back\\slash \"quoted\"\nnext line";
const std::string escaped_lock = "back\\\\slash \\\"quoted\\\"\\nnext line";

TEST(MetricsText, SecondsAreExactDecimals) {
    EXPECT_EQ(edgelock::cli::format_seconds(0), "0");
    EXPECT_EQ(edgelock::cli::format_seconds(1), "0.001");
    EXPECT_EQ(edgelock::cli::format_seconds(250), "0.25");
    EXPECT_EQ(edgelock::cli::format_seconds(2'500), "2.5");
    EXPECT_EQ(edgelock::cli::format_seconds(30'000), "30");
    EXPECT_EQ(edgelock::cli::format_seconds(-5), "0");
}

TEST(MetricsText, LabelValuesEscapeBackslashQuoteAndNewline) {
    EXPECT_EQ(edgelock::cli::escape_label_value(quoted_lock), escaped_lock);
    EXPECT_EQ(edgelock::cli::escape_label_value("orders:42"), "orders:42");
}

TEST(MetricsText, AcquiresCountEveryOutcome) {
    const std::string text = metrics_text(small_metrics(), "job", lock_state{true, 7});
    EXPECT_EQ(family(text, "edgelock_acquires_total"),
              "# HELP edgelock_acquires_total Acquire calls by verdict.\n"
              "# TYPE edgelock_acquires_total counter\n"
              "edgelock_acquires_total{lock=\"job\",outcome=\"acquired\"} 1\n"
              "edgelock_acquires_total{lock=\"job\",outcome=\"busy\"} 1\n"
              "edgelock_acquires_total{lock=\"job\",outcome=\"wait_timeout\"} 0\n"
              "edgelock_acquires_total{lock=\"job\",outcome=\"no_quorum\"} 0\n"
              "edgelock_acquires_total{lock=\"job\",outcome=\"restart_guard\"} 0\n"
              "edgelock_acquires_total{lock=\"job\",outcome=\"validity_expired\"} 0\n"
              "edgelock_acquires_total{lock=\"job\",outcome=\"not_replicated\"} 0\n"
              "edgelock_acquires_total{lock=\"job\",outcome=\"token_gone\"} 0\n"
              "edgelock_acquires_total{lock=\"job\",outcome=\"fence_exhausted\"} 0\n"
              "edgelock_acquires_total{lock=\"job\",outcome=\"cancelled\"} 0\n"
              "edgelock_acquires_total{lock=\"job\",outcome=\"unreachable\"} 0\n"
              "edgelock_acquires_total{lock=\"job\",outcome=\"error\"} 0\n");
    EXPECT_EQ(family(text, "edgelock_held"),
              "# HELP edgelock_held 1 while the lock is held within its validity, else 0.\n"
              "# TYPE edgelock_held gauge\n"
              "edgelock_held{lock=\"job\"} 1\n");
    EXPECT_NE(text.find("\nedgelock_fence{lock=\"job\"} 7\n"), std::string::npos) << text;
    EXPECT_NE(text.find("\nedgelock_renewals_total{lock=\"job\"} 2\n"), std::string::npos);
    EXPECT_NE(text.find("\nedgelock_renewals_late_total{lock=\"job\"} 1\n"), std::string::npos);
}

TEST(MetricsText, HistogramBucketsAreCumulativeSeconds) {
    lock_metrics m;
    m.acquire_latency.record(1);
    m.acquire_latency.record(3);
    m.acquire_latency.record(3);
    m.acquire_latency.record(40'000);
    const std::string text = metrics_text(m, "job", lock_state{});
    const std::string b = "edgelock_acquire_latency_seconds_bucket{lock=\"job\",le=";
    EXPECT_EQ(family(text, "edgelock_acquire_latency_seconds"),
              "# HELP edgelock_acquire_latency_seconds Acquire call to acquired, for acquires "
              "that succeeded at their first attempt.\n"
              "# TYPE edgelock_acquire_latency_seconds histogram\n" +
                  b + "\"0.001\"} 1\n" + b + "\"0.002\"} 1\n" + b + "\"0.005\"} 3\n" + b +
                  "\"0.01\"} 3\n" + b + "\"0.025\"} 3\n" + b + "\"0.05\"} 3\n" + b +
                  "\"0.1\"} 3\n" + b + "\"0.25\"} 3\n" + b + "\"0.5\"} 3\n" + b + "\"1\"} 3\n" + b +
                  "\"2.5\"} 3\n" + b + "\"5\"} 3\n" + b + "\"10\"} 3\n" + b + "\"30\"} 3\n" + b +
                  "\"+Inf\"} 4\n" +
                  "edgelock_acquire_latency_seconds_sum{lock=\"job\"} 40.007\n"
                  "edgelock_acquire_latency_seconds_count{lock=\"job\"} 4\n");
}

TEST(MetricsText, EveryFamilyIsDocumented) {
    const std::string docs = read_file(EDGELOCK_CLI_DOCS);
    exposition parsed;
    ASSERT_EQ(check_exposition(metrics_text(lock_metrics{}, "job", {}), parsed), "");
    EXPECT_EQ(parsed.types.size(), 16u);
    for (const auto& [name, type] : parsed.types) {
        EXPECT_NE(docs.find("`" + name + "`"), std::string::npos)
            << "docs/CLI.md does not list " << name << " (" << type << ")";
    }
}

// A file of the test's own, removed with it.
class TempDir : public ::testing::Test {
protected:
    void SetUp() override {
        dir = std::filesystem::temp_directory_path() /
              ("edgelock-metrics-" + std::to_string(::getpid()) + "-" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name());
        std::filesystem::create_directories(dir);
    }
    void TearDown() override { std::filesystem::remove_all(dir); }
    std::filesystem::path dir;
};

// promtool check metrics on `text`: its exit code (0: accepted), or -1 when promtool is absent.
int promtool_check(const std::filesystem::path& dir, const std::string& text) {
    std::string output;
    const int code = edgelock::cli_tests::promtool_check(dir.string(), text, output);
    if (code > 0) std::cerr << "promtool: " << output;
    return code;
}

// Everything counted at once, with a lock name that needs every escape.
lock_metrics full_metrics() {
    lock_metrics m = small_metrics();
    for (std::size_t i = 0; i < m.acquires.size(); ++i) m.acquires[i] += i;
    m.handover_gap.record(7);
    m.renewal_failures = 3;
    m.losses[1] = 1;
    m.releases[0] = 4;
    m.reconnects = 1;
    m.failovers = 1;
    m.requests_in_flight = 2;
    m.redirects_moved = 3;
    m.redirects_ask = 4;
    return m;
}

TEST_F(TempDir, TheStrictReaderAcceptsTheText) {
    exposition parsed;
    const std::string text = metrics_text(full_metrics(), quoted_lock, lock_state{true, 9});
    ASSERT_EQ(check_exposition(text, parsed), "") << text;
    const std::string lock = "lock=\"" + quoted_lock + "\"";
    EXPECT_EQ(parsed.samples.at("edgelock_acquires_total{" + lock + ",outcome=\"busy\"}"), 2);
    EXPECT_EQ(parsed.samples.at("edgelock_handover_gap_seconds_sum{" + lock + "}"), 0.007);
    EXPECT_EQ(parsed.types.at("edgelock_handover_gap_seconds"), "histogram");
    EXPECT_EQ(parsed.samples.at("edgelock_redirects_total{kind=\"moved\"," + lock + "}"), 3);
    EXPECT_EQ(parsed.samples.at("edgelock_redirects_total{kind=\"ask\"," + lock + "}"), 4);
}

TEST_F(TempDir, PromtoolAcceptsTheText) {
    const std::string text = metrics_text(full_metrics(), quoted_lock, lock_state{true, 9});
    const int code = promtool_check(dir, text);
    if (code < 0)
        GTEST_SKIP() << "no promtool (scripts/setup.sh fetches it); the strict reader ran";
    EXPECT_EQ(code, 0) << text;
}

// What promtool 2.42 refuses: a counter not named *_total, a unit other than the base one, a
// family without # HELP, a broken escape. Each is a rewrite of the real text.
TEST_F(TempDir, PromtoolRefusesBrokenText) {
    const std::string text = metrics_text(full_metrics(), "job", lock_state{});
    if (promtool_check(dir, text) < 0) GTEST_SKIP() << "no promtool";
    auto replaced = [&](const std::string& from, const std::string& to) {
        std::string broken = text;
        for (std::size_t at = broken.find(from); at != std::string::npos;
             at = broken.find(from, at + to.size()))
            broken.replace(at, from.size(), to);
        return broken;
    };
    EXPECT_NE(promtool_check(dir, replaced("edgelock_connects_total", "edgelock_connects")), 0);
    EXPECT_NE(promtool_check(dir, replaced("_seconds", "_milliseconds")), 0);
    EXPECT_NE(promtool_check(dir, replaced("# HELP edgelock_held ", "# NOTE edgelock_held ")), 0);
    EXPECT_NE(promtool_check(dir, replaced("lock=\"job\"", "lock=\"j\"ob\"")), 0);
}

// What the strict reader refuses besides, which promtool 2.42 lets through (its lint reads the
// families but checks no bucket): each break of the real text is named in the reader's answer.
TEST(StrictReader, RefusesBrokenHistogramsAndSeries) {
    const std::string text = metrics_text(full_metrics(), "job", lock_state{});
    const std::string b = "edgelock_acquire_latency_seconds_bucket{lock=\"job\",le=";
    auto refused = [](std::string broken, const std::string& why) {
        exposition parsed;
        const std::string problem = check_exposition(broken, parsed);
        EXPECT_NE(problem.find(why), std::string::npos) << why << ", got: " << problem;
    };
    auto replaced = [&](const std::string& from, const std::string& to) {
        std::string broken = text;
        EXPECT_NE(broken.find(from), std::string::npos) << from;
        for (std::size_t at = broken.find(from); at != std::string::npos;
             at = broken.find(from, at + to.size()))
            broken.replace(at, from.size(), to);
        return broken;
    };
    refused(replaced(b + "\"0.01\"} 1\n", b + "\"0.01\"} 0\n"), "not cumulative");
    refused(replaced(b + "\"0.005\"} 1\n", b + "\"0.0005\"} 1\n"), "increasing le order");
    refused(replaced(b + "\"+Inf\"} 1\n", ""), "no le=\"+Inf\"");
    refused(replaced(b + "\"+Inf\"} 1\n", b + "\"+Inf\"} 2\n"), "+Inf bucket is not _count");
    refused(replaced("# TYPE edgelock_held gauge\n", ""), "before its family's # HELP and # TYPE");
    refused(replaced("edgelock_held{lock=\"job\"} 0\n",
                     "edgelock_held{lock=\"job\"} 0\nedgelock_held{lock=\"job\"} 0\n"),
            "series twice");
    refused(replaced("edgelock_held{lock=\"job\"} 0\n", "edgelock_held{lock=\"job\"} 0 1700\n"),
            "bad value");
    refused(replaced("lock=\"job\"", "lock=\"j\\ob\""), "bad escape");
    refused(replaced("edgelock_connects_total", "edgelock_connects"), "not named *_total");
    refused(text + "\n", "empty line");
}

TEST_F(TempDir, TheFileIsReplacedWhole) {
    const std::string path = (dir / "lock.prom").string();
    ASSERT_EQ(edgelock::cli::write_metrics_file(path, "first\n"), "");
    ASSERT_EQ(edgelock::cli::write_metrics_file(path, "second\n"), "");
    EXPECT_EQ(read_file(path), "second\n");
    std::size_t files = 0;
    for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir)) ++files;
    EXPECT_EQ(files, 1u) << "a temporary file was left behind";
}

TEST_F(TempDir, AFailedWriteSaysWhereAndWhy) {
    const std::string path = (dir / "gone" / "lock.prom").string();
    const std::string problem = edgelock::cli::write_metrics_file(path, "x\n");
    EXPECT_NE(problem.find("lock.prom.tmp."), std::string::npos) << problem;
    EXPECT_NE(problem.find("No such file or directory"), std::string::npos) << problem;
    EXPECT_EQ(problem.find('\n'), std::string::npos);
    EXPECT_NE(edgelock::cli::metrics_file_problem(path).find("gone"), std::string::npos);
    EXPECT_NE(edgelock::cli::metrics_file_problem(dir.string()).find("is a directory"),
              std::string::npos);
    EXPECT_EQ(edgelock::cli::metrics_file_problem((dir / "lock.prom").string()), "");
    EXPECT_EQ(edgelock::cli::metrics_file_problem("relative.prom"), "");
}

// Whoever may create files in the directory may plant a symlink at the name the temporary
// would take (PATH.tmp.PID was that name, PID this process's): the write neither follows it
// (its target keeps its text) nor fails because of it, and leaves it where it was.
TEST_F(TempDir, APlantedSymlinkIsNotFollowed) {
    const std::filesystem::path path = dir / "lock.prom";
    const std::filesystem::path target = dir / "target";
    std::ofstream(target) << "not metrics\n";
    const std::filesystem::path planted = path.string() + ".tmp." + std::to_string(::getpid());
    std::filesystem::create_symlink(target, planted);
    ASSERT_EQ(edgelock::cli::write_metrics_file(path.string(), "metrics\n"), "");
    EXPECT_EQ(read_file(target), "not metrics\n");
    EXPECT_EQ(read_file(path), "metrics\n");
    EXPECT_FALSE(std::filesystem::is_symlink(path));
    EXPECT_TRUE(std::filesystem::is_symlink(planted));
}

// The collector runs as another user: it must be able to read the file under any umask.
TEST_F(TempDir, TheFileIsWorldReadableWhateverTheUmask) {
    const std::string path = (dir / "lock.prom").string();
    const mode_t saved_umask = ::umask(077);
    const std::string problem = edgelock::cli::write_metrics_file(path, "x\n");
    ::umask(saved_umask);
    ASSERT_EQ(problem, "");
    struct stat info {};
    ASSERT_EQ(::stat(path.c_str(), &info), 0);
    EXPECT_EQ(info.st_mode & 07777, 0644u);
}

// metrics_file_problem(path) as seen by user `uid`: in a child that drops to it first, since
// the permission bits do not stop root (the tests may run as root).
std::string problem_as(uid_t uid, const std::string& path) {
    int fds[2];
    if (::pipe(fds) != 0) return "pipe failed";
    const pid_t child = ::fork();
    if (child == 0) {
        ::close(fds[0]);
        std::string answer = "could not drop to the user";
        if (::setgid(uid) == 0 && ::setuid(uid) == 0)
            answer = edgelock::cli::metrics_file_problem(path);
        (void)!::write(fds[1], answer.data(), answer.size());
        ::_exit(0);
    }
    ::close(fds[1]);
    std::string answer;
    char buffer[256];
    for (ssize_t n; (n = ::read(fds[0], buffer, sizeof buffer)) > 0;)
        answer.append(buffer, static_cast<std::size_t>(n));
    ::close(fds[0]);
    int status = 0;
    ::waitpid(child, &status, 0);
    return answer;
}

// metrics_file_problem(path) as a user without root's privileges sees it.
std::string problem_unprivileged(const std::string& path) {
    constexpr uid_t nobody_uid = 65534;
    if (::geteuid() == 0) return problem_as(nobody_uid, path);
    return edgelock::cli::metrics_file_problem(path);
}

// A directory the command may not create files in is refused before the lock is taken, as a
// missing one is, whatever its permission bits say to access(2).
TEST_F(TempDir, AnUnwritableDirectoryIsRefused) {
    const std::filesystem::path locked = dir / "locked";
    std::filesystem::create_directory(locked);
    std::filesystem::permissions(dir, std::filesystem::perms(0755));
    std::filesystem::permissions(locked, std::filesystem::perms(0555));
    const std::string path = (locked / "lock.prom").string();
    const std::string problem = problem_unprivileged(path);
    EXPECT_NE(problem.find("not writable: Permission denied"), std::string::npos) << problem;
    EXPECT_NE(problem.find(path), std::string::npos) << problem;
    EXPECT_EQ(problem.find('\n'), std::string::npos) << problem;
    std::filesystem::permissions(locked, std::filesystem::perms(0777));
    EXPECT_EQ(problem_unprivileged(path), "");
    std::size_t files = 0;
    for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(locked)) ++files;
    EXPECT_EQ(files, 0u) << "the check left a file behind";
}

// What refuses root too: sysfs creates no files for anyone (EACCES, or EROFS where it is
// mounted read-only). access(W_OK) says yes to root here; only trying tells.
TEST(MetricsFileProblem, ADirectoryRootCannotWriteIsRefused) {
    const std::string problem = edgelock::cli::metrics_file_problem("/sys/edgelock.prom");
    EXPECT_NE(problem.find("not writable: "), std::string::npos) << problem;
}

// The writer writes at start, again after each notification (read on its own thread), and a
// last time at stop; a notification after it is gone does nothing.
TEST_F(TempDir, TheWriterFollowsNotificationsAndWritesAtStop) {
    const std::filesystem::path path = dir / "lock.prom";
    std::atomic<std::uint64_t> renewals{0};
    std::function<void()> notify;
    {
        edgelock::cli::metrics_writer writer(path.string(), "job");
        notify = writer.notifier();
        writer.start([&] {
            edgelock::cli::metrics_snapshot s;
            s.metrics.renewals_ok = renewals.load();
            return s;
        });
        EXPECT_NE(read_file(path).find("renewals_total{lock=\"job\"} 0\n"), std::string::npos);
        renewals = 1;
        notify();
        EXPECT_TRUE(eventually(
            [&] {
                return read_file(path).find("renewals_total{lock=\"job\"} 1\n") !=
                       std::string::npos;
            },
            10s));
        renewals = 2;
    }
    EXPECT_NE(read_file(path).find("renewals_total{lock=\"job\"} 2\n"), std::string::npos);
    notify();
}

TEST(MetricsWriter, WithoutAPathItNeverWrites) {
    edgelock::cli::metrics_writer writer("", "job");
    EXPECT_FALSE(writer.notifier());
    bool read = false;
    writer.start([&] {
        read = true;
        return edgelock::cli::metrics_snapshot{};
    });
    writer.stop();
    EXPECT_FALSE(read);
}

}  // namespace
