#include "edgelock/hiredis_lock.hpp"

#include <hiredis/hiredis.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdarg>
#include <condition_variable>
#include <mutex>
#include <new>
#include <string_view>

#include "edgelock/entropy.hpp"
#include "edgelock/limits.hpp"
#include "edgelock/lock.hpp"
#include "edgelock/session/address.hpp"
#include "edgelock/session/reconnect.hpp"
#include "edgelock/scripts.hpp"

namespace edgelock::hiredis {
namespace {

// poll() never sleeps longer than this, so a stuck wait is re-checked against the clock.
constexpr std::int64_t poll_slice_ms_max = 1000;

using endpoint = session::server_address;

struct connection {
    redisContext* context = nullptr;
    int pending = 0;   // requests written whose replies have not been read
    int preloads = 0;  // of those, the first `preloads` are SCRIPT LOADs, not the core's
    std::int64_t reply_deadline_ms = 0;
    session::reconnect_backoff backoff;
    bool answered = true;  // a lock request was answered since the connect (fail() backs off if not)
    std::error_code last_error;
};

timeval to_timeval(std::int64_t ms) {
    timeval tv{};
    tv.tv_sec = static_cast<time_t>(ms / 1000);
    tv.tv_usec = static_cast<suseconds_t>((ms % 1000) * 1000);
    return tv;
}

// What a failed hiredis call on `c` means, with errno as it was right after the call.
// hiredis's timeouts end a blocking call with EAGAIN (redisSetTimeout) or ETIMEDOUT and
// EINPROGRESS (connect): they become `timeout`, the one the caller was waiting under.
std::error_code error_of(const redisContext* c, int saved_errno, transport_errc timeout) {
    switch (c->err) {
        case REDIS_ERR_IO:
            if (saved_errno == EAGAIN || saved_errno == EWOULDBLOCK || saved_errno == ETIMEDOUT ||
                saved_errno == EINPROGRESS) {
                return make_error_code(timeout);
            }
            if (saved_errno != 0) return {saved_errno, std::generic_category()};
            return make_error_code(errc::io_error);
        case REDIS_ERR_EOF: return make_error_code(transport_errc::connection_closed);
        case REDIS_ERR_PROTOCOL: return make_error_code(errc::protocol_error);
        case REDIS_ERR_OOM: return make_error_code(transport_errc::out_of_memory);
        default: return make_error_code(errc::io_error);
    }
}

reply_node to_node(const redisReply* r) {
    reply_node node;
    switch (r->type) {
        case REDIS_REPLY_STRING: node.type = reply_type::bulk_string; break;
        case REDIS_REPLY_STATUS: node.type = reply_type::simple_string; break;
        case REDIS_REPLY_ERROR: node.type = reply_type::error; break;
        case REDIS_REPLY_INTEGER: node.type = reply_type::integer; break;
        case REDIS_REPLY_ARRAY: node.type = reply_type::array; break;
        default: node.type = reply_type::nil; break;
    }
    if (r->type == REDIS_REPLY_INTEGER) node.integer = r->integer;
    if (r->type == REDIS_REPLY_ARRAY) node.elements = static_cast<std::uint32_t>(r->elements);
    if (r->str != nullptr) node.text = std::string_view(r->str, r->len);
    return node;
}

bool starts_with(std::string_view text, std::string_view prefix) {
    return text.substr(0, prefix.size()) == prefix;
}

// Replies after which the connection must be made again: the server is not (or no longer) a
// writable master, so a failover may have moved the master elsewhere.
bool means_wrong_server(const reply_node& node) {
    return node.type == reply_type::error &&
           (starts_with(node.text, "READONLY") || starts_with(node.text, "MASTERDOWN") ||
            starts_with(node.text, "LOADING"));
}

// Runs a blocking command; nullptr (and the error) when the connection failed.
redisReply* run(redisContext* c, std::error_code& error, const char* format, ...) {
    va_list args;
    va_start(args, format);
    errno = 0;
    void* reply = redisvCommand(c, format, args);
    const int saved_errno = errno;
    va_end(args);
    if (reply == nullptr) error = error_of(c, saved_errno, transport_errc::connect_timeout);
    return static_cast<redisReply*>(reply);
}

// Queues SCRIPT LOAD for the lock's scripts on a new connection; they go out with the first
// request, and their replies are read (and dropped) before the core's. The core falls back to
// EVAL when a request of the running round meets NOSCRIPT, but drops a background cleanup
// release that does (re-sending it could overtake a newer request of ours): without the
// scripts cached, the cleanup after a failed attempt on a fresh or restarted server would
// leave the key to expire by its TTL. Error replies (an ACL user without SCRIPT) are ignored.
// Returns how many were queued.
int append_script_loads(redisContext* c) {
    int queued = 0;
    for (const script* s : {&acquire_script, &raise_script, &renew_script, &release_script}) {
        if (redisAppendCommand(c, "SCRIPT LOAD %b", s->text.data(), s->text.size()) != REDIS_OK) break;
        ++queued;
    }
    return queued;
}

// Connects, then AUTH and SELECT as the endpoint says. Returns the context or nullptr.
redisContext* open_connection(const endpoint& ep, std::int64_t connect_timeout_ms,
                              std::int64_t command_timeout_ms, std::error_code& error) {
    errno = 0;
    redisContext* c = redisConnectWithTimeout(std::string(ep.host.view()).c_str(), ep.port, to_timeval(connect_timeout_ms));
    const int saved_errno = errno;
    if (c == nullptr) {
        error = make_error_code(transport_errc::out_of_memory);
        return nullptr;
    }
    if (c->err != 0) {
        // hiredis reports a failed name lookup as REDIS_ERR_OTHER with getaddrinfo's message.
        error = c->err == REDIS_ERR_OTHER ? make_error_code(transport_errc::unknown_host)
                                          : error_of(c, saved_errno, transport_errc::connect_timeout);
        redisFree(c);
        return nullptr;
    }
    redisSetTimeout(c, to_timeval(command_timeout_ms));
    redisEnableKeepAlive(c);
    if (!ep.password.empty()) {
        redisReply* r = ep.user.empty()
                            ? run(c, error, "AUTH %b", ep.password.view().data(), ep.password.size())
                            : run(c, error, "AUTH %b %b", ep.user.view().data(), ep.user.size(),
                                  ep.password.view().data(), ep.password.size());
        if (r == nullptr || r->type == REDIS_REPLY_ERROR) {
            if (r != nullptr) error = make_error_code(transport_errc::auth_failed);
            if (r != nullptr) freeReplyObject(r);
            redisFree(c);
            return nullptr;
        }
        freeReplyObject(r);
    }
    if (ep.db != 0) {
        redisReply* r = run(c, error, "SELECT %d", static_cast<int>(ep.db));
        if (r == nullptr || r->type == REDIS_REPLY_ERROR) {
            if (r != nullptr) error = make_error_code(transport_errc::select_failed);
            if (r != nullptr) freeReplyObject(r);
            redisFree(c);
            return nullptr;
        }
        freeReplyObject(r);
    }
    return c;
}

std::error_code parse_endpoint(const std::string& url, endpoint& out) {
    return make_error_code(session::parse_server_url(url, out).code);
}

}  // namespace


std::int64_t now_ms() noexcept {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}

// ---- the implementation --------------------------------------------------------------------
//
// Locking: `mutex` guards the core and every field below it. The connections belong to the
// thread that set `io_busy` (a user call, or the helper between user calls); that thread
// drops the mutex only around connect() and poll(), so accessors never wait for the network.
struct lock::impl {
    lock_options options;
    bool sentinel_mode = false;
    session::timing timing;
    std::vector<endpoint> endpoints;  // the instances, or the sentinels
    endpoint master;                  // Sentinel mode: credentials and db of the master
    std::uint8_t instances = 0;
    std::array<connection, instances_max> connections{};

