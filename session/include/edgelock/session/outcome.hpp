// SPDX-License-Identifier: Apache-2.0
// edgelock session: what the clients report for the lock's verdicts. One rule set, so the
// asio and the blocking client answer the same call with the same code.
#pragma once

#include <cstddef>

#include "edgelock/lock.hpp"
#include "edgelock/session/transport_errc.hpp"

namespace edgelock::session {

// An acquire_failed event as the caller hears it: the reason the last attempt failed. A wait
// that ran out reports its last attempt's cause (busy, no_quorum, ...), never wait_timeout:
// the caller chose the wait, and what it needs is why it was not enough. With one instance,
// no_quorum means that instance failed, so its failure is reported when it is known
// (`instance_failure`: what the connection or the reply said, empty when nothing did).
failure acquire_result(const event& e, std::size_t instances,
                       const failure& instance_failure) noexcept;

// A released event: empty when a quorum deleted our key; expired when the lease had already
// run out (the protected work may have overlapped another owner's); otherwise, as for an
// acquire, the single instance's failure when known, else no_quorum (the key stays where it
// could not be deleted until its TTL ends).
failure release_result(const event& e, std::size_t instances,
                       const failure& instance_failure) noexcept;

}  // namespace edgelock::session
