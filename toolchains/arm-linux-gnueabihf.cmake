# SPDX-License-Identifier: Apache-2.0
# Cross-compiles for 32-bit ARM Linux, hard-float EABI (ARMv7-A: Cortex-A7/A8/A9 gateways)
# with Debian's g++-arm-linux-gnueabihf and `:armhf` multiarch libraries; tests run under
# qemu-arm.
#
#   cmake -S . -B build-armhf -DCMAKE_TOOLCHAIN_FILE=toolchains/arm-linux-gnueabihf.cmake
#
# scripts/cross.sh armhf installs the packages, builds and runs the tests. For a specific
# SoC add e.g. -DCMAKE_CXX_FLAGS="-mcpu=cortex-a7 -mfpu=neon-vfpv4" (docs/EMBEDDED.md).
set(CMAKE_SYSTEM_PROCESSOR armv7l)
set(EDGELOCK_TARGET_TRIPLET arm-linux-gnueabihf)
set(EDGELOCK_QEMU qemu-arm)
include(${CMAKE_CURRENT_LIST_DIR}/linux-gnu-common.cmake)

# GCC notes that the ABI for passing some aggregates changed in GCC 7.1 ("parameter passing
# for argument of type ... changed"): informational for code built with one compiler, but
# -Werror makes it fatal. Everything here is built with the same GCC.
string(APPEND CMAKE_CXX_FLAGS_INIT " -Wno-psabi")
