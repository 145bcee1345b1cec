// SPDX-License-Identifier: Apache-2.0
// Property tests of two locks racing over one punctual in-test Redis per instance (the header
// comment of lock_model_test.cpp says what each property checks).
#include "lock_model_support.hpp"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

namespace {

using namespace lock_model;

// ---- two locks over a punctual in-test Redis -------------------------------------------------

struct stored_reply {
    reply_type type = reply_type::nil;
    std::int64_t integer = 0;
    std::string text;
};

stored_reply stored_integer(std::int64_t value) {
    stored_reply r;
    r.type = reply_type::integer;
    r.integer = value;
    return r;
}

stored_reply stored_text(reply_type type, std::string_view text) {
    stored_reply r;
    r.type = type;
    r.text = std::string(text);
    return r;
}

// One Redis instance: keys expire exactly on time (present while now < expiry), the four
// scripts run by the semantics scripts.hpp documents, and EVALSHA of a script it has not seen
// as EVAL since the last flush gets NOSCRIPT. SET key value NX PX ttl GET answers the value it
// found (nil when the key was free, and only then sets it), as Redis 7.0 does; an instance
// playing an older Redis answers it "ERR syntax error" and changes nothing.
class punctual_redis {
public:
    stored_reply execute(const wire_request& r, std::int64_t now_ms) {
        // Replication is not modelled: both replicas always have everything.
        if (r.kind == req_kind::replicate) return stored_integer(2);
        if (r.native) return set_nx_get(r, now_ms);
        const auto kind = static_cast<std::size_t>(r.kind);
        if (!r.eval && !loaded_[kind]) return stored_text(reply_type::error, noscript_text);
        loaded_[kind] = true;
        entry* lock = live(r.keys[0], now_ms);
        const bool ours = lock != nullptr && lock->value == r.token;
        switch (r.kind) {
            case req_kind::acquire:
                if (lock == nullptr) {
                    keys_[r.keys[0]] = entry{r.token, now_ms + r.number};
                } else if (!ours) {
                    return stored_reply{};
                } else {
                    lock->expires_at_ms = now_ms + r.number;
                }
                if (r.keys.size() > 1) {
                    // The counter comes back as GET's string.
                    stored_reply fence;
                    fence.type = reply_type::bulk_string;
                    fence.text = std::to_string(++counters_[r.keys[1]]);
                    return fence;
                }
                return stored_integer(0);
            case req_kind::raise:
                if (!ours) return stored_integer(0);
                counters_[r.keys[1]] = std::max(counters_[r.keys[1]], r.number);
                return stored_integer(1);
            case req_kind::renew:
                if (!ours) return stored_integer(0);
                lock->expires_at_ms = now_ms + r.number;
                return stored_integer(1);
            case req_kind::release:
                if (!ours) return stored_integer(0);
                keys_.erase(r.keys[0]);
                return stored_integer(1);
            case req_kind::replicate: break;
        }
        return stored_reply{};
    }

    void flush_scripts() { loaded_.fill(false); }
    void load_scripts() { loaded_.fill(true); }
    bool before_seven() const { return before_seven_; }
    void set_before_seven(bool before) { before_seven_ = before; }

    // When `key` stops holding `token`, if nothing else touches it; now_ms when it does not.
    std::int64_t holds_until_ms(std::string_view key, const std::string& token,
                                std::int64_t now_ms) {
        const entry* e = live(std::string(key), now_ms);
        return e != nullptr && e->value == token ? e->expires_at_ms : now_ms;
    }

private:
    struct entry {
        std::string value;
        std::int64_t expires_at_ms = 0;
    };

    stored_reply set_nx_get(const wire_request& r, std::int64_t now_ms) {
        if (before_seven_) return stored_text(reply_type::error, syntax_error_text);
        const entry* found = live(r.keys[0], now_ms);
        if (found != nullptr) return stored_text(reply_type::bulk_string, found->value);
        keys_[r.keys[0]] = entry{r.token, now_ms + r.number};
        return stored_reply{};
    }

