// SPDX-License-Identifier: Apache-2.0
#include "edgelock/session/cluster.hpp"

#include <algorithm>
#include <charconv>
#include <string_view>

#include "edgelock/resp_writer.hpp"

namespace edgelock::session {
namespace {

// text[from, from + count): string_view::substr would throw out_of_range, which the sans-IO
// session may not even reference; every caller here stays inside the text.
std::string_view slice(std::string_view text, std::size_t from,
                       std::size_t count = std::string_view::npos) noexcept {
    if (from > text.size()) return {};
    return {text.data() + from, std::min(count, text.size() - from)};
}

// A node's endpoint as a reply gives it: `host` empty means the host of the node that answered.
struct endpoint {
    std::string_view host;
    std::uint16_t port = 0;
    bool unknown = false;  // "?": no endpoint of the preferred type
    std::string_view id;   // the node's cluster id, when the reply gives it

    bool same(const endpoint& other) const noexcept {
        return host == other.host && port == other.port;
    }
};

bool parse_slot(std::string_view digits, std::uint16_t& out) noexcept {
    unsigned value = 0;
    const char* last = digits.data() + digits.size();
    const auto [end, error] = std::from_chars(digits.data(), last, value);
    if (digits.empty() || error != std::errc() || end != last || value >= cluster_slots)
        return false;
    out = static_cast<std::uint16_t>(value);
    return true;
}

bool slot_of_integer(const reply_node& n, std::uint16_t& out) noexcept {
    if (n.type != reply_type::integer || n.integer < 0 || n.integer >= cluster_slots) return false;
    out = static_cast<std::uint16_t>(n.integer);
    return true;
}

// The index just after the subtree that starts at nodes[i]; 0 when the reply ends inside it.
std::size_t after(const reply_node* nodes, std::size_t count, std::size_t i) noexcept {
    std::size_t pending = 1;
    while (pending > 0 && i < count) {
        if (nodes[i].type == reply_type::array) pending += nodes[i].elements;
        --pending;
        ++i;
    }
    return pending == 0 ? i : 0;
}

// "host:port" (the last ':' ends the host, so an IPv6 address may stand bare or bracketed).
bool split_endpoint(std::string_view text, endpoint& out) noexcept {
    const std::size_t colon = text.rfind(':');
    if (colon == std::string_view::npos || !parse_port(slice(text, colon + 1), out.port))
        return false;
    std::string_view host = slice(text, 0, colon);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
        host = slice(host, 1, host.size() - 2);
    out.host = host;
    return host.size() <= host_bytes_max;
}

// A node of CLUSTER SLOTS at nodes[i]: [endpoint, port, id?, metadata?]. Sets `next` past it.
bool read_node(const reply_node* nodes, std::size_t count, std::size_t i, endpoint& out,
               std::size_t& next) noexcept {
    if (i + 2 >= count || nodes[i].type != reply_type::array || nodes[i].elements < 2) return false;
    const reply_node& host = nodes[i + 1];
    const reply_node& port = nodes[i + 2];
    if (host.type != reply_type::bulk_string && host.type != reply_type::nil) return false;
    if (port.type != reply_type::integer || port.integer < 1 || port.integer > 65535) return false;
    out.host = host.type == reply_type::nil ? std::string_view() : host.text;
    out.port = static_cast<std::uint16_t>(port.integer);
    out.unknown = out.host == "?";
    const bool has_id = nodes[i].elements >= 3 && i + 3 < count;
    out.id = has_id && nodes[i + 3].type == reply_type::bulk_string ? nodes[i + 3].text
                                                                    : std::string_view();
    next = after(nodes, count, i);
    return next != 0 && out.host.size() <= host_bytes_max;
}

// One entry of CLUSTER SLOTS at nodes[i]: [first, last, master, replicas...].
struct slot_range {
    std::uint16_t first = 0;
    std::uint16_t last = 0;
    endpoint master;
    std::size_t replicas_at = 0;  // the index of its first replica's node
    std::uint32_t replica_count = 0;
};

bool read_range(const reply_node* nodes, std::size_t count, std::size_t i, slot_range& out,
                std::size_t& next) noexcept {
    if (i + 2 >= count || nodes[i].type != reply_type::array || nodes[i].elements < 3) return false;
    if (!slot_of_integer(nodes[i + 1], out.first) || !slot_of_integer(nodes[i + 2], out.last) ||
        out.last < out.first) {
        return false;
    }
    if (!read_node(nodes, count, i + 3, out.master, out.replicas_at)) return false;
    out.replica_count = nodes[i].elements - 3;
    next = after(nodes, count, i);
    return next != 0;
}

slots_member member_of(const endpoint& e) noexcept { return {e.host, e.port, e.id, e.unknown}; }

// Every entry of CLUSTER SLOTS, checked; handed to `to` unless it is null.
bool walk_ranges(const reply_node* nodes, std::size_t count, slots_reader* to) noexcept {
    if (count == 0 || nodes[0].type != reply_type::array) return false;
    std::size_t i = 1;
    for (std::uint32_t e = 0; e < nodes[0].elements; ++e) {
        slot_range range;
        if (!read_range(nodes, count, i, range, i)) return false;
        if (to != nullptr) to->range(range.first, range.last, member_of(range.master));
        std::size_t r = range.replicas_at;
        for (std::uint32_t k = 0; k < range.replica_count; ++k) {
            endpoint replica;
            if (!read_node(nodes, count, r, replica, r)) return false;
            if (to != nullptr) to->replica(member_of(replica));
        }
    }
    return i == count;
}

node_address address_of(const endpoint& e, const node_address& from) noexcept {
    node_address to = from;
    const address_result set =
        set_host_port(to, e.host.empty() ? from.host.view() : e.host, e.port);
    (void)set;  // the host's length was checked, and an empty one replaced by from's
    return to;
}

}  // namespace

errc read_slot_ranges(const reply_node* nodes, std::size_t count, slots_reader& to) noexcept {
    if (!walk_ranges(nodes, count, nullptr)) return errc::unexpected_reply;
    (void)walk_ranges(nodes, count, &to);  // checked just above
    return errc::ok;
}

redirect parse_redirect(const reply_node& reply, const node_address& from) noexcept {
    redirect r;
    if (reply.type != reply_type::error) return r;
    std::string_view text = reply.text;
    redirect::kind what = redirect::kind::none;
    if (slice(text, 0, 6) == "MOVED ") {
        what = redirect::kind::moved;
        text.remove_prefix(6);
    } else if (slice(text, 0, 4) == "ASK ") {
        what = redirect::kind::ask;
        text.remove_prefix(4);
    } else {
        return r;
    }
    const std::size_t space = text.find(' ');
    endpoint to;
    if (space == std::string_view::npos || !parse_slot(slice(text, 0, space), r.slot) ||
        !split_endpoint(slice(text, space + 1), to)) {
        return redirect{};
    }
    r.to = address_of(to, from);
    r.what = what;
    return r;
}

errc slot_map::read_slots(const reply_node* nodes, std::size_t count, const node_address& from,
                          node_set in_use) noexcept {
    if (count == 0 || nodes[0].type != reply_type::array) return errc::unexpected_reply;
    // First the whole reply is checked and its masters given indices; only then is the map
    // changed.
    std::array<node_address, cluster_masters_max> masters{};
    std::array<std::uint8_t, cluster_masters_max> index{};
    std::size_t master_count = 0;
    node_set taken = 0;  // the masters' indices
    std::size_t i = 1;
    for (std::uint32_t e = 0; e < nodes[0].elements; ++e) {
        slot_range range;
        if (!read_range(nodes, count, i, range, i)) return errc::unexpected_reply;
        if (range.master.unknown) continue;
        const node_address master = address_of(range.master, from);
        bool known = false;
        for (std::size_t m = 0; m < master_count; ++m)
            known = known || masters[m].same_node(master);
        if (known) continue;
        if (master_count == masters.size()) return errc::invalid_instances;
        masters[master_count] = master;
        index[master_count] = find(master);
        if (index[master_count] != no_master) taken |= node_set{1} << index[master_count];
        ++master_count;
    }
    if (i != count) return errc::unexpected_reply;
    // New masters: free indices first, then those of nodes no slot and no caller needs.
    std::uint8_t appended = node_count_;
    for (std::size_t m = 0; m < master_count; ++m) {
        if (index[m] != no_master) continue;
        if (appended < nodes_.size()) {
            index[m] = appended++;
        } else {
            index[m] = free_index(taken | in_use);
            if (index[m] == no_master) return errc::invalid_config;
        }
        taken |= node_set{1} << index[m];
    }

    for (std::size_t m = 0; m < master_count; ++m) nodes_[index[m]] = masters[m];
    node_count_ = appended;
    owner_ = filled();
    i = 1;
    for (std::uint32_t e = 0; e < nodes[0].elements; ++e) {
        slot_range range;
        (void)read_range(nodes, count, i, range, i);  // checked above
        if (range.master.unknown) continue;
        const std::uint8_t owner = find(address_of(range.master, from));
        for (std::uint32_t s = range.first; s <= range.last; ++s) owner_[s] = owner;
    }
    stale_ = false;
    ++reads_;
    return errc::ok;
}

std::uint8_t slot_map::master_of(std::uint16_t slot) const noexcept {
    return slot < cluster_slots ? owner_[slot] : no_master;
}

bool slot_map::covers_all() const noexcept {
    for (const std::uint8_t o : owner_) {
        if (o == no_master) return false;
    }
    return true;
}

std::uint8_t slot_map::add_node(const node_address& node) noexcept {
    const std::uint8_t known = find(node);
    if (known != no_master) return known;
    if (node_count_ == nodes_.size()) return no_master;
    nodes_[node_count_] = node;
    return node_count_++;
}

bool slot_map::moved(std::uint16_t slot, const node_address& to) noexcept {
    if (slot >= cluster_slots) return false;
    stale_ = true;
    const std::uint8_t index = add_node(to);
    owner_[slot] = index;
    return index != no_master;
}

std::uint8_t slot_map::find(const node_address& node) const noexcept {
    for (std::uint8_t m = 0; m < node_count_; ++m) {
        if (nodes_[m].same_node(node)) return m;
    }
    return no_master;
}

// The lowest index outside `taken` (the new map's masters, and the nodes a caller uses): its
// node serves no slot once the new map is in place, so its index may name another.
std::uint8_t slot_map::free_index(node_set taken) const noexcept {
    for (std::uint8_t m = 0; m < node_count_; ++m) {
        if ((taken >> m & 1u) == 0) return m;
    }
    return no_master;
}

std::int64_t map_refresh::next_ms(const slot_map& map) const noexcept {
    return map.stale() && !in_flight_ ? not_before_ms_ : no_deadline_ms;
}

std::size_t write_cluster_slots(char* out, std::size_t capacity) noexcept {
    resp_writer writer(out, capacity);
    writer.array(2);
    writer.bulk("CLUSTER");
    writer.bulk("SLOTS");
    return writer.status() == errc::ok ? writer.size() : 0;
}

}  // namespace edgelock::session
