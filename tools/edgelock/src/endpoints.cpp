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

// The instances to ask: the --redis URLs, or the master the sentinels name (one endpoint,
// opened through them).
std::vector<endpoint> endpoints_of(const options& o) {
    std::vector<endpoint> out;
    if (o.sentinel_urls.empty()) {
        for (const std::string& url : o.redis_urls) {
            endpoint ep;
            ep.address = display_address(url);
            ep.target.url = url;
            ep.target.timeout_ms = o.redis_timeout_ms;
            ep.target.tls = o.tls;
            out.push_back(ep);
        }
        return out;
    }
    endpoint ep;
    ep.address = "Sentinel";
    ep.target.sentinels = o.sentinel_urls;
    ep.target.master_name = o.master_name;
    ep.target.timeout_ms = o.redis_timeout_ms;
    ep.target.tls = o.tls;
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