    entry* live(const std::string& key, std::int64_t now_ms) {
        const auto found = keys_.find(key);
        if (found == keys_.end()) return nullptr;
        if (now_ms >= found->second.expires_at_ms) {
            keys_.erase(found);
            return nullptr;
        }
        return &found->second;
    }

    std::map<std::string, entry> keys_;
    std::map<std::string, std::int64_t> counters_;
    std::array<bool, req_kinds> loaded_{};
    bool before_seven_ = false;
};

enum class race_action : std::uint8_t {
    acquire,
    release,
    execute,
    deliver,
    settle,
    disconnect,
    advance,
    approach,
    timer,
    flush_scripts,
    swap_server
};

struct race_step {
    race_action action = race_action::timer;
    std::uint8_t who = 0;
    std::uint8_t instance = 0;
    std::int64_t amount = 0;
};

std::ostream& operator<<(std::ostream& os, const race_step& step) {
    static constexpr const char* names[] = {"acquire", "release",       "execute",    "deliver",
                                            "settle",  "disconnect",    "advance",    "approach",
                                            "timer",   "flush_scripts", "swap_server"};
    return os << names[static_cast<int>(step.action)] << "(lock " << int{step.who} << ", instance "
              << int{step.instance} << ", " << step.amount << ")";
}

rc::Gen<race_step> gen_race_step(const setup& s) {
    return rc::gen::exec([s] {
        race_step step;
        step.action = *rc::gen::weightedElement<race_action>({{3, race_action::acquire},
                                                              {2, race_action::release},
                                                              {8, race_action::execute},
                                                              {8, race_action::deliver},
                                                              {3, race_action::settle},
                                                              {1, race_action::disconnect},
                                                              {5, race_action::advance},
                                                              {3, race_action::approach},
                                                              {1, race_action::timer},
                                                              {1, race_action::flush_scripts},
                                                              {1, race_action::swap_server}});
        step.who = *rc::gen::inRange<std::uint8_t>(0, 2);
        step.instance = *rc::gen::inRange<std::uint8_t>(0, s.instances);
        // Clock steps: mostly a fraction of one round's reply budget, sometimes up to two
        // leases. The amount also picks the acquire wait and how much of a dropped
        // connection's traffic reached Redis.
        step.amount = *rc::gen::weightedOneOf<std::int64_t>(
            {{6, rc::gen::inRange<std::int64_t>(0, s.attempt_timeout_ms() / 3 + 1)},
             {1, rc::gen::inRange<std::int64_t>(0, 2 * s.ttl_ms)}});
        return step;
    });
}

// Which instances start as a Redis before 7.0 (SET NX PX GET is a syntax error there).
using server_versions = std::array<bool, edgelock::instances_max>;

rc::Gen<server_versions> gen_before_seven() {
    return rc::gen::exec([] {
        server_versions before_seven{};
        for (bool& before : before_seven)
            before = *rc::gen::weightedElement<bool>({{3, false}, {1, true}});
        return before_seven;
    });
}

class race {
public:
    race(const setup& s, const server_versions& before_seven) : s_(s) {
        for (contender& c : contenders_) {
            if (c.lock.configure(s.config()) != errc::ok) fail("configure failed");
        }
        for (std::size_t i = 0; i < redis_.size(); ++i) {
            redis_[i].load_scripts();
            redis_[i].set_before_seven(before_seven[i]);
        }
    }

    race(const race&) = delete;
    race& operator=(const race&) = delete;

