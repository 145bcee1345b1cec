// SPDX-License-Identifier: Apache-2.0
// edgelock sim: the storage the lock protects.
//
// A counter (the seeds' stock level or order pool) that clients read and write back while
// they hold the lock: read v, then write v - 1. With fencing, every request carries the
// holder's fence token and the resource refuses any token lower than the highest it has
// accepted, reads included, so a holder that was superseded can neither read nor write
// once its successor touched the resource (Kleppmann's fencing). A fenced semaphore's
// resource keeps that highest token per permit (the token's remainder by N: lock.hpp,
// "Semaphores"), as each permit passes from holder to holder as a lock does. Requests
// without a token (fencing off, or a client that skips it) are always accepted.
#pragma once

#include <array>
#include <cstdint>

namespace edgelock::sim {

// The permits a simulated semaphore may have (its clients number one more: configuration.hpp).
inline constexpr std::size_t resource_permits_max = 4;

class fenced_resource {
public:
    explicit fenced_resource(std::int64_t initial_value = 0, std::uint16_t permits = 1) noexcept;

    struct result {
        bool accepted = false;
        std::int64_t value = 0;  // the value after the request (a read's answer)
    };

    result read(bool fenced, std::int64_t token) noexcept;
    result write(bool fenced, std::int64_t token, std::int64_t value) noexcept;

    std::int64_t value() const noexcept { return value_; }
    // The highest token accepted of the permit `token` stands for (the lock has one).
    std::int64_t highest_token(std::int64_t token = 0) const noexcept;

private:
    bool admit(bool fenced, std::int64_t token) noexcept;

    std::int64_t value_ = 0;
    std::uint16_t permits_ = 1;
    std::array<std::int64_t, resource_permits_max> highest_tokens_{};
};

}  // namespace edgelock::sim
