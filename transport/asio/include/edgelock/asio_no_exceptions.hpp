// SPDX-License-Identifier: Apache-2.0
// edgelock: Asio without exceptions.
//
// edgelock::async is built with -fno-exceptions and defines ASIO_NO_EXCEPTIONS and
// ASIO_NO_TYPEID for everything that links it. With ASIO_NO_EXCEPTIONS, Asio declares
//
//     namespace asio::detail { template <typename Exception> void throw_exception(const
//     Exception&); }
//
// and leaves the definition to the program; without one, the first Asio call that has a
// throwing path fails to link. This header supplies it. Asio only reaches it from the
// overloads that report errors by throwing (the ones without a std::error_code& argument) and
// from allocation failures; edgelock calls only the error_code overloads. Reaching it is a
// programming error: it prints the exception's what() to stderr and aborts.
//
// The template is defined here, in a header, so every translation unit that instantiates it
// sees the definition; the library also instantiates it for the exception types Asio itself
// throws, so a file that includes <asio.hpp> without this header still links.
#pragma once

#include <asio/detail/config.hpp>
#include <asio/detail/throw_exception.hpp>

#if !defined(ASIO_NO_EXCEPTIONS)
#error "edgelock::async expects ASIO_NO_EXCEPTIONS (link the edgelock::async target)"
#endif

namespace edgelock::detail {

// Prints "edgelock: asio would have thrown: <what>" and aborts.
[[noreturn]] void asio_exception_abort(const char* what) noexcept;

}  // namespace edgelock::detail

namespace asio::detail {

template <typename Exception>
void throw_exception(const Exception& e) {
    ::edgelock::detail::asio_exception_abort(e.what());
}

}  // namespace asio::detail
