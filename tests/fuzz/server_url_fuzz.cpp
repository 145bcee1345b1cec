// SPDX-License-Identifier: Apache-2.0
// Fuzzes parse_node_url with any text: it either refuses with a one-line reason that never
// repeats the input, or returns a non-empty host without separators, a port in 1..65535, and
// parts that fit their limits and appear in the input; format_address of the result parses
// back to the same server.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "edgelock/session/address.hpp"
#include "fuzz_check.hpp"

namespace {

using edgelock::errc;
using edgelock::session::node_address;

void check_refusal(const edgelock::session::address_result& r) {
    EDGELOCK_FUZZ_CHECK(r.code == errc::invalid_config, "refused with another code");
    EDGELOCK_FUZZ_CHECK(r.problem != nullptr && std::strchr(r.problem, '\n') == nullptr,
                        "a refusal without a one-line reason");
}

void check_accepted(std::string_view text, const node_address& a) {
    EDGELOCK_FUZZ_CHECK(!a.host.empty(), "an accepted address without a host");
    EDGELOCK_FUZZ_CHECK(a.port >= 1, "an accepted port 0");
    EDGELOCK_FUZZ_CHECK(text.find(a.host.view()) != std::string_view::npos,
                        "a host not in the input");
    EDGELOCK_FUZZ_CHECK(text.find(a.password.view()) != std::string_view::npos,
                        "a password not in the input");
    for (const char c : a.host.view()) {
        EDGELOCK_FUZZ_CHECK(c != '/' && c != '@' && c != ' ', "a host with a separator in it");
    }
    node_address again;
    const auto shown = edgelock::session::format_address(a);
    const auto reparsed = edgelock::session::parse_node_url(shown.view(), again);
    EDGELOCK_FUZZ_CHECK(reparsed.code == errc::ok,
                        "format_address gave an address the parser refuses");
    EDGELOCK_FUZZ_CHECK(again.same_node(a),
                        "format_address does not parse back to the same server");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    node_address address;
    const auto r = edgelock::session::parse_node_url(text, address);
    if (r.code != errc::ok) {
        check_refusal(r);
    } else {
        check_accepted(text, address);
    }
    return 0;
}
