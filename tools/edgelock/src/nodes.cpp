// SPDX-License-Identifier: Apache-2.0
#include "nodes.hpp"

#include "errors.hpp"
#include "quote.hpp"

namespace edgelock::cli {

using hiredis::command_connection;
using hiredis::command_reply;

std::string describe(const command_failure& f) {
    return f.detail.empty() ? cli::describe(f.ec) : cli::describe(f.ec) + ": " + shown(f.detail);
}

bool error_reply(const command_reply& r, command_failure& f) {
    if (r.type != reply_type::error) return false;
    f.ec = make_error_code(errc::error_reply);
    f.detail = r.text;
    return true;
}

deployment deployment_of(const options& o) {
    deployment d;
    d.instances = o.redis_urls;
    d.sentinels = o.sentinel_urls;
    d.master_name = o.master_name;
    d.tls = o.tls;
    d.connect_timeout_ms = o.redis_timeout_ms;
    d.command_timeout_ms = o.redis_timeout_ms;
    d.restart_guard = o.restart_guard;
    return d;
}

// The instances to ask: each --redis URL, or the master the sentinels name (one endpoint,
// opened through them).
std::vector<node> nodes_of(const options& o) {
    const deployment all = deployment_of(o);
    std::vector<node> out;
    if (all.sentinels.empty()) {
        for (const std::string& url : all.instances) {
            node where;
            where.address = display_address(url);
            where.target = all;
            where.target.instances = {url};
            out.push_back(where);
        }
        return out;
    }
    node where;
    where.address = "Sentinel";
    where.target = all;
    out.push_back(where);
    return out;
}

// Opens a connection to `where`; on failure fills `f` (with what Sentinel said, when asked).
bool open(command_connection& c, node& where, const options& o, command_failure& f) {
    f.ec = c.open(where.target);
    if (!f.ec) {
        where.address = shown(c.endpoint());
        return true;
    }
    if (!where.target.sentinels.empty() && f.ec == transport_errc::no_master) {
        f.detail = "no sentinel named a master " + quote(o.master_name);
    }
    return false;
}

}  // namespace edgelock::cli
