// SPDX-License-Identifier: Apache-2.0
#include "edgelock/blocking_lock.hpp"

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

#include "hiredis_lock_impl.hpp"
#include "edgelock/assert.hpp"
#include "edgelock/entropy.hpp"
#include "edgelock/keys.hpp"
#include "edgelock/limits.hpp"
#include "edgelock/lock.hpp"
#include "edgelock/session/address.hpp"
#include "edgelock/session/outcome.hpp"
#include "edgelock/session/reconnect.hpp"

namespace edgelock::blocking {
namespace {

// poll() never sleeps longer than this, so a stuck wait is re-checked against the clock.
constexpr std::int64_t poll_slice_ms_max = 1000;

}  // namespace

std::int64_t now_ms() noexcept {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}

lock::impl::~impl() {
    if (wake_fd >= 0) ::close(wake_fd);
    if (cancel_fd >= 0) ::close(cancel_fd);
    if (watch_stop_fd >= 0) ::close(watch_stop_fd);
}

std::error_code lock::impl::start() {
    static_assert(std::atomic<bool>::is_always_lock_free, "cancel() must be async-signal-safe");
    wake_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    cancel_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (wake_fd < 0 || cancel_fd < 0) return make_error_code(transport_errc::thread_failed);
    std::error_code ec = start_thread<&impl::helper_loop>(helper, helper_started);
    if (ec) return ec;
    ec = start_notifier();
    if (!ec) ec = start_watch();
    if (ec) {
        stop_threads();
        return ec;
    }
    return {};
}

// Only a lock with an on_lost callback has the thread that calls it.
std::error_code lock::impl::start_notifier() {
    if (!options.on_lost) return {};
    return start_thread<&impl::notifier_loop>(notifier, notifier_started);
}

// Closing: starts no other on_lost call, ends an acquire() the running one waits in (as
// cancel() does), and waits for that call to return. Until then the helper goes on renewing,
// so a hold the callback has meanwhile stays valid.
void lock::impl::stop_notifier() {
    {
        std::lock_guard<std::mutex> guard(mutex);
        closing = true;
        notice_changed.notify_all();
    }
    // After `closing`: an acquire() that starts later is refused, one that runs is cancelled.
    cancel_pending.store(true);
    const std::uint64_t one = 1;
    [[maybe_unused]] const ssize_t ignored = ::write(cancel_fd, &one, sizeof one);
    // Destroying the lock from its own on_lost would free what the running callback's thread
    // still uses (a join of itself fails): a caller's bug, stopped here rather than left to
    // corrupt memory.
    EDGELOCK_ASSERT(!notifier_started || pthread_equal(pthread_self(), notifier) == 0);
    if (notifier_started) pthread_join(notifier, nullptr);
    notifier_started = false;
}

void lock::impl::stop_threads() {
    stop_watch();
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

// A user call takes the I/O (the helper takes it in helper_loop, when no call waits).
void lock::impl::begin_io(std::unique_lock<std::mutex>& held) {
    ++users_waiting;
    // The helper's background I/O gives way once its poll sees the eventfd; asleep, the helper
    // holds no I/O and need not wake.
    if (helper_in_io) {
        const std::uint64_t one = 1;
        [[maybe_unused]] const ssize_t ignored = ::write(wake_fd, &one, sizeof one);
    }
    changed.wait(held, [this] { return !io_busy; });
    --users_waiting;
    io_busy = true;
}

// Wakes who waits for what this I/O changed: a user call waiting for the I/O, and the helper
// only when its next task (a new hold's renewal, a cleanup left over) now comes before the
// time it sleeps until. A call that leaves that as it was costs the helper no wake-up.
void lock::impl::end_io() {
    io_busy = false;
    const bool helper_asleep = helper_sleeps_until != helper_awake;
    if (users_waiting > 0 || (helper_asleep && background_wake(now_ms()) < helper_sleeps_until))
        changed.notify_all();
}

void lock::impl::reset_backoff() {
    for (blocking_connection& l : connections) session::on_user_call(linking, l.connection());
    for (blocking_connection& l : node_links) session::on_user_call(linking, l.connection());
}

// The helper: renewals and I/O left over by user calls (late replies, cleanup after a failed
// acquire).
void lock::impl::helper_loop() {
    std::unique_lock<std::mutex> held(mutex);
    while (!stopping) {
        helper_sleeps_until = helper_awake;
        if (io_busy || users_waiting > 0) {
            // Until the I/O ends: end_io() wakes it only if that leaves it a task (finite).
            helper_sleeps_until = no_deadline_ms;
            changed.wait(held);
            continue;
        }
        const std::int64_t now = now_ms();
        const std::int64_t wake = background_wake(now);
        if (wake <= now) {
            io_busy = true;
            helper_in_io = true;
            run_io(
                held, [this] { return quiet(now_ms()); }, no_deadline_ms, true);
            helper_in_io = false;
            end_io();
            continue;
        }
        helper_sleeps_until = wake;
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
        notice_changed.wait(held, [this] { return stopping || closing || notice.due; });
        if (stopping || closing) return;
        const lost_notice due = notice;
        notice.due = false;
        if (due.hold_serial != hold_serial) continue;
        hearing_serial = due.hold_serial;  // the callback itself may acquire again
        held.unlock();
        options.on_lost(make_error_code(due.code));
        held.lock();
        hearing_serial = no_hold_serial;
        // Heard once the callback returned: other threads may start a new hold from here.
        if (hold_serial == due.hold_serial) hold_owed = false;
    }
}

// Nothing in flight, and nothing queued that could be sent now.
bool lock::impl::quiet(std::int64_t now) const {
    for (std::uint8_t k = 0; k < link_count(); ++k) {
        const blocking_connection& l = link_at(k);
        if (l.busy()) return false;
        if (wants_link(k) && (l.connection().accepts_requests() || l.connection().may_start(now)))
            return false;
    }
    return !(fair && subscriber.busy());  // an UNSUBSCRIBE's confirmation is read, not left
}

std::int64_t lock::impl::background_wake(std::int64_t now) const {
    std::int64_t wake = core.next_deadline_ms();
    for (std::uint8_t k = 0; k < link_count(); ++k) {
        if (link_at(k).busy()) return now;
        wake = std::min(wake, session::wake_ms(link_at(k).connection(), wants_link(k), now));
    }
    // The gap's end only: a read due now waits for the link that carries it (wants_link).
    if (map_wanted() && !links.read_due(now)) wake = std::min(wake, links.next_read_ms());
    return (fair && subscriber.busy()) || switch_pending ? now : wake;
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
        follow_switch();  // a +switch-master the watch heard (blocking_watch.cpp)
        drain_events();   // the core refuses input while its event queue lacks room
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
            if (set.fds[k].revents != 0 || link_at(i).has_buffered()) read_replies(i);
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
    for (std::uint8_t k = 0; k < link_count(); ++k) {
        const blocking_connection& l = link_at(k);
        if (l.busy()) {
            set.owner[set.count] = k;
            set.fds[set.count++] = pollfd{l.fd(), l.events(), 0};
            if (l.has_buffered()) wake = now;  // TLS bytes already read: no poll can see them
        }
        // Connections are made on demand: an idle connection matters only with requests for it.
        wake = std::min(wake, session::wake_ms(l.connection(), wants_link(k), now));
    }
    // The gap's end only: a read due now waits for the link that carries it (wants_link).
    if (map_wanted() && !links.read_due(now)) wake = std::min(wake, links.next_read_ms());
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

// ---- the public object -------------------------------------------------------------------

lock::lock() noexcept = default;

lock::~lock() {
    if (!impl_) return;
    // on_lost may be acquiring again. Once it has returned, with any acquire it starts from
    // now on refused and one it is waiting in cancelled, what the lock holds can only shrink:
    // the release below then ends every hold, the callback's included.
    impl_->stop_notifier();
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
    begin_io(held);
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
    config.permits = options.permits;
    return config;
}

}  // namespace

// Addresses, the core and one connection per instance. The connections point into `where`, which
// stays put for the object's life. The checks and their order are the async client's: the
// deployment (validate()), then the lock against it (check_lock()), then the core's.
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
    link_seed = seed;
    if (where.by_cluster()) return configure_cluster();
    for (std::uint8_t i = 0; i < instances; ++i) {
        instance_hooks[i].owner = this;
        instance_hooks[i].i = i;
        if (connections[i].setup(where.instance_setup(i, seed + i), instance_hooks[i], &tls) !=
            errc::ok) {
            return make_error_code(errc::invalid_config);
        }
    }
    if (where.by_sentinel()) {
        if (const std::error_code ec = set_up_watch(seed + instances + 1)) return ec;
    }
    if (!options.fair) return {};
    return set_up_subscriber(where.instance_setup(0, seed + instances));
}

// The subscriber reaches the server (or Sentinel's master) as the command connection does:
// the same address, credentials, db, TLS and timing; it reads no node facts.
std::error_code lock::impl::set_up_subscriber(session::connection_setup setup) {
    std::array<char, key_bytes_max> line{};  // the waiters' channels begin with it
    if (write_companion_key(options.name, companion::queue, line.data(), line.size()) == 0)
        return make_error_code(errc::invalid_name);
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
    self.begin_io(held);
    if (self.closing) return self.refuse_acquire(held, errc::cancelled);
    if (self.hold_gone_unheard()) return self.refuse_acquire(held, errc::expired);
    self.reset_backoff();
    self.call_error = {};
    self.acquired = {};
    const std::int64_t started_ms = now_ms();
    const errc code = self.core.acquire(started_ms, static_cast<std::int64_t>(wait.count()), token);
    if (code != errc::ok) return self.refuse_acquire(held, code);
    const bool new_hold = self.core.state() != lock_state::held;
    // A reentrant acquire makes no attempt: its `acquired` is not told as one.
    self.attempts_reported = new_hold ? 0 : self.core.attempts();
    if (new_hold) {
        // What the previous hold left queued is drained with its serial, stale from the next
        // line on (its loss was heard, or it was never told of: hold_gone_unheard), so on_lost
        // is never called for the new hold because of it.
        self.drain_events();
        ++self.hold_serial;  // the previous hold, lost or not, is over
        self.meter.acquire_started(started_ms);
        self.hold_untold = true;
    }
    const auto decided_now = [&self] { return self.acquired.decided; };
    self.cancellable = true;
    const bool decided = self.run_io(held, decided_now, no_deadline_ms, false);
    self.cancellable = false;
    std::error_code result = decided ? self.acquired.code : self.abandon_acquire();
    // The event hook heard the verdict last (run_io), and its time counts against the lease
    // like any other: success is told only while the lease still runs.
    if (!result && !self.core.held(now_ms())) result = self.end_late_hold();
    self.hold_untold = false;  // told (or never held): its loss from here on is on_lost's
    if (!result) self.hold_owed = true;
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
    self.end_io();  // wakes the helper to read the UNSUBSCRIBE's confirmation
    return result;
}

// The caller's hold is lost, and the caller has not heard it: no on_lost call for it has
// returned, and release() has not ended it. A new hold now would pass for the old one, kept
// all along (a reentrant acquire counts on it), and make the loss's notice stale. The
// on_lost call for that loss has heard it, and may acquire again.
bool lock::impl::hold_gone_unheard() const {
    const bool hearing = hearing_serial == hold_serial && notifier_started &&
                         pthread_equal(pthread_self(), notifier) != 0;
    return hold_owed && core.state() == lock_state::lost && !hearing;
}

// acquire() refused before any attempt, at once. expired: a hold the caller has not heard
// the end of is gone (hold_gone_unheard), or its lease ran out unnoticed and the core lost
// it in this call: that loss is handed to on_lost and the hook now, and the helper sends its
// cleanup (end_io() wakes it).
std::error_code lock::impl::refuse_acquire(std::unique_lock<std::mutex>& held, errc code) {
    if (code == errc::expired) {
        drain_events();
        deliver_events(held);
    }
    end_io();
    return make_error_code(code);
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

// The lease ran out before acquire() could tell of it (the event hook outlasted it): the core
// sees the end now. A new hold's end is this verdict alone (hold_untold); a reentrant
// acquire's is the outer hold's loss, told as usual.
std::error_code lock::impl::end_late_hold() {
    [[maybe_unused]] const errc timed = core.on_timer(now_ms());
    drain_events();
    return make_error_code(errc::validity_expired);
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
    self.begin_io(held);
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
    self.hold_owed = false;
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
    for (std::uint8_t k = 0; k < impl_->link_count(); ++k) {
        counted.requests_in_flight += impl_->link_at(k).connection().requests_in_flight();
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

}  // namespace edgelock::blocking
