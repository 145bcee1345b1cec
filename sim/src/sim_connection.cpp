// SPDX-License-Identifier: Apache-2.0
#include "edgelock/sim/sim_connection.hpp"

#include <algorithm>
#include <cerrno>

#include "edgelock/assert.hpp"
#include "edgelock/session/lock_traffic.hpp"
#include "edgelock/sim/workload.hpp"
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

void sim_connection::setup(world& w, client& owner, std::uint8_t client_id, std::uint8_t instance,
                           session::connection_setup s, std::uint8_t write_window, lane on) {
    world_ = &w;
    lane_ = on;
    owner_ = &owner;
    client_ = client_id;
    instance_ = instance;
    write_window_ = write_window;
    s.in_flight_storage = in_flight_.data();
    s.in_flight_capacity = in_flight_.size();
    const errc code = driver_.setup(s, *this, *this);
    EDGELOCK_ASSERT(code == errc::ok);
}

void sim_connection::open(const session::node_address& to) {
    const int server = world_->resolve(to);
    if (server == no_server) {
        driver_.on_io_error(failure::of(transport_errc::unknown_host), owner_->now_ms());
        return;
    }
    server_ = static_cast<std::uint8_t>(server);
    // The connect's answer (SYN-ACK, or a refusal) comes back one round trip later.
    connect_due_ms_ = owner_->now_ms() + 1 + world_->connect_us(client_, server_) / 1000;
}

bool sim_connection::suspended() const { return owner_->paused(); }

void sim_connection::on_timer(std::int64_t now_ms, std::int64_t now_us) {
    if (epoch_ != 0 && reset_at_us_ >= 0 && now_us >= reset_at_us_) {
        reset_at_us_ = -1;
        driver_.on_io_error(failure::system(ECONNRESET), now_ms);
    }
    if (state() == session::connection_state::connecting && now_ms >= connect_due_ms_)
        finish_connect(now_ms);
    driver_.on_timer(now_ms);
}

void sim_connection::finish_connect(std::int64_t now_ms) {
    connect_due_ms_ = no_deadline_ms;
    std::uint8_t server = 0;
    switch (world_->try_connect(client_, connection().address(), server)) {
        case world::connect_outcome::ok: break;
        case world::connect_outcome::refused:
            driver_.on_io_error(failure::system(ECONNREFUSED), now_ms);
            return;
        case world::connect_outcome::unknown_host:
            driver_.on_io_error(failure::of(transport_errc::unknown_host), now_ms);
            return;
        case world::connect_outcome::timeout:
            return;  // no answer: the connection's connect timeout ends it
    }
    server_ = server;
    epoch_ = world_->open_connection(client_, server_, lane_);
    reset_at_us_ = -1;
    if (world_->recording()) world_->note_client(client_, "connected to " + where());
    std::array<char, handshake_bytes_max> hello{};
    const std::size_t size = driver_.on_connected(now_ms, hello.data(), hello.size());
    if (size > 0)
        world_->send_request(client_, server_, epoch_, std::string(hello.data(), size), lane_);
}

void sim_connection::send(std::string&& bytes) {
    EDGELOCK_ASSERT(connection().accepts_requests());
    world_->send_request(client_, server_, epoch_, std::move(bytes), lane_);
}

bool sim_connection::carries(std::uint8_t server, std::uint32_t epoch) const noexcept {
    const session::connection_state s = state();
    const bool reading =
        s == session::connection_state::handshaking || s == session::connection_state::ready;
    return reading && epoch_ != 0 && server == server_ && epoch == epoch_;
}

namespace {

// The wrong-server refusal the unread bytes start with (one reply, whole or not), and its
// reason.
bool refusal_in(const std::string& bytes, transport_errc& reason) {
    struct refusal {
        std::string_view prefix;
        transport_errc reason;
    };
    static constexpr refusal refusals[] = {
        {"-LOADING ", transport_errc::loading},
        {"-MASTERDOWN ", transport_errc::master_down},
        {"-READONLY ", transport_errc::not_master},
    };
    for (const refusal& r : refusals) {
        if (bytes.compare(0, r.prefix.size(), r.prefix) == 0) {
            reason = r.reason;
            return true;
        }
    }
    return false;
}

}  // namespace

