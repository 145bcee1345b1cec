// SPDX-License-Identifier: Apache-2.0
#include "edgelock/resp_reader.hpp"

#include <charconv>
#include <cstdint>
#include <limits>
#include <system_error>

#include "edgelock/assert.hpp"
#include "edgelock/limits.hpp"

// The parser walks the reply once, left to right, and decides from the bytes seen so far
// only: once some prefix is refused, every longer input is refused with the same code, and
// a refusal comes as early as the bytes allow (a bad digit, not the CRLF after it). Numbers
// must be canonical, as hiredis's string2ll wants: no '+', no leading zeros, no "-0".
// Nesting uses a fixed stack of depth_max open arrays, never recursion.

namespace edgelock {
namespace {

// The magnitude of INT64_MIN has 19 digits; with no leading zeros allowed, a 20th digit
// always leaves every range, so no number loop runs longer.
constexpr std::size_t int64_digits_max = 19;

struct number_range {
    std::int64_t min_value;  // below it: protocol_error
    std::int64_t max_value;  // above it: above_max_code
    errc above_max_code;
};

constexpr number_range integer_range{std::numeric_limits<std::int64_t>::min(),
                                     std::numeric_limits<std::int64_t>::max(),
                                     errc::protocol_error};
constexpr number_range bulk_length_range{-1, static_cast<std::int64_t>(bulk_bytes_max),
                                         errc::reply_too_large};
// An array header's count at most array_elements_max, or, for a caller that gave more than
// nodes_max nodes (a slot map's reader), any count its nodes can hold (checked in read_array).
constexpr number_range array_count_range{-1, static_cast<std::int64_t>(array_elements_max),
                                         errc::too_many_elements};
constexpr number_range large_array_count_range{-1, std::numeric_limits<std::int32_t>::max(),
                                               errc::too_many_elements};

// read_number relies on every range admitting -1 and 1.
static_assert(integer_range.min_value < 0 && integer_range.max_value > 0);
static_assert(bulk_length_range.min_value < 0 && bulk_length_range.max_value > 0);
static_assert(array_count_range.min_value < 0 && array_count_range.max_value > 0);

struct number_result {
    errc code = errc::need_more;
    std::int64_t value = 0;
};

struct parser {
    const char* data;
    std::size_t end;  // bytes this reply may use: min(size, reply_bytes_max)
    std::size_t pos;
    reply_node* nodes;
    std::size_t node_limit;              // nodes_capacity
    std::size_t written;                 // nodes filled in
    std::size_t owed;                    // elements announced by open arrays, not yet started
    std::size_t depth;                   // open arrays
    std::uint32_t remaining[depth_max];  // per open array: elements not yet started
};

errc expect_crlf(parser& p) noexcept {
    if (p.pos == p.end) {
        return errc::need_more;
    }
    if (p.data[p.pos] != '\r') {
        return errc::protocol_error;
    }
    if (p.pos + 1 == p.end) {
        return errc::need_more;
    }
    if (p.data[p.pos + 1] != '\n') {
        return errc::protocol_error;
    }
    p.pos += 2;
    return errc::ok;
}

void emit(parser& p, reply_type type, std::uint32_t elements, std::int64_t integer,
          std::string_view text) noexcept {
    EDGELOCK_ASSERT(p.written < p.node_limit);
    reply_node& node = p.nodes[p.written];
    node.type = type;
    node.elements = elements;
    node.integer = integer;
    node.text = text;
    ++p.written;
}

bool is_digit(char byte) noexcept { return byte >= '0' && byte <= '9'; }

// Reads [-]digits CRLF. A value out of `range` is refused as soon as the digits seen leave
// it: more digits only take it further out.
number_result read_number(parser& p, const number_range& range) noexcept {
    if (p.pos == p.end) {
        return {errc::need_more, 0};
    }
    const bool negative = p.data[p.pos] == '-';
    if (negative) {
        ++p.pos;
    }
    // -(min + 1) + 1 is |min| without overflowing at INT64_MIN.
    const std::uint64_t magnitude_max = negative
                                            ? static_cast<std::uint64_t>(-(range.min_value + 1)) + 1
                                            : static_cast<std::uint64_t>(range.max_value);
    const errc out_of_range = negative ? errc::protocol_error : range.above_max_code;

    // The digits so far: int64_digits_max + 1 of them already leave every range.
    const char* const first = p.data + p.pos;
    std::size_t digits = 0;
    while (p.pos + digits < p.end && digits <= int64_digits_max && is_digit(first[digits])) {
        ++digits;
    }
    const bool leading_zero = digits > 1 && first[0] == '0';
    const bool negative_zero = negative && digits > 0 && first[0] == '0';
    if (leading_zero || negative_zero) {
        return {errc::protocol_error, 0};
    }
    std::uint64_t magnitude = 0;
    if (digits > 0) {
        const auto [last, error] = std::from_chars(first, first + digits, magnitude);
        EDGELOCK_ASSERT(last == first + digits);
        if (error != std::errc{} || magnitude > magnitude_max) {
            return {out_of_range, 0};
        }
    }
    EDGELOCK_ASSERT(digits <= int64_digits_max);
    p.pos += digits;
    if (p.pos == p.end) {
        return {errc::need_more, 0};
    }
    if (digits == 0) {
        return {errc::protocol_error, 0};
    }
    const errc terminator = expect_crlf(p);
    if (terminator != errc::ok) {
        return {terminator, 0};
    }
    const std::int64_t value = negative ? -static_cast<std::int64_t>(magnitude - 1) - 1
                                        : static_cast<std::int64_t>(magnitude);
    return {errc::ok, value};
}

// Simple strings and errors: any bytes up to CRLF; a lone CR or LF is refused.
errc read_line(parser& p, reply_type type) noexcept {
    const std::size_t start = p.pos;
    for (std::size_t at = start; at < p.end; ++at) {
        if (p.data[at] == '\n') {
            return errc::protocol_error;
        }
        if (p.data[at] == '\r') {
            p.pos = at;
            const errc terminator = expect_crlf(p);
            if (terminator == errc::ok) {
                emit(p, type, 0, 0, std::string_view(p.data + start, at - start));
            }
            return terminator;
        }
    }
    return errc::need_more;
}

errc read_integer(parser& p) noexcept {
    const number_result number = read_number(p, integer_range);
    if (number.code == errc::ok) {
        emit(p, reply_type::integer, 0, number.value, {});
    }
    return number.code;
}

errc read_bulk(parser& p) noexcept {
    const number_result length = read_number(p, bulk_length_range);
    if (length.code != errc::ok) {
        return length.code;
    }
    if (length.value == -1) {
        emit(p, reply_type::nil, 0, 0, {});
        return errc::ok;
    }
    const auto payload_bytes = static_cast<std::size_t>(length.value);
    // Known from the header alone: refuse now rather than wait for the payload.
    EDGELOCK_ASSERT(p.pos <= reply_bytes_max);
    if (payload_bytes + 2 > reply_bytes_max - p.pos) {
        return errc::reply_too_large;
    }
    if (payload_bytes > p.end - p.pos) {
        return errc::need_more;
    }
    const std::size_t start = p.pos;
    p.pos += payload_bytes;
    const errc terminator = expect_crlf(p);
    if (terminator == errc::ok) {
        emit(p, reply_type::bulk_string, 0, 0, std::string_view(p.data + start, payload_bytes));
    }
    return terminator;
}

errc read_array(parser& p) noexcept {
    // Checked at the type byte, before the count: "*-1" that deep is refused too.
    if (p.depth == depth_max) {
        return errc::too_deep;
    }
    const number_result count =
        read_number(p, p.node_limit > nodes_max ? large_array_count_range : array_count_range);
    if (count.code != errc::ok) {
        return count.code;
    }
    if (count.value == -1) {
        emit(p, reply_type::nil, 0, 0, {});
        return errc::ok;
    }
    // Every announced element needs a node of its own, so a count that cannot fit is
    // refused at the header. The room check in read_element leaves this subtraction >= 0.
    const auto elements = static_cast<std::size_t>(count.value);
    if (elements > p.node_limit - p.written - p.owed - 1) {
        return errc::too_many_elements;
    }
    emit(p, reply_type::array, static_cast<std::uint32_t>(elements), 0, {});
    if (elements > 0) {
        p.remaining[p.depth] = static_cast<std::uint32_t>(elements);
        ++p.depth;
        p.owed += elements;
    }
    return errc::ok;
}

// Reads one element (for an array, its header only) and writes its node.
errc read_element(parser& p) noexcept {
    if (p.pos == p.end) {
        return errc::need_more;
    }
    const char type = p.data[p.pos];
    if (type != '+' && type != '-' && type != ':' && type != '$' && type != '*') {
        return errc::protocol_error;
    }
    if (p.depth > 0) {
        EDGELOCK_ASSERT(p.remaining[p.depth - 1] > 0);
        EDGELOCK_ASSERT(p.owed > 0);
        --p.remaining[p.depth - 1];
        --p.owed;
    }
    // Only the root can find no room: array headers reserve a node for every element.
    if (p.written + p.owed >= p.node_limit) {
        EDGELOCK_ASSERT(p.written == 0);
        return errc::too_many_elements;
    }
    ++p.pos;
    switch (type) {
        case '+': return read_line(p, reply_type::simple_string);
        case '-': return read_line(p, reply_type::error);
        case ':': return read_integer(p);
        case '$': return read_bulk(p);
        default: return read_array(p);
    }
}

void close_finished_arrays(parser& p) noexcept {
    for (std::size_t level = 0; level < depth_max && p.depth > 0; ++level) {
        if (p.remaining[p.depth - 1] != 0) {
            return;
        }
        --p.depth;
    }
}

errc read_reply(parser& p) noexcept {
    // Each pass writes one node, and no reply has more than node_limit.
    for (std::size_t pass = 0; pass <= p.node_limit; ++pass) {
        const errc code = read_element(p);
        if (code != errc::ok) {
            return code;
        }
        close_finished_arrays(p);
        if (p.depth == 0) {
            EDGELOCK_ASSERT(p.owed == 0);
            return errc::ok;
        }
    }
    EDGELOCK_ASSERT(false);
    return errc::protocol_error;
}

}  // namespace

parse_result parse_reply(const char* data, std::size_t size, reply_node* nodes,
                         std::size_t nodes_capacity) noexcept {
    parser p{};
    p.data = data;
    p.end = size < reply_bytes_max ? size : reply_bytes_max;
    p.nodes = nodes;
    p.node_limit = nodes_capacity;

    const errc code = read_reply(p);
    if (code == errc::ok) {
        return {errc::ok, p.pos, p.written};
    }
    // Out of bytes at the cap: the reply cannot end within reply_bytes_max.
    if (code == errc::need_more && size >= reply_bytes_max) {
        return {errc::reply_too_large, 0, 0};
    }
    return {code, 0, 0};
}

}  // namespace edgelock
