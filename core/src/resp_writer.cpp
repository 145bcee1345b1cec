// SPDX-License-Identifier: Apache-2.0
#include "edgelock/resp_writer.hpp"

#include <cstdint>
#include <cstring>

#include "edgelock/assert.hpp"

namespace edgelock {
namespace {

// "-9223372036854775808" is the longest int64 in decimal.
constexpr std::size_t int64_decimal_bytes_max = 20;

std::size_t decimal_digits(std::uint64_t magnitude) noexcept {
    std::size_t digits = 1;
    while (magnitude >= 10) {
        magnitude /= 10;
        ++digits;
    }
    return digits;
}

// Writes the `digits` decimal digits of `magnitude` at `out`, last digit first: counted
// first and written in place, since encoding is a large share of a lock operation's
// instructions (bench/lock_cycle) and most counts have one or two digits.
void write_digits(std::uint64_t magnitude, std::size_t digits, char* out) noexcept {
    char* at = out + digits;
    do {
        *--at = static_cast<char>('0' + magnitude % 10);
        magnitude /= 10;
    } while (at != out);
}

// Writes `value` in decimal at the start of `out` and returns the byte count.
std::size_t format_decimal(std::int64_t value, char (&out)[int64_decimal_bytes_max]) noexcept {
    // Work on the magnitude as unsigned so INT64_MIN needs no special case.
    const bool negative = value < 0;
    const std::uint64_t magnitude =
        negative ? 0 - static_cast<std::uint64_t>(value) : static_cast<std::uint64_t>(value);
    const std::size_t sign = negative ? 1 : 0;
    const std::size_t digits = decimal_digits(magnitude);
    EDGELOCK_ASSERT(sign + digits <= sizeof out);
    if (negative) out[0] = '-';
    write_digits(magnitude, digits, out + sign);
    return sign + digits;
}

// Counts above int64 cannot describe real bytes or elements: nothing that large fits. Tested
// on the top bit rather than against a constant, which 32-bit size_t would flag as always true.
bool fits_int64(std::size_t count) noexcept {
    return (static_cast<std::uint64_t>(count) >> 63) == 0;
}

}  // namespace

resp_writer::resp_writer(char* out, std::size_t capacity) noexcept
    : out_(out), capacity_(capacity) {}

// Each element is written whole or not at all: its size is checked once, before any byte of
// it is written, so size() never counts a torn element. One check and one copy per element
// rather than four of each: encoding was a third of the async client's instructions per lock
// operation (bench/lock_cycle, many locks).
void resp_writer::array(std::size_t count) noexcept {
    element('*', count, std::string_view(), false);
}

void resp_writer::bulk(std::string_view bytes) noexcept { element('$', bytes.size(), bytes, true); }

void resp_writer::bulk(std::int64_t value) noexcept {
    char digits[int64_decimal_bytes_max];
    const std::size_t digit_count = format_decimal(value, digits);
    bulk(std::string_view(digits, digit_count));
}

// "<marker><count>\r\n", then with a payload "<payload>\r\n".
void resp_writer::element(char marker, std::size_t count, std::string_view payload,
                          bool with_payload) noexcept {
    if (status_ != errc::ok) {
        return;
    }
    if (!fits_int64(count)) {
        status_ = errc::buffer_too_small;
        return;
    }
    const std::size_t digit_count = decimal_digits(count);
    EDGELOCK_ASSERT(size_ <= capacity_);
    const std::size_t room = capacity_ - size_;
    const std::size_t header_bytes = 1 + digit_count + 2;
    const std::size_t tail_bytes = with_payload ? 2 : 0;
    if (payload.size() > room || header_bytes + tail_bytes > room - payload.size()) {
        status_ = errc::buffer_too_small;
        return;
    }
    char* at = out_ + size_;
    *at++ = marker;
    write_digits(count, digit_count, at);
    at += digit_count;
    *at++ = '\r';
    *at++ = '\n';
    if (with_payload) {
        if (!payload.empty()) {
            std::memcpy(at, payload.data(), payload.size());
            at += payload.size();
        }
        *at++ = '\r';
        *at++ = '\n';
    }
    size_ += header_bytes + payload.size() + tail_bytes;
}

}  // namespace edgelock
