// SPDX-License-Identifier: Apache-2.0
#include "edgelock/errc.hpp"

namespace edgelock {

const char* to_string(errc code) noexcept {
    switch (code) {
        case errc::ok: return "ok";
        case errc::invalid_name: return "invalid_name";
        case errc::invalid_ttl: return "invalid_ttl";
        case errc::invalid_wait: return "invalid_wait";
        case errc::invalid_instances: return "invalid_instances";
        case errc::invalid_instance: return "invalid_instance";
        case errc::invalid_config: return "invalid_config";
        case errc::invalid_state: return "invalid_state";
        case errc::not_held: return "not_held";
        case errc::buffer_too_small: return "buffer_too_small";
        case errc::busy: return "busy";
        case errc::no_quorum: return "no_quorum";
        case errc::validity_expired: return "validity_expired";
        case errc::wait_timeout: return "wait_timeout";
        case errc::cancelled: return "cancelled";
        case errc::token_gone: return "token_gone";
        case errc::not_replicated: return "not_replicated";
        case errc::expired: return "expired";
        case errc::need_more: return "need_more";
        case errc::protocol_error: return "protocol_error";
        case errc::reply_too_large: return "reply_too_large";
        case errc::too_many_elements: return "too_many_elements";
        case errc::too_deep: return "too_deep";
        case errc::unexpected_reply: return "unexpected_reply";
        case errc::error_reply: return "error_reply";
        case errc::io_error: return "io_error";
        case errc::events_pending: return "events_pending";
        case errc::invalid_time: return "invalid_time";
        case errc::clock_stepped_back: return "clock_stepped_back";
        case errc::fence_exhausted: return "fence_exhausted";
        case errc::restart_guard: return "restart_guard";
        case errc::node_restarted: return "node_restarted";
        case errc::wrong_kind: return "wrong_kind";
        case errc::permits_mismatch: return "permits_mismatch";
    }
    return "unknown";
}

}  // namespace edgelock
