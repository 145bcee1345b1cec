// SPDX-License-Identifier: Apache-2.0
#include "edgelock/session/outcome.hpp"

#include "edgelock/assert.hpp"

namespace edgelock::session {
namespace {

failure instead_of_no_quorum(std::size_t instances, const failure& instance_failure) noexcept {
    if (instances == 1 && instance_failure) return instance_failure;
    return failure::of(errc::no_quorum);
}

}  // namespace

failure acquire_result(const event& e, std::size_t instances,
                       const failure& instance_failure) noexcept {
    EDGELOCK_ASSERT(e.type == event_type::acquire_failed);
    const errc code = e.code == errc::wait_timeout ? e.cause : e.code;
    if (code == errc::no_quorum) return instead_of_no_quorum(instances, instance_failure);
    return failure::of(code == errc::ok ? errc::wait_timeout : code);
}

failure release_result(const event& e, std::size_t instances,
                       const failure& instance_failure) noexcept {
    EDGELOCK_ASSERT(e.type == event_type::released);
    if (e.expired_before) return failure::of(errc::expired);
    if (e.instances_released >= quorum_of(instances)) return {};
    return instead_of_no_quorum(instances, instance_failure);
}

}  // namespace edgelock::session
