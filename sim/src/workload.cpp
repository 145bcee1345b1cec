#include "edgelock/sim/workload.hpp"

#include <algorithm>
#include <array>
#include <limits>

#include "edgelock/assert.hpp"
#include "edgelock/resp_writer.hpp"
#include "edgelock/sim/world.hpp"

namespace edgelock::sim {
namespace {

constexpr std::int64_t never_us = std::numeric_limits<std::int64_t>::max();
// Rounds of "drain events, write requests" one call may take; each round either makes
// progress or ends the loop, and the lock's queues are bounded, so a few suffice.
constexpr int pump_rounds_max = 16;

const char* event_name(event_type t) {
    switch (t) {
        case event_type::acquired: return "acquired";
        case event_type::acquire_failed: return "acquire_failed";
        case event_type::renewed: return "renewed";
        case event_type::lost: return "lost";
        default: return "released";
    }
}

std::string number(std::int64_t value) { return std::to_string(value); }

}  // namespace

const char* to_string(behaviour b) noexcept {
    switch (b) {
        case behaviour::correct: return "correct";
        case behaviour::ignores_validity: return "ignores-validity";
        case behaviour::skips_fencing: return "skips-fencing";
        case behaviour::deletes_without_compare: return "deletes-without-compare";
        default: return "never-releases";
    }
}

bool parse_behaviour(std::string_view text, behaviour& out) noexcept {
    for (behaviour b : {behaviour::correct, behaviour::ignores_validity, behaviour::skips_fencing,
                        behaviour::deletes_without_compare, behaviour::never_releases}) {
        if (text == to_string(b)) {
            out = b;
            return true;
        }
    }
    return false;
}

client::client(world& w, std::uint8_t id, const lock_config& config, const process_clocks& clocks,
               prng rng, behaviour b)
    : world_(w), id_(id), lock_name_(config.name), instances_(config.instances), clocks_(clocks),
      rng_(rng), behaviour_(b) {
    const errc code = lock_.configure(config);
    EDGELOCK_ASSERT(code == errc::ok);
}

std::int64_t client::now_us() const noexcept { return world_.now_us(); }
std::int64_t client::now_ms() const noexcept { return clocks_.mono.read_ms(world_.now_us()); }
std::int64_t client::to_true_us(std::int64_t local_ms) const noexcept {
    return clocks_.mono.true_us_at_ms(local_ms, world_.now_us());
}
bool client::paused() const noexcept { return world_.now_us() < paused_until_us_; }

void client::anomaly(const char* what, errc code) {
    ++anomalies_;
    world_.note_client(id_, std::string("ANOMALY: ") + what + ": " + to_string(code));
}

// ---- entry points -------------------------------------------------------------------------

void client::start(std::int64_t first_job_ms) {
    for (std::uint8_t i = 0; i < instances_; ++i) {
        connection& c = conns_[i];
        std::uint8_t node = 0;
        const world::connect_outcome outcome = world_.try_connect(id_, i, node);
        EDGELOCK_ASSERT(outcome == world::connect_outcome::ok);
        c.node = node;
        c.epoch = world_.open_connection(id_, node);
        c.st = connection::state::up;
    }
    job_ = job::thinking;
    job_due_ms_ = now_ms() + first_job_ms;
    reschedule();
}

void client::on_reply(std::uint8_t node, std::uint32_t epoch, std::string&& bytes) {
    if (paused()) {
        delivery d;
        d.node = node;
        d.m.kind = message_kind::reply;
        d.m.epoch = epoch;
        d.m.bytes = std::move(bytes);
        inbox_.push_back(std::move(d));
        return;
    }
    handle_reply(node, epoch, bytes);
    pump();
    reschedule();
    observe();
}

void client::on_resource_reply(message&& m) {
    if (paused()) {
        delivery d;
        d.m = std::move(m);
        inbox_.push_back(std::move(d));
        return;
    }
    handle_resource_reply(m);
    pump();
    reschedule();
    observe();
}

void client::on_timer(std::uint32_t generation) {
    if (generation != timer_generation_) return;
    timer_at_us_ = -1;
    run();
}

void client::on_probe(std::uint32_t generation) {
    if (generation == probe_generation_) observe();
}

void client::observe() {
    if (!paused()) held_now();
}

// held() as the job asks it; every yes is handed to the lease oracle.
bool client::held_now() {
    if (!lock_.held(now_ms())) return false;
    const std::array<char, token_hex_bytes> token = lock_.token_hex();
    world_.check_lease(id_, hold_index_, std::string_view(token.data(), token.size()), now_ms(),
                       lock_.valid_until_ms());
    return true;
}

// The last true instant at which held() is still true: where a lease whose renewals stopped
// is most likely to have outlived its key.
void client::schedule_probe() {
    if (lock_.state() != lock_state::held) return;
    const std::int64_t at = to_true_us(lock_.valid_until_ms()) - 1;
    if (at <= now_us()) return;
    world_.schedule_probe(id_, at, ++probe_generation_);
}

void client::pause(std::int64_t until_us) {
    paused_until_us_ = std::max(paused_until_us_, until_us);
    world_.note_client(id_, "PAUSED until " + number(until_us / 1000) + " ms");
}

// The process continues where it stopped: first what it was doing, then what arrived
// while it was stopped, then whatever timers ran out meanwhile.
void client::on_resume() {
    if (paused()) return;
    world_.note_client(id_, "resumed");
    const step s = pending_;
    pending_ = step::none;
    run_step(s);
    while (!paused() && !inbox_.empty()) {
        delivery d = std::move(inbox_.front());
        inbox_.pop_front();
        if (d.m.kind == message_kind::reply) {
            handle_reply(d.node, d.m.epoch, d.m.bytes);
        } else {
            handle_resource_reply(d.m);
        }
    }
    timer_at_us_ = -1;
    run();
}

void client::connection_reset(std::uint8_t node, std::uint32_t epoch, std::int64_t at_us) {
    for (std::uint8_t i = 0; i < instances_; ++i) {
        connection& c = conns_[i];
        if (c.st != connection::state::up || c.node != node || c.epoch != epoch) continue;
        c.reset_at_us = at_us;
        c.reset_epoch = epoch;
    }
    if (!paused()) reschedule();
}

void client::clocks_changed() {
    timer_at_us_ = -1;
    if (!paused()) reschedule();
    schedule_probe();
}

void client::finish(std::int64_t end_us) {
    if (!holding_) return;
    if (behaviour_ == behaviour::ignores_validity) {
        close_hold(end_us, hold_end::run_end);
        return;
    }
    const std::int64_t valid_end = validity_end_us();
    close_hold(std::min(end_us, valid_end), valid_end < end_us ? hold_end::expired : hold_end::run_end);
}

// ---- the loop -----------------------------------------------------------------------------

// The job runs before the lock's timer work: an application asks held() on its own
// schedule, not after the lock has been told the time, and held() must be right then too.
void client::run() {
    if (paused()) return;
    service_connections();
    if (paused()) return;
    run_job_timer();
    if (paused()) return;
    const errc code = lock_.on_timer(now_ms());
    if (code != errc::ok) anomaly("on_timer", code);
    drain();
    pump();
    reschedule();
    observe();
}

void client::pump() {
    for (int round = 0; round < pump_rounds_max; ++round) {
        if (paused()) return;
        drain();
        if (paused()) return;
        if (!send_requests()) return;
    }
}

void client::drain() {
    event e;
    while (!paused() && lock_.poll_event(e)) react(e);
}

bool client::send_requests() {
    bool sent_any = false;
    bool sent_acquire = false;
    bool sent_renew = false;
    std::array<char, request_bytes_max> buffer{};
    for (std::uint8_t i = 0; i < instances_; ++i) {
        connection& c = conns_[i];
        while (c.st == connection::state::up && lock_.has_request(i)) {
            const write_result w = lock_.write_request(i, buffer.data(), buffer.size());
            if (w.code != errc::ok) {
                anomaly("write_request", w.code);
                break;
            }
            std::string bytes(buffer.data(), w.size);
            const script_id kind = classify_request(bytes);
            sent_acquire = sent_acquire || kind == script_id::acquire;
            sent_renew = sent_renew || kind == script_id::renew;
            if (kind == script_id::release && behaviour_ == behaviour::deletes_without_compare) {
                std::array<char, request_bytes_max> del{};
                resp_writer writer(del.data(), del.size());
                writer.array(2);
                writer.bulk("DEL");
                writer.bulk(lock_name_);
                bytes.assign(del.data(), writer.size());
            }
            c.sent_ms.push_back(now_ms());
            world_.send_request(id_, c.node, c.epoch, std::move(bytes));
            sent_any = true;
        }
    }
    if (sent_acquire) reach(point::acquire_sent);
    if (sent_renew && !paused()) reach(point::renew_sent);
    return sent_any;
}

void client::reschedule() {
    if (paused()) return;
    const std::int64_t now = now_us();
    // Every deadline but a reset's is on the monotonic clock: take the earliest, convert once.
    std::int64_t local_ms = std::min(lock_.next_deadline_ms(), job_due_ms_);
    std::int64_t wake = never_us;
    const std::int64_t io_timeout = world_.params().io_timeout_ms;
    for (std::uint8_t i = 0; i < instances_; ++i) {
        const connection& c = conns_[i];
        if (c.st != connection::state::up) {
            local_ms = std::min(local_ms, c.due_ms);
            continue;
        }
        if (c.reset_at_us >= 0 && c.reset_epoch == c.epoch) wake = std::min(wake, c.reset_at_us);
        if (!c.sent_ms.empty()) local_ms = std::min(local_ms, c.sent_ms.front() + io_timeout);
    }
    if (local_ms != no_deadline_ms) wake = std::min(wake, to_true_us(local_ms));
    if (wake == never_us) return;
    wake = std::max(wake, now + 1);
    if (wake == timer_at_us_) return;
    timer_at_us_ = wake;
    world_.schedule_client(id_, wake, ++timer_generation_);
}

// ---- connections --------------------------------------------------------------------------

void client::service_connections() {
    const std::int64_t now = now_ms();
    for (std::uint8_t i = 0; i < instances_; ++i) {
        connection& c = conns_[i];
        switch (c.st) {
            case connection::state::up:
                if (c.reset_at_us >= 0 && c.reset_epoch == c.epoch && now_us() >= c.reset_at_us) {
                    fail_connection(i, "reset");
                } else if (!c.sent_ms.empty() && now >= c.sent_ms.front() + world_.params().io_timeout_ms) {
                    fail_connection(i, "timeout");
                }
                break;
            case connection::state::down:
                if (now < c.due_ms) break;
                c.st = connection::state::connecting;
                c.due_ms = now + 1 + world_.connect_us(id_, c.node) / 1000;
                break;
            case connection::state::connecting: {
                if (now < c.due_ms) break;
                std::uint8_t node = 0;
                const world::connect_outcome outcome = world_.try_connect(id_, i, node);
                const std::int64_t backoff =
                    rng_.between(world_.params().reconnect_ms_min, world_.params().reconnect_ms_max);
                if (outcome == world::connect_outcome::ok) {
                    c.st = connection::state::up;
                    c.node = node;
                    c.epoch = world_.open_connection(id_, node);
                    c.reset_at_us = -1;
                    world_.note_client(id_, "connected to n" + number(node) + " (instance " + number(i) + ")");
                } else {
                    c.st = connection::state::down;
                    c.due_ms = now + backoff +
                               (outcome == world::connect_outcome::timeout ? world_.params().connect_timeout_ms : 0);
                }
                break;
            }
        }
        if (paused()) return;
    }
}

void client::fail_connection(std::uint8_t instance, const char* why) {
    connection& c = conns_[instance];
    world_.close_connection(id_, c.node, c.epoch);
    c.st = connection::state::down;
    c.sent_ms.clear();
    c.reset_at_us = -1;
    c.due_ms = now_ms() + rng_.between(world_.params().reconnect_ms_min, world_.params().reconnect_ms_max);
    world_.note_client(id_, std::string("connection to n") + number(c.node) + " failed (" + why + ")");
    const errc code = lock_.on_io_error(instance, now_ms());
    if (code != errc::ok) anomaly("on_io_error", code);
    drain();
}

void client::handle_reply(std::uint8_t node, std::uint32_t epoch, const std::string& bytes) {
    std::uint8_t instance = instances_;
    for (std::uint8_t i = 0; i < instances_; ++i) {
        const connection& c = conns_[i];
        if (c.st == connection::state::up && c.node == node && c.epoch == epoch) instance = i;
    }
    if (instance == instances_) return;  // a reply on a connection given up already
    connection& c = conns_[instance];
    std::array<reply_node, 8> nodes{};
    const parse_result parsed = parse_reply(bytes.data(), bytes.size(), nodes.data(), nodes.size());
    if (parsed.code != errc::ok || parsed.consumed != bytes.size()) {
        anomaly("parse_reply", parsed.code);
        return;
    }
    if (!c.sent_ms.empty()) c.sent_ms.pop_front();
    const errc code = lock_.on_reply(instance, nodes[0], now_ms());
    if (code != errc::ok && code != errc::error_reply) anomaly("on_reply", code);
    drain();
}

// ---- the job ------------------------------------------------------------------------------

void client::react(const event& e) {
    if (world_.recording()) {
        std::string text = std::string("lock: ") + event_name(e.type);
        if (e.type == event_type::acquired) {
            text += " fence=" + number(e.fence) + " valid_until=" + number(e.valid_until_ms) + " (mono)";
        } else if (e.type == event_type::renewed) {
            text += " valid_until=" + number(e.valid_until_ms) + " (mono)";
        } else if (e.type == event_type::acquire_failed || e.type == event_type::lost) {
            text += std::string(" ") + to_string(e.code);
        } else if (e.type == event_type::released) {
            text += " instances=" + number(e.instances_released) + (e.expired_before ? " (expired before)" : "");
        }
        world_.note_client(id_, text);
    }
    if (e.type == event_type::acquired || e.type == event_type::renewed) {
        world_.check_event_validity(id_, event_name(e.type), now_ms(), e.valid_until_ms);
        schedule_probe();
    }
    switch (e.type) {
        case event_type::acquired: on_acquired(e); break;
        case event_type::acquire_failed: think(); break;
        case event_type::renewed:
            if (holding_) world_.hold(hold_slot_).valid_until_ms = e.valid_until_ms;
            break;
        case event_type::lost: on_lost(e); break;
        case event_type::released:
            if (job_ == job::releasing) think();
            break;
    }
}

void client::run_job_timer() {
    if (paused() || job_due_ms_ == no_deadline_ms || now_ms() < job_due_ms_) return;
    job_due_ms_ = no_deadline_ms;
    switch (job_) {
        case job::thinking: start_job(); break;
        case job::working: check_and_write(); break;
        case job::reading:
        case job::writing:
            world_.note_client(id_, "resource request timed out: the job is given up");
            finish_job();
            break;
        default: break;
    }
}

void client::run_step(step s) {
    switch (s) {
        case step::send_read: send_read(); break;
        case step::start_work: start_work(); break;
        case step::send_write: send_write(); break;
        case step::none: break;
    }
}

void client::start_job() {
    owner_token token{};
    for (std::size_t i = 0; i < token.size(); i += 8) {
        const std::uint64_t bits = rng_.next();
        for (std::size_t b = 0; b < 8; ++b) token[i + b] = static_cast<std::uint8_t>(bits >> (8 * b));
    }
    const errc code = lock_.acquire(now_ms(), world_.params().acquire_wait_ms, token);
    if (code != errc::ok) {
        anomaly("acquire", code);
        think();
        return;
    }
    job_ = job::acquiring;
    drain();
}

void client::on_acquired(const event& e) {
    hold_slot_ = world_.begin_hold(id_, e.fence, e.valid_until_ms);
    hold_index_ = world_.hold(hold_slot_).index;
    holding_ = true;
    fence_ = e.fence;
    reach(point::acquired);
    if (paused()) {
        pending_ = step::send_read;
        return;
    }
    send_read();
}

void client::on_lost(const event&) {
    if (behaviour_ == behaviour::ignores_validity) return;
    if (holding_) close_hold(std::min(now_us(), validity_end_us()), hold_end::lost);
    if (job_ == job::reading || job_ == job::working || job_ == job::writing || job_ == job::keeping) {
        finish_job();
    }
}

void client::send_read() {
    job_ = job::reading;
    message m;
    m.kind = message_kind::resource_request;
    m.request_id = ++request_id_;
    m.hold = hold_index_;
    m.write = false;
    m.fenced = world_.config().fencing && behaviour_ != behaviour::skips_fencing;
    m.token = m.fenced ? fence_ : 0;
    world_.send_resource(id_, std::move(m));
    job_due_ms_ = now_ms() + world_.params().job_timeout_ms;
}

void client::handle_resource_reply(const message& m) {
    if (m.request_id != request_id_) return;  // the job gave up on it already
    if (job_ == job::reading) {
        if (!m.accepted) {
            world_.note_client(id_, "read refused by the resource: the job is given up");
            finish_job();
            return;
        }
        read_value_ = m.value;
        reach(point::read_done);
        if (paused()) {
            pending_ = step::start_work;
            return;
        }
        start_work();
    } else if (job_ == job::writing) {
        finish_job();
    }
}

void client::start_work() {
    job_ = job::working;
    job_due_ms_ = now_ms() + rng_.between(world_.params().work_ms_min, world_.params().work_ms_max);
}

void client::check_and_write() {
    const bool believes = held_now() || behaviour_ == behaviour::ignores_validity;
    if (!believes) {
        world_.note_client(id_, "held() is false: the write is not sent");
        finish_job();
        return;
    }
    check_us_ = now_us();
    reach(point::checked);
    if (paused()) {
        pending_ = step::send_write;
        return;
    }
    send_write();
}

void client::send_write() {
    job_ = job::writing;
    message m;
    m.kind = message_kind::resource_request;
    m.request_id = ++request_id_;
    m.hold = hold_index_;
    m.write = true;
    m.fenced = world_.config().fencing && behaviour_ != behaviour::skips_fencing;
    m.token = m.fenced ? fence_ : 0;
    m.value = read_value_ - 1;
    world_.send_resource(id_, std::move(m));
    if (now_us() > check_us_) world_.record_action(id_, hold_index_, check_us_, now_us());
    job_due_ms_ = now_ms() + world_.params().job_timeout_ms;
    reach(point::write_sent);
}

void client::finish_job() {
    job_due_ms_ = no_deadline_ms;
    if (behaviour_ == behaviour::never_releases && holding_) {
        job_ = job::keeping;
        return;
    }
    if (holding_) {
        const std::int64_t end = behaviour_ == behaviour::ignores_validity
                                     ? now_us()
                                     : std::min(now_us(), validity_end_us());
        close_hold(end, hold_end::released);
    }
    job_ = job::releasing;
    const errc code = lock_.release(now_ms());
    if (code == errc::not_held) {
        think();
    } else if (code != errc::ok) {
        anomaly("release", code);
        think();
    }
    reach(point::release_called);
    drain();
}

void client::think() {
    job_ = job::thinking;
    job_due_ms_ = now_ms() + rng_.between(world_.params().think_ms_min, world_.params().think_ms_max);
}

void client::close_hold(std::int64_t end_us, hold_end why) {
    hold_record& h = world_.hold(hold_slot_);
    h.end_us = std::max(h.start_us, end_us);
    h.end = why;
    holding_ = false;
}

// The true instant the client's monotonic clock reaches the hold's validity end.
std::int64_t client::validity_end_us() const noexcept {
    const hold_record& h = world_.hold(hold_slot_);
    return clocks_.mono.true_us_at_ms(h.valid_until_ms, h.start_us);
}

void client::reach(point p) {
    const std::size_t index = static_cast<std::size_t>(p);
    points_[index] = static_cast<std::uint16_t>(points_[index] + 1);
    world_.reach_point(id_, p, points_[index]);
}

}  // namespace edgelock::sim
