// SPDX-License-Identifier: Apache-2.0
#include "error_message.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <vector>

#include "edgelock.h"
#include "edgelock/session/address.hpp"

namespace edgelock::capi {
namespace {

// Linux's errno values end at 133 (EHWPOISON); a value beyond has no text here.
constexpr int os_error_values_max = 134;
constexpr std::size_t os_error_text_bytes_max = 64;

// strerror_r is GNU's (returns the text, maybe not in `buffer`) or XSI's (fills `buffer`,
// returns 0): either way, the text or nullptr.
[[maybe_unused]] const char* strerror_result(const char* text, const char*) noexcept {
    return text;
}
[[maybe_unused]] const char* strerror_result(int failed, const char* buffer) noexcept {
    return failed == 0 ? buffer : nullptr;
}

// Every text made once, so that edgelock_strerror() can hand out pointers that live as long
// as the process, as its contract says, whichever thread asks.
struct os_error_texts {
    os_error_texts() noexcept {
        for (int value = 1; value < os_error_values_max; ++value) {
            char buffer[os_error_text_bytes_max] = {};
            const char* text = strerror_result(::strerror_r(value, buffer, sizeof buffer), buffer);
            char* out = texts[value];
            if (text == nullptr) continue;
            std::strncpy(out, text, os_error_text_bytes_max - 1);
            // "Connection refused" reads "connection refused" after a colon; "RPC ..." stays.
            if (std::islower(static_cast<unsigned char>(out[1])) != 0) {
                out[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(out[0])));
            }
        }
    }
    char texts[os_error_values_max][os_error_text_bytes_max] = {};
};

// Per thread, as errno is: the message belongs to the call that failed on this thread.
thread_local char thread_message[error_message_bytes_max] = {};

// An address as a message shows it: what the parser would take for credentials (after the
// scheme, up to the last '@') as "***", in double quotes (a quote or backslash in it escaped).
std::string shown_address(std::string_view url) {
    const std::size_t scheme_end = url.find("://");
    const std::size_t start = scheme_end == std::string_view::npos ? 0 : scheme_end + 3;
    const std::size_t at = url.rfind('@');
    std::string plain(url);
    if (at != std::string_view::npos && at >= start) {
        plain = std::string(url.substr(0, start)) + "***" + std::string(url.substr(at));
    }
    std::string quoted = "\"";
    for (const char c : plain) {
        if (c == '"' || c == '\\') quoted += '\\';
        quoted += c;
    }
    return quoted + "\"";
}

std::string url_list_problem(const std::vector<std::string>& urls, const char* field) {
    for (std::size_t i = 0; i < urls.size(); ++i) {
        session::node_address address;
        const session::address_result parsed = session::parse_node_url(urls[i], address);
        std::string problem = parsed.problem;
        if (parsed.code == errc::ok) problem.clear();
        // The one rule a cluster seed adds (deployment.hpp): SELECT fails on every node.
        if (parsed.code == errc::ok && address.db != 0 && std::strcmp(field, "cluster") == 0) {
            problem = "a cluster has only database 0";
        }
        if (!problem.empty()) {
            return std::string("bad ") + field + "[" + std::to_string(i) + "] address " +
                   shown_address(urls[i]) + ": " + problem;
        }
    }
    return "";
}

}  // namespace

const char* os_error_text(int value) noexcept {
    static const os_error_texts table;
    if (value <= 0 || value >= os_error_values_max) return nullptr;
    const char* text = table.texts[value];
    return text[0] == '\0' ? nullptr : text;
}

int note_failure(int code, std::string_view message) noexcept {
    if (message.empty()) message = edgelock_strerror(code);
    const std::size_t n = std::min(message.size(), error_message_bytes_max - 1);
    // One line whatever a path or a reason holds: a control byte becomes '?'.
    for (std::size_t i = 0; i < n; ++i) {
        const auto byte = static_cast<unsigned char>(message[i]);
        thread_message[i] = byte < 0x20 || byte == 0x7f ? '?' : message[i];
    }
    thread_message[n] = '\0';
    return code;
}

const char* last_error_message() noexcept { return thread_message; }

std::string address_problem(const deployment& where) {
    std::string problem = url_list_problem(where.instances, "instances");
    if (problem.empty()) problem = url_list_problem(where.sentinels, "sentinels");
    if (problem.empty()) problem = url_list_problem(where.cluster, "cluster");
    return problem;
}

}  // namespace edgelock::capi
