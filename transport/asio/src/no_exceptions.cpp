// SPDX-License-Identifier: Apache-2.0
// The definition Asio asks for under ASIO_NO_EXCEPTIONS, instantiated here for every
// exception type Asio 1.22 can raise, so programs that include <asio.hpp> without
// edgelock/asio_no_exceptions.hpp still link against edgelock::async.
#include "edgelock/asio_no_exceptions.hpp"

#include <asio/execution/bad_executor.hpp>
#include <asio/executor.hpp>
#include <asio/execution_context.hpp>
#include <asio/ip/bad_address_cast.hpp>

#include <cstdio>
#include <cstdlib>
#include <new>
#include <stdexcept>
#include <system_error>
#include <typeinfo>

namespace edgelock::detail {

void asio_exception_abort(const char* what) noexcept {
    std::fprintf(stderr, "edgelock: asio would have thrown: %s\n", what != nullptr ? what : "?");
    std::abort();
}

}  // namespace edgelock::detail

namespace asio::detail {

template void throw_exception<std::system_error>(const std::system_error&);
template void throw_exception<std::bad_alloc>(const std::bad_alloc&);
template void throw_exception<std::bad_cast>(const std::bad_cast&);
template void throw_exception<std::out_of_range>(const std::out_of_range&);
template void throw_exception<std::length_error>(const std::length_error&);
template void throw_exception<std::logic_error>(const std::logic_error&);
template void throw_exception<std::invalid_argument>(const std::invalid_argument&);
template void throw_exception<asio::bad_executor>(const asio::bad_executor&);
template void throw_exception<asio::execution::bad_executor>(const asio::execution::bad_executor&);
template void throw_exception<asio::ip::bad_address_cast>(const asio::ip::bad_address_cast&);
template void throw_exception<asio::service_already_exists>(const asio::service_already_exists&);
template void throw_exception<asio::invalid_service_owner>(const asio::invalid_service_owner&);

}  // namespace asio::detail
