#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The test command: installs what is missing, builds, and runs every test.
#
#   1. scripts/setup.sh --io-uring (silent when the Debian packages are already there), the SPDX
#      licence line in every source file (scripts/spdx.sh --check), and the house checks on
#      the source text (scripts/tidy.sh: function length, columns, named paths, clang-format)
#   2. build/ with the default compiler (GCC 12), RelWithDebInfo: build all, then the ctest
#      labels that need no Redis (unit, property, install and sans-IO checks), two at a time,
#      the two that judge the simulator against real processes (the conformance test of the
#      simulated Redis against redis-server and the short nemesis run: real processes under
#      real faults judged against the simulator's matrix). The other tests that need Redis
#      run once, in step 5, under the sanitizers (and the blocking client's again under TSan
#      in step 6); every one of them starts servers of its own on free loopback ports
#   3. the simulator judged: scripts/mutation-score.sh (every mutant it runs must be killed
#      by the simulator alone: a third of scripts/mutants.txt, turning with each commit, and
#      every mutant of a file changed in the day before HEAD's commit, or all of them when the
#      simulator or the catalogue changed then or EDGELOCK_MUTANTS=all) and a soak of 20,000
#      swarm runs
#      (`edgelock-sim soak`, which fails on a violation in a cell the matrix calls safe), and
#      2,000 over the configurations run only when named (`soak --one-off`, each against
#      the matrix `edgelock check` prints for it)
#   4. build-clang/ with Clang 14, without sanitizers: the core and what the tests labelled
#      `core` need (core/, tests/core/, tests/checks/), then those tests (the core's unit
#      tests and its sans-IO and flag checks on the Clang-built library); the whole tree's
#      Clang build, with the same -Wall -Wextra -Wpedantic -Werror, is step 5's
#   5. build-asan/ with Clang, ASan and UBSan (EDGELOCK_SANITIZE=address,undefined) and the
#      libFuzzer targets (EDGELOCK_FUZZ=ON): every ctest label but the sans-IO symbol checks
#      (label `symbols`: the sanitizer runtime is called from every object), the install
#      test (its consumer project links the installed, instrumented library without the
#      runtime; the plain build runs it), and of the simulator's tests the scenario, unit and
#      determinism ones (its --jobs comparisons run the same code longer: step 2 runs them).
#      A sanitizer build does not build the nemesis run (it judges the matrix, once), the
#      conformance test (it judges the model's replies against a real server's timing, once)
#      and the simulator's property runs over random schedules (the same code, longer).
#      The CLI's tests that need Redis (`check` among them) run build/'s simulator there
#      (EDGELOCK_SIM): the CLI is what they judge, and the simulator's
#      matrices, six times as long under the sanitizers, are its own tests' to judge. Then
#      scripts/fuzz.sh: each fuzz target for 20 s from its seed corpus (tests/fuzz)
#   6. build-tsan/ with Clang and TSan: the blocking client and its tests (its
#      renewal thread runs beside the caller's), `ctest -L redis` on what was built, two at a
#      time
#   7. scripts/cross.sh armhf --quick: the core and the simulator cross-built for 32-bit ARM,
#      the core's tests under qemu, and the simulator's runs compared with build/'s
#      (docs/EMBEDDED.md). 64-bit ARM is built whole by step 8's arm64 packages; the full
#      cross runs, tests under qemu included: scripts/cross.sh aarch64|armhf
#   8. packages: scripts/package.sh amd64, then tests/package/package_test.sh on them (the
#      .debs unpacked into a temporary root, consumer programs built with CMake and with
#      pkg-config and run against a real Redis); scripts/package.sh arm64, its .debs checked
#      for architecture and contents (armhf's, the same script for another triplet, by hand:
#      step 7 builds the core and the simulator for 32-bit ARM already)
#   9. build-uring/ with EDGELOCK_IO_URING=ON (the async client on Asio's io_uring backend),
#      where the kernel allows io_uring: the async client's library and its tests alone (the
#      option changes nothing else), then those tests, the ones that need Redis with them
#
# Exits non-zero on the first failure. Runs from any directory.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

jobs=$(nproc)

started=$SECONDS
# Each step's heading says how long the run has taken so far, so a slow step shows in CI's log.
step() {
  printf '\n== %s (at %d s)\n' "$*" $((SECONDS - started))
}

step "setup"
./scripts/setup.sh --io-uring

# Whether this kernel lets a process set up an io_uring (a container's seccomp profile or
# kernel.io_uring_disabled may not): the io_uring_setup system call (425 on every Linux
# architecture) asked for a one-entry ring.
io_uring_allowed() {
  python3 -c 'import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.syscall(425, 1, ctypes.create_string_buffer(120))
sys.exit(0 if fd >= 0 and os.close(fd) is None else 1)'
}

# Every build directory configured from here on (this script's, the mutation score's copy, the
# cross and package builds) compiles through ccache: the same sources are compiled by several
# of them, and again by the next run. CCACHE_BASEDIR and CCACHE_NOHASHDIR make the cache hold
# for any clone's path (the debug information then names the directory of the build that
# compiled an object first).
if command -v ccache >/dev/null; then
  export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache
  export CCACHE_BASEDIR=$root CCACHE_NOHASHDIR=true
fi

step "every source file names its licence (scripts/spdx.sh --check)"
./scripts/spdx.sh --check

step "house checks on the source text (scripts/tidy.sh)"
./scripts/tidy.sh

step "configure build/ (GCC, RelWithDebInfo)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo

