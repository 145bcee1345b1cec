// SPDX-License-Identifier: Apache-2.0
// The simulated Redis (sim/include/edgelock/sim/redis_model.hpp) held to a real redis-server
// 7.0.15: RapidCheck draws sequences of every command the clients, the session and the CLI
// send (conformance_steps.hpp), with pauses between them; each step goes to the model and to
// a real server (a master alone, or a master with a replica when the case draws one, a
// quarter of those with replica-read-only no), and
// their replies are compared (reply_compare.hpp), then the state of every key the steps touch
// (value and remaining TTL), on the master after each step and on the replica at the end.
//
// Time: the servers run on the real clocks; the model is handed the same clock, read at the
// start of each step (its wall clock is this machine's at the case's start plus the steady
// time since). Where the two could disagree only because a step ran a little later on the
// server than in the model, the test keeps away: before a step it waits until no key's expiry
// and no waiter's expiry in a fair lock's line is within expiry_guard_ms of now, it compares
// remaining TTLs and clock readings within bounds, and a step that took longer than
// step_window_max_ms (a loaded machine) makes the case inconclusive (discarded), not failed.
//
// Runs: RC_PARAMS (default below: a fixed seed, 100 cases) and EDGELOCK_CONFORMANCE_STEPS (the
// most steps in a case, default 30). The totals are printed at the end.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "conformance_steps.hpp"
#include "edgelock/sim/redis_model.hpp"
#include "edgelock/testing/redis_process.hpp"
#include "raw_connection.hpp"
#include "reply_compare.hpp"