    void apply(const race_step& step) {
        trace_.push_back({now_ms_, step});  // formatted only when a check fails
        if (trace_.size() > trace_lines_max) trace_.pop_front();
        contender& c = contenders_[step.who];
        switch (step.action) {
            case race_action::acquire: {
                if (c.lock.state() != lock_state::idle && c.lock.state() != lock_state::lost)
                    return;
                const std::int64_t wait = step.amount % 3 == 0 ? 0 : step.amount;
                const auto token = make_token(static_cast<std::uint64_t>(step.amount), ++serial_);
                expect(c.lock.acquire(now_ms_, wait, token) == errc::ok, "acquire refused");
                break;
            }
            case race_action::release: {
                // Mostly releases of a hold; a quarter cancel whatever is running.
                const bool holding =
                    c.lock.state() == lock_state::held || c.lock.state() == lock_state::lost;
                if (!holding && step.amount % 4 != 0) return;
                const errc code = c.lock.release(now_ms_);
                expect(one_of(code, {errc::ok, errc::not_held, errc::invalid_state}),
                       "release code");
                break;
            }
            case race_action::execute: execute_one(step); break;
            case race_action::deliver: deliver_one(step); break;
            case race_action::settle: settle(c); break;
            case race_action::disconnect: disconnect(step); break;
            case race_action::advance: now_ms_ += step.amount; break;
            case race_action::approach: {
                // To just before the earliest deadline: where one lease ends and the other
                // lock may already win.
                const std::int64_t next = std::min(contenders_[0].lock.next_deadline_ms(),
                                                   contenders_[1].lock.next_deadline_ms());
                if (next != edgelock::no_deadline_ms)
                    now_ms_ = std::max(now_ms_, next - 1 - step.amount);
                break;
            }
            case race_action::timer: {
                const std::int64_t next = std::min(contenders_[0].lock.next_deadline_ms(),
                                                   contenders_[1].lock.next_deadline_ms());
                if (next != edgelock::no_deadline_ms) now_ms_ = std::max(now_ms_, next);
                for (contender& each : contenders_) {
                    expect(each.lock.on_timer(now_ms_) == errc::ok, "on_timer refused");
                }
                break;
            }
            case race_action::flush_scripts: redis_[step.instance].flush_scripts(); break;
            case race_action::swap_server: swap_server(step); break;
        }
        pump();
        check();
    }

private:
    struct connection {
        std::deque<wire_request> to_node;
        std::deque<stored_reply> to_client;
    };

    struct contender {
        edgelock::lock lock;
        std::array<connection, edgelock::instances_max> connections;
    };

    // Runs the oldest request of the first non-empty connection from (who, instance) on.
    void execute_one(const race_step& step) {
        for (int k = 0; k < 2 * s_.instances; ++k) {
            const int slot = (step.who * s_.instances + step.instance + k) % (2 * s_.instances);
            contender& c = contenders_[static_cast<std::size_t>(slot / s_.instances)];
            const auto instance = static_cast<std::size_t>(slot % s_.instances);
            connection& l = c.connections[instance];
            if (l.to_node.empty()) continue;
            l.to_client.push_back(redis_[instance].execute(l.to_node.front(), now_ms_));
            l.to_node.pop_front();
            return;
        }
    }

    void deliver_one(const race_step& step) {
        for (int k = 0; k < 2 * s_.instances; ++k) {
            const int slot = (step.who * s_.instances + step.instance + k) % (2 * s_.instances);
            contender& c = contenders_[static_cast<std::size_t>(slot / s_.instances)];
            const auto instance = static_cast<std::uint8_t>(slot % s_.instances);
            connection& l = c.connections[instance];
            if (l.to_client.empty()) continue;
            const stored_reply stored = l.to_client.front();
            l.to_client.pop_front();
            reply_node node;
            node.type = stored.type;
            node.integer = stored.integer;
            node.text = stored.text;
            expect(c.lock.on_reply(instance, node, now_ms_) == errc::ok,
                   "a reply from Redis refused");
            return;
        }
    }

