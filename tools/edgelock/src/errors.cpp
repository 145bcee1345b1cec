// SPDX-License-Identifier: Apache-2.0
#include "errors.hpp"

#include <cctype>

#include "edgelock/error_code.hpp"
#include "edgelock/blocking_lock.hpp"
#include "edgelock/session/address.hpp"
#include "edgelock/session/reply_class.hpp"
#include "exit_codes.hpp"
#include "quote.hpp"

namespace edgelock::cli {
namespace {

// The TLS options of this run (note_tls_options), for the hints a refusal deserves.
tls_options noted_tls;

const char* describe_errc(errc code) {
    switch (code) {
        case errc::busy: return "held by another owner";
        case errc::no_quorum: return "too few Redis instances answered";
        case errc::validity_expired:
            return "Redis answered too late for any of the lease to remain";
        case errc::wait_timeout: return "the wait ran out";
        case errc::token_gone: return "the key no longer holds our token";
        case errc::not_replicated: return "too few replicas confirmed the lock";
        case errc::expired: return "renewal did not reach Redis before the lease ended";
        case errc::fence_exhausted: return "the fence counter is at 2^63-1: no higher token exists";
        case errc::restart_guard:
            return "a Redis node started without durable data too recently to count (restart "
                   "guard)";
        case errc::node_restarted: return "a Redis node restarted during the hold";
        case errc::wrong_kind:
            return "a key of the lock holds another kind of value (a lock's name used as a "
                   "semaphore, or the reverse)";
        case errc::permits_mismatch: return "the semaphore is held with another number of permits";
        case errc::protocol_error: return "the server does not speak RESP (protocol error)";
        case errc::error_reply: return "Redis answered with an error";
        case errc::unexpected_reply: return "Redis sent an unexpected reply";
        case errc::reply_too_large:
        case errc::too_many_elements:
        case errc::too_deep: return "Redis sent a reply beyond the client's limits";
        case errc::io_error: return "input/output error";
        default: return to_string(code);
    }
}

}  // namespace

int exit_code_for(std::error_code ec, std::string_view redis_text) {
    const bool settling = ec == errc::error_reply && session::cluster_settling(redis_text);
    return settling ? exit_unavailable : exit_code_for(ec);
}

int exit_code_for(std::error_code ec) {
    if (ec.category() == error_category()) {
        switch (static_cast<errc>(ec.value())) {
            case errc::restart_guard: return exit_restart_guard;
            case errc::no_quorum:
            case errc::validity_expired:
            case errc::token_gone:
            case errc::not_replicated:
            case errc::expired:
            case errc::node_restarted:
            case errc::io_error: return exit_unavailable;
            case errc::protocol_error:
            case errc::fence_exhausted:
            case errc::wrong_kind:
            case errc::permits_mismatch:
            case errc::error_reply:
            case errc::unexpected_reply:
            case errc::reply_too_large:
            case errc::too_many_elements:
            case errc::too_deep: return exit_redis_refused;
            case errc::invalid_name:
            case errc::invalid_ttl:
            case errc::invalid_wait:
            case errc::invalid_instances:
            case errc::invalid_config: return exit_usage;
            default: return exit_internal;
        }
    }
    if (ec.category() == transport_category()) {
        switch (static_cast<transport_errc>(ec.value())) {
            case transport_errc::unknown_host:
            case transport_errc::connect_timeout:
            case transport_errc::handshake_timeout:
            case transport_errc::command_timeout:
            case transport_errc::connection_closed:
            case transport_errc::not_master:
            case transport_errc::master_down:
            case transport_errc::loading:
            case transport_errc::no_master:
            case transport_errc::master_changed:
            case transport_errc::max_clients:
            case transport_errc::too_many_redirects:
            case transport_errc::no_slot_map:
            case transport_errc::too_many_masters: return exit_unavailable;
            case transport_errc::auth_failed:
            case transport_errc::auth_required:
            case transport_errc::node_info_refused:
            case transport_errc::select_failed: return exit_redis_refused;
            case transport_errc::tls_files: return exit_usage;
            case transport_errc::tls_untrusted:
            case transport_errc::tls_name_mismatch:
            case transport_errc::tls_expired:
            case transport_errc::tls_client_certificate_required:
            case transport_errc::tls_handshake_failed: return exit_tls;
            // Most likely TLS on one side only, but a hung server or a proxy whose backend is
            // down look the same: unavailable (a scheduler retries 69), the message says more.
            // A plain Redis answers a ClientHello (not_offered) when its random bytes hold a
            // newline, and stays silent (handshake_timeout) otherwise: one cause, one code.
            case transport_errc::tls_not_offered:
            case transport_errc::tls_handshake_timeout:
            case transport_errc::closed_before_reply: return exit_unavailable;
            default: return exit_internal;
        }
    }
    if (ec.category() == std::generic_category() || ec.category() == std::system_category()) {
        return exit_unavailable;
    }
    return exit_internal;
}

void note_tls_options(const tls_options& tls) { noted_tls = tls; }

std::string describe(std::error_code ec) {
    if (ec.category() == error_category()) return describe_errc(static_cast<errc>(ec.value()));
    std::string text = ec.message();
    // "Connection refused" reads "connection refused" inside a sentence; "TLS: ..." stays.
    const auto lower = [](char c) { return std::islower(static_cast<unsigned char>(c)) != 0; };
    // "Redis refused ..." keeps its name.
    const bool names_redis = text.rfind("Redis ", 0) == 0;
    if (text.size() > 1 && lower(text[1]) && !names_redis) {
        text[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(text[0])));
    }
    // OpenSSL finds a CA in a directory only by its hash link (what `openssl rehash` makes):
    // a directory of plain PEM files loads without a word and trusts nothing.
    if (ec == transport_errc::tls_untrusted && !noted_tls.ca_dir.empty()) {
        const std::string dir = shown(noted_tls.ca_dir);
        text += " (is " + dir + " hashed? run: openssl rehash " + dir + ")";
    }
    return text;
}

std::string describe(std::error_code ec, const blocking::lock& lock, std::size_t instance) {
    const std::string text =
        ec == errc::error_reply ? lock.instance_error_text(instance) : std::string();
    return text.empty() ? describe(ec) : describe(ec) + ": " + shown(text);
}

std::string display_address(std::string_view url) {
    session::node_address address;
    if (session::parse_node_url(url, address).code != errc::ok) return shown(url);
    return shown(std::string(session::format_address(address).view()));
}

}  // namespace edgelock::cli
