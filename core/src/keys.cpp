// SPDX-License-Identifier: Apache-2.0
#include "edgelock/keys.hpp"

#include <array>
#include <cstdint>
#include <cstring>
#include <initializer_list>

namespace edgelock {

namespace {

constexpr std::array<std::string_view, 5> companion_suffixes = {":fence", ":queue", ":qttl",
                                                                ":owner", ":slots"};
constexpr std::uint16_t slot_count = cluster_slots;

// CRC16-XMODEM (polynomial 0x1021, initial value 0), the hash of Redis Cluster.
constexpr std::uint16_t crc16(const char* bytes, std::size_t size) noexcept {
    std::uint16_t crc = 0;
    for (std::size_t i = 0; i < size; ++i) {
        crc = static_cast<std::uint16_t>(crc ^ (static_cast<std::uint8_t>(bytes[i]) << 8));
        for (int bit = 0; bit < 8; ++bit) {
            const bool carry = (crc & 0x8000) != 0;
            crc = static_cast<std::uint16_t>(crc << 1);
            if (carry) crc = static_cast<std::uint16_t>(crc ^ 0x1021);
        }
    }
    return crc;
}

// A tag that stands in for a name that cannot be its own tag: four bytes '@' + nibble
// ("@ABCDEFGHIJKLMNO"), 16 free bits. With a zero initial value CRC16 is linear over GF(2)
// for messages of one length, and the slot keeps its low 14 bits, so the slot of a tag is
// the slot of "@@@@" XOR a linear function of the nibbles. slot_bit_preimages[i] are nibbles
// that flip slot bit i alone (found by Gaussian elimination, proven below); XORing those of
// the bits where the wanted slot differs from the slot of "@@@@" reaches any slot.
constexpr std::size_t slot_tag_bytes = 4;
constexpr std::array<std::uint16_t, 14> slot_bit_preimages = {
    0x1afa, 0x06ed, 0x277b, 0x110c, 0x2a91, 0x39c0, 0x1f63,
    0x277f, 0x1104, 0x2208, 0x1bea, 0x04cd, 0x233b, 0x198c,
};

constexpr std::array<char, slot_tag_bytes> slot_tag(std::uint16_t nibbles) noexcept {
    std::array<char, slot_tag_bytes> tag{};
    for (std::size_t i = 0; i < slot_tag_bytes; ++i) {
        const unsigned shift = 4 * (slot_tag_bytes - 1 - i);
        tag[i] = static_cast<char>('@' | ((nibbles >> shift) & 0xf));
    }
    return tag;
}

constexpr std::uint16_t slot_of_tag(std::uint16_t nibbles) noexcept {
    const std::array<char, slot_tag_bytes> tag = slot_tag(nibbles);
    return static_cast<std::uint16_t>(crc16(tag.data(), tag.size()) % slot_count);
}

constexpr bool each_preimage_flips_its_slot_bit() noexcept {
    for (std::size_t bit = 0; bit < slot_bit_preimages.size(); ++bit) {
        const unsigned flipped = slot_of_tag(slot_bit_preimages[bit]) ^ slot_of_tag(0);
        if (flipped != (1u << bit)) return false;
    }
    return true;
}
static_assert(each_preimage_flips_its_slot_bit(), "the slot tag could miss some slots");
static_assert(slot_bit_preimages.size() == 14 && slot_count == 1u << 14);

std::array<char, slot_tag_bytes> tag_for_slot(std::uint16_t slot) noexcept {
    const unsigned bits_to_flip = slot ^ slot_of_tag(0);
    std::uint16_t nibbles = 0;
    for (std::size_t bit = 0; bit < slot_bit_preimages.size(); ++bit) {
        if ((bits_to_flip >> bit) & 1u) nibbles ^= slot_bit_preimages[bit];
    }
    return slot_tag(nibbles);
}

// Writes the parts one after another, or nothing and returns 0 when they do not fit.
std::size_t write_parts(char* out, std::size_t capacity,
                        std::initializer_list<std::string_view> parts) noexcept {
    std::size_t size = 0;
    for (const std::string_view part : parts) size += part.size();
    if (size > capacity) return 0;
    std::size_t at = 0;
    for (const std::string_view part : parts) {
        std::memcpy(out + at, part.data(), part.size());
        at += part.size();
    }
    return at;
}

// Where the hash tag of `name` lies (between name[open] and name[close]), if it has one.
bool find_hash_tag(std::string_view name, std::size_t& open, std::size_t& close) noexcept {
    open = name.find('{');
    if (open == std::string_view::npos) return false;
    close = name.find('}', open + 1);
    return close != std::string_view::npos && close > open + 1;
}

// "{" + a computed tag of the name's slot + "}" + name + suffix.
std::size_t write_with_slot_tag(std::string_view name, std::string_view suffix, char* out,
                                std::size_t capacity) noexcept {
    const std::array<char, slot_tag_bytes> tag = tag_for_slot(cluster_slot(name));
    const std::string_view tag_view(tag.data(), tag.size());
    return write_parts(out, capacity, {"{", tag_view, "}", name, suffix});
}

}  // namespace

bool has_hash_tag(std::string_view name) noexcept {
    std::size_t open = 0;
    std::size_t close = 0;
    return find_hash_tag(name, open, close);
}

std::size_t write_companion_key(std::string_view name, companion which, char* out,
                                std::size_t capacity) noexcept {
    const std::string_view suffix = companion_suffixes[static_cast<std::size_t>(which)];
    if (has_hash_tag(name)) {
        // The fence counter keeps its historic key, which "{x}" shares with "x" (harmless:
        // it only moves up). A line must be one name's alone (keys.hpp).
        if (which == companion::fence) return write_parts(out, capacity, {name, suffix});
        return write_with_slot_tag(name, suffix, out, capacity);
    }
    // Redis hashes all of `name`. As a tag it hashes the same, unless a '}' in it would end
    // the tag early (or it is empty, and "{}" is no tag).
    if (!name.empty() && name.find('}') == std::string_view::npos) {
        return write_parts(out, capacity, {"{", name, "}", suffix});
    }
    return write_with_slot_tag(name, suffix, out, capacity);
}

std::size_t write_fence_key(std::string_view name, char* out, std::size_t capacity) noexcept {
    return write_companion_key(name, companion::fence, out, capacity);
}

std::size_t write_wake_channel(std::string_view name, std::string_view token_hex, char* out,
                               std::size_t capacity) noexcept {
    if (token_hex.size() != token_hex_bytes) return 0;
    const std::size_t line = write_companion_key(name, companion::queue, out, capacity);
    if (line == 0) return 0;
    const std::size_t tail = write_parts(out + line, capacity - line, {":", token_hex});
    return tail == 0 ? 0 : line + tail;
}

bool wake_names(std::string_view message, std::string_view token_hex) noexcept {
    if (message.size() < token_hex.size()) return false;
    const std::string_view head(message.data(), token_hex.size());  // not substr(): it throws
    return head == token_hex &&
           (message.size() == token_hex.size() || message[token_hex.size()] == ' ');
}

namespace {

bool is_companion_key_of(std::string_view name, companion which) noexcept {
    const std::string_view wanted = companion_suffixes[static_cast<std::size_t>(which)];
    if (name.size() <= wanted.size()) return false;
    const std::size_t stem_size = name.size() - wanted.size();
    // Not substr(): its out-of-range check would link a throwing path into the core.
    const std::string_view suffix(name.data() + stem_size, wanted.size());
    return suffix == wanted && has_hash_tag(std::string_view(name.data(), stem_size));
}

}  // namespace

bool is_fence_key(std::string_view name) noexcept {
    return is_companion_key_of(name, companion::fence);
}

bool is_companion_key(std::string_view name) noexcept {
    for (const companion which : {companion::fence, companion::queue, companion::queue_ttl,
                                  companion::owner, companion::slots}) {
        if (is_companion_key_of(name, which)) return true;
    }
    return false;
}

std::uint16_t cluster_slot(std::string_view key) noexcept {
    std::size_t open = 0;
    std::size_t close = 0;
    const std::string_view hashed = find_hash_tag(key, open, close)
                                        ? std::string_view(key.data() + open + 1, close - open - 1)
                                        : key;
    return static_cast<std::uint16_t>(crc16(hashed.data(), hashed.size()) % slot_count);
}

}  // namespace edgelock
