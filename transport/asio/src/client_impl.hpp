// SPDX-License-Identifier: Apache-2.0
// The async client's insides: one socket per instance (each carrying a session connection), and the
// client that drives the locks of its lock table (lock_table.hpp) over them.
#pragma once

#include <asio/ip/tcp.hpp>
#include <asio/ssl/stream.hpp>
#include <asio/steady_timer.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "edgelock/async_client.hpp"
#include "edgelock/assert.hpp"
#include "edgelock/entropy.hpp"
#include "edgelock/lock.hpp"
#include "edgelock/resp_reader.hpp"
#include "edgelock/session/address.hpp"
#include "edgelock/session/cluster.hpp"
#include "edgelock/session/cluster_links.hpp"
#include "edgelock/session/cluster_route.hpp"
#include "edgelock/session/linking.hpp"
#include "edgelock/session/lock_traffic.hpp"
#include "edgelock/error_code.hpp"
#include "edgelock/session/reconnect.hpp"
#include "edgelock/session/connection_driver.hpp"
#include "edgelock/session/connection.hpp"
#include "edgelock/session/fixed_text.hpp"
#include "edgelock/limits.hpp"
#include "edgelock/tls_context.hpp"
#include "deadline_heap.hpp"
#include "fair_channels.hpp"
#include "fixed_ring.hpp"
#include "lock_table.hpp"

namespace edgelock::async::detail {

std::int64_t now_ms() noexcept;

// The time of one step of the client (a call in, or one lock's share of a completion), read
// at its first use and kept for the rest of the step: on a VM a clock read is among the
// dearest things a lock operation does. Only for a step that runs no handler between its
// uses, since a handler's time must count against the lease.
class step_clock {
public:
    step_clock() = default;
    explicit step_clock(std::int64_t read_ms) noexcept : now_ms_(read_ms), read_(true) {}

    std::int64_t now() noexcept {
        if (!read_) {
            now_ms_ = now_ms();
            read_ = true;
        }
        return now_ms_;
    }

private:
    std::int64_t now_ms_ = 0;
    bool read_ = false;
};

// now_ms()'s milliseconds as a steady_clock instant (Asio's timers and lock_status take these).
inline std::chrono::steady_clock::time_point to_time_point(std::int64_t ms) {
    return std::chrono::steady_clock::time_point(
        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
            std::chrono::milliseconds(ms)));
}

// An acquire runs: the lock is trying, backing off between tries, or confirming a hold.
inline bool attempt_running(lock_state state) {
    return state == lock_state::acquiring || state == lock_state::backing_off ||
           state == lock_state::confirming;
}

using session::node_address;

// The connections that carry lock traffic ("links"): one per instance, or in a Redis Cluster one
// per node of the slot map, made on first use. Link i is connections_[i]; a set of links is a
// bit per link.
inline constexpr std::size_t links_max = std::max(instances_max, session::cluster_masters_max);
using link_set = std::uint32_t;
static_assert(links_max <= 32);

class client_impl;

// leaving: an instance socket that close() left to finish its requests (asio_connection::linger).
enum class connection_role : std::uint8_t { instance, watcher, subscriber, leaving };

// One socket under one session::connection_driver: resolving, connecting, the bytes in and
// out, and the timer the driver asks for. Where to connect, what to say first, what each
// reply means, timeouts, reconnect delays and what a closed connection means are the
// driver's (edgelock/session/connection_driver.hpp); this class is its asio adapter. An
// instance socket carries lock traffic; the watcher listens to a sentinel's +switch-master;
// the subscriber carries fair locks' wake-ups (fair_channels.hpp), and connects only while
// a channel wants a subscription.
//
// Each connection attempt has a socket of its own, which over rediss:// moves into a TLS stream
// of its own once connected. Every handler of either holds it (a shared_ptr), and the buffers
// too, so an operation that completes after the connection was dropped, or the asio_connection
// retired, still finds its stream, its socket and its bytes, never the next connection's.
class asio_connection final : public session::connection_io, public session::connection_events {
public:
    asio_connection(client_impl& owner, asio::io_context& io, std::uint8_t index,
                    connection_role role);

    // Sizes the buffers and the in-flight queue (the only allocations) and sets up the connection;
    // `setup`'s storage fields are filled here. Returns invalid_config for a refused setup.
    errc init(session::connection_setup setup, std::size_t lock_requests_max,
              std::size_t buffer_bytes, std::size_t waiters_max);
    void start();  // connects when the connection allows (now, or when its reconnect delay ends)
    void stop();   // drops everything, no reconnect, no notifications
    // close(): stays until its requests are answered or time out, then closes (no reconnect,
    // no notifications); stopped() then.
    void linger();
    bool stopped() const noexcept { return stopped_; }
    // A handler started with `epoch` (a socket or a timer epoch) is this socket's current one.
    bool owns(std::uint32_t epoch) const noexcept {
        return epoch == epoch_ || epoch == timer_epoch_;
    }

