// SPDX-License-Identifier: Apache-2.0
#include "edgelock/sim/sentinel_model.hpp"

#include "edgelock/sim/addresses.hpp"
#include "edgelock/sim/redis_model.hpp"
#include "edgelock/sim/resp_text.hpp"

namespace edgelock::sim {
namespace {

constexpr std::string_view switch_channel = "+switch-master";

}  // namespace

sentinel_node::sentinel_node(std::uint8_t id, std::string_view master_name,
                             std::uint8_t master) noexcept
    : id_(id), master_name_(master_name), master_(master) {}

std::string sentinel_node::answer(std::string_view request) const {
    request_view r;
    if (!parse_request(request.data(), request.size(), r)) return "-ERR Protocol error\r\n";
    if (r.count == 1 && equals_ignoring_case(r.args[0], "PING")) return "+PONG\r\n";
    if (subscribes_to_switches(request)) {
        std::string out = "*3\r\n";
        append_bulk(out, "subscribe");
        append_bulk(out, switch_channel);
        return out + ":1\r\n";
    }
    if (r.count != 3 || !equals_ignoring_case(r.args[0], "SENTINEL") ||
        !equals_ignoring_case(r.args[1], "get-master-addr-by-name")) {
        return "-ERR unknown command\r\n";
    }
    if (r.args[2] != master_name_) return "*-1\r\n";  // Sentinel's reply for an unmonitored name
    std::string out = "*2\r\n";
    append_bulk(out, node_host(master_));
    append_bulk(out, std::to_string(redis_port));
    return out;
}

bool sentinel_node::subscribes_to_switches(std::string_view request) {
    request_view r;
    return parse_request(request.data(), request.size(), r) && r.count == 2 &&
           equals_ignoring_case(r.args[0], "SUBSCRIBE") && r.args[1] == switch_channel;
}

std::string sentinel_node::switch_message(std::uint8_t from, std::uint8_t to) const {
    const std::string port = std::to_string(redis_port);
    std::string out = "*3\r\n";
    append_bulk(out, "message");
    append_bulk(out, switch_channel);
    append_bulk(out, master_name_ + " " + node_host(from) + " " + port + " " + node_host(to) + " " +
                         port);
    return out;
}

}  // namespace edgelock::sim
