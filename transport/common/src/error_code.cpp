// SPDX-License-Identifier: Apache-2.0
#include "edgelock/error_code.hpp"

#include <cstring>
#include <string>

namespace edgelock {
namespace {

class edgelock_category final : public std::error_category {
public:
    const char* name() const noexcept override { return "edgelock"; }
    std::string message(int value) const override { return to_string(static_cast<errc>(value)); }
};

class transport_category_impl final : public std::error_category {
public:
    const char* name() const noexcept override { return "edgelock.transport"; }
    std::string message(int value) const override {
        return describe(static_cast<transport_errc>(value));
    }
};

// Name lookups fail with getaddrinfo's codes (EAI_*), which Asio keeps in a category of
// their own ("asio.netdb", "asio.addrinfo"); end of stream is Asio's "asio.misc" eof (2).
bool named(const std::error_category& category, const char* name) noexcept {
    return std::strcmp(category.name(), name) == 0;
}

}  // namespace

const std::error_category& error_category() noexcept {
    static const edgelock_category category;
    return category;
}

const std::error_category& transport_category() noexcept {
    static const transport_category_impl category;
    return category;
}

std::error_code to_error_code(const failure& f) noexcept {
    switch (f.from) {
        case failure::domain::none: return {};
        case failure::domain::lock: return make_error_code(static_cast<errc>(f.value));
        case failure::domain::transport:
            return make_error_code(static_cast<transport_errc>(f.value));
        case failure::domain::system: return {f.value, std::generic_category()};
    }
    return make_error_code(errc::io_error);
}

failure to_failure(const std::error_code& ec) noexcept {
    if (!ec) return {};
    const std::error_category& category = ec.category();
    if (category == error_category()) return failure::of(static_cast<errc>(ec.value()));
    if (category == transport_category())
        return failure::of(static_cast<transport_errc>(ec.value()));
    if (named(category, "asio.netdb") || named(category, "asio.addrinfo")) {
        return failure::of(transport_errc::unknown_host);
    }
    if (named(category, "asio.misc") && ec.value() == 2)
        return failure::of(transport_errc::connection_closed);
    if (category == std::generic_category() || category == std::system_category() ||
        named(category, "asio.system")) {
        return failure::system(ec.value());
    }
    return failure::of(errc::io_error);
}

}  // namespace edgelock
