// SPDX-License-Identifier: Apache-2.0
// edgelock sim: the storage the lock protects.
//
// A counter (the seeds' stock level or order pool) that clients read and write back while
// they hold the lock: read v, then write v - 1. With fencing, every request carries the
// holder's fence token and the resource refuses any token lower than the highest it has
// accepted, reads included, so a holder that was superseded can neither read nor write
// once its successor touched the resource (Kleppmann's fencing). Requests without a token
// (fencing off, or a client that skips it) are always accepted.
//
// Guarded by a semaphore of N permits (lock.hpp, "Semaphores"), N holders are current at once:
// the resource keeps the N highest tokens it accepted and refuses any token below all of them,
// so it serves at most N owners at a time, and a holder whose permit went to N later ones
// cannot touch it once they all did. With N = 1 that is the rule above.
#pragma once

#include <cstdint>
#include <vector>

namespace edgelock::sim {

class fenced_resource {
public:
    explicit fenced_resource(std::int64_t initial_value = 0, std::uint16_t writers = 1)
        : value_(initial_value), writers_(writers) {}

    struct result {
        bool accepted = false;
        std::int64_t value = 0;  // the value after the request (a read's answer)
    };

    result read(bool fenced, std::int64_t token);
    result write(bool fenced, std::int64_t token, std::int64_t value);

    std::int64_t value() const noexcept { return value_; }
    std::int64_t highest_token() const noexcept { return highest_.empty() ? 0 : highest_.front(); }

private:
    bool admit(bool fenced, std::int64_t token);

    std::int64_t value_ = 0;
    std::uint16_t writers_ = 1;
    std::vector<std::int64_t> highest_;  // the writers_ highest tokens accepted, highest first
};

}  // namespace edgelock::sim