    bool ready() const noexcept { return connection().ready(); }
    session::connection& connection() noexcept { return driver_.connection(); }
    const session::connection& connection() const noexcept { return driver_.connection(); }
    [[nodiscard]] std::error_code last_error() const noexcept {
        return to_error_code(connection().last_error());
    }
    std::string address() const;
    std::uint32_t attempts_finished() const noexcept { return connection().attempts_finished(); }
    // A sentinel announced that `to` replaced `from`: session::connection::follow_switch, then
    // settle.
    void follow_switch(const node_address& from, const node_address& to);
    // Its node is no longer the one it must reach (the owner re-pointed its setup's address):
    // closed now with master_changed, then connected again at once, where the setup points.
    void move_on();

    // Lock traffic (session::write_requests' sink): requests are encoded straight into the
    // write buffer, then committed to it, already tracked on connection().
    char* cursor() noexcept { return bytes_->writes[pending_].get() + pending_size_; }
    std::size_t room() const noexcept { return buffer_bytes_ - pending_size_; }
    bool commit(std::size_t size) noexcept;
    // Sends what is buffered: synchronously when the socket takes it, else asynchronously.
    void flush() noexcept;
    bool writing() const noexcept { return writing_; }
    bool add_waiter(const lock_ref& ref) noexcept { return waiters_.push(ref); }
    fixed_ring<lock_ref>& waiters() noexcept { return waiters_; }

private:
    // session::connection_io
    void open(const node_address& to) override;
    void close() override;
    bool suspended() const override { return stopped_; }
    // session::connection_events: to the client, by this socket's role
    void answered(const session::in_flight& entry, const reply_node* nodes,
                  std::size_t count) override;
    void pushed(session::routed_reply::kind what, const reply_node* nodes,
                std::size_t count) override;
    void node_read() override;
    void became_ready() override;
    void dropped(const session::in_flight& entry) override;
    void ended(const session::connection_end& closed, bool lock_hears) override;

    void connect_to(const node_address& to);
    void on_resolved(std::uint32_t epoch, std::error_code ec,
                     const asio::ip::tcp::resolver::results_type& results);
    void on_connected(std::uint32_t epoch, std::error_code ec);
    void set_socket_options();
    void start_tls(std::uint32_t epoch);
    void on_tls_handshake(std::uint32_t epoch, std::error_code ec);
    void start_session();
    failure failure_of(std::error_code ec) const;
    void start_read();
    void on_read(std::uint32_t epoch, std::error_code ec, std::size_t size);
    bool route_replies(std::uint32_t epoch);
    void on_write(std::uint32_t epoch, std::error_code ec);
    void arm_timer(std::int64_t deadline_ms);
    void on_timer(std::uint32_t timer_epoch, std::error_code ec);
    void fail(std::error_code code);
    void settle();
    void settle_leaving();
    void close_socket() noexcept;
    void release_socket() noexcept;

    client_impl& owner_;
    std::uint8_t index_;
    connection_role role_;
    session::connection_driver driver_;
    std::unique_ptr<session::in_flight[]> in_flight_;
    bool stopped_ = true;

    using tls_stream = asio::ssl::stream<asio::ip::tcp::socket>;

    asio::io_context& io_;
    // This attempt's socket until TLS takes it (null between attempts). Every handler of its
    // operations holds it, so that it closes only after they have run (release_socket()).
    std::shared_ptr<asio::ip::tcp::socket> socket_;
    std::shared_ptr<tls_stream> tls_;  // rediss://: this connection's stream (it owns the socket)
    asio::ip::tcp::resolver resolver_;
    asio::steady_timer timer_;
    std::uint32_t epoch_ = 0;                 // bumped whenever the socket is dropped
    std::uint32_t timer_epoch_ = 0;           // bumped whenever the timer is re-armed
    std::int64_t timer_ms_ = no_deadline_ms;  // when the armed timer fires

