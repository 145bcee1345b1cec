// SPDX-License-Identifier: Apache-2.0
#include "edgelock/sim/schedule.hpp"

#include <array>
#include <charconv>
#include <system_error>

#include "edgelock/assert.hpp"
#include "edgelock/sim/configuration.hpp"

namespace edgelock::sim {
namespace {

constexpr std::array<const char*, point_count> point_names = {
    "acquire_sent", "acquired",       "read_done", "checked",
    "write_sent",   "release_called", "renew_sent"};

constexpr std::array<const char*, 15> kind_names = {
    "pause",   "slow_link", "partition",      "drop_reply", "loss",
    "crash",   "wall_step", "clock_rate",     "repl_lag",   "power_off",
    "isolate", "evict",     "slow_subscribe", "migrate",    "replace"};

constexpr std::array<const char*, 3> persistence_names = {"none", "everysec", "always"};

bool has_duration(fault_kind k) {
    return k == fault_kind::pause || k == fault_kind::slow_link || k == fault_kind::partition ||
           k == fault_kind::loss || k == fault_kind::crash || k == fault_kind::repl_lag ||
           k == fault_kind::power_off || k == fault_kind::isolate ||
           k == fault_kind::slow_subscribe || k == fault_kind::migrate || k == fault_kind::replace;
}

bool has_persistence(fault_kind k) {
    return k == fault_kind::crash || k == fault_kind::power_off || k == fault_kind::replace;
}

bool has_amount(fault_kind k) {
    return k == fault_kind::slow_link || k == fault_kind::loss || k == fault_kind::wall_step ||
           k == fault_kind::clock_rate || k == fault_kind::repl_lag || k == fault_kind::evict ||
           k == fault_kind::slow_subscribe || k == fault_kind::migrate || k == fault_kind::replace;
}

bool has_peers(fault_kind k) {
    return k == fault_kind::slow_link || k == fault_kind::partition ||
           k == fault_kind::drop_reply || k == fault_kind::loss || k == fault_kind::repl_lag ||
           k == fault_kind::isolate || k == fault_kind::slow_subscribe || k == fault_kind::migrate;
}

bool has_reset(fault_kind k) {
    return k == fault_kind::partition || k == fault_kind::drop_reply || k == fault_kind::loss ||
           k == fault_kind::slow_subscribe;
}

void append_number(std::string& out, std::int64_t value) { out += std::to_string(value); }

bool fail(std::string& error, const char* why) {
    error = why;
    return false;
}

// A cursor over one fault's text.
struct reader {
    std::string_view text;
    std::size_t at = 0;

