// SPDX-License-Identifier: Apache-2.0
#include "edgelock/hiredis_lock.hpp"

#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <new>

#include "blocking_connection.hpp"
#include "edgelock/assert.hpp"
#include "edgelock/entropy.hpp"
#include "edgelock/keys.hpp"
#include "edgelock/limits.hpp"
#include "edgelock/lock.hpp"
#include "edgelock/session/address.hpp"
#include "edgelock/session/lock_traffic.hpp"
#include "edgelock/session/outcome.hpp"
#include "edgelock/session/pubsub.hpp"
#include "edgelock/session/reconnect.hpp"
#include "edgelock/session/subscription.hpp"

namespace edgelock::hiredis {
namespace {

// poll() never sleeps longer than this, so a stuck wait is re-checked against the clock.
constexpr std::int64_t poll_slice_ms_max = 1000;

}  // namespace

std::int64_t now_ms() noexcept {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}

// ---- the implementation --------------------------------------------------------------------
//
// Locking: `mutex` guards the core and every field below it. The connections belong to the thread
// that set `io_busy` (a user call, or the helper between user calls); that thread drops the
// mutex only around connecting and poll(), so accessors never wait for the network (and
// read `last_errors`, the connections' errors copied under the mutex).
struct lock::impl {
    lock_options options;
    session::timing timing;
    validated_deployment where;  // what open() parsed of the options: the connections point into it
    std::uint8_t instances = 0;
    tls_context tls;  // before the connections, which keep a pointer to it
    // What each instance's connection delivers, and the subscriber's, handed to this lock.
    struct instance_events final : session::connection_events {
        impl* owner = nullptr;
        std::uint8_t i = 0;
        std::size_t dropped_count = 0;  // requests of the connection that is ending
        void answered(const session::in_flight&, const reply_node* nodes, std::size_t) override {
            owner->on_answer(i, nodes[0]);
        }
        void node_started() override { owner->on_node_started(i); }
        void dropped(const session::in_flight&) override { ++dropped_count; }
        void ended(const session::connection_end& closed, bool lock_hears) override {
            const std::size_t count = dropped_count;
            dropped_count = 0;
            owner->on_connection_end(i, closed, count, lock_hears);
        }
    };
    struct subscriber_events final : session::connection_events {
        impl* owner = nullptr;
        void answered(const session::in_flight&, const reply_node* nodes,
                      std::size_t count) override {
            owner->on_subscription_answer(nodes, count);
        }
        void pushed(session::routed_reply::kind, const reply_node* nodes,
                    std::size_t count) override {
            owner->on_wake_message(nodes, count);
        }
        void ended(const session::connection_end&, bool) override { owner->on_subscriber_end(); }
    };
    std::array<instance_events, instances_max> instance_hooks{};
    subscriber_events subscriber_hooks;
    std::array<blocking_connection, instances_max> connections;
    std::array<std::error_code, instances_max> last_errors{};
    // The text of each instance's last error reply, while last_errors holds error_reply.
    std::array<session::error_text, instances_max> last_error_texts{};
    // Fair waiting: the connection to the lock's channel (set up only when fair), made the
    // first time an acquire() waits and kept until the lock is destroyed, subscribed only
    // while an acquire() waits (see "fair waiting" below).
    bool fair = false;
    blocking_connection subscriber;
    session::subscription sub;  // the channel's, on the subscriber connection
    bool wake_wanted = false;   // an acquire() waits: the channel should be subscribed
    std::array<char, key_bytes_max> channel_bytes{};
    std::size_t channel_size = 0;

    mutable std::mutex mutex;
    std::condition_variable changed;
    edgelock::lock core;
    bool io_busy = false;
    int users_waiting = 0;
    bool stopping = false;
    int wake_fd = -1;
    // cancel(): a flag and an eventfd, both safe to touch from a signal handler. The flag stays
    // set until an acquire() takes it, so a cancel that comes between two calls is not lost.
    std::atomic<bool> cancel_pending{false};
    int cancel_fd = -1;
    bool cancellable = false;  // an acquire()'s decision loop runs: cancel_pending ends it
    pthread_t helper{};
    bool helper_started = false;
    // on_lost runs on a thread of its own, so a slow callback never holds up the renewals
    // of the next hold (the helper's I/O).
    pthread_t notifier{};
    bool notifier_started = false;
    std::condition_variable notice_changed;

    // What the events said. The outcomes are reset by each call that waits for one, so a
    // call can never report another call's outcome.
    struct acquire_outcome {
        bool decided = false;
        std::error_code code;
    };
    struct release_outcome {
        bool decided = false;
        event released;
    };
    acquire_outcome acquired;
    hold last_hold;
    release_outcome released;
    bool lost_flag = false;
    errc lost_code = errc::ok;
    // Holds are numbered: a non-reentrant acquire() and the release() that ends a hold each
    // move to the next number, so a loss names its hold, and a notice whose hold has ended
    // (released, or replaced by a new acquire()) is stale.
    std::uint64_t hold_serial = 0;
    struct lost_notice {
        bool due = false;
        std::uint64_t hold_serial = 0;
        errc code = errc::ok;  // captured at the loss: a later acquire() resets lost_code
    };
    lost_notice notice;
    std::error_code call_error;  // the latest instance error during the running call
    // on_event: gathered under the mutex, handed over without it by the I/O thread.
    std::array<lock_event, lock_events_pending_max> pending_events{};
    std::size_t pending_count = 0;
    std::uint64_t events_dropped = 0;
    std::uint16_t attempts_reported = 0;  // the running acquire()'s attempts already told
    std::array<bool, instances_max> connection_up{};  // told `connected`, not yet `disconnected`
    std::array<node_start, instances_max> starts{};
    std::array<bool, instances_max> start_known{};
    std::int64_t guard_until_ms = 0;  // the last failed acquire's restart guard end
    // Metrics (session/lock_metrics.hpp), and the instants the events' elapsed_ms start at.
    session::lock_meter meter;
    std::array<bool, instances_max> ever_connected{};
    std::array<session::node_address, instances_max> last_node{};  // where each last connected

