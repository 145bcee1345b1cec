// SPDX-License-Identifier: Apache-2.0
#include "edgelock/session/address.hpp"

#include <array>
#include <charconv>
#include <system_error>

namespace edgelock::session {
namespace {

// string_view::substr may throw; these never do (pos and count are clamped).
std::string_view head(std::string_view text, std::size_t count) noexcept {
    return {text.data(), count < text.size() ? count : text.size()};
}
std::string_view tail(std::string_view text, std::size_t from) noexcept {
    return from < text.size() ? std::string_view(text.data() + from, text.size() - from)
                              : std::string_view{};
}

address_result refuse(const char* problem) noexcept { return {errc::invalid_config, problem}; }

// Decimal in [min, max], all bytes digits, at most five of them. Unsigned from_chars
// refuses a '-'; it takes no '+' or space either.
bool parse_number(std::string_view digits, std::uint32_t min, std::uint32_t max,
                  std::uint16_t& out) noexcept {
    if (digits.empty() || digits.size() > 5) return false;
    std::uint32_t value = 0;
    const char* const last = digits.data() + digits.size();
    const auto [end, error] = std::from_chars(digits.data(), last, value);
    if (error != std::errc{} || end != last) return false;
    if (value < min || value > max) return false;
    out = static_cast<std::uint16_t>(value);
    return true;
}

bool host_byte_allowed(char c) noexcept {
    return c != ' ' && c != '/' && c != '@' && c != '[' && c != ']' && c != '\0' && c != '\r' &&
           c != '\n';
}

// Splits "user:password" (or a lone "password", as redis-cli accepts) into the address.
address_result take_credentials(std::string_view credentials, node_address& out) noexcept {
    const std::size_t colon = credentials.find(':');
    const std::string_view user =
        colon == std::string_view::npos ? std::string_view{} : head(credentials, colon);
    const std::string_view password =
        colon == std::string_view::npos ? credentials : tail(credentials, colon + 1);
    if (!out.user.assign(user)) return refuse("user name too long");
    if (!out.password.assign(password)) return refuse("password too long");
    return {};
}

// "host", "host:port", "[v6]" or "[v6]:port".
address_result take_host_and_port(std::string_view text, node_address& out) noexcept {
    std::string_view host = text;
    std::string_view port;
    bool has_port = false;
    if (!text.empty() && text.front() == '[') {
        const std::size_t close = text.find(']');
        if (close == std::string_view::npos) return refuse("unclosed [ in IPv6 address");
        host = head(tail(text, 1), close - 1);
        const std::string_view rest = tail(text, close + 1);
        if (!rest.empty()) {
            if (rest.front() != ':') return refuse("unexpected bytes after ]");
            port = tail(rest, 1);
            has_port = true;
        }
    } else {
        const std::size_t colon = text.rfind(':');
        // "::1" or "fe80::1:6379" would split at its last colon into a host and a port no one
        // meant: an IPv6 address goes in brackets.
        if (colon != text.find(':')) return refuse("an IPv6 address goes in brackets: [::1]:6379");
        if (colon != std::string_view::npos) {
            host = head(text, colon);
            port = tail(text, colon + 1);
            has_port = true;
        }
    }
    std::uint16_t number = default_port;
    if (has_port && port.empty()) return refuse("empty port");
    if (has_port && !parse_port(port, number)) return refuse("bad port");
    return set_host_port(out, host, number);
}

// ---- hosts compared by value -------------------------------------------------------------

// An IPv4 address as the IPv4-mapped IPv6 one, or an IPv6 address: 16 bytes.
using ip_bytes = std::array<std::uint8_t, 16>;

char lower(char c) noexcept { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

// One part of an IPv4 address as inet_aton(3) reads it: decimal, 0x hexadecimal or 0 octal.
bool parse_ipv4_part(std::string_view text, std::uint32_t& out) noexcept {
    int base = 10;
    if (text.size() > 2 && text[0] == '0' && lower(text[1]) == 'x') {
        base = 16;
        text.remove_prefix(2);
    } else if (text.size() > 1 && text[0] == '0') {
        base = 8;
        text.remove_prefix(1);
    }
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out, base);
    return !text.empty() && error == std::errc{} && end == text.data() + text.size();
}

// "a.b.c.d", "a.b.c" (c 16 bits), "a.b" (b 24 bits), "a" (32 bits), as inet_aton(3) takes them.
bool parse_ipv4(std::string_view text, ip_bytes& out) noexcept {
    std::array<std::uint32_t, 4> parts{};
    std::size_t count = 0;
    for (;;) {
        const std::size_t dot = text.find('.');
        if (count == parts.size() || !parse_ipv4_part(head(text, dot), parts[count++]))
            return false;
        if (dot == std::string_view::npos) break;
        text.remove_prefix(dot + 1);
    }
    for (std::size_t i = 0; i + 1 < count; ++i) {
        if (parts[i] > 0xff) return false;
    }
    const unsigned last_bits = 8 * static_cast<unsigned>(5 - count);
    if (last_bits < 32 && parts[count - 1] >> last_bits != 0) return false;
    std::uint32_t value = parts[count - 1];
    for (std::size_t i = 0; i + 1 < count; ++i) value |= parts[i] << (24 - 8 * i);
    out = ip_bytes{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    for (std::size_t i = 0; i < 4; ++i)
        out[12 + i] = static_cast<std::uint8_t>(value >> (24 - 8 * i));
    return true;
}

// Hexadecimal groups separated by ':', with at most one "::" standing for zero groups.
bool parse_ipv6(std::string_view text, ip_bytes& out) noexcept {
    std::array<std::uint16_t, 8> front{};
    std::array<std::uint16_t, 8> back{};
    std::size_t fronts = 0;
    std::size_t backs = 0;
    const std::size_t gap = text.find("::");
    const std::string_view before = gap == std::string_view::npos ? text : head(text, gap);
    const std::string_view after = gap == std::string_view::npos ? "" : tail(text, gap + 2);
    const auto groups = [](std::string_view part, std::array<std::uint16_t, 8>& into,
                           std::size_t& n) {
        while (!part.empty()) {
            const std::size_t colon = part.find(':');
            const std::string_view group = head(part, colon);
            if (n == into.size() || group.empty() || group.size() > 4) return false;
            const auto [end, error] =
                std::from_chars(group.data(), group.data() + group.size(), into[n], 16);
            if (error != std::errc{} || end != group.data() + group.size()) return false;
            ++n;
            if (colon != std::string_view::npos && colon + 1 == part.size()) return false;
            part.remove_prefix(colon == std::string_view::npos ? part.size() : colon + 1);
        }
        return true;
    };
    if (!groups(before, front, fronts) || !groups(after, back, backs)) return false;
    if (gap == std::string_view::npos ? fronts != 8 : fronts + backs > 7) return false;
    out = ip_bytes{};
    for (std::size_t i = 0; i < fronts; ++i) {
        out[2 * i] = static_cast<std::uint8_t>(front[i] >> 8);
        out[2 * i + 1] = static_cast<std::uint8_t>(front[i]);
    }
    for (std::size_t i = 0; i < backs; ++i) {
        out[16 - 2 * (backs - i)] = static_cast<std::uint8_t>(back[i] >> 8);
        out[16 - 2 * (backs - i) + 1] = static_cast<std::uint8_t>(back[i]);
    }
    return true;
}

bool parse_ip(std::string_view host, ip_bytes& out) noexcept {
    return host.find(':') != std::string_view::npos ? parse_ipv6(host, out) : parse_ipv4(host, out);
}

}  // namespace

bool parse_port(std::string_view digits, std::uint16_t& out) noexcept {
    return parse_number(digits, 1, 65535, out);
}

address_result set_host_port(node_address& address, std::string_view host,
                             std::uint16_t port) noexcept {
    if (host.empty()) return refuse("empty host");
    for (const char c : host) {
        if (!host_byte_allowed(c)) return refuse("bad byte in host");
    }
    if (port == 0) return refuse("bad port");
    if (!address.host.assign(host)) return refuse("host name too long");
    address.port = port;
    return {};
}

address_text format_address(const node_address& address) noexcept {
    std::array<char, address_text::capacity_bytes> text{};
    std::size_t size = 0;
    const auto put = [&](std::string_view part) {
        for (const char c : part) text[size++] = c;
    };
    const bool ipv6 = address.host.view().find(':') != std::string_view::npos;
    if (ipv6) put("[");
    put(address.host.view());
    if (ipv6) put("]");
    put(":");
    char digits[5];
    std::size_t count = 0;
    for (std::uint16_t port = address.port; count == 0 || port != 0;
         port = static_cast<std::uint16_t>(port / 10)) {
        digits[count++] = static_cast<char>('0' + port % 10);
    }
    while (count > 0) text[size++] = digits[--count];
    address_text out;
    out.assign({text.data(), size});
    return out;
}

address_result parse_node_url(std::string_view text, node_address& out) noexcept {
    out = node_address{};
    if (text.size() > url_bytes_max) return refuse("address too long");
    constexpr std::string_view plain = "redis://";
    constexpr std::string_view secure = "rediss://";
    if (text.find("://") != std::string_view::npos) {
        out.tls = head(text, secure.size()) == secure;
        const std::string_view scheme = out.tls ? secure : plain;
        if (head(text, scheme.size()) != scheme)
            return refuse("unknown scheme (expected redis:// or rediss://)");
        text.remove_prefix(scheme.size());
    }
    const std::size_t at = text.rfind('@');
    if (at != std::string_view::npos) {
        const address_result credentials = take_credentials(head(text, at), out);
        if (credentials.code != errc::ok) return credentials;
        text.remove_prefix(at + 1);
    }
    const std::size_t slash = text.find('/');
    if (slash != std::string_view::npos) {
        if (!parse_number(tail(text, slash + 1), 0, 65535, out.db))
            return refuse("bad database number");
        text = head(text, slash);
    }
    return take_host_and_port(text, out);
}

bool node_address::same_node(const node_address& other) const noexcept {
    return port == other.port && same_host(host.view(), other.host.view());
}

bool same_host(std::string_view a, std::string_view b) noexcept {
    if (a == b) return true;  // the common case (a node against its own copy), without parsing
    if (!a.empty() && a.back() == '.') a.remove_suffix(1);
    if (!b.empty() && b.back() == '.') b.remove_suffix(1);
    ip_bytes a_ip;
    ip_bytes b_ip;
    if (parse_ip(a, a_ip) && parse_ip(b, b_ip)) return a_ip == b_ip;
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (lower(a[i]) != lower(b[i])) return false;
    }
    return true;
}

}  // namespace edgelock::session
