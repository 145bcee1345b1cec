// SPDX-License-Identifier: Apache-2.0
#include "quote.hpp"

#include <array>
#include <cstdint>
#include <cstdio>

namespace edgelock::cli {
namespace {

// The length of the well-formed UTF-8 sequence at text[at] (RFC 3629: no overlong forms, no
// surrogates, nothing above U+10FFFF), or 0 when the byte there does not start one.
std::size_t utf8_length(std::string_view text, std::size_t at) {
    const auto byte = [&](std::size_t i) { return static_cast<std::uint8_t>(text[at + i]); };
    const std::uint8_t lead = byte(0);
    std::size_t length = 0;
    std::uint8_t second_min = 0x80;
    std::uint8_t second_max = 0xbf;
    if (lead < 0x80) return 1;
    if (lead >= 0xc2 && lead <= 0xdf) length = 2;
    else if (lead >= 0xe0 && lead <= 0xef) length = 3;
    else if (lead >= 0xf0 && lead <= 0xf4) length = 4;
    else return 0;
    if (lead == 0xe0) second_min = 0xa0;  // overlong
    if (lead == 0xed) second_max = 0x9f;  // surrogates
    if (lead == 0xf0) second_min = 0x90;  // overlong
    if (lead == 0xf4) second_max = 0x8f;  // above U+10FFFF
    if (text.size() - at < length) return 0;
    if (byte(1) < second_min || byte(1) > second_max) return 0;
    for (std::size_t i = 2; i < length; ++i) {
        if (byte(i) < 0x80 || byte(i) > 0xbf) return 0;
    }
    return length;
}

// Characters that may break a line or steer a terminal although they are valid UTF-8.
bool breaks_lines(std::string_view sequence) {
    const auto byte = [&](std::size_t i) { return static_cast<std::uint8_t>(sequence[i]); };
    if (sequence.size() == 1) return byte(0) < 0x20 || byte(0) == 0x7f;
    if (sequence.size() == 2) return byte(0) == 0xc2 && byte(1) <= 0x9f;  // C1
    if (sequence.size() == 3)
        return byte(0) == 0xe2 && byte(1) == 0x80 && (byte(2) == 0xa8 || byte(2) == 0xa9);
    return false;
}

void append_hex(std::string& out, char c) {
    constexpr std::string_view digits = "0123456789abcdef";
    const auto byte = static_cast<std::uint8_t>(c);
    out += "\\x";
    out += digits[byte >> 4];
    out += digits[byte & 0xf];
}

void append_escaped(std::string& out, char c) {
    switch (c) {
        case '\n': out += "\\n"; return;
        case '\r': out += "\\r"; return;
        case '\t': out += "\\t"; return;
        default: append_hex(out, c); return;
    }
}

bool needs_escape(std::string_view text) {
    for (std::size_t at = 0; at < text.size();) {
        const std::size_t length = utf8_length(text, at);
        if (length == 0 || breaks_lines(text.substr(at, length))) return true;
        at += length;
    }
    return false;
}

}  // namespace

std::string quote(std::string_view text) {
    std::string out = "\"";
    out.reserve(text.size() + 2);
    for (std::size_t at = 0; at < text.size();) {
        const std::size_t length = utf8_length(text, at);
        if (length == 0) {
            append_hex(out, text[at]);
            ++at;
            continue;
        }
        const std::string_view sequence = text.substr(at, length);
        if (breaks_lines(sequence)) {
            for (char c : sequence) append_escaped(out, c);
        } else if (sequence == "\"" || sequence == "\\") {
            out += '\\';
            out += sequence;
        } else {
            out += sequence;
        }
        at += length;
    }
    return out + "\"";
}

std::string shown(std::string_view text) {
    return needs_escape(text) ? quote(text) : std::string(text);
}

std::string json_string(std::string_view text) {
    std::string out = "\"";
    for (const char c : text) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (static_cast<unsigned char>(c) < 0x20) {
            std::array<char, 8> escaped{};
            std::snprintf(escaped.data(), escaped.size(), "\\u%04x", static_cast<unsigned>(c));
            out += escaped.data();
        } else {
            out += c;
        }
    }
    return out + "\"";
}

}  // namespace edgelock::cli