    ~impl();
    [[nodiscard]] std::error_code start();

    void begin_io(std::unique_lock<std::mutex>& held, bool user);
    void end_io();
    void wake_helper();
    void helper_loop();
    void notifier_loop();
    [[nodiscard]] std::error_code start_notifier();
    void stop_threads();

    template <typename Done>
    bool run_io(std::unique_lock<std::mutex>& held, Done done, std::int64_t hard_deadline_ms,
                bool background);
    void send_requests(std::unique_lock<std::mutex>& held);
    void write_requests(std::uint8_t i);
    void read_replies(std::uint8_t i);
    void on_answer(std::uint8_t i, const reply_node& node);
    void on_node_started(std::uint8_t i);
    void on_connection_end(std::uint8_t i, const session::connection_end& ended,
                           std::size_t dropped, bool lock_hears);
    void note_unsent_renewal(std::uint8_t i);
    void note_renewal_failed(std::uint8_t i, std::error_code code);
    void on_subscription_answer(const reply_node* nodes, std::size_t count);
    void on_wake_message(const reply_node* nodes, std::size_t count);
    void on_subscriber_end();
    void check_timeouts();
    std::string_view channel() const { return {channel_bytes.data(), channel_size}; }
    bool listening(bool background) const;
    bool must_wait() const;
    void tend_subscriber(std::unique_lock<std::mutex>& held);
    void read_wake_ups();
    void end_subscriber_if_closing();
    void drive_subscription();
    void unsubscribe();
    bool reads_subscriber(bool listen) const { return listen || (fair && subscriber.busy()); }
    void wake_core(std::string_view message);
    void fail_unsent(std::uint8_t i);
    void note_error(std::uint8_t i, const failure& why, const session::error_text* text = nullptr);
    [[nodiscard]] std::error_code configure(const lock_options& given);
    [[nodiscard]] std::error_code set_up_subscriber(session::connection_setup setup);
    void drain_events();
    void note_released(const event& e);
    void note_attempt(const event* ended);
    void emit(lock_event_kind kind, std::size_t instance, std::error_code code,
              std::int64_t valid_until_ms);
    void note_connected(std::uint8_t i);
    void note_disconnected(std::uint8_t i, std::error_code why, bool renewal_dropped);
    std::size_t take_events(std::array<lock_event, lock_events_pending_max>& out);
    void call_on_event(const std::array<lock_event, lock_events_pending_max>& events,
                       std::size_t count) const;
    void deliver_events(std::unique_lock<std::mutex>& held);
    template <typename Done>
    bool run_rounds(std::unique_lock<std::mutex>& held, Done done, std::int64_t hard_deadline_ms,
                    bool background);
    // What one round polls: the busy instances (owner maps each entry to its instance), then the
    // helper's wake-up or a cancel, then the subscriber. Set up by fill_poll_set, apart from
    // run_rounds, so that a round reads as wait-then-read and each stays short enough to follow.
    struct poll_set {
        std::array<pollfd, instances_max + 2> fds{};
        std::array<std::uint8_t, instances_max> owner{};
        nfds_t count = 0;
        nfds_t instance_fds = 0;   // fds[0, instance_fds) are the instances'
        nfds_t subscriber_fd = 0;  // the subscriber's entry, when it has one (< count)
        bool read_subscriber = false;
    };
    std::int64_t fill_poll_set(poll_set& set, bool background, std::int64_t now,
                               std::int64_t wake) const;
    bool quiet(std::int64_t now) const;
    std::int64_t background_wake(std::int64_t now) const;
    void reset_backoff();
    [[nodiscard]] std::error_code abandon_acquire();
    void take_cancel();
    void finish_cleanups();
};

lock::impl::~impl() {
    if (wake_fd >= 0) ::close(wake_fd);
    if (cancel_fd >= 0) ::close(cancel_fd);
}

std::error_code lock::impl::start() {
    static_assert(std::atomic<bool>::is_always_lock_free, "cancel() must be async-signal-safe");
    wake_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    cancel_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (wake_fd < 0 || cancel_fd < 0) return make_error_code(transport_errc::thread_failed);
    const int rc = pthread_create(
        &helper, nullptr,
        [](void* self) -> void* {
            static_cast<impl*>(self)->helper_loop();
            return nullptr;
        },
        this);
    if (rc != 0) return make_error_code(transport_errc::thread_failed);
    helper_started = true;
    if (const std::error_code ec = start_notifier()) {
        stop_threads();
        return ec;
    }
    return {};
}

// Only a lock with an on_lost callback has the thread that calls it.
std::error_code lock::impl::start_notifier() {
    if (!options.on_lost) return {};
    const int rc = pthread_create(
        &notifier, nullptr,
        [](void* self) -> void* {
            static_cast<impl*>(self)->notifier_loop();
            return nullptr;
        },
        this);
    if (rc != 0) return make_error_code(transport_errc::thread_failed);
    notifier_started = true;
    return {};
}

void lock::impl::stop_threads() {
    {
        std::lock_guard<std::mutex> guard(mutex);
        stopping = true;
        wake_helper();
        notice_changed.notify_all();
    }
    if (helper_started) pthread_join(helper, nullptr);
    if (notifier_started) pthread_join(notifier, nullptr);
    helper_started = false;
    notifier_started = false;
}

void lock::impl::wake_helper() {
    const std::uint64_t one = 1;
    [[maybe_unused]] const ssize_t ignored = ::write(wake_fd, &one, sizeof one);
    changed.notify_all();
}

void lock::impl::begin_io(std::unique_lock<std::mutex>& held, bool user) {
    if (user) {
        ++users_waiting;
        wake_helper();
    }
    changed.wait(held, [this] { return !io_busy; });
    if (user) --users_waiting;
    io_busy = true;
}

void lock::impl::end_io() {
    io_busy = false;
    changed.notify_all();
}

void lock::impl::reset_backoff() {
    for (blocking_connection& l : connections) l.connection().retry_now();
}

// The helper: renewals and I/O left over by user calls (late replies, cleanup after a failed
// acquire).
void lock::impl::helper_loop() {
    std::unique_lock<std::mutex> held(mutex);
    while (!stopping) {
        if (io_busy || users_waiting > 0) {
            changed.wait(held);
            continue;
        }
        const std::int64_t now = now_ms();
        const std::int64_t wake = background_wake(now);
        if (wake <= now) {
            io_busy = true;
            run_io(
                held, [this] { return quiet(now_ms()); }, no_deadline_ms, true);
            end_io();
            continue;
        }
        if (wake == no_deadline_ms) {
            changed.wait(held);
        } else {
            changed.wait_for(held, std::chrono::milliseconds(wake - now));
        }
    }
}

// The notifier: calls on_lost for the latest loss, with the code captured when it happened,
// unless its hold has ended meanwhile. The check and the start of the call are one step under
// the mutex, so a release() that returned before it is never followed by a call for its hold.
// Only the latest notice is kept: an older one not yet delivered is stale by then (a hold is
// lost once, and the next loss needs a new hold).
void lock::impl::notifier_loop() {
    std::unique_lock<std::mutex> held(mutex);
    for (;;) {
        notice_changed.wait(held, [this] { return stopping || notice.due; });
        if (stopping) return;
        const lost_notice due = notice;
        notice.due = false;
        if (due.hold_serial != hold_serial) continue;
        held.unlock();
        options.on_lost(make_error_code(due.code));
        held.lock();
    }
}

// Nothing in flight, and nothing queued that could be sent now.
bool lock::impl::quiet(std::int64_t now) const {
    for (std::uint8_t i = 0; i < instances; ++i) {
        const blocking_connection& l = connections[i];
        if (l.busy()) return false;
        if (core.has_request(i) &&
            (l.connection().accepts_requests() || l.connection().may_start(now)))
            return false;
    }
    return !(fair && subscriber.busy());  // an UNSUBSCRIBE's confirmation is read, not left
}

std::int64_t lock::impl::background_wake(std::int64_t now) const {
    std::int64_t wake = core.next_deadline_ms();
    for (std::uint8_t i = 0; i < instances; ++i) {
        if (connections[i].busy()) return now;
        wake =
            std::min(wake, session::wake_ms(connections[i].connection(), core.has_request(i), now));
    }
    return fair && subscriber.busy() ? now : wake;
}

// The I/O rounds, then the events they gathered for on_event, handed over while this thread
// still owns the I/O (io_busy), so no other thread's events can come between.
template <typename Done>
bool lock::impl::run_io(std::unique_lock<std::mutex>& held, Done done,
                        std::int64_t hard_deadline_ms, bool background) {
    const bool finished = run_rounds(held, done, hard_deadline_ms, background);
    deliver_events(held);
    return finished;
}

// Timers, writes, connects, reads and timeouts, round after round, until done() or the hard
// deadline (or, in the background, until a user call wants the connections). Returns done().
template <typename Done>
bool lock::impl::run_rounds(std::unique_lock<std::mutex>& held, Done done,
                            std::int64_t hard_deadline_ms, bool background) {
    for (;;) {
        drain_events();  // the core refuses input while its event queue lacks room
        const errc timed = core.on_timer(now_ms());
        EDGELOCK_ASSERT(timed == errc::ok);
        drain_events();
        if (done()) return true;
        if (cancellable && cancel_pending.load()) {
            take_cancel();
            if (done()) return true;
        }
        if (now_ms() >= hard_deadline_ms) return false;
        if (background && (users_waiting > 0 || stopping)) return false;

        send_requests(held);
        drain_events();
        if (done()) return true;
        if (listening(background)) tend_subscriber(held);

        const std::int64_t now = now_ms();
        poll_set set;
        const std::int64_t wake = fill_poll_set(
            set, background, now, std::min(core.next_deadline_ms(), hard_deadline_ms));
        // Nothing can happen any more.
        if (set.instance_fds == 0 && wake == no_deadline_ms) return false;
        const std::int64_t timeout = std::clamp<std::int64_t>(wake - now, 0, poll_slice_ms_max);

        deliver_events(held);  // before the wait, so what happened is told promptly
        held.unlock();
        const int ready = ::poll(set.fds.data(), set.count, static_cast<int>(timeout));
        held.lock();

        for (nfds_t k = 0; k < set.instance_fds; ++k) {
            const std::uint8_t i = set.owner[k];
            if (set.fds[k].revents != 0 || connections[i].has_buffered()) read_replies(i);
        }
        const pollfd& wake_or_cancel = set.fds[set.instance_fds];
        if (ready > 0 && (background || cancellable) && wake_or_cancel.revents != 0) {
            std::uint64_t value = 0;
            [[maybe_unused]] const ssize_t ignored =
                ::read(background ? wake_fd : cancel_fd, &value, sizeof value);
        }
        const bool subscriber_ready =
            set.subscriber_fd < set.count && set.fds[set.subscriber_fd].revents != 0;
        if (set.read_subscriber && (subscriber_ready || subscriber.has_buffered())) {
            read_wake_ups();
        }
        check_timeouts();
    }
}

// Fills set for one round and returns when the round must wake up at the latest: wake, made
// earlier by the connections' own wake-ups and by bytes already read that no poll can see.
std::int64_t lock::impl::fill_poll_set(poll_set& set, bool background, std::int64_t now,
                                       std::int64_t wake) const {
    for (std::uint8_t i = 0; i < instances; ++i) {
        const blocking_connection& l = connections[i];
        if (l.busy()) {
            set.owner[set.count] = i;
            set.fds[set.count++] = pollfd{l.fd(), l.events(), 0};
            if (l.has_buffered()) wake = now;  // TLS bytes already read: no poll can see them
        }
        // Connections are made on demand: an idle connection matters only with requests for it.
        wake = std::min(wake, session::wake_ms(l.connection(), core.has_request(i), now));
    }
    set.instance_fds = set.count;
    if (background) set.fds[set.count++] = pollfd{wake_fd, POLLIN, 0};
    if (cancellable) set.fds[set.count++] = pollfd{cancel_fd, POLLIN, 0};
    // Fair waiting: the wait until the core's next re-check ends early on a wake-up.
    const bool listen = listening(background);
    set.read_subscriber = reads_subscriber(listen);
    set.subscriber_fd = set.count;
    if (set.read_subscriber) {
        if (subscriber.fd() >= 0)
            set.fds[set.count++] = pollfd{subscriber.fd(), subscriber.events(), 0};
        if (subscriber.has_buffered()) wake = now;
        wake =
            std::min(wake, session::wake_ms(subscriber.connection(), listen && must_wait(), now));
    }
    return wake;
}

// Writes every queued request: first on the connections already open (so they are on their
// way before any slow connect), then on the ones that must be made.
void lock::impl::send_requests(std::unique_lock<std::mutex>& held) {
    for (int pass = 0; pass < 2; ++pass) {
        for (std::uint8_t i = 0; i < instances; ++i) {
            if (!core.has_request(i)) continue;
            blocking_connection& l = connections[i];
            // An idle connection the server closed (a restart) reads as ready: make it again
            // rather than lose the request on it. Its end is told to the core, whose WAITs
            // confirm only what their own connection wrote.
            if (l.closed_while_idle(now_ms())) {
                l.settle(now_ms(), false);
                if (!core.has_request(i)) continue;
            }
            if (l.connection().state() == session::connection_state::idle) {
                if (pass == 0) continue;
                // Connections are made on demand (a sentinel that cannot be reached is
                // followed at once by the next one). Within the reconnect delay the instance
                // fails at once, with its last error: nothing waits in its queue to be sent
                // much later.
                l.settle(now_ms(), true, &held);
                if (session::unreachable_now(l.connection(), now_ms())) {
                    fail_unsent(i);
                    continue;
                }
            }
            write_requests(i);  // asking a sentinel: they wait for the master it names
        }
    }
}

namespace {

// The blocking socket as session::write_requests' sink: each request is sent before the next
// is encoded.
struct socket_sink {
    blocking_connection& to;
    std::int64_t now;
    std::array<char, request_bytes_max> buffer{};