    // The bytes the kernel reads from and writes into. Every read and write handler holds them,
    // as the TLS stream's do: on io_uring the kernel copies a reply into the read buffer (and
    // takes a write's bytes) after the call that started it, until the completion is reaped,
    // so they must outlive this object when it is retired with an operation in flight.
    struct io_bytes {
        std::unique_ptr<char[]> read;
        std::array<std::unique_ptr<char[]>, 2> writes;
    };
    std::shared_ptr<io_bytes> bytes_;
    char* read_buffer() const noexcept { return bytes_->read.get(); }
    std::size_t read_capacity_ = 0;
    std::size_t read_size_ = 0;
    std::size_t buffer_bytes_ = 0;
    std::size_t pending_ = 0;  // the buffer requests are appended to
    std::size_t pending_size_ = 0;
    bool writing_ = false;  // the other buffer is being written asynchronously
    std::error_code write_error_;

    fixed_ring<lock_ref> waiters_;  // locks waiting for room in the write buffer
};

class client_impl : public std::enable_shared_from_this<client_impl> {
public:
    explicit client_impl(asio::io_context& io);
    ~client_impl();

    [[nodiscard]] std::error_code open(const client_config& config);
    // call_handlers: close() (handlers complete with operation_canceled), else the
    // destructor's. leave_lines: fair waiters leave their lines on connections that linger
    // (not from ~client_impl, whose handlers can no longer hold it).
    void close(bool call_handlers, bool leave_lines = true);

    void wait_ready(handler_slot handler);
    [[nodiscard]] std::error_code add_lock(const lock_config& config, lock_handle& out);
    [[nodiscard]] std::error_code remove_lock(lock_handle handle);
    [[nodiscard]] std::error_code set_lost_handler(lock_handle handle, handler_slot handler);
    void acquire(lock_handle handle, std::chrono::milliseconds wait, handler_slot handler);
    errc acquire_in_core(lock_entry& e, std::int64_t now, std::chrono::milliseconds wait,
                         const owner_token& token);
    void release(lock_handle handle, handler_slot handler, bool detached);
    lock_status status(lock_handle handle) const noexcept;
    session::lock_metrics metrics() const noexcept;
    session::lock_metrics metrics(lock_handle handle) const noexcept;

    // The public API's instances: in a cluster, the nodes of the slot map (a node's link may
    // not exist yet).
    std::size_t instance_count() const noexcept {
        return cluster_ ? cluster_links_->map().nodes() : instance_count_;
    }
    const asio_connection* instance(std::size_t i) const noexcept {
        return i < instance_count() ? connections_[i].get() : nullptr;
    }

    // For the sockets.
    const client_config& config() const noexcept { return config_; }
    const tls_context& tls() const noexcept { return tls_; }
    bool sentinel_mode() const noexcept { return where_.by_sentinel(); }
    reply_node* nodes() noexcept { return nodes_.get(); }
    std::size_t nodes_capacity() const noexcept { return nodes_capacity_; }
    std::shared_ptr<client_impl> self() { return shared_from_this(); }
    // The socket at `i`, or null (closed and replaced since a handler was started).
    asio_connection* connection_at(std::size_t i) noexcept {
        return i < connections_.size() ? connections_[i].get() : nullptr;
    }
    // The socket a read, write or timer handler started with `epoch` belongs to: the one at
    // `i`, or one close() left lingering; null when neither owns it any more.
    asio_connection* connection_at(std::size_t i, std::uint32_t epoch) noexcept;
    // Epochs are unique over the client's life, so a handler of a dropped socket or of a
    // replaced one can never pass for a current one.
    std::uint32_t next_epoch() noexcept { return ++epoch_counter_; }

    void on_connection_ready(std::uint8_t link);
    void on_connection_down(std::uint8_t link);
    void on_node_read(std::uint8_t link, const session::node_facts& node, const node_start& start);
    // Calls tell(entry, instance) for each lock with an instance on `link`, once that lock's
    // pending events are delivered, then services the lock. False when a callback closed or
    // reopened the client, which ends the walk (client_connections.cpp).
    template <typename Tell>
    bool tell_locks_on(std::uint8_t link, Tell&& tell);
    void on_attempt_finished() noexcept { ready_check_ = true; }
    void on_lock_reply(std::uint8_t link, const session::in_flight& entry, const reply_node& reply);
    // A request of the lock at `index` was answered, or given up with its connection.
    void on_request_done(std::uint32_t index) noexcept;
    // The same, for a request its connection gave up (a renewal's fails on that link).
    void on_request_dropped(std::uint8_t link, std::uint32_t index);
    // Redis Cluster (client_cluster.cpp): the answer to CLUSTER SLOTS on `link`, or its loss.
    void on_map_answer(std::uint8_t link, const reply_node* nodes, std::size_t count);
    void on_map_read_lost();
    void point_link(std::uint8_t node);
    // Metrics and the event hook (client_metrics.cpp).
    void note_connected(std::uint8_t link);
    void note_disconnected(std::uint8_t link, const session::connection_end& closed);
    // Every end of a link's connection, heard by the locks or not (client_cluster.cpp).
    void on_link_ended(std::uint8_t link, const session::connection_end& closed);
    void on_switch_master(const node_address& from, const node_address& to);
    void wake_waiters(std::uint8_t link);
    // The in-flight owner of CLUSTER SLOTS: above every lock slot, as script_load_owner.
    static constexpr std::uint32_t map_read_owner = session::cluster_links::map_owner;
    // Instance and node sockets connect eagerly (session/linking.hpp): at open() and again after
    // each end, whatever the locks have queued, so a request finds its link up.
    static constexpr session::linking linking = session::linking::eager;
    // Fair locks' wake-ups, from the subscriber socket.
    bool subscriber_wanted() const noexcept { return channels_.wanted(); }
    void on_subscriber_down();
    void on_subscription_answer(const session::in_flight& entry, const reply_node* nodes,
                                std::size_t count);
    void on_wake_message(const reply_node* nodes, std::size_t count);