namespace {

using namespace edgelock::conformance;
using edgelock::sim::node_output;
using edgelock::sim::redis_node;
using edgelock::testing::redis_server;
using clock_type = std::chrono::steady_clock;

// Runs before RapidCheck reads its configuration (on the first property).
const bool rc_params_set = [] {
    setenv("RC_PARAMS", "max_success=100 seed=20261127", 0);
    return true;
}();

constexpr std::int64_t expiry_guard_ms = 15;
constexpr std::int64_t step_window_max_ms = 8;

std::size_t steps_max() {
    const char* text = std::getenv("EDGELOCK_CONFORMANCE_STEPS");
    return text != nullptr ? static_cast<std::size_t>(std::strtoul(text, nullptr, 10)) : 30;
}

std::int64_t system_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

struct totals {
    std::size_t cases = 0;
    std::size_t inconclusive = 0;
    std::size_t steps = 0;
    std::size_t compared = 0;
    std::size_t real_only = 0;
    std::set<std::string> kinds;
};
totals& run_totals() {
    static totals t;
    return t;
}

// A command's name for the totals: the command, its subcommand, or the script it runs.
std::string kind_of(const step& s) {
    if (s.what == action::reconnect) return "(reconnect)";
    if (s.what == action::pause_replica) return "(replica pauses)";
    if (s.what == action::resume_replica) return "(replica resumes)";
    const std::vector<std::string>& args = s.args;
    std::string name = args[0];
    for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if ((name == "SCRIPT" || name == "CONFIG") && args.size() > 1) name += " " + args[1];
    if (name == "CONFIG GET" && args.size() > 2) name += " " + args[2];
    if (name == "EVAL" || name == "EVALSHA") {
        for (int i = 0; i < script_count; ++i) {
            const edgelock::script& s = *script_by_index(i);
            const std::string digest(s.digest.data(), s.digest.size());
            if (args[1] == s.text || edgelock::sim::equals_ignoring_case(args[1], digest)) {
                name += std::string(" ") + script_name(i);
            }
        }
    }
    return name;
}

// The servers, started once: a master alone, and a master with one replica.
struct servers {
    std::unique_ptr<redis_server> single;
    std::unique_ptr<redis_server> master;
    std::unique_ptr<redis_server> replica;
    std::int64_t single_started_ms = 0;
    std::int64_t master_started_ms = 0;
    std::int64_t replica_started_ms = 0;
};
servers* the_servers = nullptr;

class servers_environment : public ::testing::Environment {
public:
    void SetUp() override {
        using edgelock::testing::persistence;
        // A node without persistence, as the model's (persistence::none) is: no AOF, and
        // Redis's default fsync policy (the test servers' own default is "always").
        // No pings from the master to its replica (they move the replication offset, which a
        // WAIT then waits for, at moments the model knows nothing of) and so no time-outs.
        const std::vector<std::string> args = {
            "--appendfsync", "everysec",       "--repl-ping-replica-period",
            "3600",          "--repl-timeout", "7200"};
        servers_.single_started_ms = system_ms();
        servers_.single = std::make_unique<redis_server>(args, persistence::volatile_);
        servers_.master_started_ms = system_ms();
        servers_.master = std::make_unique<redis_server>(args, persistence::volatile_);
        std::vector<std::string> replica_args = args;
        replica_args.insert(replica_args.end(),
                            {"--replicaof", "127.0.0.1", std::to_string(servers_.master->port())});
        servers_.replica_started_ms = system_ms();
        servers_.replica = std::make_unique<redis_server>(replica_args, persistence::volatile_);
        // Online on the master's side: it counts a replica (WAIT) only after its first ack.
        raw_connection master(servers_.master->port());
        const bool linked = edgelock::testing::eventually(
            [&] {
                const std::string info = master.call(encode_request({"INFO", "replication"}));
                return info.find("state=online") != std::string::npos;
            },
            std::chrono::seconds(10));
        if (!linked) throw std::runtime_error("the replica did not connect to its master");
        the_servers = &servers_;
    }
    void TearDown() override {
        const totals& t = run_totals();
        std::printf(
            "conformance: %zu cases (%zu inconclusive), %zu steps: %zu compared with the "
            "model, %zu sent to Redis only; %zu command kinds:",
            t.cases, t.inconclusive, t.steps, t.compared, t.real_only, t.kinds.size());
        for (const std::string& k : t.kinds) std::printf(" [%s]", k.c_str());
        std::printf("\n");
        the_servers = nullptr;
        servers_ = servers{};
    }

private:
    servers servers_;
};

const auto* const environment =
    ::testing::AddGlobalTestEnvironment(new servers_environment);  // gtest owns it

// What a case found.
struct outcome {
    enum class kind { agreed, differed, inconclusive } what = kind::agreed;
    std::string detail;
};

// One case: fresh connections, empty servers and a new model (master, and replica).
class case_runner {
public:
    // `writable`: the replica runs with replica-read-only no.
    case_runner(bool replicated, bool writable);
    ~case_runner();
    case_runner(const case_runner&) = delete;
    case_runner& operator=(const case_runner&) = delete;
    outcome run(const std::vector<step>& steps);

private:
    std::int64_t elapsed_us() const {
        return std::chrono::duration_cast<std::chrono::microseconds>(clock_type::now() - t0_)
            .count();
    }
    std::int64_t wall_ms(std::int64_t at_us) const { return base_wall_ms_ + at_us / 1000; }
    static std::int64_t now_us(std::int64_t at_us) { return 1'000'000 + at_us; }
    redis_node& model_of(std::uint8_t client) {
        return client == replica_client ? replica_ : master_;
    }

    outcome run_step(const step& s, std::size_t index);
    std::string model_call(const step& s, const std::string& bytes, std::int64_t at_us,
                           node_output& out);
    std::string finish_wait(const step& s, std::int64_t end_us, node_output& out);
    void replicate(const node_output& out, std::int64_t at_us);
    void pause_replica();
    std::string compare_wait_while_paused(const step& s, const std::string& model,
                                          const std::string& real, const std::string& difference);
    void resume_replica();
    void reconnect(std::uint8_t client);
    void leave_expiry_boundaries();
    void sync_real_replica();
    outcome compare_keys(redis_node& model, raw_connection& observer);
    std::string master_replication();
    bool compared(const step& s) const;

