// SPDX-License-Identifier: Apache-2.0
#include "nodes.hpp"

#include <charconv>
#include <string>
#include <utility>
#include <vector>

#include "edgelock/error_code.hpp"
#include "edgelock/keys.hpp"
#include "edgelock/session/address.hpp"
#include "edgelock/session/cluster.hpp"
#include "edgelock/session/node_facts.hpp"
#include "errors.hpp"
#include "quote.hpp"

namespace edgelock::cli {

using blocking::command_connection;
using blocking::command_reply;

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
    d.cluster = o.cluster_urls;
    d.tls = o.tls;
    d.connect_timeout_ms = o.redis_timeout_ms;
    d.command_timeout_ms = o.redis_timeout_ms;
    d.restart_guard = o.restart_guard;
    return d;
}

namespace {

// The admin connection to one server at `url`: the deployment's TLS and timing, one instance.
node single_node(const options& o, const std::string& url) {
    node where;
    where.address = display_address(url);
    where.target = deployment_of(o);
    where.target.instances = {url};
    where.target.sentinels.clear();
    where.target.master_name.clear();
    where.target.cluster.clear();
    return where;
}

// `url` with its host and port replaced: its scheme and credentials kept, no database (a
// cluster has only database 0).
std::string url_at(std::string_view url, std::string_view host, std::uint16_t port) {
    const std::size_t scheme_end = url.find("://");
    const bool has_scheme = scheme_end != std::string_view::npos;
    const std::size_t start = has_scheme ? scheme_end + 3 : 0;
    const std::size_t at = url.rfind('@');
    const bool has_credentials = at != std::string_view::npos && at >= start;
    std::string out = has_scheme ? std::string(url.substr(0, start)) : "redis://";
    if (has_credentials) out += url.substr(start, at + 1 - start);
    const bool v6 = host.find(':') != std::string_view::npos;
    out += v6 ? "[" + std::string(host) + "]" : std::string(host);
    return out + ":" + std::to_string(port);
}

// The host a seed URL names, for the entries of its CLUSTER SLOTS that leave theirs empty.
std::string host_of(const std::string& url) {
    session::node_address address;
    if (session::parse_node_url(url, address).code != errc::ok) return "";
    return std::string(address.host.view());
}

// The reply as the RESP reader lays it out: each node, then its elements (views into `r`).
void flatten(const command_reply& r, std::vector<reply_node>& out) {
    reply_node n;
    n.type = r.type;
    n.integer = r.integer;
    n.text = r.text;
    n.elements = static_cast<std::uint32_t>(r.elements.size());
    out.push_back(n);
    for (const command_reply& e : r.elements) flatten(e, out);
}

// The ranges of CLUSTER SLOTS, as the clients read them (session::read_slot_ranges); an
// empty host is the answering node's.
class range_list final : public session::slots_reader {
public:
    range_list(std::string from_host, std::vector<cluster_range>& out)
        : from_host_(std::move(from_host)), out_(out) {}
    void range(std::uint16_t first, std::uint16_t last, const session::slots_member& m) override {
        out_.push_back({first, last, member(m), {}});
    }
    void replica(const session::slots_member& m) override {
        out_.back().replicas.push_back(member(m));
    }

private:
    cluster_member member(const session::slots_member& m) const {
        return {m.host.empty() ? from_host_ : std::string(m.host), m.port, std::string(m.id)};
    }
    std::string from_host_;
    std::vector<cluster_range>& out_;
};

bool read_slots_reply(const command_reply& r, const std::string& from_host,
                      std::vector<cluster_range>& out) {
    std::vector<reply_node> nodes;
    flatten(r, nodes);
    range_list ranges(from_host, out);
    return session::read_slot_ranges(nodes.data(), nodes.size(), ranges) == errc::ok;
}

// The master serving `slot`, or a node that fails to open saying none does.
node master_of_slot(const cluster_layout& layout, std::uint16_t slot) {
    for (const cluster_range& range : layout.ranges) {
        if (slot >= range.first && slot <= range.last) return cluster_node(layout, range.master);
    }
    node none = layout.seed;
    none.unknown.ec = make_error_code(transport_errc::no_slot_map);
    none.unknown.detail = "no master serves slot " + std::to_string(slot);
    return none;
}

// Every master, once each, in the order of their first range.
std::vector<node> masters_of(const cluster_layout& layout) {
    std::vector<node> out;
    for (const cluster_range& range : layout.ranges) {
        node where = cluster_node(layout, range.master);
        bool seen = false;
        for (const node& other : out) seen = seen || other.address == where.address;
        if (!seen) out.push_back(where);
    }
    return out;
}

std::vector<node> cluster_nodes_of(const options& o) {
    cluster_layout layout;
    node failed;
    command_failure f;
    if (!read_cluster(o, layout, failed, f)) {
        failed.address = "no --cluster seed answered CLUSTER SLOTS, the last " + failed.address;
        failed.unknown = f;
        return {failed};
    }
    if (o.command == command::list) return masters_of(layout);
    return {master_of_slot(layout, cluster_slot(o.name))};
}

}  // namespace

