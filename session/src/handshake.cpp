// SPDX-License-Identifier: Apache-2.0
#include "edgelock/session/handshake.hpp"

#include <initializer_list>

#include "edgelock/assert.hpp"
#include "edgelock/resp_writer.hpp"
#include "edgelock/scripts.hpp"
#include "edgelock/session/pubsub.hpp"
#include "edgelock/session/reply_class.hpp"

namespace edgelock::session {
namespace {

class plan_writer {
public:
    plan_writer(char* out, std::size_t capacity) noexcept : writer_(out, capacity) {}

    void command(handshake_step step, std::initializer_list<std::string_view> words) noexcept {
        writer_.array(words.size());
        for (const std::string_view word : words) writer_.bulk(word);
        add(step);
    }
    void select(std::uint16_t db) noexcept {
        writer_.array(2);
        writer_.bulk(std::string_view("SELECT"));
        writer_.bulk(std::int64_t{db});
        add(handshake_step::select);
    }
    handshake_write finish() const noexcept {
        handshake_write result;
        result.code = writer_.status();
        result.size = writer_.status() == errc::ok ? writer_.size() : 0;
        result.plan = plan_;
        return result;
    }

private:
    void add(handshake_step step) noexcept {
        EDGELOCK_ASSERT(plan_.count < handshake_steps_max);
        plan_.steps[plan_.count++] = step;
    }

    resp_writer writer_;
    handshake_plan plan_;
};

void write_auth(plan_writer& w, const node_address& to) noexcept {
    if (to.password.empty()) return;
    if (to.user.empty()) {
        w.command(handshake_step::auth, {"AUTH", to.password.view()});
    } else {
        w.command(handshake_step::auth, {"AUTH", to.user.view(), to.password.view()});
    }
}

failure refusal_of_ping(const reply_node& reply) noexcept {
    const reply_verdict verdict = classify(reply);
    if (verdict.what == reply_class::wrong_node) return failure::of(verdict.reason);
    return failure::of(errc::error_reply);
}

bool is_master_role(const reply_node* nodes, std::size_t count) noexcept {
    return count >= 2 && nodes[0].type == reply_type::array && nodes[0].elements >= 1 &&
           nodes[1].type == reply_type::bulk_string && nodes[1].text == "master";
}

failure named_master(const reply_node* nodes, std::size_t count, node_address& master) noexcept {
    const bool shaped = count == 3 && nodes[0].type == reply_type::array &&
                        nodes[0].elements == 2 && nodes[1].type == reply_type::bulk_string &&
                        nodes[2].type == reply_type::bulk_string;
    std::uint16_t port = 0;
    if (!shaped || !parse_port(nodes[2].text, port)) return failure::of(transport_errc::no_master);
    node_address named = master;
    if (set_host_port(named, nodes[1].text, port).code != errc::ok)
        return failure::of(transport_errc::no_master);
    master = named;
    return {};
}

// Splits off the text up to the next space.
std::string_view next_word(std::string_view& text) noexcept {
    std::size_t end = 0;
    while (end < text.size() && text[end] != ' ') ++end;
    const std::string_view word(text.data(), end);
    text = end < text.size() ? std::string_view(text.data() + end + 1, text.size() - end - 1)
                             : std::string_view{};
    return word;
}

}  // namespace

handshake_write write_handshake(const handshake_request& request, char* out,
                                std::size_t capacity) noexcept {
    EDGELOCK_ASSERT(request.to != nullptr);
    plan_writer w(out, capacity);
    write_auth(w, *request.to);
    switch (request.kind) {
        case connection_kind::sentinel:
            w.command(handshake_step::master_query,
                      {"SENTINEL", "get-master-addr-by-name", request.master_name});
            break;
        case connection_kind::watch:
            w.command(handshake_step::subscribe, {"SUBSCRIBE", "+switch-master"});
            break;
        case connection_kind::subscriber:
            w.command(handshake_step::ping, {"PING"});
            if (request.check_role) w.command(handshake_step::role, {"ROLE"});
            break;
        case connection_kind::lock_traffic:
            if (request.to->db != 0) w.select(request.to->db);
            w.command(handshake_step::ping, {"PING"});
            if (request.check_role) w.command(handshake_step::role, {"ROLE"});
            if (request.read_node) {
                // INFO with its default sections (node, memory and persistence among them):
                // several sections in one INFO are a syntax error before Redis 7.0.
                w.command(handshake_step::node_info, {"INFO"});
                w.command(handshake_step::fsync_policy, {"CONFIG", "GET", "appendfsync"});
            }
            for (const script* s :
                 {&acquire_script, &raise_script, &renew_script, &release_script}) {
                w.command(handshake_step::script_load, {"SCRIPT", "LOAD", s->text});
            }
            break;
    }
    return w.finish();
}

failure check_handshake_reply(handshake_step step, const reply_node* nodes, std::size_t count,
                              node_address& master) noexcept {
    EDGELOCK_ASSERT(count >= 1);
    const reply_node& reply = nodes[0];
    const bool refused = reply.type == reply_type::error;
    const reply_verdict verdict = classify(reply);
    if (verdict.what == reply_class::refused_connection) return failure::of(verdict.reason);
    switch (step) {
        case handshake_step::auth:
            return refused ? failure::of(transport_errc::auth_failed) : failure{};
        case handshake_step::select:
            return refused ? failure::of(transport_errc::select_failed) : failure{};
        case handshake_step::ping: return refused ? refusal_of_ping(reply) : failure{};
        case handshake_step::role:
            return is_master_role(nodes, count) ? failure{}
                                                : failure::of(transport_errc::not_master);
        case handshake_step::script_load: return {};
        case handshake_step::node_info:
            if (refused) return failure::of(transport_errc::node_info_refused);
            return reply.type == reply_type::bulk_string ? failure{}
                                                         : failure::of(errc::unexpected_reply);
        case handshake_step::fsync_policy: return {};  // refused: unknown, so not durable
        case handshake_step::asking:
            // Refused only by a node without cluster support: a deployment that is not one.
            return refused ? failure::of(errc::error_reply) : failure{};
        case handshake_step::master_query: return named_master(nodes, count, master);
        case handshake_step::subscribe:
            if (refused) return failure::of(errc::error_reply);
            return reply.type == reply_type::array ? failure{}
                                                   : failure::of(errc::unexpected_reply);
    }
    return failure::of(errc::unexpected_reply);
}

bool parse_switch_master(const reply_node* nodes, std::size_t count, std::string_view master_name,
                         node_address& master, node_address* old) noexcept {
    const pubsub_frame frame = parse_pubsub(nodes, count);
    if (frame.kind != pubsub_kind::message || frame.channel != "+switch-master") return false;
    std::string_view payload = frame.payload;
    const std::string_view name = next_word(payload);
    const std::string_view old_host = next_word(payload);
    const std::string_view old_port_text = next_word(payload);
    const std::string_view host = next_word(payload);
    const std::string_view port_text = next_word(payload);
    std::uint16_t port = 0;
    std::uint16_t old_port = 0;
    if (name != master_name || !payload.empty() || !parse_port(port_text, port) ||
        !parse_port(old_port_text, old_port)) {
        return false;
    }
    node_address named = master;
    node_address left = master;
    if (set_host_port(named, host, port).code != errc::ok) return false;
    if (set_host_port(left, old_host, old_port).code != errc::ok) return false;
    master = named;
    if (old != nullptr) *old = left;
    return true;
}

}  // namespace edgelock::session
