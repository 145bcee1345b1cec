#include "edgelock/entropy.hpp"

#include <sys/random.h>

#include <cerrno>
#include <cstddef>

namespace edgelock {

errc random_token(owner_token& token) noexcept {
    std::size_t filled = 0;
    // 16 bytes never block once the pool is initialised; a few retries cover EINTR.
    for (int tries = 0; tries < 8 && filled < token.size(); ++tries) {
        const ssize_t got = getrandom(token.data() + filled, token.size() - filled, 0);
        if (got < 0) {
            if (errno == EINTR) continue;
            return errc::io_error;
        }
        filled += static_cast<std::size_t>(got);
    }
    return filled == token.size() ? errc::ok : errc::io_error;
}

}  // namespace edgelock