    // Every completion handler of the client runs inside one: when the outermost ends,
    // the events it left are delivered and the buffered requests are sent.
    class dispatch_scope {
    public:
        explicit dispatch_scope(client_impl& owner) noexcept : owner_(owner) { ++owner_.depth_; }
        ~dispatch_scope();
        dispatch_scope(const dispatch_scope&) = delete;
        dispatch_scope& operator=(const dispatch_scope&) = delete;

    private:
        client_impl& owner_;
    };

private:
    session::connection_setup instance_setup(std::size_t instance) const;
    void build_connections();
    void after_call(std::uint32_t index, step_clock clock) noexcept;
    void defer_events(std::uint32_t index) noexcept;
    void service(std::uint32_t index, step_clock& clock);
    bool deliver_pending(std::uint32_t index, step_clock& clock);
    void deliver(lock_entry& entry, const event& e, step_clock& clock);
    void deliver_acquired(lock_entry& entry, const event& e, std::int64_t now);
    void deliver_acquire_failed(lock_entry& entry, const event& e, std::int64_t now);
    void deliver_released(lock_entry& entry, const event& e);
    void fail_late_acquire(lock_entry& entry, std::int64_t now);
    void deliver_lost(lock_entry& entry, errc why);
    failure instance_failure(const lock_entry& entry) const;
    void write_requests(std::uint32_t index, step_clock& clock) noexcept;
    void write_link(lock_entry& e, std::uint32_t index, std::size_t link, std::uint8_t instance,
                    std::int64_t now, bool asking) noexcept;
    // The core instance of the lock at `link`, or no_instance (a cluster lock elsewhere).
    static constexpr std::uint8_t no_instance = 0xFF;
    static std::uint8_t instance_on(const lock_entry& e, std::size_t link) noexcept {
        static_assert(no_instance == session::lock_links::none);
        return e.place.instance_on(static_cast<std::uint8_t>(link));
    }
    // Redis Cluster (client_cluster.cpp).
    void build_cluster_links();
    asio_connection& make_link(std::uint8_t node);
    void write_cluster_requests(std::uint32_t index, step_clock& clock) noexcept;
    void drive_map();
    void check_cluster_ready();
    // The links as session::cluster_links::tend_map drives them.
    class cluster_port;
    failure cluster_failure(const lock_entry& e) const;
    void update_deadline(std::uint32_t index) noexcept;
    void arm_lock_timer(std::int64_t deadline_ms);
    void on_lock_timer(std::uint32_t epoch, std::error_code ec);
    void finish_dispatch();
    void drain_dirty();
    void finish_io();
    void check_ready();
    void post_flush();
    void post_completion(handler_slot handler, std::error_code code);
    void reset_entry(lock_entry& entry) noexcept;
    link_set leave_lines() noexcept;
    void load_script(asio_connection& c, const script& s, std::int64_t now) noexcept;
    // The in-flight owner of close()'s SCRIPT LOAD: above every lock slot (locks_max_limit),
    // so no reply or dropped request of it reaches a lock.
    static constexpr std::uint32_t script_load_owner = session::in_flight::internal - 1;
    void drop_finished_leaving() noexcept;
    void build_subscriber();
    asio_connection* subscriber() noexcept { return connection_at(subscriber_index_); }
    void note_wake_interest(std::uint32_t index) noexcept;
    void wake_channel(std::uint32_t channel, std::string_view message);
    void drive_subscriber();
    bool place_cluster_subscriber(asio_connection& s);
    std::uint8_t quorum() const noexcept { return quorum_of(instance_count_); }
    // Metrics and the event hook (client_metrics.cpp).
    // What the event hook hears of an ended acquire, kept apart from the lock (whose handler
    // may remove it before the hook hears of it).
    struct attempt_told {
        bool to_tell = false;  // an attempt ended, and a hook listens
        std::error_code heard;
        std::int64_t valid_until_ms = 0;
        std::int64_t elapsed_ms = 0;
        session::fixed_text<name_bytes_max> lock;
    };
    attempt_told end_acquire(lock_entry& e, std::error_code heard, std::int64_t now);
    void tell_attempt(const attempt_told& told) const;
    void note_acquire_ended(lock_entry& e, std::error_code heard, std::int64_t now);
    void note_renewed(lock_entry& e, const event& ev, std::int64_t now);
    void note_renewal_failed(lock_entry& e, std::uint8_t instance, std::error_code code);
    void note_renewal_cut_off(lock_entry& e, std::uint8_t link);
    void note_lost(lock_entry& e, errc why);
    void note_released(lock_entry& e, std::error_code heard);
    void retire_counts(lock_entry& e) noexcept;
    void tell(lock_event_kind kind, std::size_t instance, std::error_code code,
              std::int64_t valid_until_ms, std::int64_t elapsed_ms, std::string_view lock) const;

