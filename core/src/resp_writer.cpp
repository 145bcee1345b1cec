// SPDX-License-Identifier: Apache-2.0
#include "edgelock/resp_writer.hpp"

#include <cstdint>
#include <cstring>

#include "edgelock/assert.hpp"

namespace edgelock {
namespace {

// "-9223372036854775808" is the longest int64 in decimal.
constexpr std::size_t int64_decimal_bytes_max = 20;

// Writes `value` in decimal at the start of `out` and returns the byte count.
std::size_t format_decimal(std::int64_t value, char (&out)[int64_decimal_bytes_max]) noexcept {
    // Work on the magnitude as unsigned so INT64_MIN needs no special case.
    const bool negative = value < 0;
    std::uint64_t magnitude = negative ? 0 - static_cast<std::uint64_t>(value)
                                       : static_cast<std::uint64_t>(value);
    char reversed[int64_decimal_bytes_max];
    std::size_t digits = 0;
    do {
        EDGELOCK_ASSERT(digits < sizeof reversed);
        reversed[digits] = static_cast<char>('0' + magnitude % 10);
        ++digits;
        magnitude /= 10;
    } while (magnitude != 0);

    std::size_t size = 0;
    if (negative) {
        out[size++] = '-';
    }
    EDGELOCK_ASSERT(size + digits <= sizeof out);
    for (std::size_t i = 0; i < digits; ++i) {
        out[size++] = reversed[digits - 1 - i];
    }
    return size;
}

// Counts above int64 cannot describe real bytes or elements: nothing that large fits. Tested
// on the top bit rather than against a constant, which 32-bit size_t would flag as always true.
bool fits_int64(std::size_t count) noexcept {
    return (static_cast<std::uint64_t>(count) >> 63) == 0;
}

}  // namespace

resp_writer::resp_writer(char* out, std::size_t capacity) noexcept
    : out_(out), capacity_(capacity) {}

// Each element is written whole or not at all: on failure size_ goes back to where the
// element began, so size() never counts a torn element.
void resp_writer::array(std::size_t count) noexcept {
    if (!fits_int64(count)) {
        status_ = errc::buffer_too_small;
        return;
    }
    const std::size_t start = size_;
    append("*", 1);
    append_decimal(static_cast<std::int64_t>(count));
    append("\r\n", 2);
    if (status_ != errc::ok) {
        size_ = start;
    }
}

void resp_writer::bulk(std::string_view bytes) noexcept {
    if (!fits_int64(bytes.size())) {
        status_ = errc::buffer_too_small;
        return;
    }
    const std::size_t start = size_;
    append("$", 1);
    append_decimal(static_cast<std::int64_t>(bytes.size()));
    append("\r\n", 2);
    append(bytes.data(), bytes.size());
    append("\r\n", 2);
    if (status_ != errc::ok) {
        size_ = start;
    }
}

void resp_writer::bulk(std::int64_t value) noexcept {
    char digits[int64_decimal_bytes_max];
    const std::size_t digit_count = format_decimal(value, digits);
    bulk(std::string_view(digits, digit_count));
}

void resp_writer::append(const char* bytes, std::size_t count) noexcept {
    if (status_ != errc::ok) {
        return;
    }
    EDGELOCK_ASSERT(size_ <= capacity_);
    if (count > capacity_ - size_) {
        status_ = errc::buffer_too_small;
        return;
    }
    if (count != 0) {
        std::memcpy(out_ + size_, bytes, count);
    }
    size_ += count;
}

void resp_writer::append_decimal(std::int64_t value) noexcept {
    char digits[int64_decimal_bytes_max];
    const std::size_t digit_count = format_decimal(value, digits);
    append(digits, digit_count);
}

}  // namespace edgelock
