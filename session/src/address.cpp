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

}  // namespace edgelock::session
