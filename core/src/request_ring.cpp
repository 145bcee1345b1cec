// SPDX-License-Identifier: Apache-2.0
#include "edgelock/request_ring.hpp"

#include <cstring>

#include "edgelock/assert.hpp"

namespace edgelock {

// ---- request_ring ------------------------------------------------------------------------

const lock_request& request_ring::at(std::uint8_t n) const noexcept {
    EDGELOCK_ASSERT(n < count_);
    return slots_[index(n)];
}

bool request_ring::push(const lock_request& r, std::size_t free_slots_needed) noexcept {
    EDGELOCK_ASSERT(free_slots_needed >= 1);
    if (free_slots() < free_slots_needed) return false;
    slots_[index(count_)] = r;
    ++count_;
    return true;
}

lock_request& request_ring::next_unsent() noexcept {
    EDGELOCK_ASSERT(has_unsent());
    return slots_[index(in_flight_)];
}

void request_ring::mark_sent() noexcept {
    EDGELOCK_ASSERT(has_unsent());
    ++in_flight_;
}

void request_ring::mark_all_sent() noexcept { in_flight_ = count_; }

lock_request request_ring::pop_in_flight(bool& token_replaced) noexcept {
    EDGELOCK_ASSERT(in_flight_ > 0);
    EDGELOCK_ASSERT(count_ >= in_flight_);
    const lock_request first = slots_[head_];
    const std::uint8_t bit = static_cast<std::uint8_t>(1u << head_);
    token_replaced = (replaced_ & bit) != 0;
    replaced_ = static_cast<std::uint8_t>(replaced_ & ~bit);
    head_ = index(1);
    --count_;
    --in_flight_;
    return first;
}

// Compacts the unsent part in place: what is in flight stays where it is.
template <typename Predicate>
bool request_ring::drop_unsent_if(Predicate drop) noexcept {
    std::uint8_t kept = in_flight_;
    for (std::uint8_t n = in_flight_; n < count_; ++n) {
        const lock_request r = slots_[index(n)];
        if (drop(r)) continue;
        slots_[index(kept)] = r;
        ++kept;
    }
    const bool dropped = kept != count_;
    count_ = kept;
    return dropped;
}

bool request_ring::drop_unsent_current() noexcept {
    return drop_unsent_if([](const lock_request& r) { return r.current != 0; });
}

void request_ring::clear_current() noexcept {
    // A WAIT of the decided round not written yet would confirm nothing now: written later,
    // perhaps on the next connection, it would hold back what follows it for its timeout.
    drop_unsent_if([](const lock_request& r) {
        return r.current != 0 && r.kind() == request_kind::replicate;
    });
    for (std::uint8_t n = 0; n < count_; ++n) slots_[index(n)].current = 0;
}

void request_ring::reuse_token_slot(std::uint8_t slot) noexcept {
    for (std::uint8_t n = 0; n < in_flight_; ++n) {
        const std::uint8_t at = index(n);
        if (slots_[at].token_slot != slot) continue;
        replaced_ = static_cast<std::uint8_t>(replaced_ | 1u << at);
    }
    drop_unsent_if([slot](const lock_request& r) { return r.token_slot == slot; });
}

// ---- token_slots -------------------------------------------------------------------------

namespace {

// Every byte's two hex digits, so a token is written a byte (two characters) per step: the
// token goes out in each acquire and release, and encoding is a large share of a lock
// operation's instructions (bench/lock_cycle).
constexpr std::array<char, 512> hex_pairs = [] {
    constexpr char digits[] = "0123456789abcdef";
    std::array<char, 512> pairs{};
    for (std::size_t b = 0; b < 256; ++b) {
        pairs[2 * b] = digits[b >> 4];
        pairs[2 * b + 1] = digits[b & 0xf];
    }
    return pairs;
}();

}  // namespace

std::array<char, token_hex_bytes> token_slots::hex(std::uint8_t slot) const noexcept {
    const owner_token& bytes = token(slot);
    std::array<char, token_hex_bytes> text{};
    for (std::size_t i = 0; i < token_bytes; ++i) {
        std::memcpy(&text[2 * i], &hex_pairs[2 * std::size_t{bytes[i]}], 2);
    }
    return text;
}

void token_slots::take(const owner_token& token) noexcept {
    const std::uint8_t slot = next();
    token_slot_ = slot;
    tokens_[slot] = token;
}

}  // namespace edgelock
