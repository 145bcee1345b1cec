// SPDX-License-Identifier: Apache-2.0
// Fuzzes the lock state machine with a sequence of calls and replies read from the input:
// configure once (fair or not), then acquire, release, write_request, on_reply (any reply a
// server or a broken one could send), on_io_error, on_timer, on_wake and the caller's clock
// moving (sometimes backwards). After every call it checks the contract's hard rules:
//   - no call produces more than two events (events_per_call_max);
//   - held(now) is never true at or after the last valid_until an acquired or renewed event
//     reported, nor without a hold, nor after a reading the clock already passed back over;
//   - valid_until_ms() never runs ahead of what the events reported.
// The sanitizers (this target builds with ASan and UBSan) catch the rest.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "edgelock/limits.hpp"
#include "edgelock/lock.hpp"
#include "edgelock/resp_reader.hpp"
#include "fuzz_check.hpp"

namespace {

using edgelock::errc;
using edgelock::event;
using edgelock::event_type;
using edgelock::reply_node;
using edgelock::reply_type;

// The input as a stream of small numbers; zeros once it runs out.
class input {
public:
    input(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
    bool empty() const { return at_ >= size_; }
    std::uint8_t next() { return at_ < size_ ? data_[at_++] : 0; }
    std::uint16_t next16() { return static_cast<std::uint16_t>(next() << 8 | next()); }

private:
    const std::uint8_t* data_;
    std::size_t size_;
    std::size_t at_ = 0;
};

reply_node node_of(reply_type type, std::int64_t integer = 0, std::string_view text = {}) {
    reply_node node;
    node.type = type;
    node.integer = integer;
    node.text = text;
    return node;
}

// Every reply the scripts and WAIT produce, and some they never do.
reply_node any_reply(input& in) {
    static constexpr std::array<std::string_view, 6> fences = {
        "1", "42", "9007199254740993", "9223372036854775807", "0", "01"};
    const std::uint8_t pick = in.next();
    switch (pick % 10) {
        case 0: return node_of(reply_type::nil);
        case 1: return node_of(reply_type::integer, 0);
        case 2: return node_of(reply_type::integer, 1);
        case 3: return node_of(reply_type::integer, static_cast<std::int8_t>(in.next()));
        case 4: return node_of(reply_type::bulk_string, 0, fences[in.next() % fences.size()]);
        case 5:
            return node_of(reply_type::error, 0, "NOSCRIPT No matching script. Please use EVAL.");
        case 6:
            return node_of(reply_type::error, 0, "FENCE_EXHAUSTED the fence counter is at 2^63-1");
        case 7: return node_of(reply_type::error, 0, "ERR something");
        case 8: return node_of(reply_type::simple_string, 0, "OK");
        default: return node_of(reply_type::array);
    }
}

bool configure(edgelock::lock& l, input& in) {
    static constexpr std::array<std::uint8_t, 3> instance_counts = {1, 3, 5};
    edgelock::lock_config config;
    config.name = "fuzz";
    const std::uint8_t flags = in.next();
    config.instances = instance_counts[flags % 3];
    config.fencing = (flags & 4) != 0;
    config.watchdog = (flags & 8) != 0;
    config.replicas_to_wait = static_cast<std::uint8_t>((flags >> 4) % 3);
    config.ttl_ms = 10 + in.next16();
    config.fair = config.instances == 1 && (in.next() & 1) != 0;
    return l.configure(config) == errc::ok;
}

struct checker {
    std::int64_t reported_until = 0;  // the last valid_until of an acquired or renewed event
    bool holding = false;             // acquired (or renewed) and not yet lost or released

    // Drains the events of one call and checks them.
    void after_call(edgelock::lock& l, std::int64_t now) {
        event e;
        std::size_t events = 0;
        while (l.poll_event(e)) {
            ++events;
            switch (e.type) {
                case event_type::acquired:
                case event_type::renewed:
                    holding = true;
                    reported_until = e.valid_until_ms;
                    break;
                case event_type::lost:
                case event_type::released: holding = false; break;
                case event_type::acquire_failed: break;
            }
        }
        EDGELOCK_FUZZ_CHECK(events <= edgelock::events_per_call_max,
                            "more than two events from one call");
        check_held(l, now);
    }

    void check_held(const edgelock::lock& l, std::int64_t now) const {
        if (!l.held(now)) return;
        EDGELOCK_FUZZ_CHECK(holding, "held() without an acquired event");
        EDGELOCK_FUZZ_CHECK(now < reported_until, "held() at or after the reported valid_until");
        EDGELOCK_FUZZ_CHECK(l.valid_until_ms() <= reported_until,
                            "validity extended without an event");
    }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    input in(data, size);
    edgelock::lock l;
    if (!configure(l, in)) return 0;
    checker check;
    std::int64_t now = 1'000'000;
    std::uint8_t token_seed = 0;
    std::array<char, edgelock::request_bytes_max> buffer{};
    for (int step = 0; step < 4096 && !in.empty(); ++step) {
        const std::uint8_t op = in.next();
        const auto instance = static_cast<std::uint8_t>(in.next() % (l.instance_count() + 1));
        // Fuzzed calls may be refused with any code they document, so the codes are dropped
        // with (void): the checker judges the lock by its state and events after each call.
        switch (op % 10) {
            case 0: {
                edgelock::owner_token token{};
                token[0] = ++token_seed;
                (void)l.acquire(now, (in.next() % 4) * 500, token);
                break;
            }
            case 1: (void)l.release(now); break;
            case 2:
                if (instance < l.instance_count() && l.has_request(instance)) {
                    (void)l.write_request(instance, buffer.data(), buffer.size());
                }
                break;
            case 3: (void)l.on_reply(instance, any_reply(in), now); break;
            case 4: (void)l.on_io_error(instance, now); break;
            case 5: (void)l.on_timer(now); break;
            case 6: now += in.next() * 8; break;
            case 7: {
                const std::int64_t deadline = l.next_deadline_ms();
                if (deadline > now && deadline < now + 100'000) now = deadline - (in.next() % 2);
                break;
            }
            case 8: {  // a wake-up: for us, for another waiter, or "look now"
                const std::array<char, edgelock::token_hex_bytes> ours = l.token_hex();
                const std::uint8_t which = in.next() % 3;
                const std::string_view message =
                    which == 0   ? std::string_view(ours.data(), ours.size())
                    : which == 1 ? std::string_view("0123456789abcdef0123456789abcdef")
                                 : std::string_view();
                (void)l.on_wake(now, message);
                break;
            }
            default:
                // The clock steps back now and then (a reset, a wrapped tick): fail closed.
                if (in.next() % 16 == 0) now -= in.next() * 4;
                break;
        }
        check.after_call(l, now);
        for (const std::int64_t later : {now + 1, now + 1000}) check.check_held(l, later);
    }
    return 0;
}
