// The asio client's insides: fixed-capacity containers, one connection per instance, and the
// lock table that feeds the sans-IO core.
#pragma once

#include <asio/ip/tcp.hpp>
#include <asio/steady_timer.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "edgelock/asio_client.hpp"
#include "edgelock/assert.hpp"
#include "edgelock/entropy.hpp"
#include "edgelock/lock.hpp"
#include "edgelock/resp_reader.hpp"
#include "edgelock/session/address.hpp"
#include "edgelock/session/reconnect.hpp"

namespace edgelock::async::detail {

std::int64_t now_ms() noexcept;

// A ring buffer whose capacity is fixed when it is set up (the only allocation).
template <typename T>
class fixed_ring {
public:
    void init(std::size_t capacity) {
        items_.reset(new T[capacity]);
        capacity_ = capacity;
        head_ = 0;
        count_ = 0;
    }
    bool push(const T& value) noexcept {
        if (count_ == capacity_) return false;
        items_[(head_ + count_) % capacity_] = value;
        ++count_;
        return true;
    }
    T& front() noexcept {
        EDGELOCK_ASSERT(count_ > 0);
        return items_[head_];
    }
    void pop() noexcept {
        EDGELOCK_ASSERT(count_ > 0);
        head_ = (head_ + 1) % capacity_;
        --count_;
    }
    // Drops every item for which `drop` is true, keeping the order of the rest.
    template <typename Predicate>
    void erase_if(Predicate drop) noexcept {
        std::size_t kept = 0;
        for (std::size_t n = 0; n < count_; ++n) {
            const T item = items_[(head_ + n) % capacity_];
            if (drop(item)) continue;
            items_[(head_ + kept) % capacity_] = item;
            ++kept;
        }
        count_ = kept;
    }
    bool empty() const noexcept { return count_ == 0; }
    std::size_t size() const noexcept { return count_; }
    void clear() noexcept {
        head_ = 0;
        count_ = 0;
    }

private:
    std::unique_ptr<T[]> items_;
    std::size_t capacity_ = 0;
    std::size_t head_ = 0;
    std::size_t count_ = 0;
};

// Locks ordered by their next deadline (a binary min-heap with positions, fixed capacity).
class deadline_heap {
public:
    void init(std::size_t capacity);
    // Inserts, moves or (with no_deadline_ms) removes `index`.
    void set(std::uint32_t index, std::int64_t deadline_ms) noexcept;
    // The key of `index`, or no_deadline_ms when it is not in the heap.
    std::int64_t key(std::uint32_t index) const noexcept {
        const std::uint32_t at = position_[index];
        return at == absent ? no_deadline_ms : heap_[at].deadline_ms;
    }
    bool empty() const noexcept { return size_ == 0; }
    std::uint32_t top() const noexcept { return heap_[0].index; }
    std::int64_t top_deadline_ms() const noexcept {
        return size_ == 0 ? no_deadline_ms : heap_[0].deadline_ms;
    }

private:
    struct item {
        std::int64_t deadline_ms;
        std::uint32_t index;
    };
    static constexpr std::uint32_t absent = 0xffffffff;

    void place(std::size_t at, const item& value) noexcept;
    void sift_up(std::size_t at) noexcept;
    void sift_down(std::size_t at) noexcept;

    std::unique_ptr<item[]> heap_;
    std::unique_ptr<std::uint32_t[]> position_;  // per lock index: its heap slot, or absent
    std::size_t size_ = 0;
};

struct lock_ref {
    std::uint32_t index = 0;
    std::uint32_t generation = 0;
};

using session::server_address;

enum class internal_request : std::uint32_t { auth, select, ping, role, script_load, master_query, subscribe };

// What a reply on a connection answers: a lock's request, or one of the client's own.
struct in_flight {
    static constexpr std::uint32_t internal = 0xffffffff;
    std::uint32_t lock = internal;  // lock table index, or `internal`
    std::uint32_t tag = 0;          // the lock's generation, or the internal_request
    std::int64_t sent_ms = 0;
};

class client_impl;

enum class connection_role : std::uint8_t { instance, watcher };
enum class connection_state : std::uint8_t { closed, backing_off, connecting, handshaking, ready };

// One TCP connection with its buffers and its reconnect loop. An instance connection carries
// lock traffic (after asking a sentinel for the master, in Sentinel mode); the watcher is
// subscribed to a sentinel's +switch-master.
class connection {
public:
    connection(client_impl& owner, asio::io_context& io, std::uint8_t index, connection_role role);

    void init(std::size_t in_flight_max, std::size_t buffer_bytes, std::size_t waiters_max,
              std::uint64_t backoff_seed);
    void start();  // connect now (from closed or backing_off)
    void stop();   // drop everything, no reconnect, no notifications

