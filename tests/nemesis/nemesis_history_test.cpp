// SPDX-License-Identifier: Apache-2.0
// The nemesis checks on hand-written logs: each violation found, and each near miss not.
#include "nemesis_history.hpp"
#include "nemesis_matrix.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace {

using edgelock::nemesis::belief_rule;
using edgelock::nemesis::judge;
using edgelock::nemesis::read_holds;

// Two log files (A's and B's) with the given lines, removed with the object.
class logs {
public:
    logs(const std::string& a, const std::string& b) {
        char pattern[] = "/tmp/nemesis_history_test.XXXXXX";
        dir_ = ::mkdtemp(pattern) != nullptr ? pattern : "/tmp";
        paths_ = {dir_ + "/A.log", dir_ + "/B.log"};
        std::ofstream(paths_[0]) << a;
        std::ofstream(paths_[1]) << b;
    }
    ~logs() {
        for (const std::string& path : paths_) std::remove(path.c_str());
        ::rmdir(dir_.c_str());
    }
    logs(const logs&) = delete;
    logs& operator=(const logs&) = delete;
    const std::vector<std::string>& paths() const { return paths_; }

private:
    std::string dir_;
    std::vector<std::string> paths_;
};

constexpr std::int64_t bound_us = 1'000'000;

TEST(NemesisHistory, HandOverIsNeitherOverlapNorStale) {
    const logs l("hold A 1 100\nwrite A 1 110 1\nend A 200\n",
                 "hold B 2 210\nwrite B 2 220 1\nend B 300\n");
    const auto v = judge(read_holds(l.paths()), 150, 250, bound_us);
    EXPECT_FALSE(v.overlap);
    EXPECT_FALSE(v.stale);
    EXPECT_FALSE(v.liveness_violated);
}

TEST(NemesisHistory, WriteLandingLateIsStaleWithoutOverlap) {
    // A sent its write at 110 and released at 120; the network delivered it at 500 (S2).
    const logs l("hold A 0 100\nend A 120\nlanded A 0 500 1\n",
                 "hold B 0 300\nwrite B 0 310 1\nend B 400\n");
    const auto v = judge(read_holds(l.paths()), 110, 450, bound_us);
    EXPECT_FALSE(v.overlap);
    EXPECT_TRUE(v.stale);
}

TEST(NemesisHistory, WriteLandingLateIsRefusedWithFencing) {
    const logs l("hold A 1 100\nend A 120\nlanded A 1 500 0\n",
                 "hold B 2 300\nwrite B 2 310 1\nend B 400\n");
    const auto v = judge(read_holds(l.paths()), 110, 450, bound_us);
    EXPECT_FALSE(v.overlap);
    EXPECT_FALSE(v.stale);
}

TEST(NemesisHistory, WriteAfterPauseOverlapsAndIsStale) {
    // A checked held() at 110 and wrote at 500, after B held and wrote (S1).
    const logs l("hold A 0 100\nwrite A 0 500 1\nlost A 520\n",
                 "hold B 0 300\nwrite B 0 310 1\nend B 400\n");
    const auto v = judge(read_holds(l.paths()), 120, 450, bound_us);
    EXPECT_TRUE(v.overlap);
    EXPECT_TRUE(v.stale);
}

TEST(NemesisHistory, WriteCheckedBeforeAPauseIsABeliefOnlyThroughWrites) {
    // A checked held() at 110, was stopped, and wrote at 500 after B held (S1's shape):
    // a belief through its writes, none through its checks (S3 asks about replies).
    const logs l("hold A 5 100\nwrite A 5 500 0 110\nlost A 520\n",
                 "hold B 9 300\nwrite B 9 310 1 309\nend B 400\n");
    const auto holds = read_holds(l.paths());
    EXPECT_TRUE(judge(holds, 120, 450, bound_us).overlap);
    EXPECT_FALSE(judge(holds, 120, 450, bound_us, belief_rule::through_checks).overlap);
}

TEST(NemesisHistory, WriteCheckedBeforeAPauseIsStaleOnlyThroughWrites) {
    // Without fencing the store takes A's late write (token 0) after B's: stale as S1 judges
    // it, not as S3 does (A checked before B held).
    const logs l("hold A 0 100\nwrite A 0 500 1 110\nlost A 520\n",
                 "hold B 0 300\nwrite B 0 310 1 309\nend B 400\n");
    const auto holds = read_holds(l.paths());
    EXPECT_TRUE(judge(holds, 120, 450, bound_us).stale);
    EXPECT_FALSE(judge(holds, 120, 450, bound_us, belief_rule::through_checks).stale);
}

TEST(NemesisHistory, WriteCheckedAfterAPauseIsABeliefEitherWay) {
    // A resumed at 490 and its held() said yes at 495: a reply read late.
    const logs l("hold A 5 100\nwrite A 5 500 0 495\nlost A 520\n",
                 "hold B 9 300\nwrite B 9 310 1 309\nend B 400\n");
    const auto holds = read_holds(l.paths());
    EXPECT_TRUE(judge(holds, 120, 450, bound_us).overlap);
    EXPECT_TRUE(judge(holds, 120, 450, bound_us, belief_rule::through_checks).overlap);
    const logs unfenced("hold A 0 100\nwrite A 0 500 1 495\nlost A 520\n",
                        "hold B 0 300\nwrite B 0 310 1 309\nend B 400\n");
    const auto late = read_holds(unfenced.paths());
    EXPECT_TRUE(judge(late, 120, 450, bound_us, belief_rule::through_checks).stale);
}

