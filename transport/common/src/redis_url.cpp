#include "edgelock/redis_url.hpp"

namespace edgelock {
namespace {

redis_url_result refuse(const char* problem) {
    redis_url_result result;
    result.code = errc::invalid_config;
    result.problem = problem;
    return result;
}

// Decimal in [min, max], all bytes digits.
bool parse_number(std::string_view digits, std::uint32_t min, std::uint32_t max, std::uint16_t& out) {
    if (digits.empty() || digits.size() > 5) return false;
    std::uint32_t value = 0;
    for (char c : digits) {
        if (c < '0' || c > '9') return false;
        value = value * 10 + static_cast<std::uint32_t>(c - '0');
    }
    if (value < min || value > max) return false;
    out = static_cast<std::uint16_t>(value);
    return true;
}

}  // namespace

redis_url_result parse_redis_url(std::string_view text) noexcept {
    constexpr std::string_view scheme = "redis://";
    const std::size_t scheme_end = text.find("://");
    if (scheme_end != std::string_view::npos) {
        if (text.substr(0, scheme.size()) != scheme) return refuse("unknown scheme (expected redis://)");
        text.remove_prefix(scheme.size());
    }
    redis_url_result result;
    const std::size_t at = text.rfind('@');
    if (at != std::string_view::npos) {
        const std::string_view credentials = text.substr(0, at);
        const std::size_t colon = credentials.find(':');
        if (colon == std::string_view::npos) {
            result.url.password = credentials;  // redis://secret@host, as redis-cli accepts
        } else {
            result.url.user = credentials.substr(0, colon);
            result.url.password = credentials.substr(colon + 1);
        }
        text.remove_prefix(at + 1);
    }
    const std::size_t slash = text.find('/');
    if (slash != std::string_view::npos) {
        if (!parse_number(text.substr(slash + 1), 0, 65535, result.url.db)) return refuse("bad database number");
        text = text.substr(0, slash);
    }
    std::string_view port;
    if (!text.empty() && text.front() == '[') {
        const std::size_t close = text.find(']');
        if (close == std::string_view::npos) return refuse("unclosed [ in IPv6 address");
        result.url.host = text.substr(1, close - 1);
        const std::string_view rest = text.substr(close + 1);
        if (!rest.empty()) {
            if (rest.front() != ':') return refuse("unexpected bytes after ]");
            port = rest.substr(1);
            if (port.empty()) return refuse("empty port");
        }
    } else {
        const std::size_t colon = text.rfind(':');
        result.url.host = text.substr(0, colon);
        if (colon != std::string_view::npos) {
            port = text.substr(colon + 1);
            if (port.empty()) return refuse("empty port");
        }
    }
    if (result.url.host.empty()) return refuse("empty host");
    for (char c : result.url.host) {
        if (c == ' ' || c == '/' || c == '@' || c == '[' || c == ']') return refuse("bad byte in host");
    }
    if (!port.empty() && !parse_number(port, 1, 65535, result.url.port)) return refuse("bad port");
    return result;
}

}  // namespace edgelock
