// SPDX-License-Identifier: Apache-2.0
// edgelock sim: one lock instance's connection, or a fair lock's subscriber connection, driven
// by the code the real clients run.
//
// The real clients keep one session::connection_driver per Redis instance and adapt it to
// their sockets (transport/asio/src/asio_connection.cpp,
// transport/hiredis/src/blocking_connection.cpp); this is its adapter to the simulated network. The
// driver decides where to connect (the node, or the master a simulated sentinel names), what to say
// first, which replies are its own, when a connect or a reply has taken too long, when to connect
// again, and what a closed connection means for the lock. This class only resolves the driver's
// target to a simulated server, opens, writes to and closes the simulated connection, notices
// resets, and hands what the connection delivers to its client (workload.cpp).
//
// A connect completes one round trip after start(): refused when the node is down, silent
// when a partition cuts the client off (the connection's connect timeout then ends the attempt).
// All time here is the client's monotonic clock in ms, as the lock's is; only a reset's
// arrival is a true instant (the world schedules it).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "edgelock/limits.hpp"
#include "edgelock/session/connection_driver.hpp"
#include "edgelock/sim/network.hpp"

namespace edgelock::sim {

class world;
class client;

// "reply timed out", "connection reset", ...: a connection's failure for the timeline.
std::string describe(const failure& why);

class sim_connection final : public session::connection_io, public session::connection_events {
public:
    // The handshake's steps and every request one lock may have on an instance at once; in
    // a cluster an ASKING beside each, and a CLUSTER SLOTS.
    static constexpr std::size_t in_flight_max =
        session::handshake_steps_max + 2 * requests_per_instance_max + 1;
    // A whole handshake (PING, ROLE and the four scripts) fits with room to spare.
    static constexpr std::size_t handshake_bytes_max = 8 * 1024;
    // Reply nodes a reply is parsed into: ROLE with two replicas takes 12, CLUSTER SLOTS of
    // the simulated cluster 1 + 13 per range of slots (a master and a replica each): three
    // ranges, five once a slot migrated out of the middle of one, seven after it came back.
    static constexpr std::size_t reply_nodes_max = 128;

    sim_connection() = default;
    sim_connection(const sim_connection&) = delete;
    sim_connection& operator=(const sim_connection&) = delete;

    // The connection of `owner`'s lock instance `instance` (lane command), or its subscriber
    // (lane subscriber, s.kind subscriber); `s` as the transports fill it (the in-flight
    // storage is this object's). The addresses it points to must outlive it.
    // `write_window`: world_params::write_window.
    void setup(world& w, client& owner, std::uint8_t client_id, std::uint8_t instance,
               session::connection_setup s, std::uint8_t write_window, lane on = lane::command);

    const session::connection& connection() const noexcept { return driver_.connection(); }
    session::connection& connection() noexcept { return driver_.connection(); }
    session::connection_state state() const noexcept { return connection().state(); }
    // The write window has room for another request (the handshake's steps count: with a
    // window, requests wait for the handshake, as the async client's do).
    bool window_open() const noexcept {
        return write_window_ == 0 || connection().requests_in_flight() < write_window_;
    }

    // The driver's settle: closes what the connection gave up (the client hears of it), and
    // connects again once the reconnect delay allows, when the client wants the connection
    // (a cluster client wants a node's only while its link has work: cluster_links.hpp).
    void settle(std::int64_t now_ms, bool wanted = true) { driver_.settle(now_ms, wanted); }
    std::uint8_t instance() const noexcept { return instance_; }
    // What is due by now: a reset that reached the client, a connect that completed (its
    // handshake written), the connection's connect and reply timeouts.
    void on_timer(std::int64_t now_ms, std::int64_t now_us);
    // Sends one request's bytes, tracked on connection() already (session::write_requests, or
    // a subscription command).
    void send(std::string&& bytes);
    // A reply sent on (server, epoch) belongs to this open connection.
    bool carries(std::uint8_t server, std::uint32_t epoch) const noexcept;
    // What one read on this connection brought (carries() held): a reply, or a part of one,
    // handed to the driver with what the reads before left. False when the driver closed
    // the connection for a stream that is not RESP.
    bool on_reply(const std::string& bytes, std::int64_t now_ms) noexcept;
    // The connection (server, epoch) was reset; the client notices at at_us (true time).
    void reset_arrives(std::uint8_t server, std::uint32_t epoch, std::int64_t at_us) noexcept;
    // The client closes for good (its close()): the socket is dropped, nothing reconnects.
    void stop() noexcept { driver_.stop(); }

    // The earliest instant on the client's clock this connection needs on_timer (no_deadline_ms
    // for none): a connect completing, a timeout, the end of a reconnect delay.
    std::int64_t wake_ms(std::int64_t now_ms, bool wanted = true) const noexcept;
    // The true instant a reset reaches the client, or -1.
    std::int64_t reset_at_us() const noexcept { return reset_at_us_; }

private:
    // session::connection_io
    void open(const session::node_address& to) override;
    void close() override;
    bool suspended() const override;
    // session::connection_events: to the client
    void answered(const session::in_flight& entry, const reply_node* nodes,
                  std::size_t count) override;
    void pushed(session::routed_reply::kind what, const reply_node* nodes,
                std::size_t count) override;
    void node_read() override;
    void dropped(const session::in_flight& entry) override;
    void ended(const session::connection_end& closed, bool lock_hears) override;

    void finish_connect(std::int64_t now_ms);
    std::string where() const;

    // A wrong-server refusal (LOADING, MASTERDOWN, READONLY) in the reply being read, judged
    // from its bytes alone: the connection must end with the refusal's reason (what the
    // client reports and counts) and read nothing after it.
    bool refused_ = false;
    transport_errc refusal_ = transport_errc::connection_closed;
    // What the connection read and the driver did not take yet: the start of a reply the
    // network cut in two.
    std::string unread_;

    world* world_ = nullptr;
    client* owner_ = nullptr;
    std::uint8_t client_ = 0;
    std::uint8_t instance_ = 0;
    std::uint8_t write_window_ = 0;
    lane lane_ = lane::command;
    session::connection_driver driver_;
    std::array<session::in_flight, in_flight_max> in_flight_{};
    std::array<reply_node, reply_nodes_max> nodes_{};
    std::uint8_t server_ = 0;
    std::uint32_t epoch_ = 0;                       // the open simulated connection; 0: none
    bool closed_connected_ = false;                 // the connection closed last was open
    std::int64_t connect_due_ms_ = no_deadline_ms;  // connecting: the connect completes then
    std::int64_t reset_at_us_ = -1;                 // a reset of epoch_ reaches the client then
};

}  // namespace edgelock::sim
