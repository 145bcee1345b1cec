// SPDX-License-Identifier: Apache-2.0
// uplink_store: fencing a counting lock, with edgelock's blocking client.
//
//   uplink_store [redis://127.0.0.1:6379] [--one-highest] [--no-fencing]
//
// "uplink:site-7" is a semaphore of two permits: at most two gateways of a site download over
// its one uplink at once. Each holder's fence token names its permit (token % 2), and the
// download store keeps the highest token it has accepted per permit, refusing a lower one of
// the same permit: a permit passes from holder to holder as a lock does.
//
// Gateway A takes a permit and pauses for longer than its lease (a frozen VM: not even its
// renewal runs). Gateway B holds the other permit through a long download. A's lease ends,
// gateway C takes A's permit with a higher token and records its download. B, still holding
// its permit, records its own: accepted, although C's token is higher (another permit). Then
// A wakes and records, believing it still holds: refused, C's token of its permit is higher.
// With --one-highest the store keeps one highest token for all permits and refuses B, a live
// holder; with --no-fencing it accepts A's stale write.
//
// Exits 0 when B's and C's writes were accepted and A's refused, 1 otherwise.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <string>
#include <thread>

#include "app_store.hpp"
#include "edgelock/blocking_lock.hpp"
#include "edgelock/lock.hpp"

namespace {

using namespace std::chrono_literals;

constexpr std::uint16_t permits = 2;
const std::string name = "uplink:site-7";
const std::string store = "uplink:site-7:downloads";

// Records `gateway`'s download with its token unless the store has seen a higher token of the
// same permit (ARGV[3] "check"), or of any permit ("one": the wrong rule), or trusts it
// ("trust"). Tokens compare as decimal strings, shorter first: exact past 2^53, where a Lua
// number is not. Returns 1 (recorded) or 0.
const std::string fenced_record =
    "local function below(a, b) return #a < #b or (#a == #b and a < b) end\n"
    "local field = ARGV[3] == 'one' and 'highest' or ('highest:' .. ARGV[4])\n"
    "local seen = redis.call('HGET', KEYS[1], field) or '0'\n"
    "if ARGV[3] ~= 'trust' and below(ARGV[1], seen) then return 0 end\n"
    "if below(seen, ARGV[1]) then redis.call('HSET', KEYS[1], field, ARGV[1]) end\n"
    "redis.call('HSET', KEYS[1], 'last', ARGV[2])\n"
    "return 1\n";

edgelock::blocking::lock_options semaphore_options(const std::string& url) {
    edgelock::blocking::lock_options options;
    options.name = name;
    options.instances = {url};
    options.ttl_ms = 5'000;
    options.fencing = true;
    options.permits = permits;
    return options;
}

struct gateway {
    const char* label;
    edgelock::blocking::lock lock;
    edgelock::blocking::hold hold;
};

bool take(gateway& g, const edgelock::blocking::lock_options& options) {
    if (g.lock.open(options) || g.lock.acquire(5s, &g.hold)) return false;
    std::printf("gateway %s holds permit %u of %s, fence token %lld\n", g.label,
                unsigned{edgelock::permit_of(g.hold.fence, permits)}, name.c_str(),
                static_cast<long long>(g.hold.fence));
    return true;
}

bool record(app_store& db, const gateway& g, const std::string& rule) {
    const std::string permit = std::to_string(edgelock::permit_of(g.hold.fence, permits));
    const bool written =
        db.eval(fenced_record, store, {std::to_string(g.hold.fence), g.label, rule, permit}) == 1;
    std::printf("gateway %s records its download with token %lld: %s\n", g.label,
                static_cast<long long>(g.hold.fence), written ? "accepted" : "REFUSED");
    return written;
}

}  // namespace

int main(int argc, char** argv) {
    std::signal(SIGPIPE, SIG_IGN);  // a reset Redis connection is an error code, not the end
    std::string url = "redis://127.0.0.1:6379";
    std::string rule = "check";
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--one-highest") rule = "one";
        else if (arg == "--no-fencing") rule = "trust";
        else url = arg;
    }
    app_store db(url);
    db.del(store);

    gateway a{"A", {}, {}};
    edgelock::blocking::lock_options frozen = semaphore_options(url);
    frozen.ttl_ms = 1'000;
    frozen.watchdog = false;  // A is frozen: its renewal does not run either
    gateway b{"B", {}, {}};
    if (!take(a, frozen) || !take(b, semaphore_options(url))) return 1;
    const auto a_wakes = std::chrono::steady_clock::now() + 1500ms;
    gateway c{"C", {}, {}};
    if (!take(c, semaphore_options(url))) return 1;  // waits for A's lease to end
    const bool c_written = record(db, c, rule);
    const bool b_written = record(db, b, rule);
    std::this_thread::sleep_until(a_wakes);
    const bool a_written = record(db, a, rule);
    for (gateway* g : {&a, &b, &c}) (void)g->lock.release();  // A's returns expired

    const bool ok = b_written && c_written && !a_written;
    std::printf(
        "uplink_store: %s: the live holders' writes were %s; the paused holder's late "
        "write was %s\n",
        ok ? "OK" : "FAILED", b_written && c_written ? "accepted" : "NOT all accepted",
        a_written ? "NOT refused" : "refused");
    return ok ? 0 : 1;
}
