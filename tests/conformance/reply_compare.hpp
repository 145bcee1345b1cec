// SPDX-License-Identifier: Apache-2.0
// How the conformance test compares the model's reply with the real server's (the rules of
// conformance_steps.hpp). Each returns "" when they agree, otherwise what differs.
#pragma once

#include <charconv>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "edgelock/resp_reader.hpp"

namespace edgelock::conformance {

// A number read from a clock: the fence counter (microseconds since the epoch, from TIME in
// the acquire script) or a waiter's expiry (milliseconds). The model reads its clock at the
// step's start and in whole milliseconds, the server somewhere in the step: they may differ
// by far less than a second, and no other number the commands handle is that large.
inline bool clock_values_close(std::string_view a, std::string_view b) {
    constexpr std::int64_t ms_since_epoch_min = 1'000'000'000'000;      // 2001 in ms
    constexpr std::int64_t us_since_epoch_min = 1'000'000'000'000'000;  // 2001 in us
    std::int64_t x = 0;
    std::int64_t y = 0;
    const auto [xe, xerr] = std::from_chars(a.data(), a.data() + a.size(), x);
    const auto [ye, yerr] = std::from_chars(b.data(), b.data() + b.size(), y);
    if (xerr != std::errc{} || yerr != std::errc{}) return false;
    if (xe != a.data() + a.size() || ye != b.data() + b.size()) return false;
    if (x < ms_since_epoch_min || y < ms_since_epoch_min) return false;
    const std::int64_t tolerance = x >= us_since_epoch_min ? 1'000'000 : 1'000;
    return (x > y ? x - y : y - x) <= tolerance;
}

inline std::vector<reply_node> parse_all(std::string_view bytes, bool& ok) {
    std::vector<reply_node> nodes(4096);
    const parse_result parsed = parse_reply(bytes.data(), bytes.size(), nodes.data(), nodes.size());
    ok = parsed.code == errc::ok && parsed.consumed == bytes.size();
    nodes.resize(ok ? parsed.nodes : 0);
    return nodes;
}

// Reply bytes on one line, CR and LF written as \r and \n.
inline std::string printable(std::string_view bytes) {
    std::string out;
    for (const char c : bytes) {
        if (c == '\r') {
            out += "\\r";
        } else if (c == '\n') {
            out += "\\n";
        } else {
            out += c;
        }
    }
    return out;
}

inline std::string differs(std::string_view what, std::string_view model, std::string_view real) {
    return std::string(what) + ": model " + printable(model) + " | redis " + printable(real);
}

// rule::exact: the same bytes, or the same replies but for clock readings.
inline std::string compare_exact(std::string_view model, std::string_view real) {
    if (model == real) return "";
    bool model_ok = false;
    bool real_ok = false;
    const std::vector<reply_node> m = parse_all(model, model_ok);
    const std::vector<reply_node> r = parse_all(real, real_ok);
    if (!model_ok || !real_ok || m.size() != r.size()) return differs("reply", model, real);
    for (std::size_t i = 0; i < m.size(); ++i) {
        const bool same =
            m[i].type == r[i].type && m[i].elements == r[i].elements &&
            (m[i].text == r[i].text || clock_values_close(m[i].text, r[i].text)) &&
            (m[i].integer == r[i].integer ||
             clock_values_close(std::to_string(m[i].integer), std::to_string(r[i].integer)));
        if (!same) return differs("reply", model, real);
    }
    return "";
}

// A fenced semaphore's slots key (ZRANGE 0 -1 WITHSCORES): the same members, each scored
// with a permit either side picked from its own clock's reading (scripts.hpp: the nearest
// free permit above the counter, which follows the clock), so the scores are not compared.
inline std::string compare_members(std::string_view model, std::string_view real) {
    bool model_ok = false;
    bool real_ok = false;
    const std::vector<reply_node> m = parse_all(model, model_ok);
    const std::vector<reply_node> r = parse_all(real, real_ok);
    if (!model_ok || !real_ok || m.empty() || r.empty() || m[0].type != reply_type::array ||
        r[0].type != reply_type::array) {
        return compare_exact(model, real);
    }
    const auto members = [](const std::vector<reply_node>& nodes) {
        std::map<std::string, int> out;
        for (std::size_t i = 1; i < nodes.size(); i += 2) ++out[std::string(nodes[i].text)];
        return out;
    };
    return members(m) == members(r) ? "" : differs("members", model, real);
}

// rule::pttl: the same sign; a remaining TTL within `tolerance_ms` (the model and the server
// read their clocks at different instants of the steps that set and read it).
inline std::string compare_pttl(std::string_view model, std::string_view real,
                                std::int64_t tolerance_ms) {
    bool model_ok = false;
    bool real_ok = false;
    const std::vector<reply_node> m = parse_all(model, model_ok);
    const std::vector<reply_node> r = parse_all(real, real_ok);
    if (!model_ok || !real_ok || m[0].type != reply_type::integer ||
        r[0].type != reply_type::integer) {
        return compare_exact(model, real);
    }
    const std::int64_t a = m[0].integer;
    const std::int64_t b = r[0].integer;
    if (a < 0 || b < 0) return a == b ? "" : differs("PTTL", model, real);
    return (a > b ? a - b : b - a) <= tolerance_ms ? "" : differs("PTTL", model, real);
}

// rule::role: ["master", offset, [replicas]] or ["slave", host, port, state, offset]. The
// offsets count writes in the model and bytes in Redis, and the hosts are the simulator's
// names: compared are the shape, the role, the number of replicas and a replica's link state.
inline std::string compare_role(std::string_view model, std::string_view real) {
    bool model_ok = false;
    bool real_ok = false;
    const std::vector<reply_node> m = parse_all(model, model_ok);
    const std::vector<reply_node> r = parse_all(real, real_ok);
    if (!model_ok || !real_ok || m.size() < 4 || r.size() < 4) return compare_exact(model, real);
    for (std::size_t i = 0; i < 4; ++i) {
        if (m[i].type != r[i].type) return differs("ROLE's shape", model, real);
    }
    const bool same =
        m[0].elements == r[0].elements && m[1].text == r[1].text &&
        (m[1].text == "master" ? m[3].elements == r[3].elements : m[4].text == r[4].text);
    return same ? "" : differs("ROLE", model, real);
}

// "field:value" lines of an INFO reply.
inline std::map<std::string, std::string> info_fields(std::string_view text) {
    std::map<std::string, std::string> fields;
    while (!text.empty()) {
        const std::size_t end = text.find("\r\n");
        const std::string_view line = text.substr(0, end);
        const std::size_t colon = line.find(':');
        if (!line.empty() && line[0] != '#' && colon != std::string_view::npos) {
            fields[std::string(line.substr(0, colon))] = std::string(line.substr(colon + 1));
        }
        if (end == std::string_view::npos) break;
        text.remove_prefix(end + 2);
    }
    return fields;
}

inline bool is_run_id(const std::string& s) {
    if (s.size() != 40) return false;
    for (const char c : s) {
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    }
    return true;
}

// rule::info: every field the model writes (the ones session/node_facts.hpp reads) is in the
// server's INFO with the same value; run_id by its form (the model's names the process and
// its start), uptime_in_seconds within a second.
inline std::string compare_info(std::string_view model, std::string_view real) {
    bool model_ok = false;
    bool real_ok = false;
    const std::vector<reply_node> m = parse_all(model, model_ok);
    const std::vector<reply_node> r = parse_all(real, real_ok);
    if (!model_ok || !real_ok || m[0].type != reply_type::bulk_string ||
        r[0].type != reply_type::bulk_string) {
        return compare_exact(model, real);
    }
    const auto real_fields = info_fields(r[0].text);
    for (const auto& [field, value] : info_fields(m[0].text)) {
        const auto found = real_fields.find(field);
        if (found == real_fields.end()) return "INFO: the server has no field " + field;
        bool same = found->second == value;
        if (field == "run_id") same = is_run_id(value) && is_run_id(found->second);
        if (field == "uptime_in_seconds") {
            const long long a = std::stoll(value);
            const long long b = std::stoll(found->second);
            same = (a > b ? a - b : b - a) <= 1;
        }
        if (!same) return "INFO " + field + ": model " + value + " | redis " + found->second;
    }
    return "";
}

// rule::time: [seconds, microseconds] as bulk strings, the same instant within a second.
inline std::string compare_time(std::string_view model, std::string_view real) {
    bool model_ok = false;
    bool real_ok = false;
    const std::vector<reply_node> m = parse_all(model, model_ok);
    const std::vector<reply_node> r = parse_all(real, real_ok);
    if (!model_ok || !real_ok || m.size() != 3 || r.size() != 3)
        return differs("TIME", model, real);
    const auto us = [](const std::vector<reply_node>& t) {
        return std::stoll(std::string(t[1].text)) * 1'000'000 + std::stoll(std::string(t[2].text));
    };
    if (r[2].text.size() > 6 || m[2].text.size() > 6) return differs("TIME", model, real);
    const long long d = us(m) - us(r);
    return (d < 0 ? -d : d) <= 1'000'000 ? "" : differs("TIME", model, real);
}

}  // namespace edgelock::conformance