    mutable std::mutex mutex;
    std::condition_variable changed;
    edgelock::lock core;
    bool io_busy = false;
    int users_waiting = 0;
    bool stopping = false;
    int wake_fd = -1;
    pthread_t helper{};
    bool helper_started = false;

    // What the events said.
    bool acquire_done = false;
    std::error_code acquire_result;
    hold last_hold;
    bool release_done = false;
    event release_event;
    bool lost_flag = false;
    errc lost_code = errc::ok;
    bool callback_due = false;
    std::error_code call_error;  // the latest instance error during the running call

    ~impl();
    std::error_code start();

    void begin_io(std::unique_lock<std::mutex>& held, bool user);
    void end_io();
    void wake_helper();
    void helper_loop();

    template <typename Done>
    void pump(std::unique_lock<std::mutex>& held, Done done, std::int64_t hard_deadline_ms, bool background);
    void send_requests(std::unique_lock<std::mutex>& held);
    bool connect(std::uint8_t i, std::unique_lock<std::mutex>& held);
    redisContext* discover_master(std::error_code& error);
    void read_replies(std::uint8_t i);
    void fail(std::uint8_t i, std::error_code why);
    void fail_unsent(std::uint8_t i);
    void drain_events();
    bool quiet(std::int64_t now) const;
    std::int64_t background_wake(std::int64_t now) const;
    void reset_backoff();
};

lock::impl::~impl() {
    for (connection& c : connections) {
        if (c.context != nullptr) redisFree(c.context);
        c.context = nullptr;
    }
    if (wake_fd >= 0) ::close(wake_fd);
}

std::error_code lock::impl::start() {
    wake_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (wake_fd < 0) return make_error_code(transport_errc::thread_failed);
    const int rc = pthread_create(
        &helper, nullptr,
        [](void* self) -> void* {
            static_cast<impl*>(self)->helper_loop();
            return nullptr;
        },
        this);
    if (rc != 0) return make_error_code(transport_errc::thread_failed);
    helper_started = true;
    return {};
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
    for (connection& c : connections) c.backoff.reset();
}

// The helper: renewals, the lost callback, and I/O left over by user calls (late replies,
// cleanup after a failed acquire).
void lock::impl::helper_loop() {
    std::unique_lock<std::mutex> held(mutex);
    while (!stopping) {
        if (callback_due) {
            callback_due = false;
            const std::error_code why = make_error_code(lost_code);
            const std::function<void(std::error_code)> callback = options.on_lost;
            held.unlock();
            if (callback) callback(why);
            held.lock();
            continue;
        }
        if (io_busy || users_waiting > 0) {
            changed.wait(held);
            continue;
        }
        const std::int64_t now = now_ms();
        const std::int64_t wake = background_wake(now);
        if (wake <= now) {
            io_busy = true;
            pump(held, [this] { return quiet(now_ms()); }, no_deadline_ms, true);
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

// Nothing in flight, and nothing queued that could be sent now.
bool lock::impl::quiet(std::int64_t now) const {
    for (std::uint8_t i = 0; i < instances; ++i) {
        if (connections[i].pending > 0) return false;
        if (core.has_request(i) && connections[i].backoff.may_connect(now)) return false;
    }
    return true;
}

std::int64_t lock::impl::background_wake(std::int64_t now) const {
    std::int64_t wake = core.next_deadline_ms();
    for (std::uint8_t i = 0; i < instances; ++i) {
        if (connections[i].pending > 0) return now;
        if (core.has_request(i)) wake = std::min(wake, connections[i].backoff.not_before_ms());
    }
    return wake;
}

template <typename Done>
void lock::impl::pump(std::unique_lock<std::mutex>& held, Done done, std::int64_t hard_deadline_ms,
                      bool background) {
    for (;;) {
        core.on_timer(now_ms());
        drain_events();
        if (done() || now_ms() >= hard_deadline_ms) return;
        if (background && (users_waiting > 0 || stopping)) return;

        send_requests(held);
        drain_events();
        if (done()) return;

        std::int64_t now = now_ms();
        std::int64_t wake = std::min(core.next_deadline_ms(), hard_deadline_ms);
        std::array<pollfd, instances_max + 1> fds{};
        std::array<std::uint8_t, instances_max> owner{};
        nfds_t count = 0;
        for (std::uint8_t i = 0; i < instances; ++i) {
            const connection& c = connections[i];
            if (c.pending > 0 && c.context != nullptr) {
                owner[count] = i;
                fds[count++] = pollfd{c.context->fd, POLLIN, 0};
                wake = std::min(wake, c.reply_deadline_ms);
            } else if (core.has_request(i)) {
                wake = std::min(wake, c.backoff.not_before_ms());
            }
        }
        const nfds_t instance_fds = count;
        if (background) fds[count++] = pollfd{wake_fd, POLLIN, 0};
        if (instance_fds == 0 && wake == no_deadline_ms) return;  // nothing can happen any more
        const std::int64_t timeout = std::clamp<std::int64_t>(wake - now, 0, poll_slice_ms_max);

        held.unlock();
        const int ready = ::poll(fds.data(), count, static_cast<int>(timeout));
        held.lock();

        if (ready > 0) {
            for (nfds_t k = 0; k < instance_fds; ++k) {
                if (fds[k].revents != 0) read_replies(owner[k]);
            }
            if (background && fds[instance_fds].revents != 0) {
                std::uint64_t value = 0;
                [[maybe_unused]] const ssize_t ignored = ::read(wake_fd, &value, sizeof value);
            }
        }
        now = now_ms();
        for (std::uint8_t i = 0; i < instances; ++i) {
            const connection& c = connections[i];
            if (c.pending > 0 && now >= c.reply_deadline_ms) fail(i, make_error_code(transport_errc::command_timeout));
        }
    }
}

// Writes every queued request: first on the connections already open (so they are on their
// way before any slow connect), then on the ones that must be made.
void lock::impl::send_requests(std::unique_lock<std::mutex>& held) {
    std::array<char, request_bytes_max> buffer{};
    for (int pass = 0; pass < 2; ++pass) {
        for (std::uint8_t i = 0; i < instances; ++i) {
            if (!core.has_request(i)) continue;
            connection& c = connections[i];
            if (c.context != nullptr && c.pending == 0) {
                // An idle connection the server closed (a restart) reads as ready: make it again
                // rather than lose the request on it, and tell the core, whose WAITs confirm
                // only what their own connection wrote.
                pollfd p{c.context->fd, POLLIN, 0};
                if (::poll(&p, 1, 0) > 0) {
                    redisFree(c.context);
                    c.context = nullptr;
                    core.on_io_error(i, now_ms());
                    drain_events();
                    if (!core.has_request(i)) continue;
                }
            }
            if (c.context == nullptr) {
                if (pass == 0) continue;
                // Within the reconnect backoff the instance fails at once, with its last error:
                // nothing waits in its queue to be sent much later.
                if (!c.backoff.may_connect(now_ms()) || !connect(i, held)) {
                    call_error = c.last_error;
                    fail_unsent(i);
                    continue;
                }
            }
            const bool was_idle = c.pending == 0;
            while (core.has_request(i)) {
                const write_result written = core.write_request(i, buffer.data(), buffer.size());
                if (written.code != errc::ok) break;
                if (redisAppendFormattedCommand(c.context, buffer.data(), written.size) != REDIS_OK) {
                    ++c.pending;  // the core has it in flight: fail() gives it up
                    fail(i, make_error_code(transport_errc::out_of_memory));
                    break;
                }
                ++c.pending;
            }
            if (c.context == nullptr) continue;
            if (was_idle) c.reply_deadline_ms = now_ms() + timing.command_timeout_ms;
            int done = 0;
            while (!done) {
                errno = 0;
                if (redisBufferWrite(c.context, &done) != REDIS_OK) {
                    fail(i, error_of(c.context, errno, transport_errc::command_timeout));
                    break;
                }
            }
        }
    }
}

bool lock::impl::connect(std::uint8_t i, std::unique_lock<std::mutex>& held) {
    connection& c = connections[i];
    std::error_code error;
    held.unlock();
    redisContext* context = sentinel_mode
                                ? discover_master(error)
                                : open_connection(endpoints[i], timing.connect_timeout_ms,
                                                  timing.command_timeout_ms, error);
    held.lock();
    if (context == nullptr) {
        c.last_error = error;
        call_error = error;
        c.backoff.failed(now_ms(), timing);
        return false;
    }
    c.context = context;
    c.preloads = append_script_loads(context);
    c.pending = c.preloads;
    c.reply_deadline_ms = now_ms() + timing.command_timeout_ms;
    c.answered = false;  // the backoff is reset by the first answer, not by the connect
    return true;
}

// Asks each sentinel for the master's address, connects, and keeps the connection only when
// the server confirms it is a master (a sentinel may not have noticed a failover yet).
redisContext* lock::impl::discover_master(std::error_code& error) {
    error = make_error_code(transport_errc::no_master);
    for (const endpoint& sentinel : endpoints) {
        std::error_code sentinel_error;
        redisContext* s = open_connection(sentinel, timing.connect_timeout_ms, timing.command_timeout_ms,
                                          sentinel_error);
        if (s == nullptr) continue;
        redisReply* r = run(s, sentinel_error, "SENTINEL get-master-addr-by-name %b",
                            options.master_name.data(), options.master_name.size());
        endpoint candidate = master;
        bool found = false;
        if (r != nullptr && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
            r->element[0]->type == REDIS_REPLY_STRING && r->element[1]->type == REDIS_REPLY_STRING) {
            std::uint16_t port = 0;
            found = session::parse_port({r->element[1]->str, r->element[1]->len}, port) &&
                    session::set_endpoint(candidate, {r->element[0]->str, r->element[0]->len}, port).code == errc::ok;
        }
        if (r != nullptr) freeReplyObject(r);
        redisFree(s);
        if (!found) continue;

        std::error_code master_error;
        redisContext* m = open_connection(candidate, timing.connect_timeout_ms, timing.command_timeout_ms,
                                          master_error);
        if (m == nullptr) {
            error = master_error;
            continue;
        }
        redisReply* role = run(m, master_error, "ROLE");
        const bool is_master = role != nullptr && role->type == REDIS_REPLY_ARRAY && role->elements > 0 &&
                               role->element[0]->type == REDIS_REPLY_STRING &&
                               std::string_view(role->element[0]->str, role->element[0]->len) == "master";
        if (role != nullptr) freeReplyObject(role);
        if (is_master) return m;
        redisFree(m);
    }
    return nullptr;
}

void lock::impl::read_replies(std::uint8_t i) {
    connection& c = connections[i];
    errno = 0;
    const bool read_ok = redisBufferRead(c.context) == REDIS_OK;
    const std::error_code read_error = read_ok ? std::error_code{} : error_of(c.context, errno, transport_errc::command_timeout);
    // Complete replies that arrived before a failure still count.
    bool drop = false;
    std::error_code drop_reason;
    for (;;) {
        void* raw = nullptr;
        if (redisGetReplyFromReader(c.context, &raw) != REDIS_OK) {
            drop = true;
            drop_reason = make_error_code(errc::protocol_error);
            break;
        }
        if (raw == nullptr) break;
        auto* reply = static_cast<redisReply*>(raw);
        if (c.preloads > 0) {
            --c.preloads;
            --c.pending;
            c.reply_deadline_ms = now_ms() + timing.command_timeout_ms;
            freeReplyObject(reply);
            continue;
        }
        const reply_node node = to_node(reply);
        if (c.pending == 0) {
            // A reply nobody asked for: the stream cannot be trusted any more.
            freeReplyObject(reply);
            drop = true;
            drop_reason = make_error_code(errc::unexpected_reply);
            break;
        }
        --c.pending;
        c.reply_deadline_ms = now_ms() + timing.command_timeout_ms;
        c.answered = true;
        c.backoff.reset();
        const errc code = core.on_reply(i, node, now_ms());
        const bool wrong_server = means_wrong_server(node);
        freeReplyObject(reply);
        if (code == errc::error_reply || code == errc::unexpected_reply) {
            c.last_error = make_error_code(code);
            call_error = c.last_error;
        }
        drain_events();
        if (wrong_server) {
            drop = true;
            drop_reason = make_error_code(errc::error_reply);
            break;
        }
    }
    if (drop) {
        fail(i, drop_reason);
    } else if (!read_ok) {
        fail(i, read_error);
    }
}

// Drops instance i's connection: its requests in flight are given up.
void lock::impl::fail(std::uint8_t i, std::error_code why) {
    connection& c = connections[i];
    if (c.context != nullptr) redisFree(c.context);
    c.context = nullptr;
    c.pending = 0;
    c.preloads = 0;
    c.last_error = why;
    if (!c.answered) {
        // Dropped before answering any lock request (a server that accepts and closes, at
        // maxclients, behind a proxy whose backend is down): back off as after a failed
        // connect, or the cleanups the core sends again would reconnect in a tight loop.
        c.backoff.failed(now_ms(), timing);
    }
    call_error = why;
    core.on_io_error(i, now_ms());
    drain_events();
}

// Instance i cannot be reached: its queued requests fail now instead of at the round's
// deadline (the core queues releases again for the next try: the running round's, and
// cleanups while their key may still be there; lock.hpp, on_io_error).
void lock::impl::fail_unsent(std::uint8_t i) {
    std::array<char, request_bytes_max> scratch{};
    for (std::size_t n = 0; n < requests_per_instance_max && core.has_request(i); ++n) {
        if (core.write_request(i, scratch.data(), scratch.size()).code != errc::ok) break;
    }
    core.on_io_error(i, now_ms());
    drain_events();
}

void lock::impl::drain_events() {
    event e;
    while (core.poll_event(e)) {
        switch (e.type) {
            case event_type::acquired:
                acquire_done = true;
                acquire_result = {};
                last_hold.fence = e.fence;
                last_hold.valid_until_ms = e.valid_until_ms;
                lost_flag = false;
                lost_code = errc::ok;
                break;
            case event_type::acquire_failed: {
                acquire_done = true;
                const errc cause = e.code == errc::wait_timeout ? e.cause : e.code;
                acquire_result = cause == errc::no_quorum && call_error ? call_error : make_error_code(cause);
                break;
            }
            case event_type::renewed: break;
            case event_type::lost:
                lost_flag = true;
                lost_code = e.code;
                callback_due = true;
                wake_helper();
                break;
            case event_type::released:
                release_done = true;
                release_event = e;
                break;
        }
    }
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
            for (std::uint16_t n = 0; n < holds; ++n) release();
        }
    }
    if (impl_->helper_started) {
        {
            std::lock_guard<std::mutex> guard(impl_->mutex);
            impl_->stopping = true;
            impl_->wake_helper();
        }
        pthread_join(impl_->helper, nullptr);
    }
}

std::error_code lock::open(const lock_options& options) noexcept {
    if (impl_) return make_error_code(errc::invalid_config);
    if (options.instances.empty() == options.sentinels.empty()) return make_error_code(errc::invalid_config);
    session::timing timing;
    timing.connect_timeout_ms = options.connect_timeout_ms;
    timing.command_timeout_ms = options.command_timeout_ms;
    timing.reconnect_delay_ms_min = options.reconnect_delay_min_ms;
    timing.reconnect_delay_ms_max = options.reconnect_delay_max_ms;
    if (session::check_timing(timing) != errc::ok) return make_error_code(errc::invalid_config);
    if (options.instances.size() > instances_max) return make_error_code(errc::invalid_instances);

    std::unique_ptr<impl> created(new (std::nothrow) impl);
    if (!created) return make_error_code(transport_errc::out_of_memory);
    impl& self = *created;
    self.options = options;
    self.timing = timing;
    self.sentinel_mode = !options.sentinels.empty();
    const std::vector<std::string>& urls = self.sentinel_mode ? options.sentinels : options.instances;
    for (const std::string& url : urls) {
        endpoint ep;
        if (const std::error_code ec = parse_endpoint(url, ep)) return ec;
        self.endpoints.push_back(std::move(ep));
    }
    if (self.sentinel_mode) {
        if (options.master_name.empty()) return make_error_code(errc::invalid_config);
        if (!self.master.user.assign(options.master_user) || !self.master.password.assign(options.master_password)) {
            return make_error_code(errc::invalid_config);
        }
        self.master.db = options.master_db;
    }
    self.instances = static_cast<std::uint8_t>(self.sentinel_mode ? 1 : options.instances.size());

    lock_config config;
    config.name = self.options.name;
    config.ttl_ms = options.ttl_ms;
    config.instances = self.instances;
    config.fencing = options.fencing;
    config.watchdog = options.watchdog;
    config.replicas_to_wait = options.replicas_to_wait;
    config.replica_wait_ms = options.replica_wait_ms;
    config.renew_interval_ms = options.renew_interval_ms;
    config.drift_ms = options.drift_ms;
    config.attempt_timeout_ms = options.attempt_timeout_ms;
    config.retry_delay_ms_min = options.retry_delay_ms_min;
    config.retry_delay_ms_max = options.retry_delay_ms_max;
    if (const errc code = self.core.configure(config); code != errc::ok) return make_error_code(code);

    owner_token seed{};
    if (random_token(seed) != errc::ok) return make_error_code(errc::io_error);
    std::uint64_t seed_bits = 0;
    for (const std::uint8_t byte : seed) seed_bits = (seed_bits << 8) | byte;
    for (std::size_t i = 0; i < self.connections.size(); ++i) self.connections[i].backoff.seed(seed_bits + i);

    if (const std::error_code ec = self.start()) return ec;
    impl_ = std::move(created);
    return {};
}

std::error_code lock::try_acquire(hold* out) noexcept { return acquire(std::chrono::milliseconds(0), out); }

std::error_code lock::acquire(std::chrono::milliseconds wait, hold* out) noexcept {
    if (!impl_) return make_error_code(errc::invalid_state);
    impl& self = *impl_;
    owner_token token{};
    if (random_token(token) != errc::ok) return make_error_code(errc::io_error);

    std::unique_lock<std::mutex> held(self.mutex);
    self.begin_io(held, true);
    self.reset_backoff();
    self.call_error = {};
    self.acquire_done = false;
    const errc code = self.core.acquire(now_ms(), static_cast<std::int64_t>(wait.count()), token);
    if (code != errc::ok) {
        self.end_io();
        return make_error_code(code);
    }
    self.pump(held, [&self] { return self.acquire_done; }, no_deadline_ms, false);
    const std::error_code result = self.acquire_result;
    if (result) {
        // Delete what the failed attempt may have written before reporting.
        const std::int64_t until = now_ms() + self.timing.command_timeout_ms;
        self.pump(held, [&self] { return self.quiet(now_ms()); }, until, false);
    } else if (out != nullptr) {
        *out = self.last_hold;
    }
    self.end_io();
    return result;
}

std::error_code lock::release() noexcept {
    if (!impl_) return make_error_code(errc::invalid_state);
    impl& self = *impl_;
    std::unique_lock<std::mutex> held(self.mutex);
    self.begin_io(held, true);
    self.reset_backoff();
    self.call_error = {};
    self.release_done = false;
    const errc code = self.core.release(now_ms());
    if (code != errc::ok) {
        self.end_io();
        return make_error_code(code);
    }
    self.drain_events();
    if (!self.release_done && self.core.state() == lock_state::held) {
        self.end_io();
        return {};  // an inner hold of a reentrant acquire
    }
    self.pump(held, [&self] { return self.release_done; }, no_deadline_ms, false);
    self.end_io();
    self.lost_flag = false;
    self.lost_code = errc::ok;
    const event& e = self.release_event;
    if (e.expired_before) return make_error_code(errc::expired);
    if (e.instances_released == 0) return self.call_error ? self.call_error : make_error_code(errc::no_quorum);
    return {};
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

std::int64_t lock::fence() const noexcept {
    if (!impl_) return 0;
    std::lock_guard<std::mutex> guard(impl_->mutex);
    return impl_->core.fence();
}

std::error_code lock::instance_error(std::size_t i) const noexcept {
    if (!impl_ || i >= impl_->instances) return {};
    std::lock_guard<std::mutex> guard(impl_->mutex);
    return impl_->connections[i].last_error;
}

}  // namespace edgelock::hiredis
