# SPDX-License-Identifier: Apache-2.0
# Warnings for every target the project builds itself (never for dependencies).
add_library(edgelock_warnings INTERFACE)
target_compile_options(edgelock_warnings INTERFACE -Wall -Wextra -Wpedantic -Werror)

# Library code: C++17, and no exceptions or RTTI. Test code links the library but keeps
# exceptions, which RapidCheck needs.
add_library(edgelock_library_flags INTERFACE)
target_compile_features(edgelock_library_flags INTERFACE cxx_std_17)
target_compile_options(edgelock_library_flags INTERFACE -fno-exceptions -fno-rtti)
target_link_libraries(edgelock_library_flags INTERFACE edgelock_warnings)
