// SPDX-License-Identifier: Apache-2.0
// edgelock sim: the simulated servers' replies written as Redis writes them (RESP2), and
// integers read as Redis reads them. One copy for the model, its scripts, its pub/sub and the
// sentinels.
#pragma once

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <system_error>

namespace edgelock::sim {

inline void append_bulk(std::string& reply, std::string_view text) {
    char header[24];
    const int size = std::snprintf(header, sizeof header, "$%zu\r\n", text.size());
    reply.append(header, static_cast<std::size_t>(size));
    reply.append(text.data(), text.size());
    reply += "\r\n";
}

inline void append_integer(std::string& reply, std::int64_t value) {
    char digits[24];
    const int size =
        std::snprintf(digits, sizeof digits, ":%lld\r\n", static_cast<long long>(value));
    reply.append(digits, static_cast<std::size_t>(size));
}

// `text` must be one line: it is the whole error reply after the '-'.
inline void append_error(std::string& reply, std::string_view text) {
    reply += '-';
    reply.append(text.data(), text.size());
    reply += "\r\n";
}

// A decimal integer as Redis's string2ll takes it: an optional '-', no '+', no leading zero,
// no spaces, within 64 bits.
inline bool parse_integer(std::string_view text, std::int64_t& out) noexcept {
    const bool negative = !text.empty() && text[0] == '-';
    const std::string_view digits = negative ? text.substr(1) : text;
    if (digits.empty() || (digits[0] == '0' && (digits.size() > 1 || negative))) return false;
    std::int64_t value = 0;
    const char* const last = text.data() + text.size();
    const auto [end, error] = std::from_chars(text.data(), last, value);
    if (error != std::errc{} || end != last) return false;
    out = value;
    return true;
}

}  // namespace edgelock::sim
