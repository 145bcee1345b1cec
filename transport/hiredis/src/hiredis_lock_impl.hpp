// SPDX-License-Identifier: Apache-2.0
// The blocking client's lock object, shared by the files that implement it:
//   hiredis_lock.cpp        the threads, the I/O rounds and the public object
//   blocking_instances.cpp  each instance's connection: requests out, answers, starts and ends
//                           told to the core
//   blocking_fair.cpp       fair waiting: the subscriber connection
//   blocking_watch.cpp      Sentinel: the watch of a sentinel's +switch-master
//   blocking_events.cpp     what the core's events mean to the caller, on_event and the metrics
//   blocking_cluster.cpp    Redis Cluster: the slot map, a connection per node, the lock's route
#pragma once

#include <poll.h>
#include <pthread.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string_view>
#include <system_error>

#include "blocking_connection.hpp"
#include "edgelock/blocking_lock.hpp"
#include "edgelock/lock.hpp"
#include "edgelock/session/cluster.hpp"
#include "edgelock/session/cluster_links.hpp"
#include "edgelock/session/linking.hpp"
#include "edgelock/session/lock_links.hpp"
#include "edgelock/session/lock_metrics.hpp"
#include "edgelock/session/lock_traffic.hpp"
#include "edgelock/session/wake_subscription.hpp"

namespace edgelock::blocking {

// The monotonic clock in milliseconds, which every deadline of the lock is on.
std::int64_t now_ms() noexcept;

// The most connections a lock keeps for its requests: one per instance, or one per node of a
// cluster.
inline constexpr std::size_t links_max = std::max(instances_max, session::cluster_masters_max);

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
        void node_read() override { owner->on_node_read(i); }
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
    // Sentinel: what the watch connection delivers, a sentinel's +switch-master.
    struct watch_events final : session::connection_events {
        impl* owner = nullptr;
        void pushed(session::routed_reply::kind what, const reply_node*, std::size_t) override {
            if (what == session::routed_reply::kind::master_switched) owner->on_switch_heard();
        }
    };
    // Redis Cluster: what node k's connection delivers. The slot map's read (CLUSTER SLOTS,
    // tracked under map_owner) goes to the map; everything else is the lock's (instance 0).
    struct node_events final : session::connection_events {
        impl* owner = nullptr;
        std::uint8_t k = 0;
        std::size_t dropped_count = 0;
        void answered(const session::in_flight& entry, const reply_node* nodes,
                      std::size_t count) override {
            owner->on_node_answer(k, entry, nodes, count);
        }
        void node_read() override { owner->on_node_read(k); }
        void dropped(const session::in_flight& entry) override {
            if (entry.owner == map_owner) return owner->links.read_lost(now_ms());
            ++dropped_count;
        }
        void ended(const session::connection_end& closed, bool lock_hears) override {
            const std::size_t count = dropped_count;
            dropped_count = 0;
            owner->on_node_end(k, closed, count, lock_hears);
        }
    };
    // The owner value of the slot map's read on a node's connection: the lock's requests are
    // tracked under 0.
    static constexpr std::uint32_t map_owner = session::cluster_links::map_owner;
    // An instance's connection is made when a request waits for it (session/linking.hpp): the
    // client's threads run only while a call or the watchdog has work.
    static constexpr session::linking linking = session::linking::on_demand;
    std::array<instance_events, instances_max> instance_hooks{};
    subscriber_events subscriber_hooks;
    std::array<blocking_connection, instances_max> connections;
    std::array<std::error_code, instances_max> last_errors{};
    // The text of each instance's last error reply, while last_errors holds error_reply.
    std::array<session::error_text, instances_max> last_error_texts{};
    // Fair waiting: the connection to the acquire()'s channel (set up only when fair), made the
    // first time an acquire() waits and kept until the lock is destroyed, subscribed only
    // while an acquire() waits (see "fair waiting" below).
    bool fair = false;
    blocking_connection subscriber;
    session::wake_subscription sub;  // the acquire()'s channel, on the subscriber connection
    bool wake_wanted = false;        // an acquire() waits: its channel should be subscribed