TEST(NemesisHistory, ALostHoldCountsOnlyFromTheTimeTheRunJudgesFrom) {
    const logs l("hold A 7 100000\nwrite A 7 110000 1 109000\nlost A 3100000\n",
                 "hold B 9 3200000\nwrite B 9 3210000 1 3209000\nend B 3300000\n");
    const auto holds = read_holds(l.paths());
    auto v = judge(holds, 120000, 450000, 10 * bound_us);
    EXPECT_FALSE(v.lost);
    EXPECT_FALSE(v.overlap);
    edgelock::nemesis::lost_holds(holds, 3200000, v);
    EXPECT_FALSE(v.lost) << "lost before the time the run judges from";
    edgelock::nemesis::lost_holds(holds, 3100000, v);
    EXPECT_TRUE(v.lost);
    EXPECT_EQ(v.detail, "A(fence 7) lost its hold 3000 ms after taking it");
    const logs kept("hold A 7 100000\nwrite A 7 110000 1 109000\nend A 3100000\n",
                    "hold B 9 3200000\nwrite B 9 3210000 1 3209000\nend B 3300000\n");
    auto w = judge(read_holds(kept.paths()), 120000, 450000, 10 * bound_us);
    edgelock::nemesis::lost_holds(read_holds(kept.paths()), 0, w);
    EXPECT_FALSE(w.lost);
}

TEST(NemesisHistory, FencedWriteRefusedIsNotStale) {
    const logs l("hold A 5 100\nwrite A 5 500 0\nlost A 520\n",
                 "hold B 9 300\nwrite B 9 310 1\nend B 400\n");
    const auto v = judge(read_holds(l.paths()), 120, 450, bound_us);
    EXPECT_TRUE(v.overlap);
    EXPECT_FALSE(v.stale);
}

TEST(NemesisHistory, WriteBeforeTheNextHoldersFirstWriteIsNotStale) {
    // B acquired at 300, A's write at 305 came before B's first (310): the store served A
    // last, as it would have without B. Stale only once B was served.
    const logs l("hold A 5 100\nwrite A 5 305 1\nwrite A 5 315 0\nlost A 320\n",
                 "hold B 9 300\nwrite B 9 310 1\nend B 400\n");
    const auto v = judge(read_holds(l.paths()), 120, 450, bound_us);
    EXPECT_TRUE(v.overlap);
    EXPECT_FALSE(v.stale);
}

TEST(NemesisHistory, NobodyAcquiringAfterTheFaultIsALivenessViolation) {
    const logs l("hold A 1 100\nwrite A 1 110 1\nlost A 200\n", "fail B 5000 busy\n");
    const auto v = judge(read_holds(l.paths()), 150, 250, 1000);
    EXPECT_FALSE(v.overlap);
    EXPECT_TRUE(v.liveness_violated);
}

TEST(NemesisHistory, AnAcquireBeyondTheBoundIsALivenessViolation) {
    const logs l("hold A 1 100\nlost A 200\n", "hold B 2 5000\nend B 5100\n");
    EXPECT_TRUE(judge(read_holds(l.paths()), 150, 250, 1000).liveness_violated);
    EXPECT_FALSE(judge(read_holds(l.paths()), 150, 250, 10'000).liveness_violated);
}

// A cell whose matrix shows a violation gets more runs until each violation it shows was seen;
// a cell the matrix calls ok gets none.
TEST(NemesisMatrix, AViolationTheMatrixShowsIsLookedForUntilSeen) {
    edgelock::nemesis::table_row row;
    row.matrix_known = true;
    EXPECT_FALSE(edgelock::nemesis::violation_unseen(row)) << "the matrix calls it ok";
    row.matrix.overlap = true;
    row.matrix.stale = true;
    row.real.runs = 2;
    EXPECT_TRUE(edgelock::nemesis::violation_unseen(row));
    row.real.overlap = 1;
    EXPECT_TRUE(edgelock::nemesis::violation_unseen(row)) << "the stale write is still unseen";
    row.real.stale = 1;
    EXPECT_FALSE(edgelock::nemesis::violation_unseen(row));
}

// A lost hold counts only in the runs that judge it: elsewhere (a paused holder, a cut-off
// one) losing the lock is the right outcome, and the matrix's kept says nothing about it.
TEST(NemesisMatrix, ALostHoldIsComparedOnlyWhereRunsJudgedItAgainstItsCheck) {
    using edgelock::nemesis::lost_check;
    edgelock::nemesis::table_row row;
    row.matrix_known = true;
    row.real.runs = 1;
    row.real.lost = 1;
    EXPECT_TRUE(edgelock::nemesis::agrees(row)) << "not judged: not compared";
    row.real.lost_against = lost_check::kept;
    EXPECT_FALSE(edgelock::nemesis::agrees(row)) << "the matrix keeps every hold";
    row.matrix.available = true;
    EXPECT_FALSE(edgelock::nemesis::agrees(row)) << "set against kept, not available";
    row.real.lost_against = lost_check::available;
    EXPECT_TRUE(edgelock::nemesis::agrees(row));
    row.real.lost = 0;
    EXPECT_FALSE(edgelock::nemesis::agrees(row));
    EXPECT_TRUE(edgelock::nemesis::violation_unseen(row));
}

// A run the harness could not carry out says nothing about the matrix: the cell disagrees.
TEST(NemesisMatrix, ARunTheHarnessCouldNotCarryOutIsNeverAgreement) {
    edgelock::nemesis::table_row row;
    row.matrix_known = true;
    row.real.runs = 1;
    EXPECT_TRUE(edgelock::nemesis::agrees(row));
    row.real.errors = 1;
    EXPECT_FALSE(edgelock::nemesis::agrees(row));
}

}  // namespace