    char* cursor() noexcept { return buffer.data(); }
    std::size_t room() const noexcept { return buffer.size(); }
    bool commit(std::size_t size) { return to.write_all(buffer.data(), size, now); }
};

}  // namespace

void lock::impl::write_requests(std::uint8_t i) {
    blocking_connection& l = connections[i];
    socket_sink sink{l, now_ms()};
    const session::write_report sent =
        session::write_requests(core, i, l.connection(), 0, 0, sink.now, sink);
    if (sent.stop == session::write_stop::failed) l.settle(now_ms(), false);
}

void lock::impl::read_replies(std::uint8_t i) {
    blocking_connection& l = connections[i];
    l.receive(now_ms());
    note_connected(i);
    if (l.connection().state() == session::connection_state::closing) l.settle(now_ms(), false);
}

void lock::impl::on_answer(std::uint8_t i, const reply_node& node) {
    note_connected(i);
    const bool renewing = core.state() == lock_state::held;
    failure refused;
    session::error_text text;
    drain_events();  // the core refuses a reply while its event queue lacks room
    const errc code = session::deliver_answer(core, i, node, now_ms(), refused, &text);
    // error_reply and unexpected_reply are kept in `refused`; nothing else refuses a reply.
    EDGELOCK_ASSERT(code != errc::events_pending);
    if (refused) note_error(i, refused, &text);
    if (refused && renewing) note_renewal_failed(i, last_errors[i]);
    drain_events();
}

// The restart guard: the core hears the node's start before any request is written on the
// new connection (the connection holds them until now).
void lock::impl::on_node_started(std::uint8_t i) {
    const session::connection& connection = connections[i].connection();
    note_connected(i);
    starts[i] = connection.started();
    start_known[i] = true;
    if (session::warns_of_eviction(options.eviction, connection) && options.on_warning) {
        options.on_warning(i, session::eviction_warning(connection.node()).view());
    }
    drain_events();  // the core refuses input while its event queue lacks room
    const errc told =
        session::tell_node_started(core, i, connection, options.restart_guard, now_ms());
    EDGELOCK_ASSERT(told == errc::ok);
    drain_events();
}

void lock::impl::check_timeouts() {
    const std::int64_t now = now_ms();
    for (std::uint8_t i = 0; i < instances; ++i) {
        blocking_connection& l = connections[i];
        if (!l.busy()) continue;
        if (l.timed_out(now)) l.settle(now, false);
    }
    if (fair && subscriber.busy() && subscriber.timed_out(now)) subscriber.settle(now, false);
}

// ---- fair waiting: the subscriber connection -----------------------------------------------
//
// Nothing on it can fail an acquire(): a connection that fails is made again after the
// reconnect delay, and meanwhile the core's re-checks (every recheck_ms) stand in for the
// wake-ups it would have brought.

// A user's acquire() is waiting fairly (the helper's background I/O never listens).
bool lock::impl::listening(bool background) const {
    return fair && !background && core.wants_wake_ups();
}

// The acquire has to wait: its attempt was refused (nothing is owed on the command connection,
// nothing queued). Only then is the subscriber made, so an uncontended acquire never makes it.
bool lock::impl::must_wait() const { return !connections[0].busy() && !core.has_request(0); }

// Connects the subscriber once the acquire has to wait (and the reconnect delay allows).
// A connection kept from an earlier wait is ready already: it subscribes again at once.
void lock::impl::tend_subscriber(std::unique_lock<std::mutex>& held) {
    if (!must_wait()) return;
    wake_wanted = true;
    drive_subscription();
    subscriber.settle(now_ms(), true, &held);
}

// Hands the core each wake-up: an empty one when the subscription is confirmed (whatever was
// published before it is lost), the payload of each current message on the channel
// (session::subscription: one published before the confirmation was meant for an earlier
// wait). A refused SUBSCRIBE (an ACL) wakes nothing: the core's re-checks stand in.
void lock::impl::read_wake_ups() {
    subscriber.receive(now_ms());
    drive_subscription();
    end_subscriber_if_closing();
}

void lock::impl::on_subscription_answer(const reply_node* nodes, std::size_t count) {
    const session::subscription::answer answered = sub.on_answer(channel(), nodes, count);
    if (answered.violation) {
        subscriber.connection().close(failure::of(errc::unexpected_reply), now_ms());
        return;
    }
    if (answered.subscribed && wake_wanted) wake_core({});
}

void lock::impl::on_wake_message(const reply_node* nodes, std::size_t count) {
    std::string_view payload;
    if (sub.message_for(channel(), nodes, count, payload) && wake_wanted) wake_core(payload);
}

void lock::impl::wake_core(std::string_view message) {
    const std::array<char, token_hex_bytes> ours = core.token_hex();
    // A release naming us: the handover starts (an empty "look now" is no release).
    if (message == std::string_view(ours.data(), ours.size())) meter.woken(now_ms());
    drain_events();
    [[maybe_unused]] const errc told = core.on_wake(now_ms(), message);
    drain_events();
}

// Writes the SUBSCRIBE or UNSUBSCRIBE the subscription policy asks for now, on a ready
// connection (one in flight at most; its confirmation decides again).
void lock::impl::drive_subscription() {
    if (!fair || !subscriber.connection().ready()) return;
    const session::subscription::command due = sub.due(wake_wanted);
    if (due == session::subscription::command::none) return;
    std::array<char, session::subscription_request_bytes_max> command{};
    const bool subscribe = due == session::subscription::command::subscribe;
    const std::size_t size =
        session::write_subscription(subscribe, channel(), command.data(), command.size());
    EDGELOCK_ASSERT(size > 0);
    if (!subscriber.send(command.data(), size, 0, now_ms())) return end_subscriber_if_closing();
    sub.sent(due);
}

// The wait is over: Redis stops sending the channel's messages to us, so nothing piles up in
// its output buffer while the lock is held or idle. The connection stays for the next wait,
// which subscribes again (one round trip on an open connection, and its confirmation is the
// wake-up that makes the first attempt). The confirmation is read by whichever thread does the
// lock's I/O next (the helper at once), within the command timeout like any reply.
void lock::impl::unsubscribe() {
    wake_wanted = false;
    drive_subscription();
}

void lock::impl::end_subscriber_if_closing() {
    if (subscriber.connection().state() == session::connection_state::closing)
        subscriber.settle(now_ms(), false);
}

// Every subscription ended with its connection (Redis forgets them too).
void lock::impl::on_subscriber_end() { sub.on_connection_lost(); }

// Instance i's connection (or an attempt at one) ended: its requests in flight are given up,
// and the core hears of it unless the connection only moved on (session::lock_hears_close), as
// session::hear_close tells it: queued requests too when the instance cannot be reached now.
void lock::impl::on_connection_end(std::uint8_t i, const session::connection_end& ended,
                                   std::size_t dropped, bool lock_hears) {
    const failure why = ended.why ? connections[i].connection().last_error() : failure{};
    if (why) note_error(i, why);
    if (!lock_hears && !connection_up[i]) return;  // a sentinel passed over: the round goes on
    note_disconnected(i, to_error_code(why), dropped > 0);
    if (!lock_hears) return;
    const bool unreachable = session::unreachable_now(connections[i].connection(), now_ms());
    // One failure per connection end: one that dropped requests was counted just above.
    if (unreachable && core.has_request(i) && dropped == 0) note_unsent_renewal(i);
    drain_events();  // the core refuses input while its event queue lacks room
    const errc heard = session::hear_close(core, i, connections[i].connection(), now_ms());
    EDGELOCK_ASSERT(heard == errc::ok);
    drain_events();
}

// Instance i cannot be reached: its queued requests fail now instead of at the round's
// deadline (session::give_up_unsent).
void lock::impl::fail_unsent(std::uint8_t i) {
    if (!core.has_request(i)) return;  // the connection's end gave them up already
    note_unsent_renewal(i);
    const errc given_up = session::give_up_unsent(core, i, now_ms());
    EDGELOCK_ASSERT(given_up == errc::ok);
    drain_events();
}

// A renewal that waits for an instance that cannot be reached fails there.
void lock::impl::note_unsent_renewal(std::uint8_t i) {
    if (core.state() != lock_state::held) return;
    note_renewal_failed(i, last_errors[i]);
}

void lock::impl::note_renewal_failed(std::uint8_t i, std::error_code code) {
    meter.renewal_failed();
    emit(lock_event_kind::renewal_failed, i, code, core.valid_until_ms());
}

void lock::impl::note_error(std::uint8_t i, const failure& why, const session::error_text* text) {
    last_errors[i] = to_error_code(why);
    if (text != nullptr) {
        last_error_texts[i] = *text;
    } else {
        last_error_texts[i].clear();  // the text went with the error reply it came with
    }
    call_error = last_errors[i];
}

// The last hold ended by release(): counted and told as release() will report it.
void lock::impl::note_released(const event& e) {
    released = {true, e};
    const failure why = session::release_result(e, instances, to_failure(call_error));
    meter.released(why);
    emit(lock_event_kind::released, lock_event::any_instance, to_error_code(why), 0);
}

void lock::impl::drain_events() {
    event e;
    while (core.poll_event(e)) {
        switch (e.type) {
            case event_type::acquired:
                note_attempt(&e);
                acquired = {true, {}};
                last_hold.fence = e.fence;
                last_hold.valid_until_ms = e.valid_until_ms;
                lost_flag = false;
                lost_code = errc::ok;
                break;
            case event_type::acquire_failed:
                note_attempt(&e);
                guard_until_ms = e.guard_until_ms;
                acquired = {true, to_error_code(session::acquire_result(e, instances,
                                                                        to_failure(call_error)))};
                break;
            case event_type::renewed:
                meter.renewed(e.valid_until_ms, now_ms());
                emit(lock_event_kind::renewed, lock_event::any_instance, {}, e.valid_until_ms);
                break;
            case event_type::lost:
                meter.lost(e.code);
                emit(lock_event_kind::lost, lock_event::any_instance, make_error_code(e.code),
                     core.valid_until_ms());
                lost_flag = true;
                lost_code = e.code;
                notice = {true, hold_serial, e.code};
                notice_changed.notify_all();
                break;
            case event_type::released: note_released(e); break;
        }
    }
    note_attempt(nullptr);
}

// An attempt ended: with an event (the acquire's verdict), or by a move to backing_off,
// which has none. Each is told once: a verdict after the backoff (the wait ran out, a
// cancel) ends no attempt of its own.
void lock::impl::note_attempt(const event* ended) {
    if (!options.on_event || core.attempts() == attempts_reported) return;
    if (ended == nullptr && core.state() != lock_state::backing_off) return;
    attempts_reported = core.attempts();
    if (ended != nullptr && ended->type == event_type::acquired) {
        return emit(lock_event_kind::attempt, lock_event::any_instance, {}, ended->valid_until_ms);
    }
    event failed;
    failed.type = event_type::acquire_failed;
    failed.code = ended != nullptr ? ended->code : core.last_cause();
    failed.cause = ended != nullptr ? ended->cause : core.last_cause();
    const failure why = session::acquire_result(failed, instances, to_failure(call_error));
    emit(lock_event_kind::attempt, lock_event::any_instance, to_error_code(why), 0);
}

void lock::impl::emit(lock_event_kind kind, std::size_t instance, std::error_code code,
                      std::int64_t valid_until_ms) {
    if (!options.on_event) return;  // no observer: nothing gathered
    if (pending_count == pending_events.size()) {
        ++events_dropped;
        return;
    }
    const std::int64_t now = now_ms();
    std::int64_t elapsed_ms = 0;
    if (kind == lock_event_kind::attempt) elapsed_ms = meter.since_acquire_started_ms(now);
    if (kind == lock_event_kind::renewed || kind == lock_event_kind::lost ||
        kind == lock_event_kind::released) {
        elapsed_ms = meter.held_for_ms(now);
    }
    pending_events[pending_count++] =
        lock_event{kind, instance, code, valid_until_ms, elapsed_ms, options.name};
}

void lock::impl::note_connected(std::uint8_t i) {
    if (connection_up[i] || !connections[i].connection().ready()) return;
    connection_up[i] = true;
    const session::node_address& reached = connections[i].connection().address();
    meter.connected(ever_connected[i], ever_connected[i] && !last_node[i].same_node(reached));
    ever_connected[i] = true;
    last_node[i] = reached;
    emit(lock_event_kind::connected, i, {}, 0);
}

// A connection that ended, or one that could not be made (never up: `why` says so).
void lock::impl::note_disconnected(std::uint8_t i, std::error_code why, bool renewal_dropped) {
    const bool was_up = connection_up[i];
    connection_up[i] = false;
    if (!was_up && !why) return;  // a sentinel's answer: the connection only moved on
    emit(lock_event_kind::disconnected, i, why, 0);
    if (renewal_dropped && core.state() == lock_state::held) {
        note_renewal_failed(i, why ? why : make_error_code(transport_errc::connection_closed));
    }
}

std::size_t lock::impl::take_events(std::array<lock_event, lock_events_pending_max>& out) {
    const std::size_t count = pending_count;
    std::copy_n(pending_events.begin(), count, out.begin());
    pending_count = 0;
    return count;
}

// Without the mutex: the observer may take as long as it must (it holds up only this lock's
// I/O, which is this thread's), and accessors on other threads go on meanwhile.
void lock::impl::call_on_event(const std::array<lock_event, lock_events_pending_max>& events,
                               std::size_t count) const {
    for (std::size_t k = 0; k < count; ++k) options.on_event(events[k]);
}

void lock::impl::deliver_events(std::unique_lock<std::mutex>& held) {
    if (pending_count == 0) return;
    std::array<lock_event, lock_events_pending_max> due;
    const std::size_t count = take_events(due);
    held.unlock();
    call_on_event(due, count);
    held.lock();
}

// ---- the public object -------------------------------------------------------------------

lock::lock() noexcept = default;

lock::~lock() {
    if (!impl_) return;
    {
        std::unique_lock<std::mutex> held(impl_->mutex);
        const bool holding = impl_->core.state() == lock_state::held;
        const std::uint16_t holds = impl_->core.hold_count();
        held.unlock();
        if (holding) {
            // A destructor cannot report: a release that fails leaves the key to its TTL.
            for (std::uint16_t n = 0; n < holds; ++n) (void)release();
        }
    }
    impl_->finish_cleanups();
    impl_->stop_threads();
}

// Before the connections close: a cleanup still queued or unanswered (a fair waiter's leave
// of the line after an acquire() whose own cleanup ran out of time, a release after a loss)
// is taken as far as the connections allow within the command timeout, rather than dropped
// with them: a fair waiter's entry would otherwise hold up the waiters behind it until it
// expires (queue_entry_ttl_ms).
void lock::impl::finish_cleanups() {
    std::unique_lock<std::mutex> held(mutex);
    begin_io(held, true);
    reset_backoff();
    const std::int64_t until = now_ms() + timing.command_timeout_ms;
    run_io(
        held, [this] { return quiet(now_ms()); }, until, false);
    end_io();
}

namespace {

lock_config core_config_of(const lock_options& options, std::uint8_t instances) {
    lock_config config;
    config.name = options.name;
    config.ttl_ms = options.ttl_ms;
    config.instances = instances;
    config.fencing = options.fencing;
    config.watchdog = options.watchdog;
    config.replicas_to_wait = options.replicas_to_wait;
    config.replica_wait_ms = options.replica_wait_ms;
    config.renew_interval_ms = options.renew_interval_ms;
    config.drift_ms = options.drift_ms;
    config.attempt_timeout_ms = options.attempt_timeout_ms;
    config.retry_delay_ms_min = options.retry_delay_ms_min;
    config.retry_delay_ms_max = options.retry_delay_ms_max;
    config.restart_guard_ms = options.restart_guard ? options.restart_guard_ms : 0;
    config.fair = options.fair;
    config.recheck_ms = options.recheck_ms;
    config.queue_entry_ttl_ms = options.queue_entry_ttl_ms;
    return config;
}

}  // namespace

// Addresses, the core and one connection per instance. The connections point into `where`, which
// stays put for the object's life. The checks and their order are the asio client's: the deployment
// (validate()), then the lock against it (check_lock()), then the core's.
std::error_code lock::impl::configure(const lock_options& given) {
    options = given;
    if (const std::error_code ec = validate(options, where, tls)) return ec;
    timing = where.times;
    instances = static_cast<std::uint8_t>(where.instance_count);
    const lock_config config = core_config_of(options, instances);
    if (const errc code = check_lock(options, config); code != errc::ok) {
        return make_error_code(code);
    }
    if (const errc code = core.configure(config); code != errc::ok) return make_error_code(code);
    meter.set_renew_interval(resolve(config).renew_interval_ms);
    std::uint64_t seed = 0;
    if (random_seed(seed) != errc::ok) return make_error_code(errc::io_error);
    for (std::uint8_t i = 0; i < instances; ++i) {
        instance_hooks[i].owner = this;
        instance_hooks[i].i = i;
        if (connections[i].setup(where.instance_setup(i, seed + i), instance_hooks[i], &tls) !=
            errc::ok) {
            return make_error_code(errc::invalid_config);
        }
    }
    if (!options.fair) return {};
    return set_up_subscriber(where.instance_setup(0, seed + instances));
}

// The subscriber reaches the server (or Sentinel's master) as the command connection does:
// the same address, credentials, db, TLS and timing; it reads no node facts.
std::error_code lock::impl::set_up_subscriber(session::connection_setup setup) {
    channel_size = write_companion_key(options.name, companion::queue, channel_bytes.data(),
                                       channel_bytes.size());
    if (channel_size == 0) return make_error_code(errc::invalid_name);
    fair = true;
    setup.kind = session::connection_kind::subscriber;
    setup.read_node = false;
    setup.refuse_evicting = false;
    subscriber_hooks.owner = this;
    if (subscriber.setup(setup, subscriber_hooks, &tls) != errc::ok)
        return make_error_code(errc::invalid_config);
    return {};
}

std::error_code lock::open(const lock_options& options) noexcept {
    if (impl_) return make_error_code(errc::invalid_config);
    tls_error_ = tls_load_error{};
    std::unique_ptr<impl> created(new (std::nothrow) impl);
    if (!created) return make_error_code(transport_errc::out_of_memory);
    if (const std::error_code ec = created->configure(options)) {
        tls_error_ = created->tls.load_error();
        return ec;
    }
    if (const std::error_code ec = created->start()) return ec;
    impl_ = std::move(created);
    return {};
}

std::error_code lock::try_acquire(hold* out) noexcept {
    return acquire(std::chrono::milliseconds(0), out);
}

std::error_code lock::acquire(std::chrono::milliseconds wait, hold* out) noexcept {
    if (!impl_) return make_error_code(errc::invalid_state);
    impl& self = *impl_;
    owner_token token{};
    if (random_token(token) != errc::ok) return make_error_code(errc::io_error);

    std::unique_lock<std::mutex> held(self.mutex);
    self.begin_io(held, true);
    self.reset_backoff();
    self.call_error = {};
    self.acquired = {};
    const std::int64_t started_ms = now_ms();
    const errc code = self.core.acquire(started_ms, static_cast<std::int64_t>(wait.count()), token);
    if (code != errc::ok) {
        self.end_io();
        return make_error_code(code);
    }
    // Read after the call: a lease that ran out unnoticed (the helper had not run yet) is
    // ended by the call itself, which then starts a new hold.
    const bool new_hold = self.core.state() != lock_state::held;
    // A reentrant acquire makes no attempt: its `acquired` is not told as one.
    self.attempts_reported = new_hold ? 0 : self.core.attempts();
    if (new_hold) {
        // Such a loss is the previous hold's: heard with its serial, stale from the next line
        // on, so on_lost is never called for the new hold because of it.
        self.drain_events();
        ++self.hold_serial;  // the previous hold, lost or not, is over
        self.meter.acquire_started(started_ms);
    }
    const auto decided_now = [&self] { return self.acquired.decided; };
    self.cancellable = true;
    const bool decided = self.run_io(held, decided_now, no_deadline_ms, false);
    self.cancellable = false;
    const std::error_code result = decided ? self.acquired.code : self.abandon_acquire();
    if (result) {
        // Delete what the failed attempt may have written before reporting (after a cancel
        // too: a fair waiter's leave of the line goes out here).
        const std::int64_t until = now_ms() + self.timing.command_timeout_ms;
        self.run_io(
            held, [&self] { return self.quiet(now_ms()); }, until, false);
    } else if (out != nullptr) {
        *out = self.last_hold;
        const std::array<char, token_hex_bytes> token = self.core.token_hex();
        out->token.assign(token.data(), token.size());
    }
    self.meter.acquire_ended(to_failure(result), self.core.attempts(), self.core.valid_until_ms(),
                             now_ms());
    self.unsubscribe();
    self.end_io();
    self.wake_helper();  // it reads the UNSUBSCRIBE's confirmation
    return result;
}

// The I/O loop ended without the core deciding the attempt. The core always has a deadline
// while acquiring, so this cannot happen; should it, the attempt is cancelled (its keys are
// cleaned up like any cancelled attempt's) and the call says so with invalid_state rather
// than with anything another call left behind.
std::error_code lock::impl::abandon_acquire() {
    [[maybe_unused]] const errc cancelled = core.release(now_ms());
    drain_events();
    return make_error_code(errc::invalid_state);
}

// cancel() was called: the core gives up the attempt (acquire_failed with cancelled) and
// queues its cleanup, which acquire() then sends like any failed attempt's.
void lock::impl::take_cancel() {
    cancel_pending.store(false);
    std::uint64_t value = 0;
    [[maybe_unused]] const ssize_t ignored = ::read(cancel_fd, &value, sizeof value);
    const lock_state state = core.state();
    if (state != lock_state::acquiring && state != lock_state::backing_off &&
        state != lock_state::confirming)
        return;
    [[maybe_unused]] const errc code = core.release(now_ms());
    drain_events();
}

void lock::cancel() noexcept {
    if (!impl_) return;
    impl_->cancel_pending.store(true);
    const std::uint64_t one = 1;
    [[maybe_unused]] const ssize_t ignored = ::write(impl_->cancel_fd, &one, sizeof one);
}

std::error_code lock::release() noexcept {
    if (!impl_) return make_error_code(errc::invalid_state);
    impl& self = *impl_;
    std::unique_lock<std::mutex> held(self.mutex);
    self.begin_io(held, true);
    self.reset_backoff();
    self.call_error = {};
    self.released = {};
    const errc code = self.core.release(now_ms());
    if (code != errc::ok) {
        self.end_io();
        return make_error_code(code);
    }
    self.drain_events();
    if (!self.released.decided && self.core.state() == lock_state::held) {
        self.end_io();
        return {};  // an inner hold of a reentrant acquire
    }
    ++self.hold_serial;  // from here on, a notice of this hold's loss is stale
    const auto decided_now = [&self] { return self.released.decided; };
    const bool decided = self.run_io(held, decided_now, no_deadline_ms, false);
    self.end_io();
    self.lost_flag = false;
    self.lost_code = errc::ok;
    // As for acquire: the core always has a deadline while releasing.
    if (!decided) return make_error_code(errc::invalid_state);
    const failure why = to_failure(self.call_error);
    return to_error_code(session::release_result(self.released.released, self.instances, why));
}

bool lock::held() const noexcept {
    if (!impl_) return false;
    std::lock_guard<std::mutex> guard(impl_->mutex);
    return impl_->core.held(now_ms());
}

bool lock::lost() const noexcept {
    if (!impl_) return false;
    std::lock_guard<std::mutex> guard(impl_->mutex);
    return impl_->lost_flag;
}

std::error_code lock::lost_reason() const noexcept {
    if (!impl_) return {};
    std::lock_guard<std::mutex> guard(impl_->mutex);
    return impl_->lost_flag ? make_error_code(impl_->lost_code) : std::error_code{};
}

std::int64_t lock::guard_until_ms() const noexcept {
    if (!impl_) return 0;
    std::lock_guard<std::mutex> guard(impl_->mutex);
    return impl_->guard_until_ms;
}

std::int64_t lock::fence() const noexcept {
    if (!impl_) return 0;
    std::lock_guard<std::mutex> guard(impl_->mutex);
    return impl_->core.fence();
}

std::error_code lock::instance_error(std::size_t i) const noexcept {
    if (!impl_ || i >= impl_->instances) return {};
    std::lock_guard<std::mutex> guard(impl_->mutex);
    return impl_->last_errors[i];
}

bool lock::instance_start(std::size_t i, node_start& out) const noexcept {
    if (!impl_ || i >= impl_->instances) return false;
    std::lock_guard<std::mutex> guard(impl_->mutex);
    if (!impl_->start_known[i]) return false;
    out = impl_->starts[i];
    return true;
}

session::lock_metrics lock::metrics() const noexcept {
    if (!impl_) return {};
    std::lock_guard<std::mutex> guard(impl_->mutex);
    session::lock_metrics counted = impl_->meter.counts();
    for (std::uint8_t i = 0; i < impl_->instances; ++i) {
        counted.requests_in_flight += impl_->connections[i].connection().requests_in_flight();
    }
    return counted;
}

std::uint64_t lock::events_dropped() const noexcept {
    if (!impl_) return 0;
    std::lock_guard<std::mutex> guard(impl_->mutex);
    return impl_->events_dropped;
}

std::string lock::instance_error_text(std::size_t i) const {
    if (!impl_ || i >= impl_->instances) return {};
    std::lock_guard<std::mutex> guard(impl_->mutex);
    return std::string(impl_->last_error_texts[i].view());
}

}  // namespace edgelock::hiredis
