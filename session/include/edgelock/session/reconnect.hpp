// SPDX-License-Identifier: Apache-2.0
// edgelock session: when a server may be connected to again.
//
// One per server connection. Each failed attempt (a refused or timed-out connect, a handshake
// refused, a connection dropped before it answered anything) doubles the cap of the next
// delay, drawn with full jitter (edgelock/backoff.hpp, the same generator the lock retries
// with); an answered request resets it. Many gateways losing one Redis together thus come
// back spread over the delay instead of in step.
#pragma once

#include <cstdint>

#include "edgelock/backoff.hpp"
#include "edgelock/errc.hpp"
#include "edgelock/limits.hpp"
#include "edgelock/session/limits.hpp"

namespace edgelock::session {

// Connection timing, shared by every transport so they behave alike by default.
struct timing {
    std::int64_t connect_timeout_ms = 2'000;      // resolve, connect and handshake of one attempt
    std::int64_t command_timeout_ms = 2'000;      // the longest wait for one reply
    std::int64_t reconnect_delay_min_ms = 100;    // cap of the first delay
    std::int64_t reconnect_delay_max_ms = 5'000;  // cap of every later one
};

// Returns ok, or invalid_config unless both timeouts lie in [timeout_ms_min, timeout_ms_max]
// and 1 <= reconnect_delay_min_ms <= reconnect_delay_max_ms <= reconnect_delay_ms_limit.
errc check_timing(const timing& t) noexcept;

class reconnect_backoff {
public:
    // Any 64 bits; distinct per connection, so connections of one client spread out too.
    void seed(std::uint64_t bits) noexcept { jitter_.seed(bits); }

    // An attempt failed at now_ms: the next may start at not_before_ms().
    void failed(std::int64_t now_ms, const timing& t) noexcept;
    // The server answered (or a caller wants a fresh try now): the next failure starts again
    // from the shortest delay.
    void reset() noexcept;

    // The next attempt may start now, but the delays keep growing (another sentinel to ask).
    void skip_delay() noexcept { not_before_ms_ = -now_ms_limit; }

    bool may_connect(std::int64_t now_ms) const noexcept { return now_ms >= not_before_ms_; }
    std::int64_t not_before_ms() const noexcept { return not_before_ms_; }
    std::uint32_t failures() const noexcept { return failures_; }

private:
    full_jitter_backoff jitter_;
    std::uint32_t failures_ = 0;
    std::int64_t not_before_ms_ = -now_ms_limit;
};

}  // namespace edgelock::session
