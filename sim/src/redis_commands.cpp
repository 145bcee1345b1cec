// SPDX-License-Identifier: Apache-2.0
// The simulated Redis's keyspace commands: what the shipped scripts call through redis.call
// (and a client may send itself), with Redis 7.0's replies and error texts.
#include <algorithm>
#include <charconv>
#include <limits>
#include <system_error>

#include "edgelock/sim/clock.hpp"
#include "edgelock/sim/redis_model.hpp"
#include "edgelock/sim/resp_text.hpp"

namespace edgelock::sim {
namespace {

constexpr std::string_view wrongtype =
    "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";
constexpr std::string_view not_integer = "-ERR value is not an integer or out of range\r\n";
constexpr std::string_view not_float = "-ERR value is not a valid float\r\n";
constexpr std::string_view syntax_error = "-ERR syntax error\r\n";
constexpr std::string_view nil_bulk = "$-1\r\n";
// A sorted set's value starts with this (no string the simulated clients write does), so a
// string and a sorted set are told apart as Redis tells their types apart.
constexpr std::string_view zset_prefix{"\0zset\n", 6};

bool is_zset(std::string_view value) noexcept { return value.substr(0, 6) == zset_prefix; }

// A score as the model keeps it: a whole number. One Redis would take as a float but that
// is not whole answers an error of the model's own (the scripts' scores are milliseconds).
bool parse_score(std::string_view text, std::int64_t& out, std::string& reply) {
    if (parse_integer(text, out)) return true;
    double value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error == std::errc{} && end == text.data() + text.size()) {
        reply += "-ERR the simulated Redis keeps whole-number scores only\r\n";
    } else {
        reply += not_float;
    }
    return false;
}

// A ZRANGEBYSCORE bound: -inf, +inf, a score, or "(" and a score (exclusive).
bool parse_bound(std::string_view text, bool lower, std::int64_t& out) {
    constexpr std::int64_t lowest = std::numeric_limits<std::int64_t>::min();
    constexpr std::int64_t highest = std::numeric_limits<std::int64_t>::max();
    if (text == "-inf") return (out = lowest), true;
    if (text == "+inf" || text == "inf") return (out = highest), true;
    const bool exclusive = !text.empty() && text[0] == '(';
    if (!parse_integer(exclusive ? text.substr(1) : text, out)) return false;
    if (exclusive) out += lower ? 1 : -1;
    return true;
}

std::vector<zset_member>::iterator find_member(std::vector<zset_member>& set,
                                               std::string_view member) {
    return std::find_if(set.begin(), set.end(),
                        [&](const zset_member& m) { return m.member == member; });
}

// ZADD of one member: a new one, or a new score; Redis's order (score, then bytes) kept.
bool zadd(std::vector<zset_member>& set, std::int64_t score, std::string_view member) {
    const auto found = find_member(set, member);
    const bool added = found == set.end();
    if (!added) set.erase(found);
    zset_member inserted{score, std::string(member)};
    const auto at = std::lower_bound(
        set.begin(), set.end(), inserted, [](const zset_member& a, const zset_member& b) {
            return a.score != b.score ? a.score < b.score : a.member < b.member;
        });
    set.insert(at, std::move(inserted));
    return added;
}

// Members (and with `scores` their scores) of set[first, last) as a RESP array.
void append_members(std::string& reply, const std::vector<zset_member>& set, std::size_t first,
                    std::size_t last, bool scores) {
    reply += '*';
    reply += std::to_string((last - first) * (scores ? 2 : 1));
    reply += "\r\n";
    for (std::size_t i = first; i < last; ++i) {
        append_bulk(reply, set[i].member);
        if (scores) append_bulk(reply, std::to_string(set[i].score));
    }
}

// [first, last) of the members whose scores lie in [low, high].
std::pair<std::size_t, std::size_t> score_range(const std::vector<zset_member>& set,
                                                std::int64_t low, std::int64_t high) {
    std::size_t first = 0;
    while (first < set.size() && set[first].score < low) ++first;
    std::size_t last = first;
    while (last < set.size() && set[last].score <= high) ++last;
    return {first, last};
}

struct command_entry {
    std::string_view name;  // lower case, as Redis's error texts spell it
    int arity;              // Redis's: exactly n arguments, or at least -n when negative
    bool write;
    void (redis_node::*handler)(const request_view&, std::int64_t, std::string&, node_output&);
};

}  // namespace

