// SPDX-License-Identifier: Apache-2.0
#include "admin.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>
#include <ctime>
#include <utility>
#include <string>
#include <vector>

#include "edgelock/error_code.hpp"
#include "edgelock/blocking_commands.hpp"
#include "edgelock/keys.hpp"
#include "edgelock/limits.hpp"
#include "edgelock/scripts.hpp"
#include "nodes.hpp"
#include "errors.hpp"
#include "exit_codes.hpp"
#include "owner.hpp"
#include "quote.hpp"

namespace edgelock::cli {
namespace {

using blocking::command_connection;
using blocking::command_reply;

std::string companion_of(const std::string& name, companion which) {
    std::array<char, key_bytes_max> key{};
    const std::size_t size = write_companion_key(name, which, key.data(), key.size());
    return std::string(key.data(), size);
}

std::string fence_key(const std::string& name) { return companion_of(name, companion::fence); }

constexpr std::size_t waiters_read_max = 100;         // line entries status looks at
constexpr long long scan_keys_examined_max = 10'000;  // keys list looks at per instance
// SCAN's COUNT hint per call: its reply stays well inside the reader's array_elements_max.
constexpr const char* scan_count = "20";
// A semaphore's live leases per ZRANGEBYSCORE ... WITHSCORES: two elements each, within the
// reader's array_elements_max. At most permits_max of them are read.
constexpr long long leases_per_read = 30;

// What `edgelock run` wrote in the owner key (owner.hpp), shown only for the token it names.
struct owner_info {
    bool known = false;
    std::string host;
    std::string pid;
    std::string command;
    long long since_ms = 0;  // the server's clock
};

// One live lease of a semaphore (lock.hpp, "Semaphores"): a member of the name's sorted set.
struct lease {
    std::string token;
    long long ttl_ms = 0;  // its score (the expiry) less the server's clock
    owner_info owner;
    long long permit = -1;  // a fenced semaphore's number for it (the slots key); -1: none
};

struct waiter {
    std::string token;
    long long expires_in_ms = 0;  // when its place in line lapses unless it tries again
};

struct instance_status {
    std::string address;
    command_failure problem;
    bool held = false;
    std::string token;
    long long ttl_ms = -2;
    std::string fence = "0";
    long long now_ms = 0;  // the server's clock (TIME)
    owner_info owner;
    std::vector<waiter> waiters;  // in line order, the holder left out
    long long line_entries = 0;   // ZCARD of the queue key: waiters_read_max of them are read
    bool semaphore = false;       // the name is a sorted set: token and fence do not apply
    long long permits = 0;        // the set's N (its "permits" member), 0 when it has none
    std::vector<lease> holders;   // the semaphore's live leases, soonest expiry first
};

bool ask(command_connection& c, const std::vector<std::string>& args, command_reply& out,
         command_failure& f) {
    f.ec = c.call(args, out);
    return !f.ec && !error_reply(out, f);
}

long long integer_of(const std::string& text) {
    long long value = 0;
    std::from_chars(text.data(), text.data() + text.size(), value);
    return value;
}

// The owner key's description when it names `token`; an unreadable one is no description.
owner_info read_owner(command_connection& c, const std::string& name, const std::string& token) {
    owner_info owner;
    command_reply r;
    command_failure ignored;
    if (!ask(c, {"HMGET", owner_key(name), "token", "host", "pid", "command", "since_ms"}, r,
             ignored)) {
        return owner;
    }
    if (r.elements.size() != 5 || r.elements[0].text != token) return owner;
    owner.known = true;
    owner.host = r.elements[1].text;
    owner.pid = r.elements[2].text;
    owner.command = r.elements[3].text;
    owner.since_ms = integer_of(r.elements[4].text);
    return owner;
}

// A semaphore holder's description (owner.hpp): its four fields, when `edgelock` wrote them.
owner_info read_permit_owner(command_connection& c, const std::string& name,
                             const std::string& token) {
    owner_info owner;
    command_reply r;
    command_failure ignored;
    if (!ask(c,
             {"HMGET", owner_key(name), permit_field(token, "host"), permit_field(token, "pid"),
              permit_field(token, "command"), permit_field(token, "since_ms")},
             r, ignored)) {
        return owner;
    }
    if (r.elements.size() != 4) return owner;
    for (const command_reply& field : r.elements) {
        if (field.type != reply_type::bulk_string) return owner;
    }
    owner.known = true;
    owner.host = r.elements[0].text;
    owner.pid = r.elements[1].text;
    owner.command = r.elements[2].text;
    owner.since_ms = integer_of(r.elements[3].text);
    return owner;
}

// The N a semaphore's set stores as its "permits" member's score, -N; 0 when it has none.
bool read_permits(command_connection& c, const std::string& name, long long& permits,
                  command_failure& f) {
    command_reply limit;
    if (!ask(c, {"ZSCORE", name, "permits"}, limit, f)) return false;
    permits = limit.type == reply_type::bulk_string ? -integer_of(limit.text) : 0;
    return true;
}

// The members of `name` scored above `now_ms`: the leases not yet expired (the scripts drop
// the others at their next call). The "permits" member is scored below zero, so never one.
bool read_leases(command_connection& c, const std::string& name, long long now_ms,
                 std::vector<lease>& out, command_failure& f) {
    for (long long offset = 0; offset < permits_max; offset += leases_per_read) {
        command_reply page;
        if (!ask(c,
                 {"ZRANGEBYSCORE", name, "(" + std::to_string(now_ms), "+inf", "WITHSCORES",
                  "LIMIT", std::to_string(offset), std::to_string(leases_per_read)},
                 page, f)) {
            return false;
        }
        for (std::size_t i = 0; i + 1 < page.elements.size(); i += 2) {
            out.push_back({page.elements[i].text, integer_of(page.elements[i + 1].text) - now_ms,
                           owner_info{}});
        }
        if (page.elements.size() < 2 * static_cast<std::size_t>(leases_per_read)) break;
    }
    return true;
}

// Whether `token` holds the name on this instance: the lock's holder or a live lease.
bool holds(const instance_status& s, const std::string& token) {
    if (!s.semaphore) return s.held && token == s.token;
    return std::any_of(s.holders.begin(), s.holders.end(),
                       [&](const lease& l) { return l.token == token; });
}

// The fair line (keys.hpp): entries in order, each with its expiry from the qttl key. Those
// whose place lapsed or that have none are out of line for the scripts too; a holder (the
// lock's, or each of a semaphore's) stands in line until its release, and is no waiter.
void read_line(command_connection& c, const std::string& name, instance_status& s) {
    const std::string queue = companion_of(name, companion::queue);
    const std::string qttl = companion_of(name, companion::queue_ttl);
    command_reply entries;
    command_reply count;
    command_failure ignored;
    if (!ask(c, {"ZRANGE", queue, "0", std::to_string(waiters_read_max - 1)}, entries, ignored))
        return;
    if (ask(c, {"ZCARD", queue}, count, ignored)) s.line_entries = count.integer;
    for (const command_reply& entry : entries.elements) {
        command_reply expiry;
        if (holds(s, entry.text)) continue;
        if (!ask(c, {"ZSCORE", qttl, entry.text}, expiry, ignored)) continue;
        if (expiry.type != reply_type::bulk_string) continue;
        const long long expires_in_ms = integer_of(expiry.text) - s.now_ms;
        if (expires_in_ms > 0) s.waiters.push_back({entry.text, expires_in_ms});
    }
}

long long server_now_ms(const command_reply& time) {
    if (time.elements.size() != 2) return 0;
    return integer_of(time.elements[0].text) * 1000 + integer_of(time.elements[1].text) / 1000;
}

// The lock's key (a string): its token and the holder's description, ttl and fence counter.
void read_lock(command_connection& c, const std::string& name, instance_status& s) {
    command_reply token;
    command_reply ttl;
    command_reply fence;
    for (auto [args, out] : {std::pair{std::vector<std::string>{"GET", name}, &token},
                             std::pair{std::vector<std::string>{"PTTL", name}, &ttl},
                             std::pair{std::vector<std::string>{"GET", fence_key(name)}, &fence}}) {
        if (!ask(c, args, *out, s.problem)) return;
    }
    if (token.type == reply_type::bulk_string) {
        s.held = true;
        s.token = token.text;
        s.owner = read_owner(c, name, s.token);
    }
    if (ttl.type == reply_type::integer) s.ttl_ms = ttl.integer;
    if (fence.type == reply_type::bulk_string) s.fence = fence.text;
}

// A fenced lease's permit number (keys.hpp, the slots key); -1 when it has none.
long long read_permit_number(command_connection& c, const std::string& name,
                             const std::string& token) {
    command_reply number;
    command_failure ignored;
    if (!ask(c, {"ZSCORE", companion_of(name, companion::slots), token}, number, ignored) ||
        number.type != reply_type::bulk_string) {
        return -1;
    }
    return integer_of(number.text);
}

// A semaphore's set: its N, the fence counter, and each live lease with its permit and its
// holder's description.
void read_semaphore(command_connection& c, const std::string& name, instance_status& s) {
    s.semaphore = true;
    if (!read_permits(c, name, s.permits, s.problem)) return;
    if (!read_leases(c, name, s.now_ms, s.holders, s.problem)) return;
    command_reply fence;
    if (!ask(c, {"GET", fence_key(name)}, fence, s.problem)) return;
    if (fence.type == reply_type::bulk_string) s.fence = fence.text;
    for (lease& l : s.holders) {
        l.owner = read_permit_owner(c, name, l.token);
        l.permit = read_permit_number(c, name, l.token);
    }
}

// TYPE tells a semaphore's sorted set from the lock's string (or no key: a free lock). A
// cluster node that answers MOVED (the slot moved since CLUSTER SLOTS was read) is left for
// the node it names, once.
instance_status read_status(node where, const options& o, bool may_follow = true) {
    instance_status s;
    command_connection c;
    if (!open_for(c, where, o, s)) return s;
    command_reply type;
    command_reply time;
    for (auto [args, out] : {std::pair{std::vector<std::string>{"TYPE", o.name}, &type},
                             std::pair{std::vector<std::string>{"TIME"}, &time}}) {
        if (ask(c, args, *out, s.problem)) continue;
        if (may_follow && follow_moved(*out, where)) return read_status(where, o, false);
        return s;
    }
    s.now_ms = server_now_ms(time);
    if (type.text == "zset") {
        read_semaphore(c, o.name, s);
    } else {
        read_lock(c, o.name, s);
    }
    if (!s.problem.ec) read_line(c, o.name, s);
    return s;
}

std::string ttl_text(long long ttl_ms) {
    if (ttl_ms == -1) return "no expiry (not set by edgelock)";
    if (ttl_ms < 0) return "-";
    return format_duration(ttl_ms) + " left";
}

// "2024-05-01T10:00:00Z (12.3s ago)", both on the server's clock.
std::string since_text(long long since_ms, long long now_ms) {
    const std::time_t seconds = static_cast<std::time_t>(since_ms / 1000);
    std::tm utc{};
    gmtime_r(&seconds, &utc);
    std::array<char, 32> when{};
    std::strftime(when.data(), when.size(), "%Y-%m-%dT%H:%M:%SZ", &utc);
    return std::string(when.data()) + " (" + format_duration(std::max(0LL, now_ms - since_ms)) +
           " ago)";
}

// The exit code and one-line message when fewer than a majority of instances answered.
int report_unreachable(const char* verb, const std::string& what,
                       const std::vector<const command_failure*>& failures,
                       const std::vector<std::string>& addresses) {
    std::string text;
    for (std::size_t i = 0; i < failures.size(); ++i) {
        if (!text.empty()) text += ", ";
        text += addresses[i] + ": " + describe(*failures[i]);
    }
    std::fprintf(stderr, "edgelock: cannot %s %s: %s\n", verb, what.c_str(), text.c_str());
    return exit_code_for(failures.front()->ec, failures.front()->detail);
}

void print_owner_text(const owner_info& owner, long long now_ms) {
    if (!owner.known) return;
    std::printf("host     %s\n", shown(owner.host).c_str());
    std::printf("pid      %s\n", shown(owner.pid).c_str());
    std::printf("command  %s\n", shown(owner.command).c_str());
    std::printf("since    %s\n", since_text(owner.since_ms, now_ms).c_str());
}

void print_waiters_text(const instance_status& s) {
    std::printf("waiters  %zu", s.waiters.size());
    if (s.line_entries > static_cast<long long>(waiters_read_max)) {
        std::printf(" (of the first %zu of %lld entries in line)", waiters_read_max,
                    s.line_entries);
    }
    std::printf("\n");
    for (std::size_t i = 0; i < s.waiters.size(); ++i) {
        std::printf("  %-6zu %s  place kept %s\n", i + 1, shown(s.waiters[i].token).c_str(),
                    format_duration(s.waiters[i].expires_in_ms).c_str());
    }
}

// A semaphore has no single holder: its N, the fence counter, then each holder as the lock's
// is shown, with its permit when fenced.
void print_semaphore_text(const instance_status& s) {
    std::printf("permits  %s\n", s.permits > 0 ? std::to_string(s.permits).c_str() : "-");
    std::printf("held     %zu\n", s.holders.size());
    std::printf("fence    %s\n", shown(s.fence).c_str());
    for (const lease& l : s.holders) {
        std::printf("holder   %s\n", shown(l.token).c_str());
        if (l.permit >= 0) std::printf("permit   %lld\n", l.permit);
        print_owner_text(l.owner, s.now_ms);
        std::printf("ttl      %s\n", ttl_text(l.ttl_ms).c_str());
    }
    print_waiters_text(s);
}

void print_instance_text(const instance_status& s) {
    if (s.semaphore) {
        print_semaphore_text(s);
        return;
    }
    std::printf("holder   %s\n", s.held ? shown(s.token).c_str() : "none");
    print_owner_text(s.owner, s.now_ms);
    std::printf("ttl      %s\n", ttl_text(s.ttl_ms).c_str());
    std::printf("fence    %s\n", shown(s.fence).c_str());
    print_waiters_text(s);
}

void print_owner_json(const owner_info& owner) {
    if (!owner.known) {
        std::printf("null");
        return;
    }
    std::printf("{\"host\":%s,\"pid\":%lld,\"command\":%s,\"since_ms\":%lld}",
                json_string(owner.host).c_str(), integer_of(owner.pid),
                json_string(owner.command).c_str(), owner.since_ms);
}

void print_waiters_json(const instance_status& s) {
    std::printf(",\"line_entries\":%lld,\"waiters\":[", s.line_entries);
    for (std::size_t i = 0; i < s.waiters.size(); ++i) {
        std::printf("%s{\"position\":%zu,\"token\":%s,\"expires_in_ms\":%lld}", i > 0 ? "," : "",
                    i + 1, json_string(s.waiters[i].token).c_str(), s.waiters[i].expires_in_ms);
    }
    std::printf("]}");
}

// "permits" (null without one), "fence" and "holders" (each with its "permit", null when
// unfenced) where the lock has "token", "ttl_ms", "fence" and "owner".
void print_semaphore_json(const instance_status& s) {
    if (s.permits > 0) {
        std::printf(",\"permits\":%lld", s.permits);
    } else {
        std::printf(",\"permits\":null");
    }
    std::printf(",\"fence\":%s,\"holders\":[", json_string(s.fence).c_str());
    for (std::size_t i = 0; i < s.holders.size(); ++i) {
        const lease& l = s.holders[i];
        const std::string permit = l.permit >= 0 ? std::to_string(l.permit) : "null";
        std::printf("%s{\"token\":%s,\"permit\":%s,\"ttl_ms\":%lld,\"owner\":", i > 0 ? "," : "",
                    json_string(l.token).c_str(), permit.c_str(), l.ttl_ms);
        print_owner_json(s.holders[i].owner);
        std::printf("}");
    }
    std::printf("]");
}

void print_instance_json(const instance_status& s) {
    std::printf("{\"address\":%s", json_string(s.address).c_str());
    if (s.problem.ec) {
        std::printf(",\"error\":%s}", json_string(describe(s.problem)).c_str());
        return;
    }
    if (s.semaphore) {
        print_semaphore_json(s);
    } else {
        std::printf(",\"token\":%s", s.held ? json_string(s.token).c_str() : "null");
        std::printf(",\"ttl_ms\":%lld,\"fence\":%s,\"owner\":", s.ttl_ms,
                    json_string(s.fence).c_str());
        print_owner_json(s.owner);
    }
    print_waiters_json(s);
}

// How many instances agree on one holder's token: the most that do.
std::size_t most_agreeing(const std::vector<instance_status>& states) {
    std::size_t most_held = 0;
    for (const instance_status& s : states) {
        std::size_t same = 0;
        for (const instance_status& other : states)
            same += other.held && other.token == s.token ? 1 : 0;
        if (s.held && !s.problem.ec && same > most_held) most_held = same;
    }
    return most_held;
}

// How many instances hold a semaphore's permit: its holders are many, so agreeing means only
// that some lease is live there.
std::size_t holding_permits(const std::vector<instance_status>& states) {
    return static_cast<std::size_t>(
        std::count_if(states.begin(), states.end(), [](const instance_status& s) {
            return s.semaphore && !s.problem.ec && !s.holders.empty();
        }));
}

bool any_semaphore(const std::vector<instance_status>& states) {
    return std::any_of(states.begin(), states.end(),
                       [](const instance_status& s) { return s.semaphore; });
}

void print_status(const options& o, const std::vector<instance_status>& states, bool held) {
    if (o.json) {
        std::printf("{\"lock\":%s,\"held\":%s,\"instances\":[", json_string(o.name).c_str(),
                    held ? "true" : "false");
        for (std::size_t i = 0; i < states.size(); ++i) {
            if (i > 0) std::printf(",");
            print_instance_json(states[i]);
        }
        std::printf("]}\n");
        return;
    }
    if (any_semaphore(states)) {
        std::printf("semaphore %s\n", shown(o.name).c_str());
    } else {
        std::printf("lock     %s\n", shown(o.name).c_str());
    }
    for (const instance_status& s : states) {
        std::printf("\ninstance %s\n", s.address.c_str());
        if (s.problem.ec) {
            std::printf("error    %s\n", describe(s.problem).c_str());
            continue;
        }
        print_instance_text(s);
    }
    std::printf("\n%s\n", held ? "held" : "free");
}

// A lock's value: an edgelock token, or one of the same shape from another Redlock client.
bool looks_like_token(std::string_view value) {
    if (value.size() != token_hex_bytes) return false;
    for (const char c : value) {
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    }
    return true;
}

// P as a SCAN pattern that matches the keys starting with P: its glob characters escaped.
std::string prefix_pattern(std::string_view prefix) {
    std::string pattern;
    for (const char c : prefix) {
        if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') pattern += '\\';
        pattern += c;
    }
    return pattern + "*";
}

struct listed_lock {
    std::string name;
    long long ttl_ms = -2;
    owner_info owner;
    long long permits = 0;       // a semaphore's N; 0 for a lock
    std::vector<lease> holders;  // a semaphore's live leases
};

struct instance_list {
    std::string address;
    command_failure problem;
    std::vector<listed_lock> locks;
    bool capped = false;  // stopped at scan_keys_examined_max with keys left
};

// A key that is no string: a held semaphore when it is a sorted set with a "permits" member
// scored below zero and a live lease of a token's shape. Another sorted set, or a key of
// another type (ZSCORE answers WRONGTYPE), is none.
void examine_semaphore(command_connection& c, const std::string& key, instance_list& l) {
    listed_lock semaphore;
    command_reply time;
    command_failure ignored;
    if (!read_permits(c, key, semaphore.permits, ignored) || semaphore.permits <= 0) return;
    if (!ask(c, {"TIME"}, time, ignored)) return;
    const long long now_ms = server_now_ms(time);
    std::vector<lease> leases;
    if (!read_leases(c, key, now_ms, leases, ignored)) return;
    for (lease& held : leases) {
        if (!looks_like_token(held.token)) continue;
        held.owner = read_permit_owner(c, key, held.token);
        semaphore.holders.push_back(std::move(held));
    }
    if (semaphore.holders.empty()) return;
    semaphore.name = key;
    l.locks.push_back(std::move(semaphore));
}

// One key SCAN returned: a held lock when it holds a token and is no companion key.
void examine_key(command_connection& c, const std::string& key, instance_list& l) {
    if (is_companion_key(key)) return;
    command_reply value;
    command_failure ignored;
    if (!ask(c, {"GET", key}, value, ignored)) {
        // Another type answers WRONGTYPE: it may be a semaphore's set.
        if (value.type == reply_type::error) examine_semaphore(c, key, l);
        return;
    }
    if (value.type != reply_type::bulk_string || !looks_like_token(value.text)) return;
    listed_lock lock;
    lock.name = key;
    command_reply ttl;
    if (ask(c, {"PTTL", key}, ttl, ignored)) lock.ttl_ms = ttl.integer;
    lock.owner = read_owner(c, key, value.text);
    l.locks.push_back(std::move(lock));
}

instance_list scan_locks(node where, const options& o) {
    instance_list l;
    command_connection c;
    if (!open_for(c, where, o, l)) return l;
    std::string cursor = "0";
    long long examined = 0;
    do {
        command_reply r;
        if (!ask(c, {"SCAN", cursor, "MATCH", prefix_pattern(o.prefix), "COUNT", scan_count}, r,
                 l.problem)) {
            return l;
        }
        if (r.elements.size() != 2) return l;
        cursor = r.elements[0].text;
        for (const command_reply& key : r.elements[1].elements) {
            ++examined;
            examine_key(c, key.text, l);
        }
        l.capped = cursor != "0" && examined >= scan_keys_examined_max;
    } while (cursor != "0" && !l.capped);
    return l;
}

void print_listed_owner(const owner_info& owner) {
    if (!owner.known) return;
    std::printf("  %s pid %s %s", shown(owner.host).c_str(), shown(owner.pid).c_str(),
                quote(owner.command).c_str());
}

// "uplink  2 of 3 permits held", then one indented line per holder, as a lock's line reads.
void print_listed_semaphore(const listed_lock& semaphore) {
    std::printf("%s  %zu of %lld permits held\n", shown(semaphore.name).c_str(),
                semaphore.holders.size(), semaphore.permits);
    for (const lease& held : semaphore.holders) {
        std::printf("  %s  %s", shown(held.token).c_str(), ttl_text(held.ttl_ms).c_str());
        print_listed_owner(held.owner);
        std::printf("\n");
    }
}

void print_list(const instance_list& l) {
    std::printf("instance %s\n", l.address.c_str());
    if (l.problem.ec) {
        std::printf("error    %s\n", describe(l.problem).c_str());
        return;
    }
    for (const listed_lock& lock : l.locks) {
        if (lock.permits > 0) {
            print_listed_semaphore(lock);
            continue;
        }
        std::printf("%s  %s", shown(lock.name).c_str(), ttl_text(lock.ttl_ms).c_str());
        print_listed_owner(lock.owner);
        std::printf("\n");
    }
    if (l.locks.empty()) std::printf("no locks held\n");
    if (l.capped) {
        std::printf(
            "stopped after examining %lld keys: more may be held (narrow it with --prefix)\n",
            scan_keys_examined_max);
    }
}

// Removes o.token's lease from the semaphore's set on `c`: true when it was live. The fair
// release rather than permit_release, fair or not: a holder stays in the name's line until its
// release (scripts.hpp), and an entry left there would count as a waiter ahead of the others
// until its place lapsed; the waiters the freed permit lets in are woken now rather than at
// their next recheck. The line keys of an unfair semaphore are absent, and that part does
// nothing. N goes with the call: the set's own, or 1 (wake the head) when it has none.
bool release_permit_on(command_connection& c, const options& o, command_failure& f) {
    long long permits = 0;
    if (!read_permits(c, o.name, permits, f)) return false;
    command_reply r;
    f.ec =
        c.call({"EVAL", std::string(fair_permit_release_script.text), "3", o.name,
                companion_of(o.name, companion::queue), companion_of(o.name, companion::queue_ttl),
                o.token, std::to_string(std::max(permits, 1LL))},
               r);
    if (f.ec || error_reply(r, f)) return false;
    return r.type == reply_type::integer && r.integer == 1;
}

// The release on `where`: true when it deleted the lock key or removed the lease, with
// `semaphore` set when the name there is a semaphore's set (TYPE). A cluster node's MOVED (the
// slot moved meanwhile) is followed once; `where` then names the node that answered.
bool release_on(node& where, const options& o, command_failure& f, bool& semaphore,
                bool may_follow = true) {
    command_connection c;
    if (!open(c, where, o, f)) return false;
    command_reply type;
    f.ec = c.call({"TYPE", o.name}, type);
    if (!f.ec && may_follow && follow_moved(type, where)) {
        return release_on(where, o, f, semaphore, false);
    }
    if (f.ec || error_reply(type, f)) return false;
    if (type.text == "zset") {
        semaphore = true;
        return release_permit_on(c, o, f);
    }
    command_reply r;
    f.ec = c.call({"EVAL", std::string(release_script.text), "1", o.name, o.token}, r);
    if (f.ec || error_reply(r, f)) return false;
    return r.type == reply_type::integer && r.integer == 1;
}

}  // namespace

int show_status(const options& o) {
    std::vector<node> nodes = nodes_of(o);
    std::vector<instance_status> states;
    std::vector<const command_failure*> failures;
    std::vector<std::string> failed_addresses;
    for (const node& where : nodes) states.push_back(read_status(where, o));
    for (const instance_status& s : states) {
        if (s.problem.ec) {
            failures.push_back(&s.problem);
            failed_addresses.push_back(s.address);
        }
    }
    const std::size_t quorum = quorum_of(states.size());
    if (states.size() - failures.size() < quorum) {
        return report_unreachable("read", "lock " + quote(o.name), failures, failed_addresses);
    }
    const bool held = most_agreeing(states) >= quorum || holding_permits(states) >= quorum;
    print_status(o, states, held);
    return held ? exit_ok : exit_negative;
}

int list_locks(const options& o) {
    std::vector<instance_list> lists;
    std::vector<const command_failure*> failures;
    std::vector<std::string> failed_addresses;
    for (const node& where : nodes_of(o)) lists.push_back(scan_locks(where, o));
    bool found = false;
    for (const instance_list& l : lists) {
        found = found || !l.locks.empty();
        if (l.problem.ec) {
            failures.push_back(&l.problem);
            failed_addresses.push_back(l.address);
        }
    }
    if (lists.size() - failures.size() < quorum_of(lists.size())) {
        return report_unreachable("list", "locks " + quote(o.prefix + "*"), failures,
                                  failed_addresses);
    }
    for (std::size_t i = 0; i < lists.size(); ++i) {
        if (i > 0) std::printf("\n");
        print_list(lists[i]);
    }
    return found ? exit_ok : exit_negative;
}

int release_token(const options& o) {
    std::vector<node> nodes = nodes_of(o);
    std::size_t deleted = 0;
    bool semaphore = false;
    std::vector<command_failure> problems(nodes.size());
    std::vector<const command_failure*> failures;
    std::vector<std::string> failed_addresses;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        if (release_on(nodes[i], o, problems[i], semaphore)) ++deleted;
    }
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        if (problems[i].ec) {
            failures.push_back(&problems[i]);
            failed_addresses.push_back(nodes[i].address);
        }
    }
    const std::string what = (semaphore ? "semaphore " : "lock ") + quote(o.name);
    const std::size_t quorum = quorum_of(nodes.size());
    if (deleted < quorum && nodes.size() - failures.size() < quorum) {
        return report_unreachable("release", what, failures, failed_addresses);
    }
    if (deleted >= quorum) {
        std::printf("released %s%s (%s on %zu of %zu instances)\n", semaphore ? "permit of " : "",
                    what.c_str(), semaphore ? "removed" : "deleted", deleted, nodes.size());
        return exit_ok;
    }
    std::printf("not released: token %s %s %s", shown(o.token).c_str(),
                semaphore ? "holds no permit of" : "does not hold", what.c_str());
    if (deleted > 0) std::printf(" (removed it from %zu of %zu instances)", deleted, nodes.size());
    std::printf("\n");
    return exit_negative;
}

}  // namespace edgelock::cli
