// SPDX-License-Identifier: Apache-2.0
// The async client: opening and closing, readiness, the lock table, acquire and release, and the
// public API. Events to handlers: client_dispatch.cpp; what connections tell the locks:
// client_connections.cpp; fair locks' wake-ups: wake_ups.cpp; metrics: client_metrics.cpp.
#include <asio/post.hpp>

#include <algorithm>
#include <new>
#include <utility>

#include "client_impl.hpp"
#include "handler_memory.hpp"
#include "io_backend.hpp"
#include "edgelock/resp_writer.hpp"
#include "edgelock/scripts.hpp"
#include "edgelock/session/outcome.hpp"
#include "edgelock/entropy.hpp"

namespace edgelock::async {
namespace detail {
namespace {

constexpr std::size_t buffer_bytes_max = 16 * 1024 * 1024;
constexpr std::size_t locks_max_limit = 1 << 20;
// Linux's own bounds on TCP_KEEPIDLE / TCP_KEEPINTVL and TCP_KEEPCNT.
constexpr std::int64_t keepalive_s_max = 32'767;
constexpr std::int64_t keepalive_probes_max = 127;

}  // namespace

std::int64_t now_ms() noexcept {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// How a connection reaches instance `i`: the server itself, or the master the sentinels name. The
// connections point into where_, which stays put until the next open().
session::connection_setup client_impl::instance_setup(std::size_t i) const {
    return where_.instance_setup(i, seed_bits_ + i);
}

// One socket per instance, and in Sentinel mode the watcher (the subscriber comes later,
// with the first fair lock).
void client_impl::build_connections() {
    connections_.clear();
    subscriber_index_ = no_socket;
    if (cluster_) return build_cluster_links();
    for (std::size_t i = 0; i < instance_count_; ++i) {
        const session::connection_setup setup = instance_setup(i);
        connections_.push_back(std::make_unique<asio_connection>(
            *this, io_, static_cast<std::uint8_t>(i), connection_role::instance));
        const errc built =
            connections_.back()->init(setup, config_.locks_max * requests_per_instance_max,
                                      config_.buffer_bytes, config_.locks_max);
        EDGELOCK_ASSERT(built == errc::ok);  // validate() refused what could fail here
    }
    if (!where_.by_sentinel()) return;
    const session::connection_setup setup = where_.watch_setup(seed_bits_ + instance_count_);
    connections_.push_back(std::make_unique<asio_connection>(
        *this, io_, static_cast<std::uint8_t>(instance_count_), connection_role::watcher));
    const errc built = connections_.back()->init(setup, 0, 2 * request_bytes_max, 1);
    EDGELOCK_ASSERT(built == errc::ok);
}

client_impl::client_impl(asio::io_context& io) : io_(io) {}

client_impl::~client_impl() {
    close(false, false);
    for (auto& c : leaving_sockets_) c->stop();
}

// What only this client has, refused before anything is changed; the deployment is
// validate()'s (deployment.hpp), as in the blocking client.
std::error_code check_client_fields(const client_config& config) {
    if (config.locks_max == 0 || config.locks_max > locks_max_limit)
        return make_error_code(errc::invalid_config);
    const auto within = [](std::int64_t value, std::int64_t high) {
        return value > 0 && value <= high;
    };
    if (config.keepalive && (!within(config.keepalive_idle_s, keepalive_s_max) ||
                             !within(config.keepalive_interval_s, keepalive_s_max) ||
                             !within(config.keepalive_probes, keepalive_probes_max))) {
        return make_error_code(errc::invalid_config);
    }
    if (config.buffer_bytes < 2 * request_bytes_max || config.buffer_bytes > buffer_bytes_max) {
        return make_error_code(errc::invalid_config);
    }
    return {};
}

std::error_code client_impl::open(const client_config& config) {
    if (open_) return make_error_code(transport_errc::already_open);
    if (const std::error_code refused = check_client_fields(config)) return refused;
    validated_deployment where;
    if (const std::error_code refused = validate(config, where, tls_)) return refused;
    if (!lock_timer_) {
        if (const std::error_code refused = io_backend_refusal()) return refused;
        lock_timer_.emplace(io_);
    }
    std::uint64_t seed_bits = 0;
    if (random_seed(seed_bits) != errc::ok) return make_error_code(errc::io_error);
    seed_bits_ = seed_bits;

    if (depth_ == 0) {
        retired_sockets_.clear();
        locks_.drop_retired();
    }
    config_ = config;
    where_ = std::move(where);
    instance_count_ = where_.instance_count;
    cluster_ = where_.by_cluster();
    links_ = cluster_ ? session::cluster_masters_max : instance_count_;
    link_records_ = {};  // a new deployment: its first connections are neither again nor moved
    build_connections();

    locks_.open(config.locks_max);
    dirty_.init(config.locks_max);
    deadlines_.init(config.locks_max);
    const std::size_t nodes_wanted = cluster_ ? session::cluster_reply_nodes_max : nodes_max;
    if (!nodes_ || nodes_capacity_ < nodes_wanted) {
        nodes_.reset(new reply_node[nodes_wanted]);
        nodes_capacity_ = nodes_wanted;
    }
    ready_marks_.assign(links_, 0);
    ready_check_ = false;
    lock_timer_ms_ = no_deadline_ms;

    open_ = true;
    ++open_epoch_;
    for (auto& c : connections_) {
        if (c) c->start();
    }
    return {};
}

void client_impl::close(bool call_handlers, bool leave_lines_first) {
    if (!open_) return;
    const link_set lingering = leave_lines_first ? leave_lines() : 0;
    open_ = false;
    ++open_epoch_;
    for (std::size_t i = 0; i < connections_.size(); ++i) {
        if (!connections_[i]) continue;
        if (i < links_ && ((lingering >> i) & 1u) != 0) {
            connections_[i]->linger();
            if (!connections_[i]->stopped()) leaving_sockets_.push_back(std::move(connections_[i]));
        } else {
            connections_[i]->stop();
        }
    }
    lock_timer_epoch_ = next_epoch();
    lock_timer_->cancel();
    lock_timer_ms_ = no_deadline_ms;
    const std::error_code aborted = std::make_error_code(std::errc::operation_canceled);
    for (std::uint32_t i = 0; i < locks_.capacity(); ++i) {
        lock_entry& e = locks_[i];
        if (call_handlers) {
            if (!e.acquire_handler.empty()) note_acquire_ended(e, aborted, now_ms());
            post_completion(std::move(e.acquire_handler), aborted);
            post_completion(std::move(e.release_handler), aborted);
        }
        e.acquire_handler.reset();
        e.release_handler.reset();
        e.lost_handler.reset();
        if (e.in_use) retire_counts(e);
    }
    if (call_handlers) post_completion(std::move(ready_handler_), aborted);
    ready_handler_.reset();
    // A handler of this client may be running below us: keep its storage until it returns.
    for (auto& c : connections_) {
        if (c) retired_sockets_.push_back(std::move(c));
    }
    connections_.clear();
    subscriber_index_ = no_socket;
    if (channels_.ready()) channels_.clear();
    locks_.close();
    instance_count_ = 0;
    links_ = 0;
    cluster_ = false;
    dirty_.clear();
    if (depth_ == 0) {
        retired_sockets_.clear();
        locks_.drop_retired();
    }
}

// A fair waiter (a fair lock whose acquire runs) is cancelled as release() would cancel it,
// which queues the fair release that takes its token out of the line, and that is written
// now. Returns the links it was written to: their connections linger until answered.
link_set client_impl::leave_lines() noexcept {
    const auto fair_waiter = [](const lock_entry& e) {
        return e.in_use && e.fair && attempt_running(e.core.state());
    };
    std::array<bool, 2> waiting{};  // fair waiters of a lock, of a semaphore
    for (std::uint32_t index = 0; index < locks_.capacity(); ++index) {
        const lock_entry& e = locks_[index];
        if (fair_waiter(e)) waiting[e.core.permits() > 1 ? 1 : 0] = true;
    }
    if (!waiting[0] && !waiting[1]) return 0;
    std::array<std::size_t, links_max> in_flight_before{};
    const std::int64_t now = now_ms();
    for (std::size_t i = 0; i < links_; ++i) {
        if (!connections_[i]) continue;
        in_flight_before[i] = connections_[i]->connection().requests_in_flight();
        if (waiting[0]) load_script(*connections_[i], fair_release_script, now);
        if (waiting[1]) load_script(*connections_[i], fair_permit_release_script, now);
    }
    for (std::uint32_t index = 0; index < locks_.capacity(); ++index) {
        lock_entry& e = locks_[index];
        if (!fair_waiter(e)) continue;
        // Its events are nobody's now (close() completes its handler), and room for the
        // cancellation's event lets the core accept it.
        event ignored;
        while (e.core.poll_event(ignored)) {
        }
        step_clock clock(now);
        if (e.core.release(now) == errc::ok) write_requests(index, clock);
    }
    link_set written = 0;
    for (std::size_t i = 0; i < links_; ++i) {
        if (connections_[i] &&
            connections_[i]->connection().requests_in_flight() > in_flight_before[i])
            written |= link_set{1} << i;
    }
    return written;
}

// The core sends the fair release as EVALSHA and, on NOSCRIPT (a server that never ran it;
// the handshake loads only the plain scripts), again as EVAL. A lingering connection hands
// no reply back to the core, so the release script the waiters need (the lock's, the
// semaphore's) is loaded ahead of the releases instead. Its reply goes to no lock: the owner
// is beyond every slot.
void client_impl::load_script(asio_connection& c, const script& s, std::int64_t now) noexcept {
    if (!c.connection().accepts_requests()) return;
    resp_writer writer(c.cursor(), c.room());
    writer.array(3);
    writer.bulk("SCRIPT");
    writer.bulk("LOAD");
    writer.bulk(s.text);
    if (writer.status() != errc::ok || !c.connection().track(script_load_owner, 0, now)) return;
    (void)c.commit(writer.size());  // always true: the write happens at flush()
}

asio_connection* client_impl::connection_at(std::size_t i, std::uint32_t epoch) noexcept {
    if (i < connections_.size() && connections_[i] && connections_[i]->owns(epoch))
        return connections_[i].get();
    for (auto& c : leaving_sockets_) {
        if (c->owns(epoch)) return c.get();
    }
    return nullptr;
}

void client_impl::drop_finished_leaving() noexcept {
    const auto finished = [](const std::unique_ptr<asio_connection>& c) { return c->stopped(); };
    const auto end = std::remove_if(leaving_sockets_.begin(), leaving_sockets_.end(), finished);
    leaving_sockets_.erase(end, leaving_sockets_.end());
}

client_impl::dispatch_scope::~dispatch_scope() {
    if (owner_.depth_ == 1) owner_.finish_dispatch();
    if (--owner_.depth_ == 0) {
        owner_.retired_sockets_.clear();
        owner_.locks_.drop_retired();
        owner_.drop_finished_leaving();
    }
}

void client_impl::post_completion(handler_slot handler, std::error_code code) {
    if (handler.empty()) return;
    asio::post(io_, [handler = std::move(handler), code]() mutable { handler.complete(code); });
}

void client_impl::post_flush() {
    if (flush_posted_) return;
    flush_posted_ = true;
    asio::post(io_, [self = shared_from_this()] {
        self->flush_posted_ = false;
        dispatch_scope scope(*self);
    });
}

// ---- readiness -------------------------------------------------------------------------

void client_impl::wait_ready(handler_slot handler) {
    if (!open_) return post_completion(std::move(handler), transport_errc::not_open);
    if (!ready_handler_.empty())
        return post_completion(std::move(handler), transport_errc::operation_in_progress);
    ready_handler_ = std::move(handler);
    for (std::size_t i = 0; i < links_; ++i)
        ready_marks_[i] = connections_[i] ? connections_[i]->attempts_finished() : 0;
    ready_check_ = true;
    if (depth_ == 0) post_flush();
}

void client_impl::check_ready() {
    ready_check_ = false;
    if (ready_handler_.empty() || !open_) return;
    if (cluster_) return check_cluster_ready();
    std::size_t ready = 0;
    std::size_t trying = 0;
    std::error_code first_error;
    for (std::size_t i = 0; i < instance_count_; ++i) {
        const asio_connection& c = *connections_[i];
        if (c.ready()) {
            ++ready;
        } else if (c.attempts_finished() == ready_marks_[i]) {
            ++trying;
        } else if (!first_error) {
            first_error = c.last_error();
        }
    }
    if (ready >= quorum()) {
        ready_handler_.complete({});
    } else if (ready + trying < quorum()) {
        ready_handler_.complete(first_error ? first_error : make_error_code(errc::no_quorum));
    }
}

// ---- the lock table --------------------------------------------------------------------

std::error_code client_impl::add_lock(const lock_config& config, lock_handle& out) {
    if (!open_) return make_error_code(transport_errc::not_open);
    if (locks_.full()) return make_error_code(transport_errc::table_full);
    // The same rules the blocking client's open() applies (deployment.hpp).
    if (const errc code = check_lock(config_, config); code != errc::ok) {
        return make_error_code(code);
    }
    lock_entry& e = locks_.next_free();
    lock_config adjusted = config;
    adjusted.instances = static_cast<std::uint8_t>(instance_count_);
    if (const errc code = e.core.configure(adjusted); code != errc::ok)
        return make_error_code(code);
    e.meter.set_renew_interval(resolve(adjusted).renew_interval_ms);
    // Nothing of the slot's previous lock carries over, whatever its handlers did.
    e.acquire_handler.reset();
    e.release_handler.reset();
    e.lost_handler.reset();
    if (config.fair) build_subscriber();
    out = locks_.take();
    e.fair = config.fair;  // its waits join their channels (note_wake_interest)
    e.renewals = 0;
    e.last_cause = errc::ok;
    // A cluster lock hears its node's start when it moves there (write_cluster_requests); a
    // lock over instances, the start each connection read before it was added.
    e.place = cluster_ ? session::lock_links::in_cluster(e.core.name()) : session::lock_links{};
    for (std::size_t i = 0; i < instance_count_ && !cluster_; ++i) {
        if (!connections_[i]) continue;
        const errc told =
            e.place.hear_start(e.core, static_cast<std::uint8_t>(i), connections_[i]->connection(),
                               config_.restart_guard, now_ms());
        EDGELOCK_ASSERT(told == errc::ok);  // idle, no events: nothing to refuse
    }
    return {};
}

std::error_code client_impl::remove_lock(lock_handle handle) {
    lock_entry* e = locks_.find(handle);
    if (e == nullptr) return make_error_code(transport_errc::invalid_handle);
    const lock_state state = e->core.state();
    const bool quiet = state == lock_state::idle || state == lock_state::lost;
    if (!quiet || !e->acquire_handler.empty() || !e->release_handler.empty() || e->dirty) {
        return make_error_code(transport_errc::lock_busy);
    }
    reset_entry(*e);
    // Replies still due (a cancelled acquire's clean-up) would land in a new lock's share
    // of the connection's in-flight queue: the slot waits for them.
    if (e->requests_in_flight == 0) {
        locks_.give_back(handle.index);
    } else {
        e->draining = true;
    }
    return {};
}

void client_impl::on_request_done(std::uint32_t index) noexcept {
    if (index >= locks_.capacity()) return;
    lock_entry& e = locks_[index];
    EDGELOCK_ASSERT(e.requests_in_flight > 0);
    --e.requests_in_flight;
    if (e.requests_in_flight == 0 && e.draining) {
        e.draining = false;
        locks_.give_back(index);
    }
}

void client_impl::reset_entry(lock_entry& e) noexcept {
    const std::uint32_t index = locks_.index_of(e);
    deadlines_.set(index, no_deadline_ms);
    if (channels_.ready()) channels_.detach(index);
    for (std::size_t i = 0; i < links_; ++i) {
        if (!connections_[i]) continue;
        connections_[i]->waiters().erase_if(
            [index](const lock_ref& ref) { return ref.index == index; });
    }
    dirty_.erase_if([index](const lock_ref& ref) { return ref.index == index; });
    ++e.generation;
    e.deadline_ms = no_deadline_ms;
    e.in_use = false;
    e.fair = false;
    e.dirty = false;
    e.hold_reported = false;
    e.lost_unreported = false;
    e.waiting_mask = 0;
    e.dropped_mask = 0;
    e.deferred_count = 0;
    e.release_after_events = false;
    e.acquire_handler.reset();
    e.release_handler.reset();
    e.lost_handler.reset();
    retire_counts(e);
    e.core.~lock();
    ::new (static_cast<void*>(&e.core)) lock();
}

std::error_code client_impl::set_lost_handler(lock_handle handle, handler_slot handler) {
    lock_entry* e = locks_.find(handle);
    if (e == nullptr) return make_error_code(transport_errc::invalid_handle);
    e->lost_handler = std::move(handler);
    return {};
}

void client_impl::acquire(lock_handle handle, std::chrono::milliseconds wait,
                          handler_slot handler) {
    if (!open_) return post_completion(std::move(handler), transport_errc::not_open);
    lock_entry* e = locks_.find(handle);
    if (e == nullptr) return post_completion(std::move(handler), transport_errc::invalid_handle);
    if (!e->acquire_handler.empty()) {
        return post_completion(std::move(handler), transport_errc::operation_in_progress);
    }
    owner_token token{};
    if (tokens_.next(token) != errc::ok) return post_completion(std::move(handler), errc::io_error);
    const std::int64_t now = now_ms();
    // A hold the caller was told of is gone, and the caller has not heard it: a new hold now
    // would pass for the old one, kept all along (a reentrant acquire counts on it). Its loss,
    // when not delivered yet (deferred), is told first.
    if (e->hold_reported && e->core.state() == lock_state::lost) {
        after_call(handle.index, step_clock(now));
        return post_completion(std::move(handler), errc::expired);
    }
    if (const errc code = acquire_in_core(*e, now, wait, token); code != errc::ok) {
        // The refusal may follow events the call produced.
        after_call(handle.index, step_clock(now));
        // The core refuses while the last hold's release runs: to the caller that is an
        // operation in progress, like a running acquire, and ends by itself.
        const bool releasing =
            code == errc::invalid_state && e->core.state() == lock_state::releasing;
        const std::error_code refused = releasing
                                            ? make_error_code(transport_errc::operation_in_progress)
                                            : make_error_code(code);
        return post_completion(std::move(handler), refused);
    }
    e->acquire_handler = std::move(handler);
    e->failure.clear();
    if (e->core.state() != lock_state::held) e->meter.acquire_started(now);
    after_call(handle.index, step_clock(now));
}

// The core's acquire. Its expired means a hold the caller was told of ran out unnoticed;
// a hold the caller was never told of (its acquire ended validity_expired while the core
// lacked room to see the lease end) is none a call nests in: lost now, it starts afresh.
errc client_impl::acquire_in_core(lock_entry& e, std::int64_t now, std::chrono::milliseconds wait,
                                  const owner_token& token) {
    const errc code = e.core.acquire(now, wait.count(), token);
    if (code != errc::expired || e.hold_reported) return code;
    return e.core.acquire(now, wait.count(), token);
}

void client_impl::release(lock_handle handle, handler_slot handler, bool detached) {
    if (!open_) {
        if (!detached) post_completion(std::move(handler), transport_errc::not_open);
        return;
    }
    lock_entry* e = locks_.find(handle);
    if (e == nullptr) {
        if (!detached) post_completion(std::move(handler), transport_errc::invalid_handle);
        return;
    }
    if (!e->release_handler.empty()) {
        if (!detached) post_completion(std::move(handler), transport_errc::operation_in_progress);
        return;
    }
    const lock_state before = e->core.state();
    const std::int64_t now = now_ms();
    if (const errc code = e->core.release(now); code != errc::ok) {
        // The call may have moved the lock on before refusing (an attempt whose deadline had
        // passed ends with not_held): its events are delivered first, then this completion.
        after_call(handle.index, step_clock(now));
        if (!detached) post_completion(std::move(handler), code);
        return;
    }
    e->release_handler = std::move(handler);
    const lock_state after = e->core.state();
    // No `released` event comes when one of several holds is dropped, or when the release
    // cancelled a running acquire: the handler completes right after the pending events.
    if ((before == lock_state::held && after == lock_state::held) || attempt_running(before)) {
        e->release_after_events = true;
    }
    after_call(handle.index, step_clock(now));
}

lock_status client_impl::status(lock_handle handle) const noexcept {
    const lock_entry* e = locks_.find(handle);
    lock_status s;
    if (e == nullptr) return s;
    s.state = e->core.state();
    s.held = e->core.held(now_ms());
    s.hold_count = e->core.hold_count();
    s.fence = e->core.fence();
    s.valid_until = to_time_point(e->core.valid_until_ms());
    s.renewals = e->renewals;
    s.last_cause = e->last_cause;
    if (e->last_cause == errc::restart_guard) s.guard_until = to_time_point(e->guard_until_ms);
    return s;
}

}  // namespace detail

// ---- the public face ---------------------------------------------------------------------

client::client(asio::io_context& io) : io_(io), impl_(std::make_shared<detail::client_impl>(io)) {}

client::~client() { impl_->close(false); }

std::error_code client::open(const client_config& config) { return impl_->open(config); }

const tls_load_error& client::tls_error() const noexcept { return impl_->tls().load_error(); }

void client::close() { impl_->close(true); }

std::error_code client::add_lock(const lock_config& config, lock_handle& out) {
    return impl_->add_lock(config, out);
}

std::error_code client::remove_lock(lock_handle handle) { return impl_->remove_lock(handle); }

void client::release_detached(lock_handle handle) noexcept { impl_->release(handle, {}, true); }

lock_status client::status(lock_handle handle) const noexcept { return impl_->status(handle); }

std::size_t client::instance_count() const noexcept { return impl_->instance_count(); }

bool client::instance_connected(std::size_t instance) const noexcept {
    const detail::asio_connection* c = impl_->instance(instance);
    return c != nullptr && c->ready();
}

std::string client::instance_endpoint(std::size_t instance) const {
    const detail::asio_connection* c = impl_->instance(instance);
    return c != nullptr ? c->address() : std::string();
}

std::error_code client::instance_last_error(std::size_t instance) const noexcept {
    const detail::asio_connection* c = impl_->instance(instance);
    return c != nullptr ? c->last_error() : std::error_code();
}

void client::start_wait_ready(detail::handler_slot handler) {
    impl_->wait_ready(std::move(handler));
}

std::error_code client::store_lost_handler(lock_handle handle, detail::handler_slot handler) {
    return impl_->set_lost_handler(handle, std::move(handler));
}

void client::start_acquire(lock_handle handle, std::chrono::milliseconds wait,
                           detail::handler_slot handler) {
    impl_->acquire(handle, wait, std::move(handler));
}

void client::start_release(lock_handle handle, detail::handler_slot handler) {
    impl_->release(handle, std::move(handler), false);
}

}  // namespace edgelock::async