    bool ready() const noexcept { return state_ == connection_state::ready; }
    connection_state state() const noexcept { return state_; }
    const std::error_code& last_error() const noexcept { return last_error_; }
    std::string endpoint() const;
    std::uint32_t attempts_finished() const noexcept { return attempts_finished_; }
    bool targets(const std::string& host, std::uint16_t port) const noexcept;

    // Lock traffic, while ready: requests are encoded straight into the write buffer.
    char* write_cursor() noexcept { return buffers_[pending_].get() + pending_size_; }
    std::size_t write_room() const noexcept { return buffer_bytes_ - pending_size_; }
    void commit(std::size_t size, const in_flight& entry) noexcept;
    // Sends what is buffered: synchronously when the socket takes it, else asynchronously.
    void flush() noexcept;
    bool writing() const noexcept { return writing_; }
    bool add_waiter(const lock_ref& ref) noexcept { return waiters_.push(ref); }
    fixed_ring<lock_ref>& waiters() noexcept { return waiters_; }

    // Drops the connection with `code` and schedules a reconnect (now, or after backoff).
    void fail(std::error_code code, bool reconnect_now = false);

private:
    enum class phase : std::uint8_t { sentinel, server };

    void begin_attempt();
    void on_resolved(std::uint32_t epoch, std::error_code ec,
                     const asio::ip::tcp::resolver::results_type& results);
    void on_connected(std::uint32_t epoch, std::error_code ec);
    void write_handshake();
    void push_internal(internal_request kind) noexcept;
    void start_read();
    void on_read(std::uint32_t epoch, std::error_code ec, std::size_t size);
    void on_write(std::uint32_t epoch, std::error_code ec);
    void arm_timer(std::int64_t delay_ms);
    void on_timer(std::uint32_t timer_epoch, std::error_code ec);
    void check_command_timeout();
    void handle_reply(const reply_node* nodes, std::size_t count);
    void handle_internal(internal_request kind, const reply_node* nodes, std::size_t count);
    void handle_message(const reply_node* nodes, std::size_t count);
    void phase_done();
    void close_socket() noexcept;
    void drop_in_flight() noexcept;

    client_impl& owner_;
    std::uint8_t index_;
    connection_role role_;
    connection_state state_ = connection_state::closed;
    phase phase_ = phase::server;

    asio::ip::tcp::socket socket_;
    asio::ip::tcp::resolver resolver_;
    asio::steady_timer timer_;
    std::uint32_t epoch_ = 0;        // bumped whenever the socket is dropped
    std::uint32_t timer_epoch_ = 0;  // bumped whenever the timer is re-armed
    bool command_timer_armed_ = false;

    const server_address* target_ = nullptr;
    server_address discovered_;  // Sentinel: the master it named
    std::size_t sentinel_index_ = 0;

    std::unique_ptr<char[]> read_buffer_;
    std::size_t read_capacity_ = 0;
    std::size_t read_size_ = 0;
    std::array<std::unique_ptr<char[]>, 2> buffers_;
    std::size_t buffer_bytes_ = 0;
    std::size_t pending_ = 0;       // the buffer requests are appended to
    std::size_t pending_size_ = 0;
    bool writing_ = false;          // the other buffer is being written asynchronously
    std::error_code write_error_;
    bool rediscover_ = false;       // a READONLY reply arrived: ask the sentinels again

    fixed_ring<in_flight> in_flight_;
    fixed_ring<lock_ref> waiters_;  // locks waiting for room in the write buffer

    std::error_code last_error_;
    session::reconnect_backoff backoff_;
    std::uint32_t attempts_finished_ = 0;
};

class client_impl : public std::enable_shared_from_this<client_impl> {
public:
    explicit client_impl(asio::io_context& io);
    ~client_impl();

    std::error_code open(const client_config& config);
    void close(bool call_handlers);

    void wait_ready(handler_slot handler);
    std::error_code add_lock(const lock_config& config, lock_handle& out);
    std::error_code remove_lock(lock_handle handle);
    std::error_code set_lost_handler(lock_handle handle, handler_slot handler);
    void acquire(lock_handle handle, std::chrono::milliseconds wait, handler_slot handler);
    void release(lock_handle handle, handler_slot handler, bool detached);
    lock_status status(lock_handle handle) const noexcept;

    std::size_t instance_count() const noexcept { return instance_count_; }
    const connection* instance(std::size_t i) const noexcept {
        return i < instance_count_ ? conns_[i].get() : nullptr;
    }

