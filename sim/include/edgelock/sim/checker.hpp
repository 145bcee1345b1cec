// edgelock sim: what happened in a run, and the four safety and liveness checks over it.
//
// The world records every hold (from the moment the client learns it acquired the lock to
// the moment it stops believing so), every window in which a client acted on a belief it
// had checked earlier (held() said yes, then the write went out), and every request the
// resource saw. The checks are judged on true time, which no process can read:
//
//   overlap   two clients believed they held the lock at one true instant
//   stale     the resource accepted a write from a holder after it had already served a
//             later holder (the lost update fencing exists to prevent)
//   order     with fencing: tokens of successive holders strictly increase; a holder that
//             began after another one had stopped (lease over, no write still to go out)
//             carries the larger token (holders that overlap are already an overlap)
//   liveness  after the last fault healed, some client acquired the lock again
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace edgelock::sim {

enum class hold_end : std::uint8_t { open, released, lost, expired, run_end };
const char* to_string(hold_end e) noexcept;

struct hold_record {
    std::uint8_t client = 0;
    std::uint32_t index = 0;          // acquisition order across all clients
    std::int64_t start_us = 0;        // the `acquired` event reached the client
    std::int64_t end_us = 0;          // the belief ended (valid while `end` is not open)
    std::int64_t fence = 0;
    std::int64_t valid_until_ms = 0;  // latest validity, on the client's monotonic clock
    hold_end end = hold_end::open;
};

// The client checked held() at check_us and acted on it at send_us: in between it believed
// it held the lock, whatever the lease said by then.
struct action_record {
    std::uint8_t client = 0;
    std::uint32_t hold = 0;
    std::int64_t check_us = 0;
    std::int64_t send_us = 0;
};

struct resource_record {
    std::int64_t at_us = 0;
    std::uint8_t client = 0;
    std::uint32_t hold = 0;
    bool write = false;
    bool fenced = false;
    bool accepted = false;
    std::int64_t token = 0;
    std::int64_t value = 0;
};

struct history {
    std::vector<hold_record> holds;
    std::vector<action_record> actions;
    std::vector<resource_record> resource_ops;
    bool fencing = false;
    std::int64_t heal_us = 0;  // the last fault's effects ended
    std::int64_t end_us = 0;   // the run ended
};

enum class check_kind : std::uint8_t { overlap, stale, order, liveness };
inline constexpr std::size_t check_count = 4;
const char* to_string(check_kind k) noexcept;

struct check_outcome {
    bool ok = true;
    std::string detail;  // the first violation, in words
};

struct verdict {
    std::array<check_outcome, check_count> checks{};
    bool ok(check_kind k) const noexcept { return checks[static_cast<std::size_t>(k)].ok; }
    bool all_ok() const noexcept;
};

verdict check_history(const history& h);

}  // namespace edgelock::sim
