# SPDX-License-Identifier: Apache-2.0
# Cross-compiles for 64-bit ARM Linux (Cortex-A53/A55/A72 gateways) with Debian's
# g++-aarch64-linux-gnu and `:arm64` multiarch libraries; tests run under qemu-aarch64.
#
#   cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=toolchains/aarch64-linux-gnu.cmake
#
# scripts/cross.sh aarch64 installs the packages, builds and runs the tests. For a specific
# SoC add e.g. -DCMAKE_CXX_FLAGS=-mcpu=cortex-a53 (docs/EMBEDDED.md).
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(EDGELOCK_TARGET_TRIPLET aarch64-linux-gnu)
set(EDGELOCK_QEMU qemu-aarch64)
include(${CMAKE_CURRENT_LIST_DIR}/linux-gnu-common.cmake)
