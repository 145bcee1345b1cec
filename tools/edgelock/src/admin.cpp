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

// What `edgelock run` wrote in the owner key (owner.hpp), shown only for the token it names.
struct owner_info {
    bool known = false;
    std::string host;
    std::string pid;
    std::string command;
    long long since_ms = 0;  // the server's clock
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

// The fair line (keys.hpp): entries in order, each with its expiry from the qttl key. Those
// whose place lapsed or that have none are out of line for the scripts too; the holder
// stands at the head until its release, and is no waiter.
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
        if (entry.text == s.token && s.held) continue;
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

// A cluster node that answers MOVED (the slot moved since CLUSTER SLOTS was read) is left for
// the node it names, once.
instance_status read_status(node where, const options& o, bool may_follow = true) {
    instance_status s;
    command_connection c;
    if (!open_for(c, where, o, s)) return s;
    command_reply token;
    command_reply ttl;
    command_reply fence;
    command_reply time;
    for (auto [args, out] : {std::pair{std::vector<std::string>{"GET", o.name}, &token},
                             std::pair{std::vector<std::string>{"PTTL", o.name}, &ttl},
                             std::pair{std::vector<std::string>{"GET", fence_key(o.name)}, &fence},
                             std::pair{std::vector<std::string>{"TIME"}, &time}}) {
        if (ask(c, args, *out, s.problem)) continue;
        if (may_follow && follow_moved(*out, where)) return read_status(where, o, false);
        return s;
    }
    if (token.type == reply_type::bulk_string) {
        s.held = true;
        s.token = token.text;
        s.owner = read_owner(c, o.name, s.token);
    }
    if (ttl.type == reply_type::integer) s.ttl_ms = ttl.integer;
    if (fence.type == reply_type::bulk_string) s.fence = fence.text;
    s.now_ms = server_now_ms(time);
    read_line(c, o.name, s);
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

void print_instance_text(const instance_status& s) {
    std::printf("holder   %s\n", s.held ? shown(s.token).c_str() : "none");
    if (s.owner.known) {
        std::printf("host     %s\n", shown(s.owner.host).c_str());
        std::printf("pid      %s\n", shown(s.owner.pid).c_str());
        std::printf("command  %s\n", shown(s.owner.command).c_str());
        std::printf("since    %s\n", since_text(s.owner.since_ms, s.now_ms).c_str());
    }
    std::printf("ttl      %s\n", ttl_text(s.ttl_ms).c_str());
    std::printf("fence    %s\n", shown(s.fence).c_str());
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

void print_instance_json(const instance_status& s) {
    std::printf("{\"address\":%s", json_string(s.address).c_str());
    if (s.problem.ec) {
        std::printf(",\"error\":%s}", json_string(describe(s.problem)).c_str());
        return;
    }
    std::printf(",\"token\":%s", s.held ? json_string(s.token).c_str() : "null");
    std::printf(",\"ttl_ms\":%lld,\"fence\":%s,\"owner\":", s.ttl_ms, json_string(s.fence).c_str());
    if (s.owner.known) {
        std::printf("{\"host\":%s,\"pid\":%lld,\"command\":%s,\"since_ms\":%lld}",
                    json_string(s.owner.host).c_str(), integer_of(s.owner.pid),
                    json_string(s.owner.command).c_str(), s.owner.since_ms);
    } else {
        std::printf("null");
    }
    std::printf(",\"line_entries\":%lld,\"waiters\":[", s.line_entries);
    for (std::size_t i = 0; i < s.waiters.size(); ++i) {
        std::printf("%s{\"position\":%zu,\"token\":%s,\"expires_in_ms\":%lld}", i > 0 ? "," : "",
                    i + 1, json_string(s.waiters[i].token).c_str(), s.waiters[i].expires_in_ms);
    }
    std::printf("]}");
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
    std::printf("lock     %s\n", shown(o.name).c_str());
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
};

struct instance_list {
    std::string address;
    command_failure problem;
    std::vector<listed_lock> locks;
    bool capped = false;  // stopped at scan_keys_examined_max with keys left
};

// One key SCAN returned: a held lock when it holds a token and is no companion key.
void examine_key(command_connection& c, const std::string& key, instance_list& l) {
    if (is_companion_key(key)) return;
    command_reply value;
    command_failure ignored;
    if (!ask(c, {"GET", key}, value, ignored)) return;  // another type: WRONGTYPE
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

void print_list(const instance_list& l) {
    std::printf("instance %s\n", l.address.c_str());
    if (l.problem.ec) {
        std::printf("error    %s\n", describe(l.problem).c_str());
        return;
    }
    for (const listed_lock& lock : l.locks) {
        std::printf("%s  %s", shown(lock.name).c_str(), ttl_text(lock.ttl_ms).c_str());
        if (lock.owner.known) {
            std::printf("  %s pid %s %s", shown(lock.owner.host).c_str(),
                        shown(lock.owner.pid).c_str(), quote(lock.owner.command).c_str());
        }
        std::printf("\n");
    }
    if (l.locks.empty()) std::printf("no locks held\n");
    if (l.capped) {
        std::printf(
            "stopped after examining %lld keys: more may be held (narrow it with --prefix)\n",
            scan_keys_examined_max);
    }
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
    const bool held = most_agreeing(states) >= quorum;
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

// The release script on `where`: true when it deleted the key. A cluster node's MOVED (the
// slot moved meanwhile) is followed once; `where` then names the node that answered.
bool release_on(node& where, const options& o, command_failure& f, bool may_follow = true) {
    command_connection c;
    if (!open(c, where, o, f)) return false;
    command_reply r;
    f.ec = c.call({"EVAL", std::string(release_script.text), "1", o.name, o.token}, r);
    if (!f.ec && may_follow && follow_moved(r, where)) return release_on(where, o, f, false);
    if (f.ec || error_reply(r, f)) return false;
    return r.type == reply_type::integer && r.integer == 1;
}

int release_token(const options& o) {
    std::vector<node> nodes = nodes_of(o);
    std::size_t deleted = 0;
    std::vector<command_failure> problems(nodes.size());
    std::vector<const command_failure*> failures;
    std::vector<std::string> failed_addresses;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        if (release_on(nodes[i], o, problems[i])) ++deleted;
    }
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        if (problems[i].ec) {
            failures.push_back(&problems[i]);
            failed_addresses.push_back(nodes[i].address);
        }
    }
    const std::size_t quorum = quorum_of(nodes.size());
    if (deleted < quorum && nodes.size() - failures.size() < quorum) {
        return report_unreachable("release", "lock " + quote(o.name), failures, failed_addresses);
    }
    if (deleted >= quorum) {
        std::printf("released lock %s (deleted on %zu of %zu instances)\n", quote(o.name).c_str(),
                    deleted, nodes.size());
        return exit_ok;
    }
    std::printf("not released: token %s does not hold lock %s", shown(o.token).c_str(),
                quote(o.name).c_str());
    if (deleted > 0) std::printf(" (removed it from %zu of %zu instances)", deleted, nodes.size());
    std::printf("\n");
    return exit_negative;
}

}  // namespace edgelock::cli
