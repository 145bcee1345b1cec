// SPDX-License-Identifier: Apache-2.0
// Compiled, never linked, by nodiscard_contract.cmake: with DROP=0 every result is used and the
// file must compile; with DROP=n (1..) case n drops one result, and -Werror=unused-result must
// refuse it. Each case is one kind of result the headers promise a caller cannot ignore.
#include <cstddef>
#include <system_error>

#include "edgelock/error_code.hpp"
#include "edgelock/blocking_lock.hpp"
#include "edgelock/lock.hpp"
#include "edgelock/resp_reader.hpp"
#include "edgelock/session/address.hpp"
#include "edgelock/session/handshake.hpp"
#include "edgelock/session/lock_traffic.hpp"
#include "edgelock/session/transport_errc.hpp"

#ifndef DROP
#error "DROP must be defined: 0 uses every result, n drops case n's"
#endif

namespace {

// No attribute of its own: the enumeration's [[nodiscard]] must cover it.
edgelock::errc plain_errc() noexcept { return edgelock::errc::ok; }
edgelock::transport_errc plain_transport_errc() noexcept {
    return edgelock::transport_errc::not_open;
}

}  // namespace

int use_or_drop(edgelock::lock& core, edgelock::session::connection& link,
                edgelock::blocking::lock& client, char* out, std::size_t capacity) {
    int used = 0;
    const edgelock::reply_node reply{};
    edgelock::session::node_address address;
    const edgelock::session::handshake_request handshake;
    const edgelock::failure failed = edgelock::failure::of(edgelock::errc::io_error);
#if DROP == 0
    used += core.configure(edgelock::lock_config{}) == edgelock::errc::ok;
    used += core.write_request(0, out, capacity).code == edgelock::errc::ok;
    used += edgelock::parse_reply(out, capacity, nullptr, 0).code == edgelock::errc::ok;
    used += edgelock::session::hear_close(core, 0, link, 0) == edgelock::errc::ok;
    used += edgelock::session::write_handshake(handshake, out, capacity).code == edgelock::errc::ok;
    used += edgelock::session::parse_node_url("redis://h", address).code == edgelock::errc::ok;
    used += plain_errc() == edgelock::errc::ok;
    used += plain_transport_errc() == edgelock::transport_errc::not_open;
    used += static_cast<bool>(edgelock::to_error_code(failed));
    used += static_cast<bool>(client.release());
    used += core.on_reply(0, reply, 0) == edgelock::errc::ok;
#elif DROP == 1
    core.configure(edgelock::lock_config{});
#elif DROP == 2
    core.write_request(0, out, capacity);
#elif DROP == 3
    edgelock::parse_reply(out, capacity, nullptr, 0);
#elif DROP == 4
    edgelock::session::hear_close(core, 0, link, 0);
#elif DROP == 5
    edgelock::session::write_handshake(handshake, out, capacity);
#elif DROP == 6
    edgelock::session::parse_node_url("redis://h", address);
#elif DROP == 7
    plain_errc();
#elif DROP == 8
    plain_transport_errc();
#elif DROP == 9
    edgelock::to_error_code(failed);
#elif DROP == 10
    client.release();
#elif DROP == 11
    core.on_reply(0, reply, 0);
#else
#error "no such case"
#endif
    return used;
}