std::vector<zset_member> decode_zset(std::string_view value) {
    std::vector<zset_member> out;
    if (!is_zset(value)) return out;
    std::size_t at = zset_prefix.size();
    while (at < value.size()) {
        const std::size_t space = value.find(' ', at);
        const std::size_t end = value.find('\n', at);
        if (space == std::string_view::npos || end == std::string_view::npos || space > end) break;
        zset_member m;
        if (!parse_integer(value.substr(at, space - at), m.score)) break;
        m.member = std::string(value.substr(space + 1, end - space - 1));
        out.push_back(std::move(m));
        at = end + 1;
    }
    return out;
}

std::string encode_zset(const std::vector<zset_member>& members) {
    std::string out(zset_prefix);
    for (const zset_member& m : members) {
        out += std::to_string(m.score);
        out += ' ';
        out += m.member;
        out += '\n';
    }
    return out;
}

bool redis_node::keyspace_command(const request_view& r, bool from_script, std::int64_t wall_ms,
                                  std::string& reply, node_output& out) {
    using n = redis_node;
    static constexpr command_entry commands[] = {
        {"get", 2, false, &n::get_command},
        {"set", -3, true, &n::set_command},
        {"del", -2, true, &n::del_command},
        {"exists", -2, false, &n::exists_command},
        {"pexpire", 3, true, &n::pexpire_command},
        {"persist", 2, true, &n::persist_command},
        {"pttl", 2, false, &n::pttl_command},
        {"incr", 2, true, &n::incr_command},
        {"incrby", 3, true, &n::incrby_command},
        {"time", 1, false, &n::time_command},
        {"publish", 3, false, &n::publish_command},
        {"zadd", -4, true, &n::zadd_command},
        {"zrem", -3, true, &n::zrem_command},
        {"zscore", 3, false, &n::zscore_command},
        {"zcard", 2, false, &n::zcard_command},
        {"zrange", -4, false, &n::zrange_command},
        {"zrangebyscore", -4, false, &n::zrangebyscore_command},
        {"zremrangebyscore", 4, true, &n::zremrangebyscore_command},
    };
    const command_entry* found = nullptr;
    for (const command_entry& c : commands) {
        if (equals_ignoring_case(r.args[0], c.name)) {
            found = &c;
            break;
        }
    }
    if (found == nullptr) return false;
    const auto count = static_cast<int>(r.count);
    if (found->arity > 0 ? count != found->arity : count < -found->arity) {
        if (from_script) {
            reply += "-ERR Wrong number of args calling Redis command from script\r\n";
        } else {
            reply += "-ERR wrong number of arguments for '";
            reply += found->name;
            reply += "' command\r\n";
        }
        return true;
    }
    if (found->write && !is_master() && replica_read_only_) {
        reply += "-READONLY You can't write against a read only replica.\r\n";
        return true;
    }
    (this->*found->handler)(r, wall_ms, reply, out);
    return true;
}

void redis_node::get_command(const request_view& r, std::int64_t wall_ms, std::string& reply,
                             node_output& out) {
    const redis_entry* e = find(r.args[1], wall_ms, out.effects);
    if (e == nullptr) {
        reply += nil_bulk;
    } else if (is_zset(e->value)) {
        reply += wrongtype;
    } else {
        append_bulk(reply, e->value);
    }
}

