// SPDX-License-Identifier: Apache-2.0
#include "temp_dir.hpp"

#include <stdlib.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <system_error>

namespace edgelock::testing::detail {

std::string make_temp_dir(const std::string& label) {
    const char* base = std::getenv("TMPDIR");
    std::string pattern =
        std::string(base && *base ? base : "/tmp") + "/edgelock-" + label + "-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) {
        throw std::runtime_error(std::string("mkdtemp: ") + std::strerror(errno));
    }
    return pattern;
}

void remove_dir(const std::string& dir) noexcept {
    if (dir.empty()) return;
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
}

}  // namespace edgelock::testing::detail
