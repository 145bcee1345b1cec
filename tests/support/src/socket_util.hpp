// SPDX-License-Identifier: Apache-2.0
// Small socket helpers shared by the proxy and the scripted server (not installed).
#pragma once

#include <cstddef>
#include <cstdint>

namespace edgelock::testing::detail {

// A listening socket on 127.0.0.1 with an OS-chosen port; throws on failure.
int listen_loopback(std::uint16_t& port_out);
// A connected socket to 127.0.0.1:port, or -1.
int connect_loopback(std::uint16_t port);
// Closes with SO_LINGER 0, so the peer gets a RST rather than a FIN.
void close_with_reset(int fd);
// Sends everything (MSG_NOSIGNAL); false when the peer is gone.
bool send_all(int fd, const char* data, std::size_t size);

}  // namespace edgelock::testing::detail
