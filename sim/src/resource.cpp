// SPDX-License-Identifier: Apache-2.0
#include "edgelock/sim/resource.hpp"

namespace edgelock::sim {

bool fenced_resource::admit(bool fenced, std::int64_t token) noexcept {
    if (!fenced) return true;
    if (token < highest_token_) return false;
    highest_token_ = token;
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
