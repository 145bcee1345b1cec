// SPDX-License-Identifier: Apache-2.0
#include "edgelock/blocking_commands.hpp"

#include <poll.h>

#include <algorithm>
#include <new>

#include "blocking_connection.hpp"
#include "edgelock/blocking_lock.hpp"
#include "edgelock/resp_writer.hpp"
#include "edgelock/session/address.hpp"

namespace edgelock::blocking {
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

// Waits for the connection to have bytes to read (or, in a TLS handshake, to take its next step)
// until deadline_ms (or a second at most, to look again).
bool readable(const blocking_connection& connection, std::int64_t deadline_ms) {
    if (connection.has_buffered()) return true;
    const std::int64_t left = std::clamp<std::int64_t>(deadline_ms - now_ms(), 0, 1000);
    pollfd p{connection.fd(), connection.events(), 0};
    return ::poll(&p, 1, static_cast<int>(left)) > 0;
}

}  // namespace

struct command_connection::impl final : session::connection_events {
    validated_deployment where;  // the connection points into it
    tls_context tls;             // before the connection, which keeps a pointer to it
    blocking_connection connection;
    command_reply* answer = nullptr;  // where the running call's reply goes
    bool answered_now = false;

    [[nodiscard]] std::error_code wait_ready();
    void wait_reply();
    [[nodiscard]] std::error_code failed() const {
        return to_error_code(connection.connection().last_error());
    }

    // session::connection_events: the reply of the one call in flight.
    void answered(const session::in_flight&, const reply_node* nodes, std::size_t) override {
        if (answer == nullptr) return;
        std::size_t at = 0;
        *answer = copy_reply(nodes, at);
        answered_now = true;
    }
};

// Connects (moving from a sentinel to the master it names) until the connection is ready.
std::error_code command_connection::impl::wait_ready() {
    for (std::size_t steps = 0; steps < 2 * session::sentinels_max + 2 && !connection.ready();
         ++steps) {
        connection.settle(now_ms(), true);
        if (connection.connection().state() == session::connection_state::idle)
            return failed();  // every one failed
        while (connection.busy() &&
               connection.connection().state() != session::connection_state::closing) {
            if (readable(connection, connection.connection().next_deadline_ms())) {
                connection.receive(now_ms());
            } else {
                connection.timed_out(now_ms());
            }
        }
    }
    return connection.ready() ? std::error_code{} : failed();
}

// Reads until the call's reply came or the connection ended (its timeout included).
void command_connection::impl::wait_reply() {
    while (!answered_now && connection.ready()) {
        if (readable(connection, connection.connection().next_deadline_ms())) {
            connection.receive(now_ms());
        } else {
            connection.timed_out(now_ms());
        }
    }
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
    // One connection asks one node: a cluster's nodes are addressed one by one, as instances.
    if (created->where.by_cluster()) return make_error_code(errc::invalid_config);
    // One connection that gives up rather than waits out a reconnect delay: no jitter to seed.
    session::connection_setup setup = created->where.instance_setup(0, 0);
    setup.read_node = false;  // commands, not locks: no node is read
    setup.refuse_evicting = false;
    if (created->connection.setup(setup, *created, &created->tls) != errc::ok) {
        return make_error_code(errc::invalid_config);
    }
    if (const std::error_code ec = created->wait_ready()) return ec;
    impl_ = std::move(created);
    return {};
}

std::error_code command_connection::call(const std::vector<std::string>& args, command_reply& out) {
    if (!impl_ || !impl_->connection.ready()) return make_error_code(errc::invalid_state);
    blocking_connection& connection = impl_->connection;
    std::vector<char> request(64);
    for (const std::string& a : args) request.resize(request.size() + a.size() + 32);
    resp_writer writer(request.data(), request.size());
    writer.array(args.size());
    for (const std::string& a : args) writer.bulk(std::string_view(a));
    if (writer.status() != errc::ok) return make_error_code(errc::invalid_config);
    impl_->answer = &out;
    impl_->answered_now = false;
    if (connection.send(request.data(), writer.size(), 0, now_ms())) impl_->wait_reply();
    impl_->answer = nullptr;
    // A reply of the wrong server (READONLY, ...) is an answer that also ends the connection;
    // a failed write leaves the connection's last error set when it closes.
    connection.settle(now_ms(), false);
    return impl_->answered_now ? std::error_code{} : impl_->failed();
}

std::string command_connection::endpoint() const {
    if (!impl_) return {};
    return std::string(session::format_address(impl_->connection.connection().address()).view());
}

}  // namespace edgelock::blocking
