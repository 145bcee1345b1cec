// SPDX-License-Identifier: Apache-2.0
#include "edgelock/assert.hpp"

#include <cstdlib>

namespace edgelock {
namespace {
assert_handler installed_handler = nullptr;
}  // namespace

assert_handler set_assert_handler(assert_handler handler) noexcept {
    assert_handler previous = installed_handler;
    installed_handler = handler;
    return previous;
}

namespace detail {
void assert_failed(const char* expression, const char* file, int line) noexcept {
    if (installed_handler != nullptr) {
        installed_handler(expression, file, line);
    }
    // A handler that returns must not let a broken invariant go on.
    std::abort();
}
}  // namespace detail

}  // namespace edgelock