step "build build/"
cmake --build build -j "$jobs"

step "ctest build/ -LE redis, then -L 'nemesis|conformance'"
(cd build && ctest --output-on-failure --no-tests=error -LE redis -j "$jobs" &&
  ctest --output-on-failure --no-tests=error -L 'nemesis|conformance' -j "$jobs")

# A third of the mutation catalogue, turning with each commit (the whole of it over three),
# with every mutant of a file changed in the day before HEAD's commit, and the whole catalogue
# when the simulator or the catalogue changed then (scripts/mutation-score.sh --share);
# EDGELOCK_MUTANTS=all, or a history younger than a day, runs the whole catalogue.
mutation_share=()
if [ "${EDGELOCK_MUTANTS:-}" != all ] && git rev-parse -q --verify HEAD >/dev/null 2>&1; then
  day_before=$(($(git log -1 --format=%ct HEAD) - 86400))
  since=$(git rev-list -1 --before="$day_before" HEAD)
  if [ -n "$since" ]; then
    mutation_share=(--share "$(($(git rev-list --count HEAD) % 3))/3" --changed-since "$since")
  fi
fi
step "simulator: mutation score ${mutation_share[*]}"
./scripts/mutation-score.sh --jobs "$jobs" "${mutation_share[@]}"

step "simulator: soak of 20,000 swarm runs"
build/sim/edgelock-sim soak --runs 20000 --seed 1 --jobs "$jobs"

step "simulator: soak of 2,000 swarm runs over the configurations run only when named"
build/sim/edgelock-sim soak --one-off --runs 2000 --seed 1 --jobs "$jobs"

step "configure build-clang/ (Clang 14, RelWithDebInfo)"
cmake -S . -B build-clang -G "Unix Makefiles" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER=clang++

step "build build-clang/: core/, tests/core/, tests/checks/"
for directory in core tests/core tests/checks; do
  make --no-print-directory -C "build-clang/$directory" -j "$jobs"
done

step "ctest build-clang/ -L core"
(cd build-clang && ctest --output-on-failure --no-tests=error -L core -j "$jobs")

step "configure build-asan/ (Clang 14, ASan + UBSan, fuzz targets)"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
  -DEDGELOCK_SANITIZE=address,undefined -DEDGELOCK_FUZZ=ON

step "build build-asan/"
cmake --build build-asan -j "$jobs"

# The nemesis runs judge the matrix with real processes, and the conformance test the model's
# replies against a real server's, timed: once, natively (a sanitizer build does not build
# them, nor the simulator's property tests). The model's memory is the simulator's tests' to
# judge here.
step "ctest build-asan/ -LE 'symbols|install' (the tests under ASan and UBSan)"
(cd build-asan &&
  ctest --output-on-failure --no-tests=error -LE 'symbols|install|redis' -E '^parallel\.' \
    -j "$jobs" &&
  EDGELOCK_SIM="$root/build/sim/edgelock-sim" ctest --output-on-failure --no-tests=error \
    -L redis -j "$jobs")

step "fuzz: each target 20 s under ASan and UBSan"
./scripts/fuzz.sh build-asan 20

step "configure build-tsan/ (Clang 14, TSan)"
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
  -DEDGELOCK_SANITIZE=thread

step "build build-tsan/: the blocking client's tests"
hiredis_tests=(redis_watchdog_test redis_mutual_exclusion_test redis_faults_test redis_redlock_test
  redis_script_cache_test redis_fence_test redis_tls_test redis_metrics_test transport_table_test
  transport_cluster_test transport_switch_test)
cmake --build build-tsan -j "$jobs" --target "${hiredis_tests[@]}"

step "ctest build-tsan/ -L redis (only the tests built above exist there)"
(cd build-tsan && ctest --output-on-failure --no-tests=error -L redis -j "$jobs")

step "cross: armhf under qemu, core tests, simulator determinism"
./scripts/cross.sh armhf --quick

step "packages: amd64 .debs built, unpacked and consumed with CMake and pkg-config"
debs=$(./scripts/package.sh amd64)
mapfile -t debs <<<"$debs"
tests/package/package_test.sh amd64 "${debs[@]}"

step "packages: arm64 .debs built and checked"
debs=$(./scripts/package.sh arm64)
mapfile -t debs <<<"$debs"
tests/package/package_test.sh arm64 "${debs[@]}"
# The async client on Asio's io_uring backend: its library and its tests alone, built again
# with EDGELOCK_IO_URING=ON (everything else in the tree is unchanged by the option).
async_test_targets=(asio_client_api_test asio_fair_channels_test asio_io_backend_test
  asio_lock_test asio_lock_table_test asio_redlock_test asio_sentinel_test asio_faults_test
  asio_allocation_test asio_tls_test asio_fair_test asio_metrics_test asio_cluster_test
  asio_semaphore_test transport_table_test transport_cluster_test transport_switch_test
  old_server_test)
async_tests='^(asio_|handler_slot[.]|transport_(tls_files|sentinel|cluster|switch)[.]'
async_tests+='|fault/transport_table[.]|old_server[.])'
if io_uring_allowed; then
  step "build-uring/: the async client's tests on Asio's io_uring backend"
  cmake -S . -B build-uring -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEDGELOCK_IO_URING=ON
  cmake --build build-uring -j "$jobs" --target "${async_test_targets[@]}"
  (cd build-uring && ctest --output-on-failure --no-tests=error -R "$async_tests" -j "$jobs")
else
  step "build-uring/: skipped, this kernel refuses io_uring"
fi
step "all passed"
