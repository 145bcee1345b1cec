// SPDX-License-Identifier: Apache-2.0
#include "edgelock/hiredis_commands.hpp"

#include <poll.h>

#include <algorithm>
#include <new>

#include "blocking_link.hpp"
#include "edgelock/hiredis_lock.hpp"
#include "edgelock/resp_writer.hpp"
#include "edgelock/session/address.hpp"

namespace edgelock::hiredis {
namespace {

command_reply copy_reply(const reply_node* nodes, std::size_t& at) {
    const reply_node& node = nodes[at++];
    command_reply out;
    out.type = node.type;
    out.text.assign(node.text.data(), node.text.size());
    out.integer = node.integer;
    for (std::uint32_t i = 0; i < node.elements; ++i) out.elements.push_back(copy_reply(nodes, at));
    return out;
}

// Waits for the link to have bytes to read (or, in a TLS handshake, to take its next step) until deadline_ms (or a second at most, to look
// again).
bool readable(const blocking_link& link, std::int64_t deadline_ms) {
    if (link.has_buffered()) return true;
    const std::int64_t left = std::clamp<std::int64_t>(deadline_ms - now_ms(), 0, 1000);
    pollfd p{link.fd(), link.events(), 0};
    return ::poll(&p, 1, static_cast<int>(left)) > 0;
}

}  // namespace

struct command_connection::impl {
    validated_deployment where;  // the link points into it
    tls_context tls;             // before the link, which keeps a pointer to it
    blocking_link link;

    std::error_code wait_ready();
    std::error_code failed() const { return to_error_code(link.link().last_error()); }
};

// Connects (moving from a sentinel to the master it names) until the link is ready.
std::error_code command_connection::impl::wait_ready() {
    for (std::size_t steps = 0; steps < 4 * session::sentinels_max + 2 && !link.ready(); ++steps) {
        if (link.link().state() == session::link_state::idle) {
            if (!link.link().may_start(now_ms()) || !link.start_connect(now_ms())) {
                if (link.link().may_start(now_ms())) continue;  // the next sentinel, at once
                return failed();
            }
        }
        while (link.busy() && link.link().state() != session::link_state::closing) {
            if (readable(link, link.link().next_deadline_ms())) {
                link.receive(now_ms(), [](const session::in_flight&, const reply_node&) {});
            } else {
                link.timed_out(now_ms());
            }
        }
        if (link.link().state() == session::link_state::closing) {
            std::size_t dropped = 0;
            link.finish(now_ms(), dropped);
        }
    }
    return link.ready() ? std::error_code{} : failed();
}

command_connection::command_connection() = default;
command_connection::~command_connection() = default;

std::error_code command_connection::open(const command_target& target) {
    if (impl_) return make_error_code(errc::invalid_config);
    tls_error_ = tls_load_error{};
    std::unique_ptr<impl> created(new (std::nothrow) impl);
    if (!created) return make_error_code(transport_errc::out_of_memory);
    if (const std::error_code ec = validate(target, created->where, created->tls)) {
        tls_error_ = created->tls.load_error();
        return ec;
    }
    if (created->where.instance_count != 1) return make_error_code(errc::invalid_instances);
    // One connection that gives up rather than waits out a reconnect delay: no jitter to seed.
    session::link_setup setup = created->where.server_setup(0, 0);
    setup.read_node = false;  // commands, not locks: no node is read
    setup.refuse_evicting = false;
    if (created->link.setup(setup, &created->tls) != errc::ok) return make_error_code(errc::invalid_config);
    if (const std::error_code ec = created->wait_ready()) return ec;
    impl_ = std::move(created);
    return {};
}

std::error_code command_connection::call(const std::vector<std::string>& args, command_reply& out) {
    if (!impl_ || !impl_->link.ready()) return make_error_code(errc::invalid_state);
    blocking_link& link = impl_->link;
    std::vector<char> request(64);
    for (const std::string& a : args) request.resize(request.size() + a.size() + 32);
    resp_writer writer(request.data(), request.size());
    writer.array(args.size());
    for (const std::string& a : args) writer.bulk(std::string_view(a));
    if (writer.status() != errc::ok) return make_error_code(errc::invalid_config);
    if (!link.send(request.data(), writer.size(), 0, now_ms())) {
        std::size_t dropped = 0;
        link.finish(now_ms(), dropped);  // the link's last error is set when it closes
        return impl_->failed();
    }
    bool answered = false;
    while (!answered && link.ready()) {
        if (!readable(link, link.link().next_deadline_ms())) {
            link.timed_out(now_ms());
            continue;
        }
        // `first` is the first of the reply's nodes, which follow it in one array.
        link.receive(now_ms(), [&](const session::in_flight&, const reply_node& first) {
            std::size_t at = 0;
            out = copy_reply(&first, at);
            answered = true;
        });
    }
    std::size_t dropped = 0;
    // A reply of the wrong server (READONLY, ...) is an answer that also ends the connection.
    if (link.link().state() == session::link_state::closing) link.finish(now_ms(), dropped);
    return answered ? std::error_code{} : impl_->failed();
}

std::string command_connection::endpoint() const {
    if (!impl_) return {};
    return std::string(session::format_endpoint(impl_->link.link().target()).view());
}

}  // namespace edgelock::hiredis