namespace {

struct set_options {
    bool nx = false;
    bool xx = false;
    bool get = false;
    bool keepttl = false;
    std::int64_t unit_ms = 0;  // EX: 1000, PX: 1, neither: 0
    std::string_view expire;   // the last EX or PX value: Redis reads only that one
    std::int64_t ttl_ms = -1;
};

// SET's options after the value, as Redis 7.0 parses them (parseExtendedStringArgumentsOrReply):
// NX and XX exclude each other, EX and PX (each may repeat: the last value counts) exclude
// each other and KEEPTTL; the value is checked after all options are read. False with
// Redis's error in `reply`.
bool parse_set_options(const request_view& r, set_options& o, std::string& reply) {
    for (std::size_t i = 3; i < r.count; ++i) {
        const std::string_view a = r.args[i];
        const bool next = i + 1 < r.count;
        if (equals_ignoring_case(a, "NX") && !o.xx) {
            o.nx = true;
        } else if (equals_ignoring_case(a, "XX") && !o.nx) {
            o.xx = true;
        } else if (equals_ignoring_case(a, "GET")) {
            o.get = true;
        } else if (equals_ignoring_case(a, "KEEPTTL") && o.unit_ms == 0) {
            o.keepttl = true;
        } else if (equals_ignoring_case(a, "EX") && !o.keepttl && o.unit_ms != 1 && next) {
            o.unit_ms = 1000;
            o.expire = r.args[++i];
        } else if (equals_ignoring_case(a, "PX") && !o.keepttl && o.unit_ms != 1000 && next) {
            o.unit_ms = 1;
            o.expire = r.args[++i];
        } else {
            return reply += syntax_error, false;
        }
    }
    if (o.unit_ms == 0) return true;
    std::int64_t value = 0;
    if (!parse_integer(o.expire, value)) return reply += not_integer, false;
    if (value <= 0 || value > std::numeric_limits<std::int64_t>::max() / o.unit_ms) {
        return reply += "-ERR invalid expire time in 'set' command\r\n", false;
    }
    o.ttl_ms = value * o.unit_ms;
    return true;
}

}  // namespace

// SET key value [NX|XX] [GET] [PX ms|EX s|KEEPTTL]. With GET the reply is the value the key
// had (nil for none; WRONGTYPE for a sorted set), otherwise OK, or nil when NX or XX kept
// the key as it was. A Redis 6.2 refuses NX with GET.
void redis_node::set_command(const request_view& r, std::int64_t wall_ms, std::string& reply,
                             node_output& out) {
    set_options o;
    if (!parse_set_options(r, o, reply)) return;
    if (o.ttl_ms > std::numeric_limits<std::int64_t>::max() - wall_ms) {
        reply += "-ERR invalid expire time in 'set' command\r\n";
        return;
    }
    if (o.nx && o.get && redis_6_) {
        reply += syntax_error;
        return;
    }
    const redis_entry* existing = find(r.args[1], wall_ms, out.effects);
    if (o.get && existing != nullptr && is_zset(existing->value)) {
        reply += wrongtype;
        return;
    }
    const bool write = existing != nullptr ? !o.nx : !o.xx;
    if (o.get) {
        if (existing != nullptr) {
            append_bulk(reply, existing->value);
        } else {
            reply += nil_bulk;
        }
    } else {
        reply += write ? std::string_view("+OK\r\n") : nil_bulk;
    }
    if (!write) return;
    const bool changed = existing == nullptr || existing->value != r.args[2];
    std::int64_t expire_at_ms = o.ttl_ms > 0 ? wall_ms + o.ttl_ms : -1;
    if (o.keepttl && existing != nullptr) expire_at_ms = existing->expire_at_ms;
    if (changed) note_grant(r.args[1], r.args[2], wall_ms, out);
    set(r.args[1], r.args[2], expire_at_ms, out.effects);
}

// A semaphore's acquire adds a token to the set under its first key (scripts.hpp): a new
// member of that set, other than its N, is a lease granted (a renewal only changes a score).
bool redis_node::takes_lease(std::string_view key, std::string_view member) const noexcept {
    return script_keys_count_ >= 1 && script_keys_[0] == key && member != "permits";
}

