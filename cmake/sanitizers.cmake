# SPDX-License-Identifier: Apache-2.0
# Sanitizer builds for the test command (scripts/test.sh), Clang only:
#   -DEDGELOCK_SANITIZE=address,undefined   ASan + UBSan: every target, tests included
#   -DEDGELOCK_SANITIZE=thread              TSan: for the blocking client's renewal thread
#   -DEDGELOCK_FUZZ=ON                       the libFuzzer targets of tests/fuzz (with any of
#                                            the above; address,undefined is what CI uses)
# A sanitizer finding stops the program (no recovery), so ctest and the fuzzers see it fail.
set(EDGELOCK_SANITIZE "" CACHE STRING "Sanitizers for every target: address,undefined or thread")
option(EDGELOCK_FUZZ "Build the libFuzzer targets (Clang)" OFF)

if((EDGELOCK_SANITIZE OR EDGELOCK_FUZZ) AND NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "EDGELOCK_SANITIZE and EDGELOCK_FUZZ need Clang "
    "(-DCMAKE_CXX_COMPILER=clang++)")
endif()

if(EDGELOCK_SANITIZE)
  # The core builds without RTTI: UBSan's vptr check needs it, so it is left out everywhere.
  add_compile_options(-fsanitize=${EDGELOCK_SANITIZE} -fno-sanitize-recover=all
                      -fno-sanitize=vptr -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${EDGELOCK_SANITIZE})
endif()