    // For the connections.
    const client_config& config() const noexcept { return config_; }
    bool sentinel_mode() const noexcept { return !sentinels_.empty(); }
    const server_address& instance_address(std::size_t i) const { return instances_[i]; }
    const server_address& sentinel_address(std::size_t i) const { return sentinels_[i]; }
    // Sentinel: the master's user, password and db; host and port come from the sentinels.
    const server_address& master_credentials() const noexcept { return master_; }
    std::size_t sentinel_count() const noexcept { return sentinels_.size(); }
    reply_node* nodes() noexcept { return nodes_.get(); }
    std::shared_ptr<client_impl> self() { return shared_from_this(); }
    // The connection at `i`, or null (closed and replaced since a handler was started).
    connection* connection_at(std::size_t i) noexcept {
        return i < conns_.size() ? conns_[i].get() : nullptr;
    }
    // Epochs are unique over the client's life, so a handler of a dropped socket or of a
    // replaced connection can never pass for a current one.
    std::uint32_t next_epoch() noexcept { return ++epoch_counter_; }
    const session::timing& timing() const noexcept { return timing_; }

    void on_connection_ready(std::uint8_t instance);
    void on_connection_down(std::uint8_t instance);
    void on_attempt_finished() noexcept { ready_check_ = true; }
    void on_lock_reply(std::uint8_t instance, const in_flight& entry, const reply_node& reply);
    // A request of the lock at `index` was answered, or given up with its connection.
    void on_request_done(std::uint32_t index) noexcept;
    void on_switch_master(const std::string& host, std::uint16_t port);
    void wake_waiters(std::uint8_t instance);

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
    struct lock_entry {
        lock core;
        handler_slot acquire_handler;
        handler_slot release_handler;
        handler_slot lost_handler;
        std::array<event, events_max> deferred{};  // events taken out during a call-in
        std::uint8_t deferred_count = 0;
        std::uint32_t generation = 0;
        std::int64_t deadline_ms = no_deadline_ms;  // the core's; the heap key may be earlier
        std::uint32_t renewals = 0;
        errc last_cause = errc::ok;
        std::error_code failure;  // the running acquire's last instance error, if any
        std::uint8_t waiting_mask = 0;  // instances on whose write buffer it waits
        // Written on a connection, reply not yet read. Each connection's in-flight queue
        // has room for requests_per_instance_max per slot, which the core bounds for a live
        // lock; a removed lock's requests keep their share until answered or dropped.
        std::uint16_t requests_in_flight = 0;
        bool draining = false;  // removed, the slot freed once requests_in_flight is 0
        bool in_use = false;
        bool dirty = false;             // has deferred events to deliver
        bool hold_reported = false;     // the running hold's acquire completed with success
        bool lost_unreported = false;   // skip the next `lost`: its hold was never reported
        bool release_after_events = false;
    };

    lock_entry* find(lock_handle handle) noexcept;
    const lock_entry* find(lock_handle handle) const noexcept;
    void after_call(std::uint32_t index) noexcept;
    void service(std::uint32_t index);
    bool deliver_pending(std::uint32_t index);
    void deliver(lock_entry& entry, const event& e);
    void deliver_acquired(lock_entry& entry, const event& e);
    void fail_late_acquire(lock_entry& entry, std::int64_t now);
    void deliver_lost(lock_entry& entry, errc why);
    std::error_code failure_code(const lock_entry& entry, const event& e) const;
    void pump(std::uint32_t index) noexcept;
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
    std::uint8_t quorum() const noexcept { return static_cast<std::uint8_t>(instance_count_ / 2 + 1); }

    asio::io_context& io_;
    bool open_ = false;
    std::uint32_t open_epoch_ = 0;
    client_config config_;
    std::vector<server_address> instances_;
    std::vector<server_address> sentinels_;
    server_address master_;
    std::size_t instance_count_ = 0;
    token_pool tokens_;  // one getrandom per 16 acquires
    std::vector<std::unique_ptr<connection>> conns_;  // the instances, then the watcher

    std::unique_ptr<lock_entry[]> locks_;
    std::size_t locks_max_ = 0;
    std::vector<std::uint32_t> free_;  // reserved to locks_max_: push/pop never allocate
    fixed_ring<lock_ref> dirty_;
    deadline_heap deadlines_;
    asio::steady_timer lock_timer_;
    std::int64_t lock_timer_ms_ = no_deadline_ms;
    std::uint32_t lock_timer_epoch_ = 0;
    std::unique_ptr<reply_node[]> nodes_;

    handler_slot ready_handler_;
    std::vector<std::uint32_t> ready_marks_;  // attempts_finished per instance at wait start
    bool ready_check_ = false;

    session::timing timing_;
    std::uint32_t epoch_counter_ = 0;
    // Every lock added takes the next generation, over the client's life and across close()
    // and open() (which build a new table): a handle names one lock, never a later one.
    std::uint32_t generation_counter_ = 0;
    int depth_ = 0;
    bool flush_posted_ = false;

    // Storage released by close() while a handler may still be using it; freed when the
    // outermost dispatch ends (or with the client).
    std::vector<std::unique_ptr<connection>> retired_conns_;
    std::vector<std::unique_ptr<lock_entry[]>> retired_locks_;
};

}  // namespace edgelock::async::detail