// A lock key given to a value that did not hold it. Set by a script called with a line of
// waiters (KEYS lock queue qttl: the fair acquire), it carries the new holder's place in that
// line at the moment of the SET (-1 when not in it), before the script moves it to the head.
void redis_node::note_grant(std::string_view key, std::string_view value, std::int64_t wall_ms,
                            node_output& out) const {
    node_output::grant g{std::string(key), std::string(value), false, -1};
    if (script_keys_count_ >= 3 && script_keys_[0] == key) {
        g.fair = true;
        if (const redis_entry* line = peek(script_keys_[1], wall_ms); line != nullptr) {
            for (const zset_member& m : decode_zset(line->value)) {
                if (m.member == value) g.queued_score = m.score;
            }
        }
    }
    out.grants.push_back(std::move(g));
}

void redis_node::del_command(const request_view& r, std::int64_t wall_ms, std::string& reply,
                             node_output& out) {
    std::int64_t deleted = 0;
    for (std::size_t i = 1; i < r.count; ++i) {
        if (find(r.args[i], wall_ms, out.effects) == nullptr) continue;
        erase(r.args[i], out.effects);
        ++deleted;
    }
    append_integer(reply, deleted);
}

void redis_node::exists_command(const request_view& r, std::int64_t wall_ms, std::string& reply,
                                node_output& out) {
    std::int64_t found = 0;
    for (std::size_t i = 1; i < r.count; ++i) {
        if (find(r.args[i], wall_ms, out.effects) != nullptr) ++found;
    }
    append_integer(reply, found);
}

// PEXPIRE key ms: 1 when the key exists (a time not ahead deletes it, as Redis does), or 0.
void redis_node::pexpire_command(const request_view& r, std::int64_t wall_ms, std::string& reply,
                                 node_output& out) {
    std::int64_t ttl_ms = 0;
    if (!parse_integer(r.args[2], ttl_ms)) {
        reply += not_integer;
        return;
    }
    if (ttl_ms > std::numeric_limits<std::int64_t>::max() - wall_ms) {
        reply += "-ERR invalid expire time in 'pexpire' command\r\n";
        return;
    }
    const redis_entry* e = find(r.args[1], wall_ms, out.effects);
    if (e == nullptr) {
        append_integer(reply, 0);
        return;
    }
    if (ttl_ms <= 0) {
        erase(r.args[1], out.effects);
    } else {
        set(r.args[1], e->value, wall_ms + ttl_ms, out.effects);
    }
    append_integer(reply, 1);
}

void redis_node::persist_command(const request_view& r, std::int64_t wall_ms, std::string& reply,
                                 node_output& out) {
    const redis_entry* e = find(r.args[1], wall_ms, out.effects);
    const bool volatile_key = e != nullptr && e->expire_at_ms >= 0;
    if (volatile_key) set(r.args[1], e->value, -1, out.effects);
    append_integer(reply, volatile_key ? 1 : 0);
}

void redis_node::pttl_command(const request_view& r, std::int64_t wall_ms, std::string& reply,
                              node_output& out) {
    const redis_entry* e = find(r.args[1], wall_ms, out.effects);
    if (e == nullptr) {
        append_integer(reply, -2);
    } else {
        append_integer(reply, e->expire_at_ms < 0 ? -1 : e->expire_at_ms - wall_ms);
    }
}

// INCR: keeps the key's expiry, as Redis does.
void redis_node::incr_command(const request_view& r, std::int64_t wall_ms, std::string& reply,
                              node_output& out) {
    add_to_integer(r.args[1], 1, wall_ms, reply, out);
}

// INCRBY key increment: Redis's int64 arithmetic, an overflow refused.
void redis_node::incrby_command(const request_view& r, std::int64_t wall_ms, std::string& reply,
                                node_output& out) {
    std::int64_t by = 0;
    if (!parse_integer(r.args[2], by)) {
        reply += not_integer;
        return;
    }
    add_to_integer(r.args[1], by, wall_ms, reply, out);
}

