// SPDX-License-Identifier: Apache-2.0
#include "exposition_check.hpp"

#include "program_run.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <utility>
#include <vector>

namespace edgelock::cli_tests {
namespace {

using labels = std::vector<std::pair<std::string, std::string>>;

bool name_char(char c, bool first, bool colon) {
    const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    return letter || (colon && c == ':') || (!first && c >= '0' && c <= '9');
}

// A metric name (colons allowed) or a label name at the start of `text`; its length, or 0.
std::size_t name_length(std::string_view text, bool colon) {
    std::size_t n = 0;
    while (n < text.size() && name_char(text[n], n == 0, colon)) ++n;
    return n;
}

// A number as Go's ParseFloat takes it in this format: [sign]digits[.digits][e[sign]digits],
// or +Inf, -Inf, NaN.
bool parse_value(std::string_view text, double& value) {
    if (text == "+Inf" || text == "-Inf" || text == "NaN") {
        value = text == "NaN" ? std::nan("") : (text[0] == '-' ? -INFINITY : INFINITY);
        return true;
    }
    std::size_t i = 0;
    auto digits = [&] {
        const std::size_t from = i;
        while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
        return i > from;
    };
    if (i < text.size() && (text[i] == '-' || text[i] == '+')) ++i;
    if (!digits()) return false;
    if (i < text.size() && text[i] == '.' && (++i, !digits())) return false;
    if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
        ++i;
        if (i < text.size() && (text[i] == '-' || text[i] == '+')) ++i;
        if (!digits()) return false;
    }
    if (i != text.size()) return false;
    value = std::strtod(std::string(text).c_str(), nullptr);
    return true;
}

// `{name="value",...}` at the start of `text` (consumed); "" or what is wrong.
std::string parse_labels(std::string_view& text, labels& out) {
    text.remove_prefix(1);
    while (!text.empty() && text[0] != '}') {
        const std::size_t n = name_length(text, false);
        if (n == 0) return "bad label name";
        std::string name(text.substr(0, n));
        if (name.rfind("__", 0) == 0) return "label name " + name + " is reserved";
        for (const auto& [seen, v] : out)
            if (seen == name) return "label " + name + " twice";
        text.remove_prefix(n);
        if (text.size() < 2 || text[0] != '=' || text[1] != '"') return "no =\" after " + name;
        text.remove_prefix(2);
        std::string value;
        for (;;) {
            if (text.empty() || text[0] == '\n') return "unterminated value of " + name;
            const char c = text[0];
            text.remove_prefix(1);
            if (c == '"') break;
            if (c != '\\') {
                value += c;
                continue;
            }
            if (text.empty() || (text[0] != '\\' && text[0] != '"' && text[0] != 'n'))
                return "bad escape in the value of " + name;
            value += text[0] == 'n' ? '\n' : text[0];
            text.remove_prefix(1);
        }
        out.emplace_back(std::move(name), std::move(value));
        if (!text.empty() && text[0] == ',') text.remove_prefix(1);
        else if (text.empty() || text[0] != '}') return "no , or } after a label";
    }
    if (text.empty()) return "no } after the labels";
    text.remove_prefix(1);
    return "";
}

std::string series_key(const std::string& name, labels l) {
    std::sort(l.begin(), l.end());
    std::string key = name + "{";
    for (std::size_t i = 0; i < l.size(); ++i)
        key += (i ? "," : "") + l[i].first + "=\"" + l[i].second + "\"";
    return key + "}";
}

struct histogram_series {
    std::vector<std::pair<double, double>> buckets;  // le, count, as written
    bool has_sum = false;
    bool has_count = false;
    double count = 0;
};

class checker {
public:
    explicit checker(exposition& out) : out_(out) {}
    std::string line(std::string_view text);
    std::string end_family();

private:
    std::string comment(std::string_view text);
    std::string sample(std::string_view text);
    std::string histogram_sample(const std::string& name, labels l, double value);

