#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Footprint report: MinSizeRel builds for x86-64, aarch64 and armhf, and what they weigh.
#
#   scripts/size-report.sh [x86_64|aarch64|armhf ...]     (default: all three)
#
# For each architecture, in build-size-<arch>/ (MinSizeRel, no tests, no examples):
#   core           text/data/bss of libedgelock_core.a (`size -t`, all members)
#   asio           the same for libedgelock_async.a, when the asio transport exists: the
#                  client, TLS included (Asio's SSL stream over OpenSSL)
#   common         libedgelock_transport_common.a, which both transports link: error codes,
#                  random tokens and the TLS context (certificate loading, verification,
#                  the mapping of TLS failures)
#   libedgelock-c  text/data/bss of the C API's shared library, libedgelock-c.so (capi/): the
#                  blocking client, the session, the core and TLS linked into one file that
#                  exports only edgelock_* (hiredis, OpenSSL and the C++ runtime stay shared)
#   libssl         the text of the system's shared libssl.so.3 for the architecture: what a
#                  gateway image adds for TLS unless it already ships OpenSSL (libcrypto,
#                  which Debian's images already need, is not counted)
#   footprint_min  bench/footprint_min.cpp: one real lock over POSIX sockets, linked
#                  statically with --gc-sections; "edgelock" is the part of its text that
#                  is edgelock's own functions and constants (the rest is libc and libstdc++)
#   lock, 64 locks sizeof(edgelock::lock) and of a 64-lock table, printed by footprint_min
#                  itself, run natively or under qemu
# and checks the targets: core text <= 32 KiB on armhf, one lock <= 640 bytes (exit 1 when
# one is missed). Installs what is missing first (scripts/setup.sh, scripts/setup-cross.sh);
# a cross build unpacks the target's OpenSSL and Lua (scripts/target-libs.sh).
set -euo pipefail
export LC_ALL=C

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

core_text_bytes_max_armhf=$((32 * 1024))
lock_bytes_max=640
jobs=$(nproc)

archs=("$@")
((${#archs[@]} > 0)) || archs=(x86_64 aarch64 armhf)

./scripts/setup.sh
for arch in "${archs[@]}"; do
  case "$arch" in
    x86_64) ;;
    aarch64 | armhf) ./scripts/setup-cross.sh "$arch" ;;
    *) echo "size-report: unknown architecture '$arch' (x86_64, aarch64, armhf)" >&2; exit 2 ;;
  esac
done

# "text data bss" of a file; for an archive, the totals over its members.
sizes_of() {
  local size_tool=$1 file=$2
  "$size_tool" -t "$file" | awk 'END { print $1, $2, $3 }'
}

# Bytes of text and read-only data in `binary` that belong to edgelock's own symbols.
edgelock_bytes_of() {
  local nm_tool=$1 binary=$2
  "$nm_tool" -S -C -t d "$binary" |
    awk '$3 ~ /^[tTwWrR]$/ && $4 ~ /^edgelock::/ { sum += $2 + 0 } END { print sum + 0 }'
}

kib() {
  awk -v bytes="$1" 'BEGIN { printf "%.1f KiB", bytes / 1024 }'
}

