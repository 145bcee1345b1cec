// SPDX-License-Identifier: Apache-2.0
#include "edgelock/session/connection.hpp"

#include <algorithm>
#include <cerrno>

#include "edgelock/assert.hpp"
#include "edgelock/session/pubsub.hpp"
#include "edgelock/session/reply_class.hpp"

namespace edgelock::session {

errc connection::setup(const connection_setup& s) noexcept {
    const bool sentinel = s.sentinel_count > 0;
    if (s.kind == connection_kind::sentinel)
        return errc::invalid_config;  // a step, not a kind of connection
    if (!sentinel && (s.node == nullptr || s.kind == connection_kind::watch))
        return errc::invalid_config;
    if (sentinel &&
        (s.sentinels == nullptr || s.sentinel_count > sentinels_max || s.master_name.empty())) {
        return errc::invalid_config;
    }
    if (sentinel && s.kind != connection_kind::watch && s.master == nullptr)
        return errc::invalid_config;
    if (s.in_flight_storage == nullptr || s.in_flight_capacity < handshake_steps_max)
        return errc::invalid_config;
    if (check_timing(s.times) != errc::ok) return errc::invalid_config;
    if (!master_name_.assign(s.master_name)) return errc::invalid_config;
    kind_ = s.kind;
    node_address_ = s.node;
    sentinels_ = s.sentinels;
    sentinel_count_ = s.sentinel_count;
    sentinel_index_ = 0;
    sentinels_tried_ = 0;
    if (s.master != nullptr) discovered_ = *s.master;
    times_ = s.times;
    backoff_.seed(s.seed);
    storage_ = s.in_flight_storage;
    capacity_ = s.in_flight_capacity;
    last_error_ = failure{};
    attempts_finished_ = 0;
    read_node_ = s.read_node && s.kind == connection_kind::lock_traffic;
    refuse_evicting_ = s.refuse_evicting;
    refuse_replica_ = s.refuse_replica;
    faults_ = s.faults;
    node_ = node_facts{};
    last_host_ = fixed_text<host_bytes_max>{};
    last_port_ = 0;
    last_run_id_ = fixed_text<run_id_bytes>{};
    last_durable_ = false;
    last_started_ms_ = 0;
    start_floor_ms_ = -now_ms_limit;
    reset();
    return errc::ok;
}

void connection::reset() noexcept {
    state_ = connection_state::idle;
    head_ = 0;
    count_ = 0;
    go_to_master_ = false;
    to_announced_ = false;
    announced_attempt_ = false;
    reconnect_now_ = false;
    asking_sentinel_ = false;
    attempt_deadline_ms_ = no_deadline_ms;
    wait_hold_ = wait_hold::none;
    backoff_.reset();
}

void connection::retry_now() noexcept {
    if (state_ == connection_state::idle) backoff_.skip_delay();
}

bool connection::follow_switch(const node_address& from, const node_address& to,
                               std::int64_t now) noexcept {
    if (!via_sentinels() || !reaches_master() || serves(to)) return false;
    if (ready() && !asking_sentinel_ && !address().same_node(from)) return false;
    announced_ = discovered_;  // the master's credentials and db
    announced_.host = to.host;
    announced_.port = to.port;
    announced_.tls = sentinels_[0].tls;  // as start() sets it after asking a sentinel
    to_announced_ = true;
    announced_until_ms_ = now + times_.connect_timeout_ms;
    retry_now();
    if (state_ == connection_state::idle || state_ == connection_state::closing) return false;
    close(failure::of(transport_errc::master_changed), now, true);
    return true;
}

const node_address* connection::start(std::int64_t now) noexcept {
    if (state_ != connection_state::idle) return nullptr;
    announced_attempt_ = !go_to_master_ && announced_at(now);
    if (announced_attempt_) discovered_ = announced_;
    to_announced_ = false;
    if (go_to_master_ || announced_attempt_) {
        go_to_master_ = false;
        asking_sentinel_ = false;
        address_ = &discovered_;
    } else {
        if (!backoff_.may_connect(now)) return nullptr;
        asking_sentinel_ = via_sentinels();
        address_ =
            asking_sentinel_ ? &sentinels_[sentinel_index_ % sentinel_count_] : node_address_;
        // The master a sentinel names is reached as that sentinel is: a deployment whose
        // sentinels speak TLS runs its nodes with TLS too (Redis's tls-replication).
        if (asking_sentinel_) discovered_.tls = address_->tls;
    }
    state_ = connection_state::connecting;
    tls_handshaking_ = false;
    attempt_deadline_ms_ = now + times_.connect_timeout_ms;
    return address_;
}

void connection::on_tls_handshake() noexcept {
    EDGELOCK_ASSERT(state_ == connection_state::connecting);
    tls_handshaking_ = true;
}

std::size_t connection::on_connected(std::int64_t now, char* out, std::size_t capacity) noexcept {
    EDGELOCK_ASSERT(state_ == connection_state::connecting);
    handshake_request request;
    request.kind = asking_sentinel_ && reaches_master() ? connection_kind::sentinel : kind_;
    request.to = address_;
    request.master_name = master_name_.view();
    request.check_role = via_sentinels();
    request.read_node = read_node_ && request.kind == connection_kind::lock_traffic;
    const handshake_write written = write_handshake(request, out, capacity);
    if (written.code != errc::ok) {
        begin_closing(failure::of(errc::invalid_config), now);
        return 0;
    }
    for (std::uint8_t i = 0; i < written.plan.count; ++i) {
        push(
            in_flight{in_flight::internal, static_cast<std::uint32_t>(written.plan.steps[i]), now});
    }
    state_ = connection_state::handshaking;
    heard_ = false;
    return written.size;
}

bool connection::track(std::uint32_t owner, std::uint32_t tag, std::int64_t now) noexcept {
    EDGELOCK_ASSERT(accepts_requests());
    EDGELOCK_ASSERT(owner != in_flight::internal);
    if (count_ == capacity_) return false;
    push(in_flight{owner, tag, now});
    return true;
}

bool connection::track_asking(std::int64_t now) noexcept {
    EDGELOCK_ASSERT(ready());
    if (count_ == capacity_) return false;
    push(in_flight{in_flight::internal, static_cast<std::uint32_t>(handshake_step::asking), now});
    return true;
}

routed_reply connection::on_reply(const reply_node* nodes, std::size_t count,
                                  std::int64_t now) noexcept {
    EDGELOCK_ASSERT(state_ == connection_state::handshaking || state_ == connection_state::ready);
    EDGELOCK_ASSERT(count >= 1);
    heard_ = true;
    if (kind_ == connection_kind::subscriber && state_ == connection_state::ready &&
        parse_pubsub(nodes, count).kind == pubsub_kind::message) {
        answered_ = true;
        return {routed_reply::kind::message, {}};  // answers no command: nothing is popped
    }
    if (count_ == 0) {
        if (kind_ == connection_kind::watch && state_ == connection_state::ready)
            return on_message(nodes, count);
        begin_closing(failure::of(errc::unexpected_reply), now);  // a reply nobody asked for
        return {};
    }
    const in_flight entry = pop();
    if (entry.owner == in_flight::internal) return on_handshake_reply(entry, nodes, count, now);
    const reply_verdict verdict = classify(nodes[0]);
    if (verdict.what != reply_class::answer) {
        begin_closing(failure::of(verdict.reason), now);
    } else if (!answered_) {
        answered_ = true;  // a node that serves requests: its next failure starts afresh
        backoff_.reset();
    }
    return {routed_reply::kind::answer, entry};
}

routed_reply connection::on_handshake_reply(const in_flight& entry, const reply_node* nodes,
                                            std::size_t count, std::int64_t now) noexcept {
    const auto step = static_cast<handshake_step>(entry.tag);
    const failure refused = check_handshake_reply(step, nodes, count, discovered_);
    if (refused) {
        begin_closing(refused, now);
        return {};
    }
    read_node_reply(step, nodes, count, now);
    const bool last = count_ == 0 || front().owner != in_flight::internal;
    if (last && state_ == connection_state::handshaking) return handshake_done(now);
    return {};
}

routed_reply connection::handshake_done(std::int64_t now) noexcept {
    if (asking_sentinel_ && reaches_master()) {
        // The sentinel named the master: close this connection and connect to it at once,
        // within a connect timeout of its own.
        go_to_master_ = true;
        begin_closing(failure{}, now);
        return {};
    }
    if (read_node_ && refuse_replica_ && node_.role.view() == "slave") {
        begin_closing(failure::of(transport_errc::not_master), now);
        return {};
    }
    if (read_node_ && refuse_evicting_ && node_.may_evict()) {
        begin_closing(failure::of(transport_errc::evicting_node), now);
        return {};
    }
    state_ = connection_state::ready;
    attempt_deadline_ms_ = no_deadline_ms;
    ++attempts_finished_;
    sentinels_tried_ = 0;
    answered_ = false;
    if (!read_node_) return {};
    node_read();
    return {routed_reply::kind::node_read, {}};
}

void connection::read_node_reply(handshake_step step, const reply_node* nodes, std::size_t count,
                                 std::int64_t now) noexcept {
    if (step == handshake_step::node_info) {
        node_ = parse_info(nodes[0].text);
        node_read_ms_ = now;
    } else if (step == handshake_step::fsync_policy) {
        node_.fsync = parse_fsync_policy(nodes, count);
    }
}

// The node's start as the locks are told it. A run_id that changed since the last reading
// from the same host and port is a restart (a failover's new master is another node):
//   - what the restart kept is the old process's to say: durable only if that one was too;
//   - the new process counts from this reading at the earliest, for as long as it runs (a
//     long uptime there is another node behind the address, which never had our keys).
// The same process read again gives an estimate at or after its true start, as every one
// does (node_start_of): the earliest so far is kept, so a reconnect never moves it later.
void connection::node_read() noexcept {
    const bool same_node = last_host_ == address_->host && last_port_ == address_->port;
    const bool known = same_node && !last_run_id_.empty() && !node_.run_id.empty();
    const bool restarted = known && last_run_id_ != node_.run_id;
    started_ = node_start_of(node_, node_read_ms_, restarted);
    if (restarted) {
        started_.durable = started_.durable && last_durable_;
        start_floor_ms_ = started_.started_ms;
    } else if (known) {
        started_.started_ms =
            std::max(start_floor_ms_, std::min(started_.started_ms, last_started_ms_));
    } else {
        start_floor_ms_ = -now_ms_limit;
    }
    last_host_ = address_->host;
    last_port_ = address_->port;
    last_run_id_ = node_.run_id;
    last_durable_ = node_.durable();
    last_started_ms_ = started_.started_ms;
}

routed_reply connection::on_message(const reply_node* nodes, std::size_t count) noexcept {
    answered_ = true;
    switched_ = discovered_;
    if (!parse_switch_master(nodes, count, master_name_.view(), switched_, &switched_from_))
        return {};
    return {routed_reply::kind::master_switched, {}};
}

void connection::on_io_error(failure why, std::int64_t now) noexcept {
    if (state_ == connection_state::idle || state_ == connection_state::closing) return;
    const bool dropped =
        why == failure::of(transport_errc::connection_closed) || why == failure::system(ECONNRESET);
    if (dropped && state_ == connection_state::handshaking && !heard_ && !address_->tls) {
        why = failure::of(transport_errc::closed_before_reply);
    }
    begin_closing(why, now);
}

void connection::on_timer(std::int64_t now) noexcept {
    if (wait_hold_ == wait_hold::held && now >= wait_held_until_ms_) wait_hold_ = wait_hold::over;
    const bool attempting =
        state_ == connection_state::connecting || state_ == connection_state::handshaking;
    if (attempting && now >= attempt_deadline_ms_) {
        begin_closing(failure::of(attempt_timeout()), now);
    } else if (state_ == connection_state::ready && count_ > 0 &&
               now >= front().sent_ms + times_.command_timeout_ms) {
        begin_closing(failure::of(transport_errc::command_timeout), now);
    }
}

// Which step the attempt's deadline caught: a connection that is up but silent is not an
// unreachable node, and reads differently to whoever looks for the fault.
transport_errc connection::attempt_timeout() const noexcept {
    if (state_ == connection_state::handshaking) return transport_errc::handshake_timeout;
    return tls_handshaking_ ? transport_errc::tls_handshake_timeout
                            : transport_errc::connect_timeout;
}

void connection::close(failure why, std::int64_t now, bool reconnect_now) noexcept {
    if (state_ == connection_state::idle || state_ == connection_state::closing) return;
    begin_closing(why, now);
    reconnect_now_ = reconnect_now;
}

void connection::begin_closing(failure why, std::int64_t now) noexcept {
    (void)now;
    EDGELOCK_ASSERT(state_ != connection_state::idle && state_ != connection_state::closing);
    closing_from_ = state_;
    closing_why_ = why;
    state_ = connection_state::closing;
    attempt_deadline_ms_ = no_deadline_ms;
}

connection_end connection::finish_close(std::int64_t now) noexcept {
    EDGELOCK_ASSERT(state_ == connection_state::closing);
    state_ = connection_state::idle;
    head_ = 0;
    wait_hold_ = wait_hold::none;
    const bool was_ready = closing_from_ == connection_state::ready;
    if (go_to_master_) return {false, failure{}};
    // A sentinel that could not be asked, or named no usable master, is reported as such:
    // the user configured sentinels, not the address of one of them. A TLS refusal keeps its
    // cause: it is the client's settings against the sentinels' certificates.
    const bool tls_refused = closing_why_.from == failure::domain::transport &&
                             is_tls(static_cast<transport_errc>(closing_why_.value));
    last_error_ =
        asking_sentinel_ && !tls_refused ? failure::of(transport_errc::no_master) : closing_why_;
    if (!was_ready) ++attempts_finished_;
    bool next_sentinel_now = false;
    const bool announced_failed = announced_attempt_ && !was_ready;
    announced_attempt_ = false;
    if (announced_failed) {
        // The announced master failed us: the sentinels are asked at once, none passed over.
        next_sentinel_now = true;
    } else if (via_sentinels()) {
        // Ask the next sentinel, at once while this round has one left untried: one dead or
        // stale sentinel must not cost a reconnect delay while another can answer.
        ++sentinel_index_;
        next_sentinel_now = !was_ready && ++sentinels_tried_ < sentinel_count_;
        if (!next_sentinel_now) sentinels_tried_ = 0;
    }
    // A connection that served requests is made again at once. Anything else that ends (a
    // failed attempt, or a node that completes the handshake and then drops us without
    // answering anything) waits the reconnect delay, which grows with each; between the
    // sentinels of one round the delay is skipped, but not forgotten.
    if (reconnect_now_) {
        reconnect_now_ = false;
        backoff_.reset();
    } else if (next_sentinel_now) {
        backoff_.skip_delay();
    } else if (was_ready && answered_) {
        backoff_.reset();
    } else {
        backoff_.failed(now, times_);
    }
    return {was_ready, closing_why_};
}

bool connection::holds_wait(std::int64_t now) noexcept {
    switch (wait_hold_) {
        case wait_hold::held:
            if (now < wait_held_until_ms_) return true;
            [[fallthrough]];
        case wait_hold::over: wait_hold_ = wait_hold::none; return false;  // it goes, undrawn
        case wait_hold::none: break;
    }
    if (faults_ == nullptr || !faults_->fire(fault_point::delay_wait)) return false;
    wait_hold_ = wait_hold::held;
    wait_held_until_ms_ =
        now + std::max<std::int64_t>(1, faults_->delay_ms(fault_point::delay_wait));
    return true;
}

std::int64_t connection::next_deadline_ms() const noexcept {
    const std::int64_t deadline = state_deadline_ms();
    return wait_hold_ == wait_hold::held ? std::min(deadline, wait_held_until_ms_) : deadline;
}

std::int64_t connection::state_deadline_ms() const noexcept {
    switch (state_) {
        case connection_state::connecting:
        case connection_state::handshaking: return attempt_deadline_ms_;
        case connection_state::ready:
            return count_ > 0 ? front().sent_ms + times_.command_timeout_ms : no_deadline_ms;
        case connection_state::idle:
            if (go_to_master_) return no_deadline_ms;
            return backoff_.failures() > 0 ? backoff_.not_before_ms() : no_deadline_ms;
        case connection_state::closing: return no_deadline_ms;
    }
    return no_deadline_ms;
}

void connection::push(const in_flight& entry) noexcept {
    EDGELOCK_ASSERT(count_ < capacity_);
    storage_[(head_ + count_) % capacity_] = entry;
    ++count_;
}

in_flight connection::pop() noexcept {
    EDGELOCK_ASSERT(count_ > 0);
    const in_flight entry = storage_[head_];
    head_ = (head_ + 1) % capacity_;
    --count_;
    return entry;
}

}  // namespace edgelock::session
