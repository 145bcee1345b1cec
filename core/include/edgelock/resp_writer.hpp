// SPDX-License-Identifier: Apache-2.0
// edgelock: RESP2 command encoder into a caller-provided fixed buffer.
//
// Commands are arrays of bulk strings. The writer never allocates and never writes past
// `capacity`; the first write that does not fit makes status() errc::buffer_too_small for
// good (sticky, like a stream's failbit), so a caller encodes a whole command and checks once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "edgelock/errc.hpp"

namespace edgelock {

class resp_writer {
public:
    resp_writer(char* out, std::size_t capacity) noexcept;

    // Each appends one RESP element: "*<count>\r\n", "$<len>\r\n<bytes>\r\n", or an integer
    // written as a bulk string of its decimal digits (Redis arguments are always bulk).
    void array(std::size_t count) noexcept;
    void bulk(std::string_view bytes) noexcept;
    void bulk(std::int64_t value) noexcept;

    // ok, or buffer_too_small once any write did not fit.
    errc status() const noexcept { return status_; }
    // Bytes written so far; after buffer_too_small, the bytes before the failed write.
    std::size_t size() const noexcept { return size_; }

private:
    void element(char marker, std::size_t count, std::string_view payload,
                 bool with_payload) noexcept;

    char* out_;
    std::size_t capacity_;
    std::size_t size_ = 0;
    errc status_ = errc::ok;
};

}  // namespace edgelock
