// SPDX-License-Identifier: Apache-2.0
// Fuzzes parse_reply with any bytes. Besides the sanitizers, it checks the reader's contract:
// a complete reply consumes a non-empty prefix and fills at most the nodes it was given; the
// same prefix alone parses to the same result; an incomplete reply consumes nothing; and a
// reply's nodes point into the input.
#include <array>
#include <cstddef>
#include <cstdint>

#include "edgelock/resp_reader.hpp"
#include "fuzz_check.hpp"

namespace {

constexpr std::size_t nodes_capacity = 32;  // below nodes_max: the capacity limit is reached too

bool inside(const char* data, std::size_t size, std::string_view text) {
    return text.empty() || (text.data() >= data && text.data() + text.size() <= data + size);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
    const auto* data = reinterpret_cast<const char*>(bytes);
    std::array<edgelock::reply_node, nodes_capacity> nodes{};
    const edgelock::parse_result r = edgelock::parse_reply(data, size, nodes.data(), nodes.size());
    if (r.code != edgelock::errc::ok) {
        EDGELOCK_FUZZ_CHECK(r.consumed == 0 && r.nodes == 0,
                            "a refused or incomplete reply consumed bytes");
        return 0;
    }
    EDGELOCK_FUZZ_CHECK(r.consumed > 0 && r.consumed <= size, "consumed outside the input");
    EDGELOCK_FUZZ_CHECK(r.nodes > 0 && r.nodes <= nodes_capacity,
                        "node count outside the capacity");
    for (std::size_t i = 0; i < r.nodes; ++i) {
        EDGELOCK_FUZZ_CHECK(inside(data, r.consumed, nodes[i].text),
                            "a node's text outside its reply");
    }
    std::array<edgelock::reply_node, nodes_capacity> again{};
    const edgelock::parse_result prefix =
        edgelock::parse_reply(data, r.consumed, again.data(), again.size());
    EDGELOCK_FUZZ_CHECK(prefix.code == edgelock::errc::ok && prefix.consumed == r.consumed &&
                            prefix.nodes == r.nodes,
                        "the reply alone parses differently");
    if (r.consumed > 1) {
        const edgelock::parse_result cut =
            edgelock::parse_reply(data, r.consumed - 1, again.data(), again.size());
        EDGELOCK_FUZZ_CHECK(cut.code != edgelock::errc::ok, "a reply cut by one byte still parsed");
    }
    return 0;
}
