// SPDX-License-Identifier: Apache-2.0
// edgelock sim: the storage the lock protects.
//
// A counter (the seeds' stock level or order pool) that clients read and write back while
// they hold the lock: read v, then write v - 1. With fencing, every request carries the
// holder's fence token and the resource refuses any token lower than the highest it has
// accepted, reads included, so a holder that was superseded can neither read nor write
// once its successor touched the resource (Kleppmann's fencing). Requests without a token
// (fencing off, or a client that skips it) are always accepted.
#pragma once

#include <cstdint>

namespace edgelock::sim {

class fenced_resource {
public:
    explicit fenced_resource(std::int64_t initial_value = 0) noexcept : value_(initial_value) {}

    struct result {
        bool accepted = false;
        std::int64_t value = 0;  // the value after the request (a read's answer)
    };

    result read(bool fenced, std::int64_t token) noexcept;
    result write(bool fenced, std::int64_t token, std::int64_t value) noexcept;

    std::int64_t value() const noexcept { return value_; }
    std::int64_t highest_token() const noexcept { return highest_token_; }

private:
    bool admit(bool fenced, std::int64_t token) noexcept;

    std::int64_t value_ = 0;
    std::int64_t highest_token_ = 0;
};

}  // namespace edgelock::sim
