// SPDX-License-Identifier: Apache-2.0
#include "edgelock/sim/resource.hpp"

#include "edgelock/assert.hpp"
#include "edgelock/lock.hpp"

namespace edgelock::sim {

fenced_resource::fenced_resource(std::int64_t initial_value, std::uint16_t permits) noexcept
    : value_(initial_value), permits_(permits) {
    EDGELOCK_ASSERT(permits >= 1 && permits <= resource_permits_max);
}

std::int64_t fenced_resource::highest_token(std::int64_t token) const noexcept {
    return highest_tokens_[permit_of(token, permits_)];
}

bool fenced_resource::admit(bool fenced, std::int64_t token) noexcept {
    if (!fenced) return true;
    std::int64_t& highest = highest_tokens_[permit_of(token, permits_)];
    if (token < highest) return false;
    highest = token;
    return true;
}

fenced_resource::result fenced_resource::read(bool fenced, std::int64_t token) noexcept {
    const bool accepted = admit(fenced, token);
    return {accepted, value_};
}

fenced_resource::result fenced_resource::write(bool fenced, std::int64_t token,
                                               std::int64_t value) noexcept {
    const bool accepted = admit(fenced, token);
    if (accepted) value_ = value;
    return {accepted, value_};
}

}  // namespace edgelock::sim
