#include "admin.hpp"

#include <array>
#include <cstdio>
#include <utility>
#include <string>
#include <vector>

#include "edgelock/error_code.hpp"
#include "edgelock/hiredis_commands.hpp"
#include "edgelock/keys.hpp"
#include "edgelock/limits.hpp"
#include "edgelock/scripts.hpp"
#include "endpoints.hpp"
#include "errors.hpp"
#include "exit_codes.hpp"
#include "quote.hpp"

namespace edgelock::cli {
namespace {

using hiredis::command_connection;
using hiredis::command_reply;

std::string fence_key(const std::string& name) {
    std::array<char, key_bytes_max> key{};
    const std::size_t size = write_fence_key(name, key.data(), key.size());
    return std::string(key.data(), size);
}

struct instance_status {
    std::string address;
    failure problem;
    bool held = false;
    std::string token;
    long long ttl_ms = -2;
    std::string fence = "0";
};

instance_status read_status(endpoint ep, const options& o) {
    instance_status s;
    command_connection c;
    const bool opened = open(c, ep, o, s.problem);
    s.address = ep.address;
    if (!opened) return s;
    command_reply token;
    command_reply ttl;
    command_reply fence;
    for (auto [args, out] : {std::pair{std::vector<std::string>{"GET", o.name}, &token},
                             std::pair{std::vector<std::string>{"PTTL", o.name}, &ttl},
                             std::pair{std::vector<std::string>{"GET", fence_key(o.name)}, &fence}}) {
        s.problem.ec = c.call(args, *out);
        if (s.problem.ec || error_reply(*out, s.problem)) return s;
    }
    if (token.type == reply_type::bulk_string) {
        s.held = true;
        s.token = token.text;
    }
    if (ttl.type == reply_type::integer) s.ttl_ms = ttl.integer;
    if (fence.type == reply_type::bulk_string) s.fence = fence.text;
    return s;
}

std::string ttl_text(long long ttl_ms) {
    if (ttl_ms == -1) return "no expiry (not set by edgelock)";
    if (ttl_ms < 0) return "-";
    return format_duration(ttl_ms) + " left";
}

// The exit code and one-line message when fewer than a majority of instances answered.
int report_unreachable(const char* verb, const options& o, const std::vector<const failure*>& failures,
                       const std::vector<std::string>& addresses) {
    std::string text;
    for (std::size_t i = 0; i < failures.size(); ++i) {
        if (!text.empty()) text += ", ";
        text += addresses[i] + ": " + describe(*failures[i]);
    }
    std::fprintf(stderr, "edgelock: cannot %s lock %s: %s\n", verb, quote(o.name).c_str(), text.c_str());
    return exit_code_for(failures.front()->ec);
}

}  // namespace

int show_status(const options& o) {
    const std::vector<endpoint> endpoints = endpoints_of(o);
    std::vector<instance_status> states;
    std::vector<const failure*> failures;
    std::vector<std::string> failed_addresses;
    for (const endpoint& ep : endpoints) {
        states.push_back(read_status(ep, o));
    }
    for (const instance_status& s : states) {
        if (s.problem.ec) {
            failures.push_back(&s.problem);
            failed_addresses.push_back(s.address);
        }
    }
    const std::size_t quorum = quorum_of(states.size());
    if (states.size() - failures.size() < quorum) return report_unreachable("read", o, failures, failed_addresses);

    std::size_t most_held = 0;
    std::printf("lock     %s\n", shown(o.name).c_str());
    for (const instance_status& s : states) {
        std::printf("\ninstance %s\n", s.address.c_str());
        if (s.problem.ec) {
            std::printf("error    %s\n", describe(s.problem).c_str());
            continue;
        }
        std::size_t same = 0;
        for (const instance_status& other : states) same += other.held && other.token == s.token ? 1 : 0;
        if (s.held && same > most_held) most_held = same;
        std::printf("holder   %s\n", s.held ? shown(s.token).c_str() : "none");
        std::printf("ttl      %s\n", ttl_text(s.ttl_ms).c_str());
        std::printf("fence    %s\n", shown(s.fence).c_str());
    }
    const bool held = most_held >= quorum;
    std::printf("\n%s\n", held ? "held" : "free");
    return held ? exit_ok : exit_negative;
}

int release_token(const options& o) {
    std::vector<endpoint> endpoints = endpoints_of(o);
    std::size_t deleted = 0;
    std::vector<failure> problems(endpoints.size());
    std::vector<const failure*> failures;
    std::vector<std::string> failed_addresses;
    for (std::size_t i = 0; i < endpoints.size(); ++i) {
        command_connection c;
        if (!open(c, endpoints[i], o, problems[i])) continue;
        command_reply r;
        problems[i].ec = c.call({"EVAL", std::string(release_script.text), "1", o.name, o.token}, r);
        if (problems[i].ec || error_reply(r, problems[i])) continue;
        if (r.type == reply_type::integer && r.integer == 1) ++deleted;
    }
    for (std::size_t i = 0; i < endpoints.size(); ++i) {
        if (problems[i].ec) {
            failures.push_back(&problems[i]);
            failed_addresses.push_back(endpoints[i].address);
        }
    }
    const std::size_t quorum = quorum_of(endpoints.size());
    if (deleted < quorum && endpoints.size() - failures.size() < quorum) {
        return report_unreachable("release", o, failures, failed_addresses);
    }
    if (deleted >= quorum) {
        std::printf("released lock %s (deleted on %zu of %zu instances)\n", quote(o.name).c_str(), deleted,
                    endpoints.size());
        return exit_ok;
    }
    std::printf("not released: token %s does not hold lock %s", shown(o.token).c_str(), quote(o.name).c_str());
    if (deleted > 0) std::printf(" (removed it from %zu of %zu instances)", deleted, endpoints.size());
    std::printf("\n");
    return exit_negative;
}

}  // namespace edgelock::cli
