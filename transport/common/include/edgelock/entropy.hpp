// edgelock: owner tokens from the operating system's random source.
#pragma once

#include "edgelock/errc.hpp"
#include "edgelock/lock.hpp"

namespace edgelock {

// Fills `token` from getrandom(2), retrying on EINTR. Returns ok, or io_error when the
// kernel cannot supply random bytes (the token is then unusable).
errc random_token(owner_token& token) noexcept;

}  // namespace edgelock