    // A fast network for one lock: every request it has out runs, every reply comes back.
    void settle(contender& c) {
        for (std::uint8_t i = 0; i < s_.instances; ++i) {
            connection& l = c.connections[i];
            while (!l.to_node.empty()) {
                l.to_client.push_back(redis_[i].execute(l.to_node.front(), now_ms_));
                l.to_node.pop_front();
            }
            while (!l.to_client.empty()) {
                const stored_reply stored = l.to_client.front();
                l.to_client.pop_front();
                reply_node node;
                node.type = stored.type;
                node.integer = stored.integer;
                node.text = stored.text;
                expect(c.lock.on_reply(i, node, now_ms_) == errc::ok, "a reply from Redis refused");
            }
        }
    }

    // The connection drops: some of the requests sent reach Redis first, the rest and every
    // unread reply are gone.
    void disconnect(const race_step& step) {
        drop(contenders_[step.who], step.instance, step.amount);
    }

    void drop(contender& c, std::uint8_t instance, std::int64_t amount) {
        connection& l = c.connections[instance];
        const std::size_t reached = static_cast<std::size_t>(amount) % (l.to_node.size() + 1);
        for (std::size_t n = 0; n < reached; ++n) {
            redis_[instance].execute(l.to_node.front(), now_ms_);
            l.to_node.pop_front();
        }
        l.to_node.clear();
        l.to_client.clear();
        expect(c.lock.on_io_error(instance, now_ms_) == errc::ok, "on_io_error refused");
    }

    // A failover or an upgrade puts a server of the other version behind the instance, with
    // every key (replication is not modelled) and no script: both locks' connections drop.
    void swap_server(const race_step& step) {
        drop(contenders_[0], step.instance, step.amount);
        drop(contenders_[1], step.instance, step.amount / 2);
        punctual_redis& redis = redis_[step.instance];
        redis.set_before_seven(!redis.before_seven());
        redis.flush_scripts();
    }

    void pump() {
        std::array<char, edgelock::request_bytes_max> buffer{};
        for (contender& c : contenders_) {
            event e;
            while (c.lock.poll_event(e)) {
                if (e.type != event_type::acquired) continue;
                expect(e.valid_until_ms > now_ms_, "acquired with its validity already over");
                if (!s_.fencing) continue;
                if (e.fence <= last_fence_) {
                    fail("fence " + std::to_string(e.fence) + " handed out after " +
                         std::to_string(last_fence_));
                }
                last_fence_ = e.fence;
            }
            for (std::uint8_t i = 0; i < s_.instances; ++i) {
                while (c.lock.has_request(i)) {
                    const auto written = c.lock.write_request(i, buffer.data(), buffer.size());
                    expect(written.code == errc::ok, "write_request failed");
                    wire_request request;
                    const std::string problem =
                        decode_request(buffer.data(), written.size, request);
                    if (!problem.empty()) fail("undecodable request: " + problem);
                    c.connections[i].to_node.push_back(request);
                }
            }
        }
    }

    void check() {
        const bool first = contenders_[0].lock.held(now_ms_);
        const bool second = contenders_[1].lock.held(now_ms_);
        if (first && second) fail("both locks are held at once");
        // Stronger, and independent of when the clock steps land: a held lock's lease never
        // outlasts its token on a quorum. Keys only expire until the next step, so the
        // token stays on a quorum until the quorum-th latest of its expiry instants.
        for (contender& c : contenders_) {
            if (!c.lock.held(now_ms_)) continue;
            const auto hex = c.lock.token_hex();
            const std::string token(hex.data(), hex.size());
            std::vector<std::int64_t> until;
            for (std::uint8_t i = 0; i < s_.instances; ++i) {
                until.push_back(redis_[i].holds_until_ms(lock_name, token, now_ms_));
            }
            std::sort(until.begin(), until.end(), std::greater<>());
            const std::int64_t quorum_until = until[static_cast<std::size_t>(s_.quorum() - 1)];
            if (c.lock.valid_until_ms() > quorum_until) {
                fail("held until " + std::to_string(c.lock.valid_until_ms()) +
                     " but the token is on a quorum only until " + std::to_string(quorum_until));
            }
        }
    }

