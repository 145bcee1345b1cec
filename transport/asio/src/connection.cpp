// One connection: resolve, connect, handshake (AUTH, SELECT, PING, and ROLE or the Sentinel
// query), then pipelined lock traffic; on any failure, drop and reconnect with backoff.
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <asio/connect.hpp>
#include <asio/write.hpp>

#include <algorithm>
#include <cstring>
#include <string_view>

#include "client_impl.hpp"
#include "edgelock/resp_writer.hpp"
#include "edgelock/scripts.hpp"

namespace edgelock::async::detail {
namespace {

bool starts_with(std::string_view text, std::string_view prefix) {
    return text.substr(0, prefix.size()) == prefix;
}

// One mapping for every error a socket gives (edgelock/error_code.hpp): errno values in the
// generic category, end of stream as connection_closed, a failed lookup as unknown_host.
std::error_code normalized(std::error_code code) { return to_error_code(to_failure(code)); }

// The handshake is at most AUTH, SELECT, PING, ROLE and one SCRIPT LOAD per script.
constexpr std::size_t handshake_requests_max = 8;

}  // namespace

connection::connection(client_impl& owner, asio::io_context& io, std::uint8_t index,
                       connection_role role)
    : owner_(owner), index_(index), role_(role), socket_(io), resolver_(io), timer_(io) {}

void connection::init(std::size_t in_flight_max, std::size_t buffer_bytes, std::size_t waiters_max,
                      std::uint64_t backoff_seed) {
    backoff_.seed(backoff_seed);
    in_flight_.init(in_flight_max + handshake_requests_max);
    waiters_.init(std::max<std::size_t>(waiters_max, 1));
    buffer_bytes_ = buffer_bytes;
    for (auto& buffer : buffers_) buffer.reset(new char[buffer_bytes]);
    read_capacity_ = reply_bytes_max + buffer_bytes;
    read_buffer_.reset(new char[read_capacity_]);
}

std::string connection::endpoint() const {
    if (target_ == nullptr) return {};
    return std::string(session::format_endpoint(*target_).view());
}

bool connection::targets(const std::string& host, std::uint16_t port) const noexcept {
    return target_ != nullptr && phase_ == phase::server && target_->host.view() == host &&
           target_->port == port;
}

void connection::start() {
    if (state_ != connection_state::closed && state_ != connection_state::backing_off) return;
    close_socket();
    if (role_ == connection_role::watcher || owner_.sentinel_mode()) {
        phase_ = phase::sentinel;
        target_ = &owner_.sentinel_address(sentinel_index_ % owner_.sentinel_count());
    } else {
        phase_ = phase::server;
        target_ = &owner_.instance_address(index_);
    }
    state_ = connection_state::connecting;
    begin_attempt();
}

void connection::stop() {
    close_socket();
    state_ = connection_state::closed;
    waiters_.clear();
}

void connection::close_socket() noexcept {
    epoch_ = owner_.next_epoch();
    timer_epoch_ = owner_.next_epoch();
    std::error_code ignored;
    resolver_.cancel();
    socket_.close(ignored);
    timer_.cancel();
    command_timer_armed_ = false;
    drop_in_flight();
    read_size_ = 0;
    pending_size_ = 0;
    writing_ = false;
    rediscover_ = false;
}

// The replies to these will never be read: their locks' slots stop counting them.
void connection::drop_in_flight() noexcept {
    while (!in_flight_.empty()) {
        const in_flight entry = in_flight_.front();
        in_flight_.pop();
        if (entry.lock != in_flight::internal) owner_.on_request_done(entry.lock);
    }
}

void connection::begin_attempt() {
    arm_timer(owner_.config().connect_timeout.count());
    auto self = owner_.self();
    const std::uint8_t i = index_;
    const std::uint32_t epoch = epoch_;
    std::error_code ec;
    const asio::ip::address address = asio::ip::make_address(std::string(target_->host.view()), ec);
    if (!ec) {
        socket_.async_connect(asio::ip::tcp::endpoint(address, target_->port),
                              [self, i, epoch](std::error_code result) {
                                  if (connection* c = self->connection_at(i)) c->on_connected(epoch, result);
                              });
        return;
    }
    resolver_.async_resolve(
        std::string(target_->host.view()), std::to_string(target_->port),
        [self, i, epoch](std::error_code result, const asio::ip::tcp::resolver::results_type& found) {
            if (connection* c = self->connection_at(i)) c->on_resolved(epoch, result, found);
        });
}

void connection::on_resolved(std::uint32_t epoch, std::error_code ec,
                             const asio::ip::tcp::resolver::results_type& results) {
    if (epoch != epoch_) return;
    client_impl::dispatch_scope scope(owner_);
    if (ec) {
        fail(ec);
        return;
    }
    auto self = owner_.self();
    const std::uint8_t i = index_;
    asio::async_connect(socket_, results,
                        [self, i, epoch](std::error_code result, const asio::ip::tcp::endpoint&) {
                            if (connection* c = self->connection_at(i)) c->on_connected(epoch, result);
                        });
}

void connection::on_connected(std::uint32_t epoch, std::error_code ec) {
    if (epoch != epoch_) return;
    client_impl::dispatch_scope scope(owner_);
    if (ec) {
        fail(ec);
        return;
    }
    const client_config& config = owner_.config();
    std::error_code ignored;
    socket_.set_option(asio::ip::tcp::no_delay(true), ignored);
    if (config.keepalive) {
        using keep_idle = asio::detail::socket_option::integer<IPPROTO_TCP, TCP_KEEPIDLE>;
        using keep_interval = asio::detail::socket_option::integer<IPPROTO_TCP, TCP_KEEPINTVL>;
        using keep_count = asio::detail::socket_option::integer<IPPROTO_TCP, TCP_KEEPCNT>;
        socket_.set_option(asio::socket_base::keep_alive(true), ignored);
        socket_.set_option(keep_idle(static_cast<int>(config.keepalive_idle.count())), ignored);
        socket_.set_option(keep_interval(static_cast<int>(config.keepalive_interval.count())), ignored);
        socket_.set_option(keep_count(config.keepalive_probes), ignored);
    }
    // Writes are tried synchronously first; a full socket buffer falls back to async_write.
    socket_.non_blocking(true, ignored);
    state_ = connection_state::handshaking;
    write_handshake();
    if (state_ == connection_state::handshaking) start_read();
}

void connection::push_internal(internal_request kind) noexcept {
    in_flight entry;
    entry.tag = static_cast<std::uint32_t>(kind);
    entry.sent_ms = now_ms();
    const bool pushed = in_flight_.push(entry);
    EDGELOCK_ASSERT(pushed);
}

void connection::write_handshake() {
    const server_address& target = *target_;
    resp_writer writer(write_cursor(), write_room());
    if (!target.password.empty()) {
        if (target.user.empty()) {
            writer.array(2);
        } else {
            writer.array(3);
        }
        writer.bulk(std::string_view("AUTH"));
        if (!target.user.empty()) writer.bulk(target.user.view());
        writer.bulk(target.password.view());
        push_internal(internal_request::auth);
    }
    const bool sentinel_query = phase_ == phase::sentinel && role_ == connection_role::instance;
    if (role_ == connection_role::watcher) {
        writer.array(2);
        writer.bulk(std::string_view("SUBSCRIBE"));
        writer.bulk(std::string_view("+switch-master"));
        push_internal(internal_request::subscribe);
    } else if (sentinel_query) {
        writer.array(3);
        writer.bulk(std::string_view("SENTINEL"));
        writer.bulk(std::string_view("get-master-addr-by-name"));
        writer.bulk(std::string_view(owner_.config().master_name));
        push_internal(internal_request::master_query);
    } else {
        if (target.db != 0) {
            writer.array(2);
            writer.bulk(std::string_view("SELECT"));
            writer.bulk(std::int64_t{target.db});
            push_internal(internal_request::select);
        }
        writer.array(1);
        writer.bulk(std::string_view("PING"));
        push_internal(internal_request::ping);
        if (owner_.sentinel_mode()) {
            writer.array(1);
            writer.bulk(std::string_view("ROLE"));
            push_internal(internal_request::role);
        }
        // Saves the NOSCRIPT round trip on a fresh or restarted server. Best effort: a
        // refusal (an ACL without SCRIPT) is ignored, and the core still falls back to EVAL
        // after a later SCRIPT FLUSH.
        for (const script* s : {&acquire_script, &raise_script, &renew_script, &release_script}) {
            writer.array(3);
            writer.bulk(std::string_view("SCRIPT"));
            writer.bulk(std::string_view("LOAD"));
            writer.bulk(s->text);
            push_internal(internal_request::script_load);
        }
    }
    // Credentials and names are bounded by the buffer: a handshake that does not fit is a
    // configuration error found at the first connect.
    if (writer.status() != errc::ok) {
        in_flight_.clear();
        fail(make_error_code(errc::invalid_config));
        return;
    }
    pending_size_ += writer.size();
}

void connection::commit(std::size_t size, const in_flight& entry) noexcept {
    EDGELOCK_ASSERT(size <= write_room());
    pending_size_ += size;
    const bool pushed = in_flight_.push(entry);
    EDGELOCK_ASSERT(pushed);
    if (!command_timer_armed_) {
        command_timer_armed_ = true;
        arm_timer(owner_.config().command_timeout.count());
    }
}

void connection::flush() noexcept {
    if (writing_ || pending_size_ == 0) return;
    if (state_ != connection_state::handshaking && state_ != connection_state::ready) return;
    char* data = buffers_[pending_].get();
    std::error_code ec;
    std::size_t written = socket_.write_some(asio::buffer(data, pending_size_), ec);
    if (ec == asio::error::would_block || ec == asio::error::try_again) {
        ec.clear();
        written = 0;
    }
    if (ec) {
        // Reported through the read side, which fails at once on a shut-down socket: the
        // failure is then handled inside a completion, never inside the caller's call.
        write_error_ = ec;
        pending_size_ = 0;
        std::error_code ignored;
        socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
        return;
    }
    if (written == pending_size_) {
        pending_size_ = 0;
        return;
    }
    const std::size_t remaining = pending_size_ - written;
    pending_ = 1 - pending_;
    pending_size_ = 0;
    writing_ = true;
    auto self = owner_.self();
    const std::uint8_t i = index_;
    const std::uint32_t epoch = epoch_;
    asio::async_write(socket_, asio::buffer(data + written, remaining),
                      [self, i, epoch](std::error_code result, std::size_t) {
                          if (connection* c = self->connection_at(i)) c->on_write(epoch, result);
                      });
}

void connection::on_write(std::uint32_t epoch, std::error_code ec) {
    if (epoch != epoch_) return;
    client_impl::dispatch_scope scope(owner_);
    writing_ = false;
    if (ec) fail(ec);
    // Otherwise the scope's end sends what accumulated meanwhile and wakes waiting locks.
}

void connection::start_read() {
    EDGELOCK_ASSERT(read_size_ < read_capacity_);
    auto self = owner_.self();
    const std::uint8_t i = index_;
    const std::uint32_t epoch = epoch_;
    socket_.async_read_some(asio::buffer(read_buffer_.get() + read_size_, read_capacity_ - read_size_),
                            [self, i, epoch](std::error_code result, std::size_t size) {
                                if (connection* c = self->connection_at(i)) c->on_read(epoch, result, size);
                            });
}

void connection::on_read(std::uint32_t epoch, std::error_code ec, std::size_t size) {
    if (epoch != epoch_) return;
    client_impl::dispatch_scope scope(owner_);
    if (ec) {
        fail(write_error_ ? write_error_ : ec);
        return;
    }
    read_size_ += size;
    reply_node* nodes = owner_.nodes();
    std::size_t offset = 0;
    for (;;) {
        const parse_result parsed =
            parse_reply(read_buffer_.get() + offset, read_size_ - offset, nodes, nodes_max);
        if (parsed.code == errc::need_more) break;
        if (parsed.code != errc::ok) {
            fail(make_error_code(parsed.code));
            return;
        }
        handle_reply(nodes, parsed.nodes);
        if (epoch != epoch_) return;  // dropped, or moved on to another server
        offset += parsed.consumed;
    }
    if (offset > 0) {
        std::memmove(read_buffer_.get(), read_buffer_.get() + offset, read_size_ - offset);
        read_size_ -= offset;
    }
    if (rediscover_) {
        fail(make_error_code(transport_errc::not_master), true);
        return;
    }
    start_read();
}

void connection::handle_reply(const reply_node* nodes, std::size_t count) {
    if (role_ == connection_role::watcher && state_ == connection_state::ready) {
        handle_message(nodes, count);
        return;
    }
    if (in_flight_.empty()) {
        fail(make_error_code(errc::unexpected_reply));  // a reply nobody asked for: desync
        return;
    }
    const in_flight entry = in_flight_.front();
    in_flight_.pop();
    if (entry.lock == in_flight::internal) {
        handle_internal(static_cast<internal_request>(entry.tag), nodes, count);
        return;
    }
    if (nodes[0].type == reply_type::error && starts_with(nodes[0].text, "READONLY") &&
        owner_.sentinel_mode()) {
        rediscover_ = true;
    }
    owner_.on_lock_reply(index_, entry, nodes[0]);
}

void connection::handle_internal(internal_request kind, const reply_node* nodes, std::size_t count) {
    const reply_node& reply = nodes[0];
    switch (kind) {
        case internal_request::auth:
            if (reply.type == reply_type::error) return fail(make_error_code(transport_errc::auth_failed));
            break;
        case internal_request::select:
            if (reply.type == reply_type::error) return fail(make_error_code(transport_errc::select_failed));
            break;
        case internal_request::ping:
            if (reply.type == reply_type::error) {
                const bool auth = starts_with(reply.text, "NOAUTH") || starts_with(reply.text, "WRONGPASS");
                return fail(auth ? make_error_code(transport_errc::auth_failed) : make_error_code(errc::error_reply));
            }
            break;
        case internal_request::role:
            if (reply.type != reply_type::array || count < 2 || nodes[1].text != "master") {
                return fail(make_error_code(transport_errc::not_master));
            }
            break;
        case internal_request::script_load: break;
        case internal_request::master_query: {
            std::uint16_t port = 0;
            const bool named = count == 3 && reply.type == reply_type::array && reply.elements == 2 &&
                               session::parse_port(nodes[2].text, port);
            discovered_ = owner_.master_credentials();
            if (!named || session::set_endpoint(discovered_, nodes[1].text, port).code != errc::ok) {
                return fail(make_error_code(transport_errc::no_master));
            }
            break;
        }
        case internal_request::subscribe:
            if (reply.type != reply_type::array) return fail(make_error_code(errc::unexpected_reply));
            break;
    }
    if (in_flight_.empty()) phase_done();
}

void connection::phase_done() {
    if (phase_ == phase::sentinel && role_ == connection_role::instance) {
        // The sentinel named the master: now connect to it, within a fresh connect timeout.
        close_socket();
        phase_ = phase::server;
        target_ = &discovered_;
        state_ = connection_state::connecting;
        begin_attempt();
        return;
    }
    state_ = connection_state::ready;
    backoff_.reset();
    ++attempts_finished_;
    timer_epoch_ = owner_.next_epoch();
    timer_.cancel();
    command_timer_armed_ = false;
    owner_.on_attempt_finished();
    if (role_ == connection_role::instance) owner_.on_connection_ready(index_);
}

// Watcher: ["message", "+switch-master", "<name> <old-ip> <old-port> <new-ip> <new-port>"].
void connection::handle_message(const reply_node* nodes, std::size_t count) {
    if (count != 4 || nodes[0].type != reply_type::array || nodes[1].text != "message") return;
    std::string_view payload = nodes[3].text;
    std::array<std::string_view, 5> fields{};
    for (std::string_view& field : fields) {
        const std::size_t space = payload.find(' ');
        field = payload.substr(0, space);
        payload = space == std::string_view::npos ? std::string_view() : payload.substr(space + 1);
    }
    if (fields[0] != owner_.config().master_name) return;
    std::uint16_t port = 0;
    if (!session::parse_port(fields[4], port)) return;
    owner_.on_switch_master(std::string(fields[3]), port);
}

void connection::fail(std::error_code code, bool reconnect_now) {
    if (state_ == connection_state::closed || state_ == connection_state::backing_off) return;
    const bool was_ready = state_ == connection_state::ready;
    const bool asked_sentinel = phase_ == phase::sentinel;
    close_socket();
    last_error_ = normalized(code);
    write_error_.clear();
    if (!was_ready) ++attempts_finished_;
    if (asked_sentinel && owner_.sentinel_count() > 0) {
        sentinel_index_ = (sentinel_index_ + 1) % owner_.sentinel_count();
    }
    state_ = connection_state::backing_off;
    if (reconnect_now) {
        arm_timer(0);
    } else {
        const std::int64_t now = now_ms();
        backoff_.failed(now, owner_.timing());
        arm_timer(backoff_.not_before_ms() - now);
    }
    owner_.on_attempt_finished();
    if (was_ready && role_ == connection_role::instance) owner_.on_connection_down(index_);
}

void connection::arm_timer(std::int64_t delay_ms) {
    timer_epoch_ = owner_.next_epoch();
    timer_.expires_after(std::chrono::milliseconds(std::max<std::int64_t>(delay_ms, 0)));
    auto self = owner_.self();
    const std::uint8_t i = index_;
    const std::uint32_t timer_epoch = timer_epoch_;
    timer_.async_wait([self, i, timer_epoch](std::error_code result) {
        if (connection* c = self->connection_at(i)) c->on_timer(timer_epoch, result);
    });
}

void connection::on_timer(std::uint32_t timer_epoch, std::error_code ec) {
    if (timer_epoch != timer_epoch_ || ec == asio::error::operation_aborted) return;
    client_impl::dispatch_scope scope(owner_);
    switch (state_) {
        case connection_state::connecting:
        case connection_state::handshaking: fail(make_error_code(transport_errc::connect_timeout)); break;
        case connection_state::backing_off: start(); break;
        case connection_state::ready: check_command_timeout(); break;
        case connection_state::closed: break;
    }
}

void connection::check_command_timeout() {
    command_timer_armed_ = false;
    if (in_flight_.empty()) return;
    const std::int64_t now = now_ms();
    const std::int64_t deadline = in_flight_.front().sent_ms + owner_.config().command_timeout.count();
    if (now >= deadline) {
        fail(make_error_code(transport_errc::command_timeout));
        return;
    }
    command_timer_armed_ = true;
    arm_timer(deadline - now);
}

}  // namespace edgelock::async::detail
