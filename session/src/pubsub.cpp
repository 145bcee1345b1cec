// SPDX-License-Identifier: Apache-2.0
#include "edgelock/session/pubsub.hpp"

#include "edgelock/resp_writer.hpp"

namespace edgelock::session {

pubsub_frame parse_pubsub(const reply_node* nodes, std::size_t count) noexcept {
    pubsub_frame frame;
    if (count != 4 || nodes[0].type != reply_type::array || nodes[0].elements != 3) return frame;
    if (nodes[1].type != reply_type::bulk_string || nodes[2].type != reply_type::bulk_string)
        return frame;
    const std::string_view kind = nodes[1].text;
    frame.channel = nodes[2].text;
    if (kind == "message" && nodes[3].type == reply_type::bulk_string) {
        frame.kind = pubsub_kind::message;
        frame.payload = nodes[3].text;
    } else if ((kind == "subscribe" || kind == "unsubscribe") &&
               nodes[3].type == reply_type::integer) {
        frame.kind = kind == "subscribe" ? pubsub_kind::subscribe : pubsub_kind::unsubscribe;
        frame.subscriptions = nodes[3].integer;
    } else {
        frame.channel = {};
    }
    return frame;
}

std::size_t write_subscription(bool subscribe, std::string_view channel, char* out,
                               std::size_t capacity) noexcept {
    if (channel.empty() || channel.size() > wake_channel_bytes_max) return 0;
    resp_writer writer(out, capacity);
    writer.array(2);
    writer.bulk(subscribe ? std::string_view("SUBSCRIBE") : std::string_view("UNSUBSCRIBE"));
    writer.bulk(channel);
    return writer.status() == errc::ok ? writer.size() : 0;
}

}  // namespace edgelock::session