    // What the links tell the core (session/lock_links.hpp): link i is instance i, or under
    // Cluster the lock's route's home.
    session::lock_links place;
    // Redis Cluster (where.by_cluster()): the lock is a single-instance lock (instance 0) on
    // the master of its name's slot. The connections are kept per slot_map node index and set
    // up on first use, pointing at the address `links` keeps for each
    // (session/cluster_links.hpp); `connections` is not used. The subscriber (fair) sits on
    // the slot's master too.
    bool cluster = false;
    session::cluster_links links;
    std::uint64_t link_seed = 0;  // each connection's jitter: link_seed + its index
    std::array<node_events, session::cluster_masters_max> node_hooks{};
    std::array<blocking_connection, session::cluster_masters_max> node_links;
    std::array<bool, session::cluster_masters_max> node_link_set_up{};  // for links.address(k)
    session::node_address subscriber_address;  // what the subscriber was set up for
    bool subscriber_set_up = false;
    // Sentinel: a connection to one sentinel at a time, subscribed to +switch-master from
    // open() to the end, so a master the sentinels replaced is left at once even while it
    // still answers (cut off from the sentinels, not from us): the async client's watch. It
    // runs on a thread of its own (blocking_watch.cpp), which owns `watcher` and hands what it
    // heard over under the mutex (switch_*); the thread that does the lock's I/O follows it.
    bool watching = false;
    watch_events watch_hooks;
    blocking_connection watcher;
    pthread_t watch_thread{};
    bool watch_started = false;
    int watch_stop_fd = -1;
    std::atomic<bool> watch_stopping{false};
    bool switch_pending = false;
    session::node_address switch_from;
    session::node_address switch_to;

    mutable std::mutex mutex;
    std::condition_variable changed;
    edgelock::lock core;
    bool io_busy = false;
    int users_waiting = 0;
    // The helper's sleep, so that end_io() wakes it only when the I/O that ended brought its
    // next task forward: the time it sleeps until (no_deadline_ms: until woken), or
    // helper_awake while it runs (it looks at everything before it sleeps again).
    static constexpr std::int64_t helper_awake = INT64_MIN;
    std::int64_t helper_sleeps_until = helper_awake;
    bool helper_in_io = false;  // its background I/O, which a user call's begin_io() interrupts
    bool stopping = false;
    // The destructor began: no on_lost call starts any more, and acquire() refuses to start a
    // hold (cancelled) that nothing would renew or release.
    bool closing = false;
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
    // A new hold that acquire() has not told of yet: its end is the call's verdict
    // (validity_expired), not a loss for on_lost, lost() or the loss counts.
    bool hold_untold = false;
    // A hold acquire() told of whose end the caller has not met: not ended by release(),
    // and no on_lost call for its loss returned. While it is lost, acquire() returns expired
    // (but to that on_lost call itself, running for hearing_serial's hold).
    bool hold_owed = false;
    static constexpr std::uint64_t no_hold_serial = ~std::uint64_t{0};
    std::uint64_t hearing_serial = no_hold_serial;
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
    // Per link (an instance's connection; in a cluster, node k's): what the meter remembers
    // of it, and whether its ready connection was counted already.
    static constexpr std::size_t links_max = std::max(instances_max, session::cluster_masters_max);
    std::array<session::link_record, links_max> link_records{};
    std::array<bool, links_max> link_counted{};

    ~impl();
    [[nodiscard]] std::error_code start();

    // Runs `loop` on a thread of its own; `started` says stop_threads() has one to join.
    template <void (impl::*loop)()>
    [[nodiscard]] std::error_code start_thread(pthread_t& thread, bool& started) {
        const int rc = pthread_create(
            &thread, nullptr,
            [](void* self) -> void* {
                (static_cast<impl*>(self)->*loop)();
                return nullptr;
            },
            this);
        if (rc != 0) return make_error_code(transport_errc::thread_failed);
        started = true;
        return {};
    }
    void begin_io(std::unique_lock<std::mutex>& held);
    void end_io();
    void wake_helper();
    void helper_loop();
    void notifier_loop();
    [[nodiscard]] std::error_code start_notifier();
    void stop_notifier();
    void stop_threads();

