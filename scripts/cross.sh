#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Cross-builds edgelock for an ARM gateway and runs its tests under qemu-user.
#
#   scripts/cross.sh aarch64|armhf [--quick] [CTEST_ARGS...]
#
#   1. scripts/setup.sh and scripts/setup-cross.sh ARCH (silent when all is present)
#   2. configure build-ARCH/ with toolchains/<triplet>.cmake (RelWithDebInfo; Release with
#      --quick, which compiles faster without debug information), with the target's Lua 5.1
#      and (without --quick) OpenSSL unpacked into build-ARCH/target-libs/
#      (scripts/target-libs.sh)
#   3. build everything the top-level CMake builds (core, transports, the C API and its
#      shared library libedgelock-c.so, sim, tools, tests, examples, bench); with --quick
#      only the core with its tests and the simulator (no client, so no C API)
#   4. ctest under qemu (CMAKE_CROSSCOMPILING_EMULATOR): every test, the Redis integration
#      tests included: they start the native redis-server from PATH on loopback, and a test
#      that starts a built worker process starts it under qemu too. With --quick, the
#      tests labelled core, every property test at RapidCheck's default 100 cases with a
#      fixed seed (unless RC_PARAMS is set): CI has already run them in full natively, and
#      the simulator's code on the target is judged by step 5, which runs its matrix there.
#      CTEST_ARGS are added (e.g. -L sim, -R lock_test).
#   5. determinism: the simulator built natively (in $EDGELOCK_NATIVE_BUILD, default
#      build/) and the one built for ARCH must print the same runs and trace hashes
#      (scripts/sim-determinism.sh); skipped, with a message, while there is no edgelock-sim
#
# No label is excluded: under qemu (8-10x slower than native) the whole suite still runs in
# a few minutes. Exits non-zero when the build, any test or the determinism check fails;
# a failing ctest does not stop the determinism check from running first.
set -euo pipefail

usage() {
  echo "usage: cross.sh aarch64|armhf [--quick] [CTEST_ARGS...]" >&2
  exit 2
}
(($# >= 1)) || usage
arch=$1
shift
case "$arch" in
  aarch64) triplet=aarch64-linux-gnu; debian_arch=arm64; qemu="qemu-aarch64" ;;
  armhf) triplet=arm-linux-gnueabihf; debian_arch=armhf; qemu="qemu-arm" ;;
  *) usage ;;
esac
quick=false
if [[ "${1:-}" == --quick ]]; then
  quick=true
  shift
fi
ctest_args=("$@")

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

jobs=$(nproc)
build=build-$arch
native_build=${EDGELOCK_NATIVE_BUILD:-build}
# As the toolchain file sets CMAKE_CROSSCOMPILING_EMULATOR (see there for why -E).
emulator=("$qemu" -L "/usr/$triplet" -E "LD_LIBRARY_PATH=/usr/$triplet/lib")
# What --quick builds: the core with its tests and checks, and the simulator.
quick_directories=(core sim tests/core tests/checks)

started=$SECONDS
step() {
  printf '\n== [%ds] %s\n' $((SECONDS - started)) "$*"
}

has_target() {
  local build_dir=$1 target=$2
  grep -qx "\.\.\. $target" <<<"$(cmake --build "$build_dir" --target help)"
}

# Builds the targets of some source directories (and what they depend on) with the Unix
# Makefiles generator's per-directory makefiles, or Ninja's <dir>/all targets.
build_directories() {
  local directory
  for directory in "$@"; do
    [[ -d "$build/$directory" ]] || continue
    if [[ -f "$build/$directory/Makefile" ]]; then
      make --no-print-directory -C "$build/$directory" -j "$jobs"
    else
      cmake --build "$build" -j "$jobs" --target "$directory/all"
    fi
  done
}

step "setup ($arch)"
./scripts/setup.sh
if [[ "$quick" == true ]]; then
  ./scripts/setup-cross.sh "$arch" --core-only
else
  ./scripts/setup-cross.sh "$arch"
fi

build_type=RelWithDebInfo
if [[ "$quick" == true ]]; then
  build_type=Release
  export RC_PARAMS=${RC_PARAMS:-"max_success=100 seed=20261121"}
fi

# --quick builds no client: the target's Asio and OpenSSL are not needed, its Lua is (the
# simulator).
step "the target's OpenSSL and Lua, unpacked into $build/target-libs/"
target_lines=$(./scripts/target-libs.sh "$debian_arch" "$build/target-libs")
clients=ON
if [[ "$quick" == true ]]; then
  clients=OFF
  target_lines=$(grep LUA <<<"$target_lines")
fi
mapfile -t target_args <<<"$target_lines"
step "configure $build/ ($triplet, $build_type)"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE="$build_type" -DEDGELOCK_BUILD_CLIENTS="$clients" \
  -DCMAKE_TOOLCHAIN_FILE="$root/toolchains/$triplet.cmake" "${target_args[@]}"

if [[ "$quick" == true ]]; then
  step "build $build/ (--quick: ${quick_directories[*]})"
  build_directories "${quick_directories[@]}"
  ctest_args=(-L core "${ctest_args[@]}")
else
  step "build $build/ (everything)"
  cmake --build "$build" -j "$jobs"
fi

step "ctest $build/ under $qemu ${ctest_args[*]}"
ctest_status=0
(cd "$build" && ctest --output-on-failure --no-tests=error -j "$jobs" --timeout 600 \
  "${ctest_args[@]}") || ctest_status=$?

step "determinism: edgelock-sim on $(uname -m) and on $arch"
determinism_status=0
if ! has_target "$build" edgelock-sim; then
  echo "skipped: this tree has no edgelock-sim target yet (sim/); the check runs once it does"
else
  if [[ ! -f "$native_build/CMakeCache.txt" ]]; then
    cmake -S . -B "$native_build" -DCMAKE_BUILD_TYPE=RelWithDebInfo
  fi
  cmake --build "$native_build" -j "$jobs" --target edgelock-sim
  cmake --build "$build" -j "$jobs" --target edgelock-sim
  ./scripts/sim-determinism.sh "$native_build/sim/edgelock-sim" -- \
    "${emulator[@]}" "$build/sim/edgelock-sim" || determinism_status=$?
fi

step "done"
if ((ctest_status != 0 || determinism_status != 0)); then
  echo "cross.sh $arch: FAILED (ctest exit $ctest_status, determinism exit $determinism_status)" >&2
  exit 1
fi
echo "cross.sh $arch: build, tests under $qemu and determinism all passed" \
  "in $((SECONDS - started)) s"