rows=()
failures=()
for arch in "${archs[@]}"; do
  build=build-size-$arch
  configure=(cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=MinSizeRel
    -DEDGELOCK_BUILD_TESTS=OFF -DEDGELOCK_BUILD_EXAMPLES=OFF)
  run=()
  tool_prefix=
  case "$arch" in
    aarch64) triplet=aarch64-linux-gnu; debian_arch=arm64; emulator=qemu-aarch64 ;;
    armhf) triplet=arm-linux-gnueabihf; debian_arch=armhf; emulator=qemu-arm ;;
    *) triplet= ;;
  esac
  libssl=/usr/lib/${triplet:-x86_64-linux-gnu}/libssl.so.3
  if [[ -n "$triplet" ]]; then
    configure+=(-DCMAKE_TOOLCHAIN_FILE="$root/toolchains/$triplet.cmake")
    # The clients (and the C API) need the target's OpenSSL, the simulator its Lua, which a
    # cross machine need not have installed: unpacked as scripts/cross.sh and package.sh do.
    target_lines=$(./scripts/target-libs.sh "$debian_arch" "$build/target-libs")
    mapfile -t target_args <<<"$target_lines"
    configure+=("${target_args[@]}")
    libssl=$build/target-libs/usr/lib/$triplet/libssl.so.3
    run=("$emulator" -L "/usr/$triplet" -E "LD_LIBRARY_PATH=/usr/$triplet/lib")
    tool_prefix=$triplet-
  fi

  echo "size-report: building $build/" >&2
  "${configure[@]}" >/dev/null
  targets=(edgelock_core footprint_min)
  has_asio=false
  if grep -qx '\.\.\. edgelock_async' <<<"$(cmake --build "$build" --target help)"; then
    targets+=(edgelock_async edgelock_transport_common edgelock_c_shared)
    has_asio=true
  fi
  cmake --build "$build" -j "$jobs" --target "${targets[@]}" >/dev/null

  read -r core_text core_data core_bss < <(sizes_of "${tool_prefix}size" \
    "$build/core/libedgelock_core.a")
  asio_cells="| n/a | n/a | n/a | n/a | n/a | n/a | n/a | n/a"
  if [[ "$has_asio" == true ]]; then
    read -r asio_text asio_data asio_bss < <(sizes_of "${tool_prefix}size" \
      "$build/transport/asio/libedgelock_async.a")
    read -r common_text _ _ < <(sizes_of "${tool_prefix}size" \
      "$build/transport/common/libedgelock_transport_common.a")
    read -r ssl_text _ _ < <(sizes_of "${tool_prefix}size" "$libssl")
    read -r c_text c_data c_bss < <(sizes_of "${tool_prefix}size" \
      "$build/capi/libedgelock-c.so")
    asio_cells="| $asio_text | $asio_data | $asio_bss | $common_text"
    asio_cells+=" | $c_text | $c_data | $c_bss | $ssl_text"
  fi
  program=$build/bench/footprint_min
  read -r min_text min_data min_bss < <(sizes_of "${tool_prefix}size" "$program")
  min_edgelock=$(edgelock_bytes_of "${tool_prefix}nm" "$program")
  sizes=$("${run[@]}" "$program" --sizes)
  lock_bytes=$(awk '$1 == "lock" { print $2 }' <<<"$sizes")
  table_bytes=$(awk '$1 == "lock_table_64" { print $2 }' <<<"$sizes")

  row="| $arch | $core_text | $core_data | $core_bss $asio_cells"
  row+=" | $min_text | $min_data | $min_bss | $min_edgelock | $lock_bytes | $table_bytes |"
  rows+=("$row")

  if [[ "$arch" == armhf ]] && ((core_text > core_text_bytes_max_armhf)); then
    core_text_kib=$(kib "$core_text")
    failures+=("armhf core text $core_text bytes ($core_text_kib) > $core_text_bytes_max_armhf")
  fi
  if ((lock_bytes > lock_bytes_max)); then
    failures+=("$arch sizeof(lock) $lock_bytes bytes > $lock_bytes_max")
  fi
done

echo
echo "MinSizeRel (-Os), GCC $(gcc -dumpfullversion); bytes. footprint_min is static, --gc-sections."
echo
echo "| arch | core text | core data | core bss | asio text | asio data | asio bss |" \
  "common text | libedgelock-c text | data | bss | libssl text |" \
  "footprint_min text | data | bss | of which edgelock | sizeof(lock) | 64 locks |"
echo "|---|$(printf -- '---:|%.0s' {1..17})"
printf '%s\n' "${rows[@]}"
echo
echo "targets: core text <= $core_text_bytes_max_armhf bytes on armhf," \
  "sizeof(lock) <= $lock_bytes_max bytes"
if ((${#failures[@]} > 0)); then
  printf 'size-report: MISSED %s\n' "${failures[@]}" >&2
  exit 1
fi
echo "size-report: all targets met"
