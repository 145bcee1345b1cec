// SPDX-License-Identifier: Apache-2.0
#include "endpoints.hpp"

#include "errors.hpp"
#include "quote.hpp"

namespace edgelock::cli {

using hiredis::command_connection;
using hiredis::command_reply;

std::string describe(const failure& f) {
    return f.detail.empty() ? cli::describe(f.ec) : cli::describe(f.ec) + ": " + shown(f.detail);
}

bool error_reply(const command_reply& r, failure& f) {
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
std::vector<endpoint> endpoints_of(const options& o) {
    const deployment all = deployment_of(o);
    std::vector<endpoint> out;
    if (all.sentinels.empty()) {
        for (const std::string& url : all.instances) {
            endpoint ep;
            ep.address = display_address(url);
            ep.target = all;
            ep.target.instances = {url};
            out.push_back(ep);
        }
        return out;
    }
    endpoint ep;
    ep.address = "Sentinel";
    ep.target = all;
    out.push_back(ep);
    return out;
}

// Opens a connection to `ep`; on failure fills `f` (with what Sentinel said, when asked).
bool open(command_connection& c, endpoint& ep, const options& o, failure& f) {
    f.ec = c.open(ep.target);
    if (!f.ec) {
        ep.address = shown(c.endpoint());
        return true;
    }
    if (!ep.target.sentinels.empty() && f.ec == transport_errc::no_master) {
        f.detail = "no sentinel named a master " + quote(o.master_name);
    }
    return false;
}

}  // namespace edgelock::cli
