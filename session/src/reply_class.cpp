// SPDX-License-Identifier: Apache-2.0
#include "edgelock/session/reply_class.hpp"

#include <string_view>

namespace edgelock::session {
namespace {

// The error's first word, as Redis prefixes it ("READONLY You can't write against ...").
bool has_prefix(std::string_view text, std::string_view word) noexcept {
    if (text.size() < word.size() || std::string_view(text.data(), word.size()) != word)
        return false;
    return text.size() == word.size() || text[word.size()] == ' ';
}

}  // namespace

reply_verdict classify(const reply_node& reply) noexcept {
    if (reply.type != reply_type::error) return {};
    // Redis's whole text, not a prefix: "ERR" starts every generic error.
    if (reply.text == "ERR max number of clients reached") {
        return {reply_class::refused_connection, transport_errc::max_clients};
    }
    struct rule {
        std::string_view prefix;
        transport_errc reason;
    };
    static constexpr rule rules[] = {
        {"READONLY", transport_errc::not_master},   {"MASTERDOWN", transport_errc::master_down},
        {"LOADING", transport_errc::loading},       {"NOAUTH", transport_errc::auth_required},
        {"WRONGPASS", transport_errc::auth_failed},
    };
    for (const rule& r : rules) {
        if (has_prefix(reply.text, r.prefix)) return {reply_class::wrong_node, r.reason};
    }
    return {};
}

bool cluster_settling(std::string_view error_text) noexcept {
    return has_prefix(error_text, "TRYAGAIN") || has_prefix(error_text, "CLUSTERDOWN");
}

}  // namespace edgelock::session