    template <typename Done>
    bool run_io(std::unique_lock<std::mutex>& held, Done done, std::int64_t hard_deadline_ms,
                bool background);
    void send_requests(std::unique_lock<std::mutex>& held);
    void write_requests(std::uint8_t i, bool asking = false);
    void read_replies(std::uint8_t i);
    void on_answer(std::uint8_t i, const reply_node& node);
    void on_node_read(std::uint8_t k);
    void on_connection_end(std::uint8_t i, const session::connection_end& ended,
                           std::size_t dropped, bool lock_hears);
    void note_unsent_renewal(std::uint8_t i);
    void note_renewal_failed(std::uint8_t i, std::error_code code);
    void on_subscription_answer(const reply_node* nodes, std::size_t count);
    void on_wake_message(const reply_node* nodes, std::size_t count);
    void on_subscriber_end();
    void check_timeouts();
    [[nodiscard]] std::error_code set_up_watch(std::uint64_t seed);
    [[nodiscard]] std::error_code start_watch();
    void stop_watch();
    void watch_loop();
    void on_switch_heard();
    void follow_switch();
    bool listening(bool background) const;
    bool must_wait() const;
    void tend_subscriber(std::unique_lock<std::mutex>& held);
    void read_wake_ups();
    void end_subscriber_if_closing();
    void drive_subscription();
    void unsubscribe();
    bool reads_subscriber(bool listen) const { return listen || (fair && subscriber.busy()); }
    void wake_core(std::string_view message);
    void give_up_unsent(std::uint8_t i);
    void note_error(std::uint8_t i, const failure& why, const session::error_text* text = nullptr);
    [[nodiscard]] std::error_code configure(const lock_options& given);
    [[nodiscard]] std::error_code configure_cluster();
    // Redis Cluster (blocking_cluster.cpp).
    std::uint8_t link_count() const {
        return cluster ? static_cast<std::uint8_t>(session::cluster_masters_max) : instances;
    }
    blocking_connection& link_at(std::uint8_t k) {
        return cluster ? node_links[k] : connections[k];
    }
    const blocking_connection& link_at(std::uint8_t k) const {
        return cluster ? node_links[k] : connections[k];
    }
    // The connection instance i's requests went on last (cluster: the route's home), or null.
    const blocking_connection* instance_link(std::uint8_t i) const;
    // Whether connection k should be made (requests wait for it, or the map must be read).
    bool wants_link(std::uint8_t k) const;
    bool map_wanted() const;
    bool set_up_node_link(std::uint8_t k);
    void send_cluster_requests(std::unique_lock<std::mutex>& held);
    void tend_map(std::unique_lock<std::mutex>& held);
    bool send_map_read(std::uint8_t k);
    void settle_closed_while_idle();
    // The node links as session::cluster_links::tend_map drives them (blocking_cluster.cpp).
    class cluster_port;
    void on_node_answer(std::uint8_t k, const session::in_flight& entry, const reply_node* nodes,
                        std::size_t count);
    void on_slots_answer(std::uint8_t k, const reply_node* nodes, std::size_t count);
    void on_cluster_answer(std::uint8_t k, const reply_node& node);
    void on_node_end(std::uint8_t k, const session::connection_end& ended, std::size_t dropped,
                     bool lock_hears);
    void tell_moved(const session::lock_writes& writes);
    void hear_node_start(std::uint8_t k);
    void no_slot_map();
    [[nodiscard]] bool place_subscriber();
    [[nodiscard]] std::error_code set_up_subscriber(session::connection_setup setup);
    void drain_events();
    void note_released(const event& e);
    void note_lost(const event& e);
    void note_attempt(const event* ended);
    void emit(lock_event_kind kind, std::size_t instance, std::error_code code,
              std::int64_t valid_until_ms);
    void push_event(const lock_event& e);
    void note_connected(std::uint8_t i);
    void note_link_ready(std::uint8_t k);
    void note_disconnected(std::uint8_t i, std::error_code why, bool renewal_dropped);
    std::size_t take_events(std::array<lock_event, lock_events_pending_max>& out);
    void call_on_event(const std::array<lock_event, lock_events_pending_max>& events,
                       std::size_t count) const;
    void deliver_events(std::unique_lock<std::mutex>& held);
    template <typename Done>
    bool run_rounds(std::unique_lock<std::mutex>& held, Done done, std::int64_t hard_deadline_ms,
                    bool background);
    // What one round polls: the busy instances (owner maps each entry to its instance), then the
    // helper's wake-up or a cancel, then the subscriber. Set up by fill_poll_set,
    // apart from run_rounds, so that a round reads as wait-then-read and each stays short enough to
    // follow.
    struct poll_set {
        std::array<pollfd, links_max + 2> fds{};
        std::array<std::uint8_t, links_max> owner{};
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
    bool hold_gone_unheard() const;
    [[nodiscard]] std::error_code refuse_acquire(std::unique_lock<std::mutex>& held, errc code);
    [[nodiscard]] std::error_code abandon_acquire();
    [[nodiscard]] std::error_code end_late_hold();
    void take_cancel();
    void finish_cleanups();
};

}  // namespace edgelock::blocking
