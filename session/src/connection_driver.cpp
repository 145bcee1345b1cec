// SPDX-License-Identifier: Apache-2.0
#include "edgelock/session/connection_driver.hpp"

#include "edgelock/session/lock_traffic.hpp"

namespace edgelock::session {
namespace {

// Opens one settle() may make: a sentinel that fails at once is followed by the next at once,
// and after every sentinel failed once in a row the connection waits its reconnect delay.
constexpr std::size_t settle_rounds_max = sentinels_max + 2;

}  // namespace

errc connection_driver::setup(const connection_setup& s, connection_io& io,
                              connection_events& events) noexcept {
    if (connection_.setup(s) != errc::ok) return errc::invalid_config;
    io_ = &io;
    events_ = &events;
    ready_reported_ = false;
    return errc::ok;
}

std::int64_t connection_driver::settle(std::int64_t now, bool wanted) noexcept {
    for (std::size_t round = 0; round < settle_rounds_max && !io_->suspended(); ++round) {
        // The events of an end may stop or pause the client: it then does nothing more.
        if (close_if_closing(now) && io_->suspended()) break;
        if (connection_.ready() && !ready_reported_) {
            ready_reported_ = true;
            events_->became_ready();
        }
        if (connection_.state() != connection_state::idle || !wanted || !connection_.may_start(now))
            break;
        const node_address* to = connection_.start(now);
        EDGELOCK_ASSERT(to != nullptr);
        io_->open(*to);  // a blocking connect's failure leaves the connection closing: round again
    }
    return wake_ms(connection_, wanted, now);
}

std::size_t connection_driver::on_connected(std::int64_t now, char* out,
                                            std::size_t capacity) noexcept {
    return connection_.on_connected(now, out, capacity);
}

std::size_t connection_driver::on_bytes(const char* data, std::size_t size, reply_node* nodes,
                                        std::size_t nodes_max, std::int64_t now) noexcept {
    if (size > 0) connection_.on_bytes_received();
    const std::uint32_t closed_before = closed_count_;
    std::size_t offset = 0;
    while (reading()) {
        const parse_result parsed = parse_reply(data + offset, size - offset, nodes, nodes_max);
        if (parsed.code == errc::need_more) break;
        if (parsed.code != errc::ok) {
            connection_.on_io_error(failure::of(parsed.code), now);
            break;
        }
        offset += parsed.consumed;
        const routed_reply routed = connection_.on_reply(nodes, parsed.nodes, now);
        deliver(routed, nodes, parsed.nodes);
        if (closed_count_ != closed_before || io_->suspended()) break;
        fault_points* faults = connection_.faults();
        if (routed.what == routed_reply::kind::answer && faults != nullptr &&
            faults->fire(fault_point::close_after_reply)) {
            connection_.on_io_error(failure::of(transport_errc::connection_closed), now);
            break;
        }
    }
    return offset;
}

void connection_driver::deliver(const routed_reply& routed, const reply_node* nodes,
                                std::size_t count) noexcept {
    switch (routed.what) {
        case routed_reply::kind::answer: events_->answered(routed.entry, nodes, count); break;
        case routed_reply::kind::message:
        case routed_reply::kind::master_switched: events_->pushed(routed.what, nodes, count); break;
        case routed_reply::kind::node_read: events_->node_read(); break;
        case routed_reply::kind::none: break;
    }
}

void connection_driver::close(failure why, std::int64_t now, bool reconnect_now) noexcept {
    connection_.close(why, now, reconnect_now);
}

void connection_driver::stop() noexcept {
    io_->close();
    connection_.reset();
    ready_reported_ = false;
    ++closed_count_;
}

bool connection_driver::reading() const noexcept {
    return connection_.state() == connection_state::handshaking || connection_.ready();
}

// The socket goes first: nothing of the old connection may reach the driver while the
// client hears of its end (and perhaps opens the next one).
bool connection_driver::close_if_closing(std::int64_t now) noexcept {
    if (connection_.state() != connection_state::closing) return false;
    io_->close();
    std::size_t dropped = 0;
    const connection_end closed =
        connection_.on_closed(now, [this, &dropped](const in_flight& entry) {
            ++dropped;
            events_->dropped(entry);
        });
    ++closed_count_;
    ready_reported_ = false;
    events_->ended(closed, lock_hears_close(closed, dropped, connection_, now));
    return true;
}

}  // namespace edgelock::session