    bool done() const { return at >= text.size(); }
    bool eat(char c) {
        if (at < text.size() && text[at] == c) {
            ++at;
            return true;
        }
        return false;
    }
    bool number(std::int64_t& out) {
        const std::size_t start = at;
        if (at < text.size() && (text[at] == '-' || text[at] == '+')) ++at;
        const std::size_t digits = at;
        while (at < text.size() && text[at] >= '0' && text[at] <= '9') ++at;
        if (at == digits || at - digits > 15) return false;
        // from_chars takes a '-' but no '+'; 15 digits cannot overflow.
        const std::size_t from = text[start] == '+' ? digits : start;
        const auto [end, error] = std::from_chars(text.data() + from, text.data() + at, out);
        EDGELOCK_ASSERT(error == std::errc{});
        EDGELOCK_ASSERT(end == text.data() + at);
        return true;
    }
    std::string_view word() {
        const std::size_t start = at;
        while (at < text.size() && ((text[at] >= 'a' && text[at] <= 'z') || text[at] == '_')) {
            ++at;
        }
        return text.substr(start, at - start);
    }
};

template <typename Enum, std::size_t N>
bool lookup(const std::array<const char*, N>& names, std::string_view name, Enum& out) {
    for (std::size_t i = 0; i < N; ++i) {
        if (name == names[i]) {
            out = static_cast<Enum>(i);
            return true;
        }
    }
    return false;
}

bool parse_target(reader& r, fault& f, std::string& error) {
    std::int64_t target = 0;
    if (r.eat('c')) {
        f.on_node = false;
    } else if (r.eat('n')) {
        f.on_node = true;
    } else {
        return fail(error, "target must be cN or nN");
    }
    if (!r.number(target) || target < 0 || target > 15) return fail(error, "bad target");
    f.target = static_cast<std::uint8_t>(target);
    return true;
}

bool parse_trigger(reader& r, trigger& when, std::string& error) {
    if (r.eat('t')) {
        if (!r.number(when.at_ms) || when.at_ms < 0) return fail(error, "bad trigger time");
        return true;
    }
    if (!r.eat('c')) return fail(error, "trigger must be tMS or cN.point#n+ms");
    std::int64_t client = 0;
    std::int64_t nth = 0;
    if (!r.number(client) || client < 0 || client > 15 || !r.eat('.'))
        return fail(error, "bad trigger client");
    when.at_point = true;
    when.client = static_cast<std::uint8_t>(client);
    if (!lookup(point_names, r.word(), when.where)) return fail(error, "unknown point");
    if (!r.eat('#') || !r.number(nth) || nth < 1 || nth > 65535)
        return fail(error, "bad occurrence (#n)");
    when.nth = static_cast<std::uint16_t>(nth);
    if (!r.number(when.offset_ms) || when.offset_ms < 0)
        return fail(error, "bad trigger offset (+ms)");
    return true;
}

// "n0n3", "R" or "S" (the sentinels) after to=.
bool parse_peers(reader& r, fault& f, std::string& error) {
    f.nodes = 0;
    f.resource = false;
    f.sentinels = false;
    for (;;) {
        std::int64_t node = 0;
        if (r.eat('R')) {
            f.resource = true;
        } else if (r.eat('S')) {
            f.sentinels = true;
        } else if (r.eat('n')) {
            if (!r.number(node) || node < 0 || node >= static_cast<std::int64_t>(nodes_max))
                return fail(error, "bad peer");
            f.nodes = static_cast<node_mask>(f.nodes | (1u << node));
        } else {
            return true;
        }
    }
}

bool parse_option(reader& r, fault& f, std::string& error) {
    const std::string_view key = r.word();
    if (!r.eat('=')) return fail(error, "expected key=value");
    if (key == "to") return parse_peers(r, f, error);
    if (key == "p")
        return lookup(persistence_names, r.word(), f.persist) || fail(error, "unknown persistence");
    std::int64_t value = 0;
    if (!r.number(value)) return fail(error, "bad number");
    if (key == "d") {
        f.duration_ms = value;
    } else if (key == "x") {
        f.amount = value;
    } else if (key == "k") {
        if (value < 1 || value > 65535) return fail(error, "bad count");
        f.count = static_cast<std::uint16_t>(value);
    } else if (key == "wall") {
        f.wall = value != 0;
    } else if (key == "rst") {
        f.reset = value != 0;
    } else {
        return fail(error, "unknown key");
    }
    return true;
}

bool parse_fault(std::string_view text, fault& f, std::string& error) {
    reader r{text};
    if (!lookup(kind_names, r.word(), f.kind)) return fail(error, "unknown fault kind");
    if (!r.eat('.')) return fail(error, "expected '.' after the kind");
    if (!parse_target(r, f, error)) return false;
    if (!r.eat('@')) return fail(error, "expected '@' before the trigger");
    if (!parse_trigger(r, f.when, error)) return false;
    while (r.eat(',')) {
        if (!parse_option(r, f, error)) return false;
    }
    if (!r.done()) return fail(error, "unexpected text");
    if (f.duration_ms < 0) return fail(error, "negative duration");
    if (f.kind == fault_kind::evict && (f.amount < 0 || f.amount > 1)) {
        return fail(error, "evict takes x=0 (volatile-*) or x=1 (allkeys-*)");
    }
    return true;
}

}  // namespace

const char* to_string(point p) noexcept { return point_names[static_cast<std::size_t>(p)]; }
const char* to_string(fault_kind k) noexcept { return kind_names[static_cast<std::size_t>(k)]; }
const char* to_string(persistence p) noexcept {
    return persistence_names[static_cast<std::size_t>(p)];
}

bool fault::operator==(const fault& o) const noexcept {
    return kind == o.kind && when.at_point == o.when.at_point && when.at_ms == o.when.at_ms &&
           when.client == o.when.client && when.where == o.when.where && when.nth == o.when.nth &&
           when.offset_ms == o.when.offset_ms && on_node == o.on_node && target == o.target &&
           nodes == o.nodes && resource == o.resource && sentinels == o.sentinels &&
           duration_ms == o.duration_ms && amount == o.amount && persist == o.persist &&
           wall == o.wall && reset == o.reset && count == o.count;
}

std::string to_text(const fault& f) {
    std::string out = to_string(f.kind);
    out += f.on_node ? ".n" : ".c";
    append_number(out, f.target);
    out += '@';
    if (f.when.at_point) {
        out += 'c';
        append_number(out, f.when.client);
        out += '.';
        out += to_string(f.when.where);
        out += '#';
        append_number(out, f.when.nth);
        out += '+';
        append_number(out, f.when.offset_ms);
    } else {
        out += 't';
        append_number(out, f.when.at_ms);
    }
    if (has_peers(f.kind) &&
        (f.kind != fault_kind::isolate || f.nodes != 0)) {  // isolate: its side, if any
        out += ",to=";
        for (std::size_t n = 0; n < nodes_max; ++n) {
            if ((f.nodes >> n) & 1u) {
                out += 'n';
                append_number(out, n);
            }
        }
        if (f.resource) out += 'R';
        if (f.sentinels) out += 'S';
    }
    if (has_duration(f.kind)) {
        out += ",d=";
        append_number(out, f.duration_ms);
    }
    if (has_amount(f.kind)) {
        out += ",x=";
        append_number(out, f.amount);
    }
    if (has_persistence(f.kind)) {
        out += ",p=";
        out += to_string(f.persist);
    }
    if (f.kind == fault_kind::drop_reply) {
        out += ",k=";
        append_number(out, f.count);
    }
    if (f.kind == fault_kind::clock_rate && f.wall) out += ",wall=1";
    if (has_reset(f.kind) && f.reset) out += ",rst=1";
    return out;
}

std::string to_text(const schedule& s) {
    std::string out;
    for (const fault& f : s) {
        if (!out.empty()) out += ';';
        out += to_text(f);
    }
    return out;
}

bool parse_schedule(std::string_view text, schedule& out, std::string& error) {
    out.clear();
    std::size_t start = 0;
    while (start < text.size()) {
        std::size_t end = text.find(';', start);
        if (end == std::string_view::npos) end = text.size();
        fault f;
        if (!parse_fault(text.substr(start, end - start), f, error)) {
            error += " in \"" + std::string(text.substr(start, end - start)) + "\"";
            return false;
        }
        out.push_back(f);
        start = end + 1;
    }
    return true;
}

}  // namespace edgelock::sim