    asio::io_context& io_;
    bool open_ = false;
    std::uint32_t open_epoch_ = 0;
    client_config config_;
    tls_context tls_;             // loaded by open() when an address is rediss://
    validated_deployment where_;  // what open() parsed of config_: the connections point into it
    std::size_t instance_count_ = 0;  // the core's: 1 in a cluster
    std::size_t links_ = 0;           // instance_count_, or cluster_masters_max in a cluster
    // Redis Cluster: the slot map, its reads, the seeds and the links' addresses
    // (session/cluster_links.hpp: it stays put from open() on, and the links' connections
    // point into it), and why the last read failed.
    bool cluster_ = false;
    std::unique_ptr<session::cluster_links> cluster_links_;
    failure map_failure_;
    node_address subscriber_node_;    // the node the subscriber listens on (its setup's)
    bool subscriber_placed_ = false;  // Cluster: subscriber_node_ is a slot's master already
    // Metrics over the client's life: the instances' connections, and the counts of locks
    // removed (or dropped by close()); the live locks keep their own (lock_entry::meter).
    session::lock_meter connection_meter_;
    session::lock_metrics retired_counts_;
    std::array<session::link_record, links_max> link_records_{};
    token_pool tokens_;            // one getrandom per 16 acquires
    std::uint64_t seed_bits_ = 0;  // the connections' reconnect jitter, drawn at open()
    // The links (in a cluster, null until first used), then the watcher (Sentinel), then the
    // subscriber (once a fair lock is added: built by add_lock, at subscriber_index_).
    std::vector<std::unique_ptr<asio_connection>> connections_;
    static constexpr std::size_t no_socket = static_cast<std::size_t>(-1);
    std::size_t subscriber_index_ = no_socket;
    fair_channels channels_;  // set up with the subscriber

    lock_table locks_;
    fixed_ring<lock_ref> dirty_;
    deadline_heap deadlines_;
    // Made by the first open(), after io_backend_refusal(): making it sets up the io_context's
    // backend (io_uring_service.hpp), which must not be asked before the kernel is.
    std::optional<asio::steady_timer> lock_timer_;
    std::int64_t lock_timer_ms_ = no_deadline_ms;
    std::uint32_t lock_timer_epoch_ = 0;
    std::unique_ptr<reply_node[]> nodes_;  // replies are parsed into these: nodes_capacity_
    std::size_t nodes_capacity_ = 0;

    handler_slot ready_handler_;
    std::vector<std::uint32_t> ready_marks_;  // attempts_finished per instance at wait start
    bool ready_check_ = false;

    std::uint32_t epoch_counter_ = 0;
    // Every lock added takes the next generation, over the client's life and across close()
    // and open() (which build a new table): a handle names one lock, never a later one.
    int depth_ = 0;
    bool flush_posted_ = false;

    // Storage released by close() while a handler may still be using it; freed when the
    // outermost dispatch ends (or with the client).
    std::vector<std::unique_ptr<asio_connection>> retired_sockets_;
    // Instance sockets close() left to finish a fair waiter's leaving release: each stops
    // within the command timeout, and is freed once stopped and outside its own handlers.
    std::vector<std::unique_ptr<asio_connection>> leaving_sockets_;
};

}  // namespace edgelock::async::detail
