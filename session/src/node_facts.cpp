// SPDX-License-Identifier: Apache-2.0
#include "edgelock/session/node_facts.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <system_error>

namespace edgelock::session {
namespace {

// Uptimes beyond a century are not believed: the bound keeps the arithmetic far from overflow.
constexpr std::int64_t uptime_s_max = std::int64_t{100} * 366 * 24 * 3600;
// A replica's lag is seconds since its last acknowledgement: a century bounds it as well.
constexpr std::int64_t replica_lag_s_max = uptime_s_max;
// connected_slaves: far beyond any deployment, and far from overflow.
constexpr std::int64_t replicas_max = 1'000'000;
constexpr std::int64_t port_max = 65535;

// Decimal digits only, at most 19 of them, in [0, limit]. Unsigned from_chars refuses a
// '-'; it takes no '+' or space either.
bool parse_count(std::string_view text, std::int64_t limit, std::int64_t& out) noexcept {
    if (text.empty() || text.size() > 19) return false;
    std::uint64_t value = 0;
    const char* const last = text.data() + text.size();
    const auto [end, error] = std::from_chars(text.data(), last, value);
    if (error != std::errc{} || end != last || value > static_cast<std::uint64_t>(limit)) {
        return false;
    }
    out = static_cast<std::int64_t>(value);
    return true;
}

bool is_run_id(std::string_view text) noexcept {
    if (text.size() != run_id_bytes) return false;
    return std::all_of(text.begin(), text.end(),
                       [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// "slaveN" (N decimal digits): the name of one replica's line in INFO replication.
bool is_replica_line(std::string_view name) noexcept {
    if (name.size() <= 5 || std::string_view(name.data(), 5) != "slave") return false;
    return std::all_of(name.begin() + 5, name.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// The lag=N of a replica's line ("ip=10.0.0.2,port=6379,state=online,offset=42,lag=0").
void take_lag(std::string_view line, node_facts& facts) noexcept {
    while (!line.empty()) {
        const std::size_t comma = std::min(line.find(','), line.size());
        const std::string_view part(line.data(), comma);
        line.remove_prefix(std::min(comma + 1, line.size()));
        std::int64_t lag_s = 0;
        if (part.size() > 4 && std::string_view(part.data(), 4) == "lag=" &&
            parse_count({part.data() + 4, part.size() - 4}, replica_lag_s_max, lag_s)) {
            facts.replica_lag_s_max = std::max(facts.replica_lag_s_max, lag_s);
        }
    }
}

void take_replication_field(std::string_view name, std::string_view value,
                            node_facts& facts) noexcept {
    std::int64_t number = 0;
    if (name == "role") {
        facts.role.assign(value);
    } else if (name == "master_host") {
        facts.master_host.assign(value);
    } else if (name == "master_port") {
        if (parse_count(value, port_max, number)) {
            facts.master_port = static_cast<std::uint16_t>(number);
        }
    } else if (name == "connected_slaves") {
        if (parse_count(value, replicas_max, number)) facts.replicas = number;
    } else if (is_replica_line(name)) {
        take_lag(value, facts);
    }
}

void take_field(std::string_view name, std::string_view value, node_facts& facts) noexcept {
    std::int64_t number = 0;
    if (name == "uptime_in_seconds") {
        if (parse_count(value, uptime_s_max, number)) facts.uptime_s = number;
    } else if (name == "run_id") {
        if (is_run_id(value)) facts.run_id.assign(value);
    } else if (name == "redis_version") {
        facts.version.assign(value);
    } else if (name == "aof_enabled") {
        facts.aof_enabled = value == "1";
    } else if (name == "maxmemory") {
        if (parse_count(value, std::int64_t{1} << 62, number)) facts.maxmemory_bytes = number;
    } else if (name == "maxmemory_policy") {
        facts.maxmemory_policy.assign(value);
    } else {
        take_replication_field(name, value, facts);
    }
}

class line_writer {
public:
    void text(std::string_view part) noexcept {
        for (const char c : part) {
            if (size_ < buffer_.size()) buffer_[size_++] = c;
        }
    }
    void number(std::int64_t value) noexcept {
        char digits[20];
        std::size_t count = 0;
        do {
            digits[count++] = static_cast<char>('0' + value % 10);
            value /= 10;
        } while (value > 0 && count < sizeof digits);
        while (count > 0) text(std::string_view(&digits[--count], 1));
    }
    std::string_view view() const noexcept { return {buffer_.data(), size_}; }

private:
    std::array<char, eviction_warning_bytes_max> buffer_{};
    std::size_t size_ = 0;
};

}  // namespace

node_facts parse_info(std::string_view text) noexcept {
    node_facts facts;
    while (!text.empty()) {
        // Not substr(): its out-of-range check would link a throwing path into the session.
        const std::size_t end = std::min(text.find('\n'), text.size());
        std::string_view line(text.data(), end);
        text.remove_prefix(std::min(end + 1, text.size()));
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        const std::size_t colon = line.find(':');
        if (line.empty() || line.front() == '#' || colon == std::string_view::npos) continue;
        const std::string_view name(line.data(), colon);
        const std::string_view value(line.data() + colon + 1, line.size() - colon - 1);
        take_field(name, value, facts);
    }
    return facts;
}

fsync_policy parse_fsync_policy(const reply_node* nodes, std::size_t count) noexcept {
    if (count != 3 || nodes[0].type != reply_type::array || nodes[0].elements != 2)
        return fsync_policy::unknown;
    return parse_fsync_policy(nodes[2].text);
}

fsync_policy parse_fsync_policy(std::string_view value) noexcept {
    if (value == "always") return fsync_policy::always;
    if (value == "everysec") return fsync_policy::everysec;
    if (value == "no") return fsync_policy::no;
    return fsync_policy::unknown;
}

fixed_text<eviction_warning_bytes_max> eviction_warning(const node_facts& facts) noexcept {
    line_writer line;
    line.text("maxmemory ");
    line.number(facts.maxmemory_bytes);
    line.text(" bytes with maxmemory-policy ");
    line.text(facts.maxmemory_policy.view());
    // Every key edgelock writes has a TTL (lock keys, fence counters: a week, a fair line's
    // :queue and :qttl), so volatile-* policies may evict each of them, as allkeys-* do.
    line.text(" may evict lock keys, fence counters and waiting lines");
    line.text("; set maxmemory-policy noeviction");
    fixed_text<eviction_warning_bytes_max> out;
    out.assign(line.view());
    return out;
}

node_start node_start_of(const node_facts& facts, std::int64_t received_ms,
                         bool restarted) noexcept {
    // Redis may round its uptime up by most of a second (node_facts.hpp): take a second off.
    const std::int64_t ran_ms = std::max<std::int64_t>(facts.uptime_s - 1, 0) * 1000;
    node_start start;
    // A new run_id where another process answered: whatever its uptime says (a different
    // server behind the same address may have run for days), it never had this client's keys,
    // so it counts as started now.
    start.started_ms = restarted ? received_ms : std::max(received_ms - ran_ms, -now_ms_limit);
    start.durable = facts.durable();
    start.restarted = restarted;
    return start;
}

}  // namespace edgelock::session
