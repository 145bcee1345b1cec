// SPDX-License-Identifier: Apache-2.0
// The former names of edgelock/blocking_lock.hpp and of its namespace, kept for one release:
// include edgelock/blocking_lock.hpp and name edgelock::blocking.
#pragma once

#include "edgelock/blocking_lock.hpp"

namespace edgelock {
namespace hiredis = blocking;
}  // namespace edgelock