void redis_node::add_to_integer(std::string_view key, std::int64_t by, std::int64_t wall_ms,
                                std::string& reply, node_output& out) {
    const redis_entry* e = find(key, wall_ms, out.effects);
    std::int64_t value = 0;
    if (e != nullptr && is_zset(e->value)) {
        reply += wrongtype;
        return;
    }
    if (e != nullptr && !parse_integer(e->value, value)) {
        reply += not_integer;
        return;
    }
    constexpr std::int64_t top = std::numeric_limits<std::int64_t>::max();
    constexpr std::int64_t bottom = std::numeric_limits<std::int64_t>::min();
    if ((by > 0 && value > top - by) || (by < 0 && value < bottom - by)) {
        reply += "-ERR increment or decrement would overflow\r\n";
        return;
    }
    value += by;
    set(key, std::to_string(value), e != nullptr ? e->expire_at_ms : -1, out.effects);
    append_integer(reply, value);
}

// TIME: the node's wall clock as seconds and microseconds (whole milliseconds: the model's
// clocks read milliseconds).
void redis_node::time_command(const request_view&, std::int64_t wall_ms, std::string& reply,
                              node_output&) {
    const std::int64_t seconds = floor_div(wall_ms, 1000);
    reply += "*2\r\n";
    append_bulk(reply, std::to_string(seconds));
    append_bulk(reply, std::to_string((wall_ms - seconds * 1000) * 1000));
}

// PUBLISH: goes out in node_output::published (the world delivers it); the reply counts no
// receivers (the scripts ignore it).
void redis_node::publish_command(const request_view& r, std::int64_t, std::string& reply,
                                 node_output& out) {
    out.published.push_back(
        node_output::publication{std::string(r.args[1]), std::string(r.args[2])});
    append_integer(reply, 0);
}

bool redis_node::load_zset(std::string_view key, std::int64_t wall_ms,
                           std::vector<zset_member>& members, std::string& reply,
                           std::vector<repl_op>& effects) {
    members.clear();
    const redis_entry* e = find(key, wall_ms, effects);
    if (e == nullptr) return true;
    if (!is_zset(e->value)) {
        reply += wrongtype;
        return false;
    }
    members = decode_zset(e->value);
    return true;
}

void redis_node::store_zset(std::string_view key, const std::vector<zset_member>& members,
                            std::int64_t wall_ms, std::vector<repl_op>& effects) {
    const redis_entry* e = find(key, wall_ms, effects);
    if (members.empty()) {
        if (e != nullptr) erase(key, effects);
        return;
    }
    set(key, encode_zset(members), e != nullptr ? e->expire_at_ms : -1, effects);
}

// ZADD key score member [score member ...] (no options): the count of new members.
void redis_node::zadd_command(const request_view& r, std::int64_t wall_ms, std::string& reply,
                              node_output& out) {
    if (r.count % 2 != 0) {
        reply += syntax_error;
        return;
    }
    std::array<std::int64_t, request_args_max / 2> scores{};
    for (std::size_t i = 2; i < r.count; i += 2) {
        if (!parse_score(r.args[i], scores[i / 2 - 1], reply)) return;
    }
    std::vector<zset_member> set;
    if (!load_zset(r.args[1], wall_ms, set, reply, out.effects)) return;
    std::int64_t added = 0;
    for (std::size_t i = 2; i < r.count; i += 2) {
        if (!zadd(set, scores[i / 2 - 1], r.args[i + 1])) continue;
        ++added;
        if (takes_lease(r.args[1], r.args[i + 1]))
            note_grant(r.args[1], r.args[i + 1], wall_ms, out);
    }
    store_zset(r.args[1], set, wall_ms, out.effects);
    append_integer(reply, added);
}

void redis_node::zrem_command(const request_view& r, std::int64_t wall_ms, std::string& reply,
                              node_output& out) {
    std::vector<zset_member> set;
    if (!load_zset(r.args[1], wall_ms, set, reply, out.effects)) return;
    std::int64_t removed = 0;
    for (std::size_t i = 2; i < r.count; ++i) {
        const auto found = find_member(set, r.args[i]);
        if (found == set.end()) continue;
        set.erase(found);
        ++removed;
    }
    if (removed > 0) store_zset(r.args[1], set, wall_ms, out.effects);
    append_integer(reply, removed);
}

