// SPDX-License-Identifier: Apache-2.0
#include "check_probe.hpp"

#include <sys/time.h>

#include <charconv>
#include <system_error>
#include <vector>

namespace edgelock::cli {
namespace {

using blocking::command_connection;
using blocking::command_reply;

long long wall_us() {
    timeval now{};
    ::gettimeofday(&now, nullptr);
    return static_cast<long long>(now.tv_sec) * 1'000'000 + now.tv_usec;
}

// A decimal integer at the front of `text`, as TIME's fields carry it; 0 when none is.
long long leading_integer(const std::string& text) {
    long long value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    return error == std::errc{} ? value : 0;
}

// One command; false (with r.problem set) when it failed or Redis refused it.
bool ask(command_connection& c, const std::vector<std::string>& args, command_reply& out,
         node_report& r) {
    r.problem.ec = c.call(args, out);
    return !r.problem.ec && !error_reply(out, r.problem);
}

std::string config_value(command_connection& c, const std::string& name, node_report& r) {
    command_reply reply;
    if (!ask(c, {"CONFIG", "GET", name}, reply, r)) {
        r.problem = {};  // an ACL may refuse CONFIG: the value stays unknown
        return "?";
    }
    return reply.elements.size() == 2 ? reply.elements[1].text : "";
}

void read_clock(command_connection& c, node_report& r) {
    command_reply time;
    const long long before = wall_us();
    if (!ask(c, {"TIME"}, time, r) || time.elements.size() != 2) return;
    const long long after = wall_us();
    const long long node_us =
        leading_integer(time.elements[0].text) * 1'000'000 + leading_integer(time.elements[1].text);
    r.round_trip_ms = (after - before) / 1000;
    r.clock_offset_ms = (node_us - (before + after) / 2) / 1000;
}

}  // namespace

std::string role_of(const node_report& r) { return std::string(r.facts.role.view()); }

std::string master_of(const node_report& r) {
    if (r.facts.role.view() != "slave") return "";
    return std::string(r.facts.master_host.view()) + ":" + std::to_string(r.facts.master_port);
}

node_report read_node(node where, const options& o) {
    node_report r;
    command_connection c;
    if (!open_for(c, where, o, r)) return r;
    command_reply info;
    // The default sections (replication among them): several in one INFO need Redis 7.0.
    if (!ask(c, {"INFO"}, info, r)) return r;
    r.facts = session::parse_info(info.text);
    r.facts.fsync = session::parse_fsync_policy(config_value(c, "appendfsync", r));
    r.rdb = config_value(c, "save", r);
    read_clock(c, r);
    return r;
}

}  // namespace edgelock::cli
