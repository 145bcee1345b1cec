#include "edgelock/error_code.hpp"

#include <string>

namespace edgelock {
namespace {

class edgelock_category final : public std::error_category {
public:
    const char* name() const noexcept override { return "edgelock"; }
    std::string message(int value) const override { return to_string(static_cast<errc>(value)); }
};

}  // namespace

const std::error_category& error_category() noexcept {
    static const edgelock_category category;
    return category;
}

}  // namespace edgelock
