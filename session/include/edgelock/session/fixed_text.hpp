// SPDX-License-Identifier: Apache-2.0
// edgelock session: text of at most N bytes in fixed storage.
//
// Addresses and names that a session keeps for its whole life are copied into these once,
// when parsed, so nothing a session holds points into a caller's buffer or the heap.
#pragma once

#include <array>
#include <cstddef>
#include <string_view>

namespace edgelock::session {

template <std::size_t N>
class fixed_text {
public:
    static constexpr std::size_t capacity_bytes = N;

    // Copies `text` when it fits; returns false (leaving this unchanged) when it does not.
    bool assign(std::string_view text) noexcept {
        if (text.size() > N) return false;
        for (std::size_t i = 0; i < text.size(); ++i) bytes_[i] = text[i];
        size_ = text.size();
        return true;
    }
    // Copies the first N bytes of `text` at most: for text kept only to be shown (a server's
    // error message), where a cut end beats nothing.
    void assign_prefix(std::string_view text) noexcept {
        const bool fits = assign(text.substr(0, text.size() < N ? text.size() : N));
        (void)fits;  // always: the prefix is at most N bytes
    }
    void clear() noexcept { size_ = 0; }
    std::string_view view() const noexcept { return {bytes_.data(), size_}; }
    bool empty() const noexcept { return size_ == 0; }
    std::size_t size() const noexcept { return size_; }

    friend bool operator==(const fixed_text& a, const fixed_text& b) noexcept {
        return a.view() == b.view();
    }
    friend bool operator!=(const fixed_text& a, const fixed_text& b) noexcept { return !(a == b); }

private:
    std::array<char, N> bytes_{};
    std::size_t size_ = 0;
};

}  // namespace edgelock::session
