// SPDX-License-Identifier: Apache-2.0
// A strict reader of the Prometheus text exposition format 0.0.4, for the --metrics-file tests:
// the fallback when promtool is not installed, and run beside it when it is, because
// promtool 2.42's `check metrics` lets through what a histogram_quantile() would choke on
// (buckets out of order or not cumulative, no le="+Inf", +Inf differing from _count, the same
// series twice, a family without # TYPE). It refuses, naming the line:
//   - a line that is not `# HELP name text`, `# TYPE name type`, or `name{labels} value` (no
//     empty lines, no other comments, no timestamps: the textfile collector refuses them);
//   - a family without both # HELP and # TYPE before its first sample, or a family's lines
//     not together; a metric or label name outside the format's alphabet, an escape other than
//     \\ \" \n, a value that is not a number (or +Inf, -Inf, NaN);
//   - a counter not named *_total, a sample whose name its family's type does not allow;
//   - a series (name and label set) twice;
//   - a histogram whose buckets are not in increasing le order with non-decreasing counts,
//     that lacks le="+Inf", _sum or _count, or whose +Inf count is not its _count.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace edgelock::cli_tests {

// Series as `name{label="value",...}` with the labels in the order written, escapes as read,
// mapped to their values.
struct exposition {
    std::map<std::string, double> samples;
    std::map<std::string, std::string> types;  // family name -> counter, gauge, histogram...
};

// "" when `text` passes every rule above (and `out` holds it), else "line N: what is wrong".
std::string check_exposition(std::string_view text, exposition& out);

// `promtool check metrics` on `text`, through a file in `directory` (removed after): its exit code
// (0: accepted) with what it printed in `output`, or -1 when the build found no promtool
// (scripts/setup.sh fetches it into ~/.cache/edgelock; tests/cli/CMakeLists.txt looks there).
int promtool_check(const std::string& directory, const std::string& text, std::string& output);

}  // namespace edgelock::cli_tests