void redis_node::zscore_command(const request_view& r, std::int64_t wall_ms, std::string& reply,
                                node_output& out) {
    std::vector<zset_member> set;
    if (!load_zset(r.args[1], wall_ms, set, reply, out.effects)) return;
    const auto found = find_member(set, r.args[2]);
    if (found == set.end()) {
        reply += nil_bulk;
    } else {
        append_bulk(reply, std::to_string(found->score));
    }
}

void redis_node::zcard_command(const request_view& r, std::int64_t wall_ms, std::string& reply,
                               node_output& out) {
    std::vector<zset_member> set;
    if (!load_zset(r.args[1], wall_ms, set, reply, out.effects)) return;
    append_integer(reply, static_cast<std::int64_t>(set.size()));
}

// ZRANGE key start stop [WITHSCORES], by rank (negative counts from the end).
void redis_node::zrange_command(const request_view& r, std::int64_t wall_ms, std::string& reply,
                                node_output& out) {
    std::int64_t start = 0;
    std::int64_t stop = 0;
    const bool scores = r.count == 5 && equals_ignoring_case(r.args[4], "WITHSCORES");
    if (r.count > 5 || (r.count == 5 && !scores)) {
        reply += syntax_error;
        return;
    }
    if (!parse_integer(r.args[2], start) || !parse_integer(r.args[3], stop)) {
        reply += not_integer;
        return;
    }
    std::vector<zset_member> set;
    if (!load_zset(r.args[1], wall_ms, set, reply, out.effects)) return;
    const auto size = static_cast<std::int64_t>(set.size());
    if (start < 0) start = std::max<std::int64_t>(start + size, 0);
    if (stop < 0) stop += size;
    stop = std::min(stop, size - 1);
    if (start > stop || start >= size) {
        reply += "*0\r\n";
        return;
    }
    append_members(reply, set, static_cast<std::size_t>(start), static_cast<std::size_t>(stop + 1),
                   scores);
}

bool redis_node::load_score_range(const request_view& r, std::int64_t wall_ms,
                                  std::vector<zset_member>& members,
                                  std::pair<std::size_t, std::size_t>& range, std::string& reply,
                                  std::vector<repl_op>& effects) {
    std::int64_t low = 0;
    std::int64_t high = 0;
    if (!parse_bound(r.args[2], true, low) || !parse_bound(r.args[3], false, high)) {
        reply += "-ERR min or max is not a float\r\n";
        return false;
    }
    if (!load_zset(r.args[1], wall_ms, members, reply, effects)) return false;
    range = score_range(members, low, high);
    return true;
}

void redis_node::zrangebyscore_command(const request_view& r, std::int64_t wall_ms,
                                       std::string& reply, node_output& out) {
    const bool scores = r.count == 5 && equals_ignoring_case(r.args[4], "WITHSCORES");
    if (r.count > 5 || (r.count == 5 && !scores)) {
        reply += syntax_error;
        return;
    }
    std::vector<zset_member> set;
    std::pair<std::size_t, std::size_t> range;
    if (!load_score_range(r, wall_ms, set, range, reply, out.effects)) return;
    append_members(reply, set, range.first, range.second, scores);
}

void redis_node::zremrangebyscore_command(const request_view& r, std::int64_t wall_ms,
                                          std::string& reply, node_output& out) {
    std::vector<zset_member> set;
    std::pair<std::size_t, std::size_t> range;
    if (!load_score_range(r, wall_ms, set, range, reply, out.effects)) return;
    const auto [first, last] = range;
    if (last > first) {
        set.erase(set.begin() + static_cast<std::ptrdiff_t>(first),
                  set.begin() + static_cast<std::ptrdiff_t>(last));
        store_zset(r.args[1], set, wall_ms, out.effects);
    }
    append_integer(reply, static_cast<std::int64_t>(last - first));
}

}  // namespace edgelock::sim
