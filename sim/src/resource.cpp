// SPDX-License-Identifier: Apache-2.0
#include "edgelock/sim/resource.hpp"

#include <algorithm>

namespace edgelock::sim {

bool fenced_resource::admit(bool fenced, std::int64_t token) {
    if (!fenced) return true;
    const auto above = std::upper_bound(highest_.begin(), highest_.end(), token,
                                        [](std::int64_t t, std::int64_t kept) { return t > kept; });
    const auto higher = static_cast<std::size_t>(above - highest_.begin());
    const bool known = higher > 0 && highest_[higher - 1] == token;
    if (higher - (known ? 1 : 0) >= writers_) return false;
    if (!known) highest_.insert(above, token);
    if (highest_.size() > writers_) highest_.pop_back();
    return true;
}

fenced_resource::result fenced_resource::read(bool fenced, std::int64_t token) {
    const bool accepted = admit(fenced, token);
    return {accepted, value_};
}

fenced_resource::result fenced_resource::write(bool fenced, std::int64_t token,
                                               std::int64_t value) {
    const bool accepted = admit(fenced, token);
    if (accepted) value_ = value;
    return {accepted, value_};
}

}  // namespace edgelock::sim
