// SPDX-License-Identifier: Apache-2.0
#include "edgelock/errc.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string>

namespace {

TEST(errc, every_code_has_a_distinct_name) {
    std::set<std::string> names;
    const int last = static_cast<int>(edgelock::errc::node_restarted);
    for (int value = 0; value <= last; ++value) {
        const char* name = edgelock::to_string(static_cast<edgelock::errc>(value));
        ASSERT_NE(name, nullptr);
        EXPECT_STRNE(name, "unknown") << value;
        EXPECT_TRUE(names.insert(name).second) << "duplicate name " << name;
    }
}

TEST(errc, a_value_outside_the_enumeration_is_named_unknown) {
    EXPECT_STREQ(edgelock::to_string(static_cast<edgelock::errc>(250)), "unknown");
}

}  // namespace
