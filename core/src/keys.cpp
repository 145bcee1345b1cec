#include "edgelock/keys.hpp"

#include <cstring>

namespace edgelock {

bool has_hash_tag(std::string_view name) noexcept {
    const std::size_t open = name.find('{');
    if (open == std::string_view::npos) return false;
    const std::size_t close = name.find('}', open + 1);
    return close != std::string_view::npos && close > open + 1;
}

std::size_t write_fence_key(std::string_view name, char* out, std::size_t capacity) noexcept {
    constexpr std::string_view suffix = ":fence";
    const bool tagged = has_hash_tag(name);
    const std::size_t size = name.size() + suffix.size() + (tagged ? 0 : 2);
    if (size > capacity) return 0;
    std::size_t at = 0;
    if (!tagged) out[at++] = '{';
    std::memcpy(out + at, name.data(), name.size());
    at += name.size();
    if (!tagged) out[at++] = '}';
    std::memcpy(out + at, suffix.data(), suffix.size());
    return at + suffix.size();
}

}  // namespace edgelock