bool read_cluster(const options& o, cluster_layout& out, node& failed, command_failure& f) {
    for (const std::string& url : o.cluster_urls) {
        node seed = single_node(o, url);
        command_connection c;
        command_reply slots;
        f = {};
        const bool asked = open(c, seed, o, f) && !(f.ec = c.call({"CLUSTER", "SLOTS"}, slots));
        if (!asked || error_reply(slots, f)) {
            failed = seed;
            continue;
        }
        out.ranges.clear();
        if (!read_slots_reply(slots, host_of(url), out.ranges)) {
            f.ec = make_error_code(errc::unexpected_reply);
            f.detail = "CLUSTER SLOTS";
            failed = seed;
            continue;
        }
        out.seed = seed;
        return true;
    }
    return false;
}

node cluster_node(const cluster_layout& layout, const cluster_member& member) {
    node where = layout.seed;
    where.target.instances = {url_at(where.target.instances.front(), member.host, member.port)};
    where.address = display_address(where.target.instances.front());
    where.in_cluster = true;
    return where;
}

// MOVED, read as the clients read it (session::parse_redirect): an empty host is the node
// that answered.
bool follow_moved(const command_reply& r, node& where) {
    if (!where.in_cluster || r.type != reply_type::error) return false;
    session::node_address from;
    if (session::parse_node_url(where.target.instances.front(), from).code != errc::ok)
        return false;
    reply_node reply;
    reply.type = reply_type::error;
    reply.text = r.text;
    const session::redirect moved = session::parse_redirect(reply, from);
    if (moved.what != session::redirect::kind::moved) return false;
    const std::string host(moved.to.host.view());
    where.target.instances = {url_at(where.target.instances.front(), host, moved.to.port)};
    where.address = display_address(where.target.instances.front());
    return true;
}

// The instances to ask: each --redis URL, the master the sentinels name (one endpoint,
// opened through them), or the cluster's nodes the command needs.
std::vector<node> nodes_of(const options& o) {
    if (!o.cluster_urls.empty()) return cluster_nodes_of(o);
    const deployment all = deployment_of(o);
    std::vector<node> out;
    if (all.sentinels.empty()) {
        for (const std::string& url : all.instances) out.push_back(single_node(o, url));
        return out;
    }
    node where;
    where.address = "Sentinel";
    where.target = all;
    out.push_back(where);
    return out;
}

std::string master_of_replica(const options& o, std::size_t i) {
    if (i >= o.redis_urls.size()) return "";
    node where = single_node(o, o.redis_urls[i]);
    blocking::command_connection c;
    command_failure f;
    blocking::command_reply info;
    if (!open(c, where, o, f) || c.call({"INFO", "replication"}, info) || error_reply(info, f))
        return "";
    const session::node_facts facts = session::parse_info(info.text);
    if (facts.role.view() != "slave" || facts.master_host.empty()) return "";
    return std::string(facts.master_host.view()) + ":" + std::to_string(facts.master_port);
}

// Opens a connection to `where`; on failure fills `f` (with what Sentinel said, when asked).
bool open(command_connection& c, node& where, const options& o, command_failure& f) {
    if (where.unknown.ec) {
        f = where.unknown;
        return false;
    }
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