    exposition& out_;
    std::string family_;
    bool help_ = false;
    std::string type_;
    std::set<std::string> families_done_;
    std::map<std::string, histogram_series> histograms_;  // this family's, by label set sans le
};

std::string checker::line(std::string_view text) {
    if (text.empty()) return "empty line";
    if (text[0] == '#') return comment(text);
    return sample(text);
}

std::string checker::comment(std::string_view text) {
    const bool help = text.rfind("# HELP ", 0) == 0;
    if (!help && text.rfind("# TYPE ", 0) != 0) return "a comment other than # HELP or # TYPE";
    text.remove_prefix(7);
    const std::size_t n = name_length(text, true);
    if (n == 0 || n >= text.size() || text[n] != ' ') return "bad metric name after # HELP/TYPE";
    const std::string name(text.substr(0, n));
    const std::string_view rest = text.substr(n + 1);
    if (name != family_) {
        if (std::string problem = end_family(); !problem.empty()) return problem;
        if (families_done_.count(name) != 0) return "family " + name + " appears twice";
        family_ = name;
    }
    if (help) {
        if (help_) return "second # HELP for " + name;
        for (std::size_t i = 0; i < rest.size(); ++i) {
            if (rest[i] == '\\' && (i + 1 == rest.size() || (rest[++i] != '\\' && rest[i] != 'n')))
                return "bad escape in # HELP " + name;
        }
        help_ = true;
        return "";
    }
    if (!type_.empty()) return "second # TYPE for " + name;
    if (rest != "counter" && rest != "gauge" && rest != "histogram" && rest != "summary" &&
        rest != "untyped")
        return "unknown type " + std::string(rest);
    if (rest == "counter" && name.size() < 6) return "counter " + name + " not named *_total";
    if (rest == "counter" && name.compare(name.size() - 6, 6, "_total") != 0)
        return "counter " + name + " not named *_total";
    type_ = std::string(rest);
    out_.types[name] = type_;
    return "";
}

std::string checker::sample(std::string_view text) {
    const std::size_t n = name_length(text, true);
    if (n == 0) return "bad metric name";
    const std::string name(text.substr(0, n));
    text.remove_prefix(n);
    if (family_.empty() || !help_ || type_.empty())
        return name + " before its family's # HELP and # TYPE";
    labels l;
    if (!text.empty() && text[0] == '{') {
        if (std::string problem = parse_labels(text, l); !problem.empty()) return problem;
    }
    if (text.empty() || text[0] != ' ') return "no space before the value of " + name;
    text.remove_prefix(1);
    double value = 0;
    if (!parse_value(text, value)) return "bad value (or a timestamp) for " + name;
    const std::string key = series_key(name, l);
    if (!out_.samples.emplace(key, value).second) return "series twice: " + key;
    if (type_ == "histogram") return histogram_sample(name, std::move(l), value);
    if (name != family_) return name + " is not of family " + family_;
    return "";
}

std::string checker::histogram_sample(const std::string& name, labels l, double value) {
    auto le = std::find_if(l.begin(), l.end(), [](const auto& p) { return p.first == "le"; });
    double bound = 0;
    const bool bucket = name == family_ + "_bucket";
    if (bucket && (le == l.end() || !parse_value(le->second, bound)))
        return "bucket of " + family_ + " without a numeric le";
    if (!bucket && le != l.end()) return name + " with an le label";
    if (le != l.end()) l.erase(le);
    histogram_series& h = histograms_[series_key(family_, l)];
    if (bucket) {
        h.buckets.emplace_back(bound, value);
    } else if (name == family_ + "_sum") {
        h.has_sum = true;
    } else if (name == family_ + "_count") {
        h.has_count = true;
        h.count = value;
    } else {
        return name + " is not of histogram " + family_;
    }
    return "";
}

std::string checker::end_family() {
    for (const auto& [key, h] : histograms_) {
        for (std::size_t i = 1; i < h.buckets.size(); ++i) {
            if (!(h.buckets[i].first > h.buckets[i - 1].first))
                return key + ": buckets not in increasing le order";
            if (h.buckets[i].second < h.buckets[i - 1].second)
                return key + ": bucket counts not cumulative";
        }
        if (h.buckets.empty() || !std::isinf(h.buckets.back().first))
            return key + ": no le=\"+Inf\" bucket";
        if (!h.has_sum || !h.has_count) return key + ": no _sum or _count";
        if (h.buckets.back().second != h.count) return key + ": +Inf bucket is not _count";
    }
    if (!family_.empty()) families_done_.insert(family_);
    family_.clear();
    help_ = false;
    type_.clear();
    histograms_.clear();
    return "";
}

}  // namespace

std::string check_exposition(std::string_view text, exposition& out) {
    out = exposition{};
    checker c(out);
    std::size_t number = 0;
    while (!text.empty()) {
        ++number;
        const std::size_t end = text.find('\n');
        if (end == std::string_view::npos) return "line " + std::to_string(number) + ": no \\n";
        if (std::string problem = c.line(text.substr(0, end)); !problem.empty())
            return "line " + std::to_string(number) + ": " + problem;
        text.remove_prefix(end + 1);
    }
    if (std::string problem = c.end_family(); !problem.empty()) return "at the end: " + problem;
    return "";
}

int promtool_check(const std::string& directory, const std::string& text, std::string& output) {
    const std::string promtool = EDGELOCK_PROMTOOL;
    if (promtool.empty()) return -1;
    const std::string file = directory + "/promtool-check.prom";
    std::ofstream(file) << text;
    const program_result r =
        run_program({"/bin/sh", "-c", "\"$0\" check metrics < \"$1\"", promtool, file});
    std::remove(file.c_str());
    output = r.out + r.err;
    return r.exit_code;
}

}  // namespace edgelock::cli_tests
