// SPDX-License-Identifier: Apache-2.0
// Whether the io_context's backend can start in this process, asked before the client makes
// its first socket or timer.
#pragma once

#include <system_error>

namespace edgelock::async::detail {

// Empty when it can. On the io_uring build (EDGELOCK_IO_URING=ON), Asio sets up its ring when
// the first socket or timer is made on an io_context and, built without exceptions, aborts
// the process when the kernel refuses it; so open() asks first, with a ring of the size Asio
// asks for, and returns transport_errc::io_uring_refused instead. Always empty on the epoll
// build.
std::error_code io_backend_refusal() noexcept;

}  // namespace edgelock::async::detail
