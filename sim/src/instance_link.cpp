// SPDX-License-Identifier: Apache-2.0
#include "edgelock/sim/instance_link.hpp"

#include <algorithm>
#include <cerrno>

#include "edgelock/assert.hpp"
#include "edgelock/sim/world.hpp"

namespace edgelock::sim {

std::string describe(const failure& why) {
    switch (why.from) {
        case failure::domain::none: return "no error";
        case failure::domain::lock: return to_string(static_cast<errc>(why.value));
        case failure::domain::transport: return describe(static_cast<transport_errc>(why.value));
        case failure::domain::system:
            // The two the simulated network produces; errno values are the host's, so the
            // timeline names them rather than print a number.
            if (why.value == ECONNRESET) return "connection reset";
            if (why.value == ECONNREFUSED) return "connection refused";
            return "system error";
    }
    return "unknown error";
}

void instance_link::setup(world& w, std::uint8_t client, std::uint8_t instance, session::link_setup s,
                          std::uint8_t write_window) {
    world_ = &w;
    client_ = client;
    instance_ = instance;
    write_window_ = write_window;
    s.in_flight_storage = in_flight_.data();
    s.in_flight_capacity = in_flight_.size();
    const errc code = link_.setup(s);
    EDGELOCK_ASSERT(code == errc::ok);
}

bool instance_link::start(std::int64_t now_ms) {
    if (!link_.may_start(now_ms)) return false;
    const session::server_address* target = link_.start(now_ms);
    EDGELOCK_ASSERT(target != nullptr);
    const int server = world_->resolve(*target);
    if (server == no_server) {
        link_.on_io_error(failure::of(transport_errc::unknown_host), now_ms);
        return true;
    }
    server_ = static_cast<std::uint8_t>(server);
    // The connect's answer (SYN-ACK, or a refusal) comes back one round trip later.
    connect_due_ms_ = now_ms + 1 + world_->connect_us(client_, server_) / 1000;
    return true;
}

void instance_link::on_timer(std::int64_t now_ms, std::int64_t now_us) {
    if (epoch_ != 0 && reset_at_us_ >= 0 && now_us >= reset_at_us_) {
        reset_at_us_ = -1;
        link_.on_io_error(failure::system(ECONNRESET), now_ms);
    }
    if (link_.state() == session::link_state::connecting && now_ms >= connect_due_ms_) finish_connect(now_ms);
    link_.on_timer(now_ms);
}

void instance_link::finish_connect(std::int64_t now_ms) {
    connect_due_ms_ = no_deadline_ms;
    std::uint8_t server = 0;
    switch (world_->try_connect(client_, link_.target(), server)) {
        case world::connect_outcome::ok: break;
        case world::connect_outcome::refused:
            link_.on_io_error(failure::system(ECONNREFUSED), now_ms);
            return;
        case world::connect_outcome::unknown_host:
            link_.on_io_error(failure::of(transport_errc::unknown_host), now_ms);
            return;
        case world::connect_outcome::timeout: return;  // no answer: the link's connect timeout ends it
    }
    server_ = server;
    epoch_ = world_->open_connection(client_, server_);
    reset_at_us_ = -1;
    if (world_->recording()) world_->note_client(client_, "connected to " + where());
    std::array<char, handshake_bytes_max> hello{};
    const std::size_t size = link_.on_connected(now_ms, hello.data(), hello.size());
    if (size > 0) world_->send_request(client_, server_, epoch_, std::string(hello.data(), size));
}

void instance_link::send(std::string&& bytes) {
    EDGELOCK_ASSERT(link_.accepts_requests());
    world_->send_request(client_, server_, epoch_, std::move(bytes));
}

bool instance_link::carries(std::uint8_t server, std::uint32_t epoch) const noexcept {
    const session::link_state s = link_.state();
    const bool reading = s == session::link_state::handshaking || s == session::link_state::ready;
    return reading && epoch_ != 0 && server == server_ && epoch == epoch_;
}

session::link_reply instance_link::on_reply(const reply_node* nodes, std::size_t count, std::int64_t now_ms) noexcept {
    return link_.on_reply(nodes, count, now_ms);
}

void instance_link::on_garbage(errc code, std::int64_t now_ms) noexcept {
    link_.on_io_error(failure::of(code), now_ms);
}

void instance_link::reset_arrives(std::uint8_t server, std::uint32_t epoch, std::int64_t at_us) noexcept {
    if (epoch_ != 0 && server == server_ && epoch == epoch_) reset_at_us_ = at_us;
}

session::link_closed instance_link::close(std::int64_t now_ms, std::size_t& dropped) {
    EDGELOCK_ASSERT(link_.state() == session::link_state::closing);
    const bool connected = epoch_ != 0;
    if (connected) world_->close_connection(client_, server_, epoch_);
    const std::string target = world_->recording() ? where() : std::string();
    epoch_ = 0;
    reset_at_us_ = -1;
    connect_due_ms_ = no_deadline_ms;
    dropped = 0;
    const session::link_closed closed = link_.on_closed(now_ms, [&dropped](const session::in_flight&) { ++dropped; });
    if (closed.why && world_->recording()) {
        world_->note_client(client_, (connected ? "connection to " : "connect to ") + target +
                                         (connected ? " closed: " : " failed: ") + describe(closed.why));
    }
    return closed;
}

std::int64_t instance_link::wake_ms(std::int64_t now_ms) const noexcept {
    std::int64_t wake = link_.next_deadline_ms();
    if (link_.state() == session::link_state::connecting) wake = std::min(wake, connect_due_ms_);
    // Never earlier than now: an idle link whose delay is over starts on the next service.
    if (link_.state() == session::link_state::idle) wake = std::min(wake, std::max(link_.start_not_before_ms(), now_ms));
    return wake;
}

std::string instance_link::where() const {
    return std::string(session::format_endpoint(link_.target()).view()) + " (instance " +
           std::to_string(instance_) + ")";
}

}  // namespace edgelock::sim