    void expect(bool ok, const std::string& what) {
        if (!ok) fail(what);
    }

    [[noreturn]] void fail(const std::string& what) {
        std::ostringstream os;
        os << what << " at t=" << now_ms_ << "\n  setup: " << s_ << "\n  before Redis 7.0:";
        for (std::uint8_t i = 0; i < s_.instances; ++i) os << " " << redis_[i].before_seven();
        os << "\n  steps:";
        for (const auto& [at_ms, step] : trace_) os << "\n    t=" << at_ms << " " << step;
        RC_FAIL(os.str());
        throw property_broken(what);  // not reached: RC_FAIL throws
    }

    setup s_;
    std::array<contender, 2> contenders_{};
    std::array<punctual_redis, edgelock::instances_max> redis_{};
    std::int64_t now_ms_ = 1'000;
    std::uint64_t serial_ = 0;
    std::int64_t last_fence_ = 0;
    std::deque<std::pair<std::int64_t, race_step>> trace_;
};

void run_race(std::uint8_t instances) {
    edgelock::set_assert_handler(&print_assertion);
    const setup s = *gen_setup(instances, 3);
    const server_versions before_seven = *gen_before_seven();
    const auto steps =
        *rc::gen::scale(15.0, rc::gen::container<std::vector<race_step>>(gen_race_step(s)));
    race r(s, before_seven);
    for (const race_step& step : steps) r.apply(step);
}

RC_GTEST_PROP(lock_model_race, one_instance_never_holds_twice, ()) { run_race(1); }
RC_GTEST_PROP(lock_model_race, three_instances_never_hold_twice, ()) { run_race(3); }
RC_GTEST_PROP(lock_model_race, five_instances_never_hold_twice, ()) { run_race(5); }

// A scripted family at the lease boundary, where random schedules rarely go: lock 0 acquires
// while each instance runs its request and answers after random delays (so its SETs happen
// well before it decides), is not renewed, and lock 1 tries at a random instant shortly
// before lock 0's lease ends, over a fast network. Then a few random steps.
std::vector<race_step> boundary_steps(const setup& s) {
    std::vector<race_step> steps;
    race_step step;
    step.action = race_action::acquire;  // amount 0: no wait
    steps.push_back(step);
    struct timed {
        std::int64_t at_ms;
        race_action action;
        std::uint8_t instance;
    };
    std::vector<timed> schedule;
    const std::int64_t budget = s.attempt_timeout_ms();
    for (std::uint8_t i = 0; i < s.instances; ++i) {
        // Both within the attempt's budget, so the attempt can still succeed.
        const std::int64_t run_at = *rc::gen::inRange<std::int64_t>(0, budget / 4);
        const std::int64_t reply_at =
            run_at + *rc::gen::inRange<std::int64_t>(0, budget - budget / 4);
        schedule.push_back({run_at, race_action::execute, i});
        schedule.push_back({reply_at, race_action::deliver, i});
    }
    std::stable_sort(schedule.begin(), schedule.end(),
                     [](const timed& a, const timed& b) { return a.at_ms < b.at_ms; });
    std::int64_t clock = 0;
    for (const timed& t : schedule) {
        step = race_step{};
        step.action = race_action::advance;
        step.amount = t.at_ms - clock;
        steps.push_back(step);
        clock = t.at_ms;
        step = race_step{};
        step.action = t.action;
        step.instance = t.instance;
        steps.push_back(step);
    }
    step = race_step{};
    step.action = race_action::approach;
    step.amount = *rc::gen::inRange<std::int64_t>(0, budget / 4);
    steps.push_back(step);
    step = race_step{};
    step.action = race_action::acquire;
    step.who = 1;
    steps.push_back(step);
    step.action = race_action::settle;
    steps.push_back(step);
    const auto tail =
        *rc::gen::resize(10, rc::gen::container<std::vector<race_step>>(gen_race_step(s)));
    steps.insert(steps.end(), tail.begin(), tail.end());
    return steps;
}

RC_GTEST_PROP(lock_model_race, a_second_lock_never_wins_inside_the_first_ones_lease, ()) {
    edgelock::set_assert_handler(&print_assertion);
    setup s = *gen_setup(*rc::gen::element<std::uint8_t>(1, 3, 5), 0);
    s.watchdog = false;
    const server_versions before_seven = *gen_before_seven();
    const std::vector<race_step> steps = boundary_steps(s);
    race r(s, before_seven);
    for (const race_step& step : steps) r.apply(step);
}

// A scripted family for a retried acquire whose earlier SET landed, which random schedules
// rarely reach (the failed attempt's cleanup normally deletes that key first). Lock 0
// acquires with a wait, without fencing, over Redis 7.0 instances; most run its SET at once,
// but no reply comes back before the attempt's deadline. Its cleanup releases meet a script
// flush on most instances: NOSCRIPT, and not sent again, since the retry's SET follows them
// on the connection. So the retry finds its own token there, set a whole reply budget
// before the retry's lease starts, and must renew it before the instance counts. Then lock 1
// tries shortly before lock 0's lease ends, and a few random steps follow.
std::vector<race_step> retry_steps(const setup& s) {
    std::vector<race_step> steps;
    const auto add = [&steps](race_action action, std::uint8_t who, std::uint8_t instance,
                              std::int64_t amount) {
        steps.push_back({action, who, instance, amount});
    };
    const std::int64_t budget = s.attempt_timeout_ms();
    add(race_action::acquire, 0, 0, 3 * s.ttl_ms + 1);  // not a multiple of 3: a wait
    for (std::uint8_t i = 0; i < s.instances; ++i) {
        if (!*rc::gen::weightedElement<bool>({{3, true}, {1, false}})) continue;
        add(race_action::advance, 0, 0, *rc::gen::inRange<std::int64_t>(0, budget / 4 + 1));
        add(race_action::execute, 0, i, 0);
    }
    for (std::uint8_t i = 0; i < s.instances; ++i) {
        if (*rc::gen::weightedElement<bool>({{3, true}, {1, false}}))
            add(race_action::flush_scripts, 0, i, 0);
    }
    add(race_action::timer, 0, 0, 0);  // the attempt's deadline: it fails and cleans up
    add(race_action::timer, 0, 0, 0);  // the backoff's end: the retry goes out
    add(race_action::advance, 0, 0, *rc::gen::inRange<std::int64_t>(0, budget / 4 + 1));
    // The retry's SETs, then the renews they bring (NOSCRIPT after the flush, then EVAL),
    // then WAIT with replicas to wait for.
    for (int n = 0; n < 4; ++n) add(race_action::settle, 0, 0, 0);
    add(race_action::approach, 0, 0, *rc::gen::inRange<std::int64_t>(0, budget / 4 + 1));
    add(race_action::acquire, 1, 0, 0);
    add(race_action::settle, 1, 0, 0);
    const auto tail =
        *rc::gen::resize(10, rc::gen::container<std::vector<race_step>>(gen_race_step(s)));
    steps.insert(steps.end(), tail.begin(), tail.end());
    return steps;
}

RC_GTEST_PROP(lock_model_race, a_retried_acquire_renews_the_key_its_earlier_set_left, ()) {
    edgelock::set_assert_handler(&print_assertion);
    setup s = *gen_setup(*rc::gen::element<std::uint8_t>(1, 3, 5), 3);
    s.fencing = false;
    s.long_attempt = false;  // with a ttl-long budget the first SETs' keys expire before the retry
    const std::vector<race_step> steps = retry_steps(s);
    race r(s, server_versions{});
    for (const race_step& step : steps) r.apply(step);
}

}  // namespace
