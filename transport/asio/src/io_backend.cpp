// SPDX-License-Identifier: Apache-2.0
#include "io_backend.hpp"

#include <asio/detail/config.hpp>

#if defined(ASIO_HAS_IO_URING_AS_DEFAULT)
#include <liburing.h>
#endif

#include "edgelock/error_code.hpp"

namespace edgelock::async::detail {

#if defined(ASIO_HAS_IO_URING_AS_DEFAULT)

// Asio 1.22's hint to io_uring_queue_init (io_uring_service::ring_size, a private constant).
// The probe asks for the same: on kernels before 5.12 a ring's memory counts against
// RLIMIT_MEMLOCK, so a smaller probe could pass where Asio's own ring is refused.
constexpr unsigned asio_ring_entries = 16384;

std::error_code io_backend_refusal() noexcept {
    io_uring ring{};
    if (io_uring_queue_init(asio_ring_entries, &ring, 0) < 0) {
        return make_error_code(transport_errc::io_uring_refused);
    }
    io_uring_queue_exit(&ring);
    return {};
}

#else

std::error_code io_backend_refusal() noexcept { return {}; }

#endif

}  // namespace edgelock::async::detail