    bool replicated_;
    redis_server& master_server_;
    redis_node master_{0, edgelock::sim::persistence::none, 0};
    redis_node replica_{1, edgelock::sim::persistence::none, 0};
    std::array<std::unique_ptr<raw_connection>, 4> clients_;
    std::array<std::uint32_t, 4> epochs_{1, 1, 1, 1};
    std::unique_ptr<raw_connection> observer_;
    std::unique_ptr<raw_connection> replica_observer_;
    std::set<std::string> subscribed_;
    bool paused_ = false;         // the real replica stopped, the model's receiving nothing
    bool asked_for_ack_ = false;  // while paused: a WAIT blocked, and so wrote GETACK
    std::vector<std::pair<edgelock::sim::repl_op, std::int64_t>> held_;  // effect, offset
    clock_type::time_point t0_;
    std::int64_t base_wall_ms_ = 0;
};

case_runner::case_runner(bool replicated, bool writable)
    : replicated_(replicated),
      master_server_(replicated ? *the_servers->master : *the_servers->single) {
    raw_connection admin(master_server_.port());
    admin.call(encode_request({"FLUSHALL"}));
    admin.call(encode_request({"SCRIPT", "FLUSH"}));
    if (replicated_) {
        raw_connection replica_admin(the_servers->replica->port());
        replica_admin.call(encode_request({"SCRIPT", "FLUSH"}));
        replica_admin.call(
            encode_request({"CONFIG", "SET", "replica-read-only", writable ? "no" : "yes"}));
        if (writable) replica_.take_writes_as_replica();
        replica_observer_ = std::make_unique<raw_connection>(the_servers->replica->port());
    }
    for (std::uint8_t c = 0; c < clients_.size(); ++c) reconnect(c);
    observer_ = std::make_unique<raw_connection>(master_server_.port());
    t0_ = clock_type::now();
    base_wall_ms_ = system_ms();
    master_.set_started(replicated ? the_servers->master_started_ms
                                   : the_servers->single_started_ms);
    replica_.set_started(the_servers->replica_started_ms);
    if (replicated_) {
        sync_real_replica();
        replica_.follow(master_, now_us(0));
    }
}

case_runner::~case_runner() {
    if (paused_) the_servers->replica->thaw();
}

void case_runner::reconnect(std::uint8_t client) {
    if (client == replica_client && !replicated_) return;
    const std::uint16_t port =
        client == replica_client ? the_servers->replica->port() : master_server_.port();
    clients_[client] = std::make_unique<raw_connection>(port);
    ++epochs_[client];
    if (client == subscriber_client) {
        subscribed_.clear();
    } else {
        model_of(client).drop_connection(client == replica_client ? 0 : client);
    }
}

outcome case_runner::run(const std::vector<step>& steps) {
    ++run_totals().cases;
    for (std::size_t i = 0; i < steps.size(); ++i) {
        outcome o = run_step(steps[i], i);
        if (o.what == outcome::kind::differed) o.detail += " (" + master_replication() + ")";
        if (o.what != outcome::kind::agreed) return o;
    }
    if (!replicated_) return {};
    resume_replica();
    sync_real_replica();
    outcome o = compare_keys(replica_, *replica_observer_);
    if (o.what != outcome::kind::agreed) o.detail = "the replica at the end: " + o.detail;
    return o;
}

// Pub/sub is the world's, the CLI's own commands are not modelled, and PUBLISH counts no
// receivers in the model: docs/SIMULATION.md, "Where the model differs from Redis 7.0.15,
// and why it cannot change a verdict".
bool case_runner::compared(const step& s) const {
    if (s.how == rule::cli_only || s.how == rule::pubsub) return false;
    if (s.how == rule::publish && s.args.size() > 1 && subscribed_.count(s.args[1]) != 0) {
        return false;
    }
    return true;
}

std::string compare_replies(const step& s, const std::string& model, const std::string& real,
                            std::int64_t tolerance_ms) {
    switch (s.how) {
        case rule::pttl: return compare_pttl(model, real, tolerance_ms);
        case rule::role: return compare_role(model, real);
        case rule::info: return compare_info(model, real);
        case rule::time: return compare_time(model, real);
        default: return compare_exact(model, real);
    }
}

// A WAIT that blocked on the master wrote REPLCONF GETACK to the stream, which a paused
// replica has not acknowledged: a later WAIT (after another command on its connection) may
// count fewer replicas on Redis than in the model, which knows no GETACK. Fewer, never more:
// docs/SIMULATION.md, "Where the model differs from Redis 7.0.15, and why it cannot change a
// verdict". Compared then: the server's count at most the model's.
std::string case_runner::compare_wait_while_paused(const step& s, const std::string& model,
                                                   const std::string& real,
                                                   const std::string& difference) {
    const bool asked_before = asked_for_ack_;
    bool real_ok = false;
    bool model_ok = false;
    const std::vector<edgelock::reply_node> r = parse_all(real, real_ok);
    const std::vector<edgelock::reply_node> m = parse_all(model, model_ok);
    if (r.empty() || m.empty() || r[0].type != edgelock::reply_type::integer) return difference;
    if (r[0].integer < std::stoll(s.args[1])) asked_for_ack_ = true;
    if (!asked_before || difference.empty()) return difference;
    return r[0].integer <= m[0].integer ? "" : difference;
}

outcome case_runner::run_step(const step& s, std::size_t index) {
    totals& t = run_totals();
    ++t.steps;
    t.kinds.insert(kind_of(s));
    if (s.sleep_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(s.sleep_ms));
    switch (s.what) {
        case action::reconnect: reconnect(s.client); return {};
        case action::pause_replica: pause_replica(); return {};
        case action::resume_replica: resume_replica(); return {};
        case action::command: break;
    }
    // A paused replica answers nothing, and a long WAIT would wait out its timeout.
    const bool long_wait = is_command(s.args, "WAIT") && s.args[2] != "100";
    if (s.client == replica_client || long_wait) resume_replica();
    if (s.client == replica_client) sync_real_replica();
    leave_expiry_boundaries();
    const bool compare = compared(s);
    const std::string bytes = encode_request(s.args);
    const std::int64_t start_us = elapsed_us();
    node_output out;
    std::string model = compare ? model_call(s, bytes, start_us, out) : std::string();
    const std::string real = clients_[s.client]->call(bytes);
    const std::int64_t end_us = elapsed_us();
    if (s.how == rule::pubsub) {
        if (is_command(s.args, "SUBSCRIBE")) subscribed_.insert(s.args[1]);
        if (is_command(s.args, "UNSUBSCRIBE")) subscribed_.erase(s.args[1]);
    }
    if (!compare) {
        ++t.real_only;
        return {};
    }
    ++t.compared;
    if (model.empty()) model = finish_wait(s, end_us, out);
    if (s.client != replica_client) replicate(out, start_us);
    const std::string where = "step " + std::to_string(index + 1) + " (" + kind_of(s) + ")";
    if (!is_command(s.args, "WAIT") && end_us - start_us > step_window_max_ms * 1000) {
        return {outcome::kind::inconclusive, where + " took too long to be timed"};
    }
    const std::int64_t tolerance_ms = expiry_guard_ms + (end_us - start_us) / 1000 + 2;
    std::string difference = compare_replies(s, model, real, tolerance_ms);
    if (paused_ && is_command(s.args, "WAIT") && s.client != replica_client) {
        difference = compare_wait_while_paused(s, model, real, difference);
    }
    if (!difference.empty()) return {outcome::kind::differed, where + ": " + difference};
    outcome keys = compare_keys(master_, *observer_);
    if (keys.what != outcome::kind::agreed) keys.detail = where + ": " + keys.detail;
    return keys;
}

std::string case_runner::model_call(const step& s, const std::string& bytes, std::int64_t at_us,
                                    node_output& out) {
    const std::uint8_t id = s.client == replica_client ? 0 : s.client;
    model_of(s.client).receive(id, epochs_[s.client], bytes, wall_ms(at_us), now_us(at_us), out);
    for (const node_output::reply& r : out.replies) {
        if (r.client == id) return r.bytes;
    }
    return "";  // a WAIT that blocks
}

// A WAIT the model blocked: the server answered by end_us, so its timeout (or the acks) had
// come by then.
std::string case_runner::finish_wait(const step& s, std::int64_t end_us, node_output& out) {
    const std::uint8_t id = s.client == replica_client ? 0 : s.client;
    const std::int64_t deadline_us = std::max(now_us(end_us), out.wait_deadline_us);
    out.replies.clear();
    model_of(s.client).on_wait_deadline(wall_ms(end_us), deadline_us, out);
    for (const node_output::reply& r : out.replies) {
        if (r.client == id) return r.bytes;
    }
    return "(no reply: still blocked)";
}

// The master's writes reach the model's replica at once and are acknowledged at once (the
// real replica is waited for before anything reads it), unless the replica is paused: then
// they wait for it to resume.
void case_runner::replicate(const node_output& out, std::int64_t at_us) {
    if (!replicated_) return;
    const std::size_t count = out.effects.size();
    for (std::size_t i = 0; i < count; ++i) {
        const std::int64_t offset = master_.offset() - static_cast<std::int64_t>(count - 1 - i);
        held_.emplace_back(out.effects[i], offset);
    }
    if (paused_) return;
    for (const auto& [op, offset] : held_) replica_.apply(op, offset, now_us(at_us));
    held_.clear();
    node_output acks;
    master_.on_ack(1, master_.offset(), wall_ms(at_us), now_us(at_us), acks);
}

// What the master server says of its replication, for a difference's report: a replica the
// case did not make (another test's, at a port reused) would change what WAIT counts.
std::string case_runner::master_replication() {
    const auto fields = info_fields(observer_->call(encode_request({"INFO", "replication"})));
    std::string out;
    for (const char* field : {"role", "connected_slaves", "master_repl_offset"}) {
        const auto found = fields.find(field);
        out += std::string(out.empty() ? "" : " ") + field + ":" +
               (found == fields.end() ? "?" : found->second);
    }
    return "the master server: " + out;
}

// Pauses once the master knows the replica acknowledged everything (the model's replica
// acknowledges at once; a running one only once a second, or when a WAIT asks).
void case_runner::pause_replica() {
    if (!replicated_ || paused_) return;
    // The acknowledgement a WAIT asks for (REPLCONF GETACK) is itself written to the stream,
    // and the answer counts the stream only up to it: a replica has acknowledged every byte
    // only with its next acknowledgement of its own, once a second.
    const bool acknowledged = edgelock::testing::eventually(
        [&] {
            const auto fields =
                info_fields(observer_->call(encode_request({"INFO", "replication"})));
            const auto replica = fields.find("slave0");
            const auto offset = fields.find("master_repl_offset");
            return replica != fields.end() && offset != fields.end() &&
                   replica->second.find(",offset=" + offset->second + ",") != std::string::npos;
        },
        std::chrono::seconds(5));
    if (!acknowledged) throw std::runtime_error("the replica did not acknowledge its master");
    asked_for_ack_ = false;
    the_servers->replica->freeze();
    paused_ = true;
}

void case_runner::resume_replica() {
    if (!paused_) return;
    the_servers->replica->thaw();
    paused_ = false;
    replicate(node_output{}, elapsed_us());
    sync_real_replica();
}

// Waits until no expiry the model holds (a key's, or a waiter's in a fair lock's line: a
// score read from the clock) is within expiry_guard_ms of now, so the model and the server
// see the same keys and waiters live whichever of them reads its clock first.
void case_runner::leave_expiry_boundaries() {
    constexpr std::int64_t clock_score_min = 1'000'000'000'000;  // milliseconds since 2001
    for (;;) {
        const std::int64_t now = wall_ms(elapsed_us());
        std::int64_t until = -1;
        const auto near = [&](std::int64_t when) {
            if (when >= 0 && when + expiry_guard_ms >= now && when - expiry_guard_ms <= now) {
                until = std::max(until, when + expiry_guard_ms + 1);
            }
        };
        for (const redis_node* node : {&master_, &replica_}) {
            for (const edgelock::sim::redis_entry& e : node->data()) {
                near(e.expire_at_ms);
                for (const auto& m : edgelock::sim::decode_zset(e.value)) {
                    if (m.score >= clock_score_min) near(m.score);
                }
            }
        }
        if (until < 0) return;
        std::this_thread::sleep_for(std::chrono::milliseconds(until - now));
    }
}

// Waits until the real replica has applied everything its master wrote.
void case_runner::sync_real_replica() {
    if (!replicated_) return;
    const auto offset = [](raw_connection& c, std::size_t node) {
        bool ok = false;
        const std::string role = c.call(encode_request({"ROLE"}));
        const std::vector<edgelock::reply_node> nodes = parse_all(role, ok);
        return ok && nodes.size() > node ? nodes[node].integer : -1;
    };
    const bool caught_up = edgelock::testing::eventually(
        [&] {
            const std::int64_t master = offset(*observer_, 2);
            return master >= 0 && offset(*replica_observer_, 5) == master;
        },
        std::chrono::seconds(10));
    if (!caught_up) throw std::runtime_error("the replica did not catch up with its master");
}

// The live value the model holds at `key` as GET (or, for a sorted set, ZRANGE 0 -1
// WITHSCORES) answers it, and its remaining TTL as PTTL does.
void expected_state(const redis_node& model, const std::string& key, std::int64_t wall_ms,
                    std::string& value, std::string& pttl) {
    const edgelock::sim::redis_entry* e = model.peek(key, wall_ms);
    if (e == nullptr) {
        value = "$-1\r\n";
        pttl = ":-2\r\n";
        return;
    }
    const std::int64_t ttl = e->expire_at_ms < 0 ? -1 : e->expire_at_ms - wall_ms;
    pttl = ":" + std::to_string(ttl) + "\r\n";
    if (e->value.compare(0, 6, std::string("\0zset\n", 6)) != 0) {
        value = "$" + std::to_string(e->value.size()) + "\r\n" + e->value + "\r\n";
        return;
    }
    std::vector<std::string> items;
    for (const auto& m : edgelock::sim::decode_zset(e->value)) {
        items.push_back(m.member);
        items.push_back(std::to_string(m.score));
    }
    value = "*" + std::to_string(items.size()) + "\r\n";
    for (const std::string& i : items)
        value += "$" + std::to_string(i.size()) + "\r\n" + i + "\r\n";
}

// Read clear of every expiry, as a step starts: the server expires a key up to a step's
// window after the model (its clock is read later), and a step may end at an expiry, as a
// WAIT does at the server's next cron tick (hz 10), up to 100 ms past its timeout. A read
// slower than the guard leaves that room may still cross one: then it is inconclusive.
outcome case_runner::compare_keys(redis_node& model, raw_connection& observer) {
    leave_expiry_boundaries();
    const std::int64_t start_us = elapsed_us();
    std::vector<std::pair<std::string, std::string>> real;
    for (const std::string& key : keys()) {
        std::string value = observer.call(encode_request({"GET", key}));
        if (value.rfind("-WRONGTYPE", 0) == 0) {
            value = observer.call(encode_request({"ZRANGE", key, "0", "-1", "WITHSCORES"}));
        }
        real.emplace_back(value, observer.call(encode_request({"PTTL", key})));
    }
    const std::int64_t took_ms = (elapsed_us() - start_us) / 1000;
    const std::int64_t tolerance_ms = expiry_guard_ms + took_ms + 2;
    const bool timed = took_ms <= expiry_guard_ms - step_window_max_ms;
    for (std::size_t i = 0; i < keys().size(); ++i) {
        std::string value;
        std::string pttl;
        expected_state(model, keys()[i], wall_ms(start_us), value, pttl);
        const bool numbers = keys()[i] == companion_of(edgelock::companion::slots);
        std::string difference =
            numbers ? compare_members(value, real[i].first) : compare_exact(value, real[i].first);
        if (difference.empty()) difference = compare_pttl(pttl, real[i].second, tolerance_ms);
        if (difference.empty()) continue;
        if (!timed) return {outcome::kind::inconclusive, "the keys took too long to be read"};
        return {outcome::kind::differed, "key " + keys()[i] + ": " + difference};
    }
    return {};
}

outcome run_case(bool replicated, const std::vector<step>& steps, bool writable = false) {
    case_runner runner(replicated, writable);
    outcome o = runner.run(steps);
    if (o.what == outcome::kind::inconclusive) ++run_totals().inconclusive;
    // Printed as it happens: RapidCheck runs a case again to print it, and a difference that
    // depends on timing may not come back.
    if (o.what == outcome::kind::differed) std::fprintf(stderr, "differed: %s\n", o.detail.c_str());
    return o;
}

RC_GTEST_PROP(conformance, the_model_answers_every_command_the_clients_send_as_redis_does, ()) {
    const bool replicated = *rc::gen::arbitrary<bool>();
    const bool writable = replicated && *rc::gen::weightedElement<bool>({{3, false}, {1, true}});
    // The size bounds the count of steps only: each step's draws take their whole ranges
    // (RapidCheck narrows inRange at small sizes).
    const auto steps = *rc::gen::resize(
        static_cast<int>(steps_max()),
        rc::gen::container<std::vector<step>>(rc::gen::resize(100, step_gen(replicated))));
    RC_LOG() << (!replicated ? "a master alone"
                 : writable  ? "a master and its replica, replica-read-only no"
                             : "a master and its replica")
             << "\n";
    const outcome o = run_case(replicated, steps, writable);
    if (o.what == outcome::kind::inconclusive) RC_DISCARD(o.detail);
    RC_LOG() << o.detail << "\n";
    RC_ASSERT(o.what == outcome::kind::agreed);
}

step command(std::vector<std::string> args, std::uint8_t client = 0) {
    step s;
    s.how = rule_of(args);
    s.args = std::move(args);
    s.client = client;
    return s;
}

// The two known slips, as fixed cases: SET with EX (a seconds/milliseconds slip the server
// does not see) and NX and GET, and WAIT on a connection that wrote nothing (it counts the
// replicas at once), then on one that wrote.
TEST(conformance, set_nx_ex_get_is_accepted_as_redis_7_accepts_it) {
    const std::string token(32, 'a');
    const outcome o = run_case(false, {command({"SET", "lk", token, "NX", "EX", "1000", "GET"}),
                                       command({"PTTL", "lk"}),
                                       command({"SET", "lk", token, "NX", "EX", "1000", "GET"})});
    EXPECT_EQ(o.detail, "");
}

step replica(action what) {
    step s;
    s.what = what;
    return s;
}

step reconnected(std::uint8_t client) {
    step s;
    s.what = action::reconnect;
    s.client = client;
    return s;
}

TEST(conformance, wait_counts_the_replicas_at_once_on_a_connection_that_wrote_nothing) {
    const std::string token(32, 'a');
    const outcome o = run_case(
        true, {command({"WAIT", "1", "100"}), command({"SET", "lk", token, "NX", "PX", "30000"}),
               command({"WAIT", "1", "5000"}), command({"WAIT", "1", "100"}, 1),
               command({"WAIT", "2", "100"})});
    EXPECT_EQ(o.detail, "");
}

// A replica reports an expired key as missing but leaves it to its master's DEL, and goes on
// applying its master's writes.
TEST(conformance, a_replica_reading_an_expired_key_still_applies_its_masters_writes) {
    const std::string token(32, 'a');
    step pause_long = command({"GET", "other"});
    pause_long.sleep_ms = 120;
    const outcome o = run_case(
        true, {command({"SET", "lk", token, "PX", "40"}), pause_long,
               command({"GET", "lk"}, replica_client), command({"PTTL", "lk"}, replica_client),
               command({"SET", "other", token}), command({"GET", "other"}, replica_client)});
    EXPECT_EQ(o.detail, "");
}

// With replica-read-only no, a replica takes a lock's writes for itself: the SET and the
// acquire script succeed there, WAIT is refused, and the master's next write of the key
// replaces the replica's own (what a client that skipped its ROLE check would hold).
TEST(conformance, a_writable_replica_takes_a_lock_for_itself_until_its_master_writes) {
    const std::string token(32, 'a');
    const std::string other(32, 'b');
    const auto& acquire = *script_by_index(0);
    const outcome o = run_case(
        true,
        {command({"SET", "lk", token, "NX", "PX", "30000", "GET"}, replica_client),
         command({"GET", "lk"}, replica_client), command({"PTTL", "lk"}, replica_client),
         command({"WAIT", "1", "100"}, replica_client),
         command({"EVAL", std::string(acquire.text), "1", "other", token, "30000"}, replica_client),
         command({"SET", "lk", other, "PX", "30000"}), command({"GET", "lk"}, replica_client),
         command({"DEL", "lk"}, replica_client), command({"GET", "lk"})},
        true);
    EXPECT_EQ(o.detail, "");
}

// A connection's WAIT waits for every write the node made before that connection's last
// command, its own or another's: a read after another client's write waits for that write.
TEST(conformance, wait_after_a_read_waits_for_the_writes_before_it) {
    const std::string token(32, 'a');
    const outcome o = run_case(
        true, {replica(action::pause_replica), command({"WAIT", "1", "100"}, 1),
               command({"SET", "lk", token, "NX", "PX", "30000"}), command({"WAIT", "1", "100"}, 1),
               command({"GET", "lk"}, 1), command({"WAIT", "1", "100"}, 1), reconnected(1),
               command({"WAIT", "2", "100"}, 1), replica(action::resume_replica),
               command({"WAIT", "1", "100"}, 1)});
    EXPECT_EQ(o.detail, "");
}

}  // namespace