bool sim_connection::on_reply(const std::string& bytes, std::int64_t now_ms) noexcept {
    if (refused_) owner_->anomaly("a reply read after a wrong-server refusal", errc::ok);
    unread_ += bytes;
    refused_ = refusal_in(unread_, refusal_);
    const std::size_t consumed =
        driver_.on_bytes(unread_.data(), unread_.size(), nodes_.data(), nodes_.size(), now_ms);
    unread_.erase(0, consumed);
    if (unread_.empty()) return true;
    refused_ = false;  // judged when the reply is whole
    // The start of a reply whose rest is still on the way, unless the driver closed the
    // connection for a stream that is not RESP.
    const session::connection_state s = state();
    return s == session::connection_state::handshaking || s == session::connection_state::ready;
}

void sim_connection::answered(const session::in_flight& entry, const reply_node* nodes,
                              std::size_t count) {
    if (lane_ == lane::watch) return;  // the watch tracks no request of the client's
    if (lane_ == lane::subscriber) {
        owner_->on_subscription_answer(nodes, count);
        return;
    }
    owner_->on_answer(instance_, entry, nodes, count);
}

void sim_connection::dropped(const session::in_flight& entry) {
    if (lane_ == lane::command) owner_->on_dropped(instance_, entry);
}

void sim_connection::pushed(session::routed_reply::kind what, const reply_node* nodes,
                            std::size_t count) {
    if (what == session::routed_reply::kind::message) owner_->on_wake_message(nodes, count);
    if (what == session::routed_reply::kind::master_switched)
        owner_->on_switch_master(connection().switched_from(), connection().switched_to());
}

void sim_connection::node_read() { owner_->on_node_read(instance_); }

void sim_connection::ended(const session::connection_end& closed, bool lock_hears) {
    if (refused_ && closed.why != failure::of(refusal_)) {
        owner_->anomaly(("a wrong-server refusal reported as " + describe(closed.why)).c_str(),
                        errc::ok);
    }
    refused_ = false;
    if (closed.why && world_->recording()) {
        world_->note_client(client_, (closed_connected_ ? "connection to " : "connect to ") +
                                         where() + (closed_connected_ ? " closed: " : " failed: ") +
                                         describe(closed.why));
    }
    if (lane_ == lane::watch) return;  // nothing of the lock's on it
    if (lane_ == lane::subscriber) {
        owner_->on_subscriber_end();
        return;
    }
    owner_->on_link_ended(closed);
    if (lock_hears) owner_->on_connection_end(instance_);
}

void sim_connection::reset_arrives(std::uint8_t server, std::uint32_t epoch,
                                   std::int64_t at_us) noexcept {
    if (epoch_ != 0 && server == server_ && epoch == epoch_) reset_at_us_ = at_us;
}

void sim_connection::close() {
    closed_connected_ = epoch_ != 0;
    if (closed_connected_) world_->close_connection(client_, server_, epoch_, lane_);
    epoch_ = 0;
    reset_at_us_ = -1;
    connect_due_ms_ = no_deadline_ms;
    unread_.clear();
}

std::int64_t sim_connection::wake_ms(std::int64_t now_ms, bool wanted) const noexcept {
    if (state() == session::connection_state::idle)
        return session::wake_ms(connection(), wanted, now_ms);
    std::int64_t wake = connection().next_deadline_ms();
    if (state() == session::connection_state::connecting) wake = std::min(wake, connect_due_ms_);
    return wake;
}

std::string sim_connection::where() const {
    const std::string address(session::format_address(connection().address()).view());
    if (lane_ == lane::subscriber) return address + " (subscriber)";
    if (lane_ == lane::watch) return address + " (watch)";
    return address + " (instance " + std::to_string(instance_) + ")";
}

}  // namespace edgelock::sim
