#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds edgelock's Debian packages for one architecture, and checks them with lintian.
#
#   scripts/package.sh amd64|arm64|armhf
#
#   1. scripts/setup.sh; for arm64/armhf scripts/setup-cross.sh --core-only (the cross
#      compiler, the target's hiredis); lintian
#   2. arm64/armhf: the target's OpenSSL and Lua 5.1 (libssl-dev, libssl3, liblua5.1-0-dev,
#      liblua5.1-0 of the mirror's version for that architecture) unpacked with dpkg -x into
#      build-package-ARCH/target-libs/ and named to CMake (scripts/target-libs.sh says why
#      the multiarch -dev packages are not installed instead; docs/EMBEDDED.md).
#   3. build-package-ARCH/: prefix /usr, RelWithDebInfo (the configuration the tests run)
#      with Debian's hardening flags (dpkg-buildflags: stack protector, _FORTIFY_SOURCE,
#      full RELRO), no tests or examples; the libraries and the two commands
#   4. cpack: build-package-ARCH/edgelock_<version>_ARCH.deb (the commands),
#      libedgelock-dev_<version>_ARCH.deb (headers, static archives, CMake and pkg-config
#      files) and libedgelock-c0_<version>_ARCH.deb (the C API's shared library); see
#      cmake/package.cmake
#   5. lintian on the three: no error and no warning but those packaging/lintian-kept lists with
#      its reason
#
# Prints the three .deb paths last, one per line (runtime, dev, C library).
# tests/package/package_test.sh tests them.
set -euo pipefail

usage() {
  echo "usage: package.sh amd64|arm64|armhf" >&2
  exit 2
}
(($# == 1)) || usage
arch=$1
case "$arch" in
  amd64) triplet=x86_64-linux-gnu; cross= ;;
  arm64) triplet=aarch64-linux-gnu; cross=aarch64 ;;
  armhf) triplet=arm-linux-gnueabihf; cross=armhf ;;
  *) usage ;;
esac
if [[ -z "$cross" && "$(dpkg --print-architecture)" != "$arch" ]]; then
  echo "package.sh: $arch is built natively, and this machine is $(dpkg --print-architecture)" >&2
  exit 2
fi

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
build=build-package-$arch
jobs=$(nproc)

step() {
  printf '\n== %s\n' "$*" >&2
}

as_root() {
  if ((EUID == 0)); then
    "$@"
  else
    sudo "$@"
  fi
}

step "setup ($arch)"
./scripts/setup.sh >&2
if [[ -n "$cross" ]]; then
  ./scripts/setup-cross.sh "$cross" --core-only >&2
fi
if ! command -v lintian >/dev/null; then
  as_root env DEBIAN_FRONTEND=noninteractive apt-get -q -o DPkg::Lock::Timeout=600 \
    install -y --no-install-recommends lintian </dev/null >&2
fi

# The multiarch library directory, which GNUInstallDirs chooses itself only for native builds.
configure_args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=/usr
  -DCMAKE_INSTALL_LIBDIR="lib/$triplet"
  -DEDGELOCK_BUILD_TESTS=OFF -DEDGELOCK_BUILD_EXAMPLES=OFF)
if [[ -n "$cross" ]]; then
  step "the target's OpenSSL and Lua, unpacked into $build/target-libs/"
  target_lines=$(./scripts/target-libs.sh "$arch" "$build/target-libs")
  mapfile -t target_args <<<"$target_lines"
  configure_args+=(-DCMAKE_TOOLCHAIN_FILE="$root/toolchains/$triplet.cmake" "${target_args[@]}")
fi

step "configure $build/"
# The flags are read from the environment only when the cache is new.
rm -f "$build/CMakeCache.txt"
hardening() {
  DEB_HOST_ARCH=$arch DEB_BUILD_MAINT_OPTIONS=hardening=+all dpkg-buildflags --get "$1"
}
CXXFLAGS="$(hardening CPPFLAGS) $(hardening CXXFLAGS)" LDFLAGS=$(hardening LDFLAGS) \
  cmake -S . -B "$build" "${configure_args[@]}" >&2

step "build $build/"
cmake --build "$build" -j "$jobs" >&2

step "cpack in $build/"
rm -f "$build"/*.deb
(cd "$build" && cpack -G DEB >&2)
debs=("$build"/edgelock_*_"$arch".deb "$build"/libedgelock-dev_*_"$arch".deb
  "$build"/libedgelock-c0_*_"$arch".deb)
for deb in "${debs[@]}"; do
  [[ -f "$deb" ]] || { echo "package.sh: cpack made no $deb" >&2; exit 1; }
done

step "lintian"
kept=$(awk '!/^#/ && NF { print $1 }' packaging/lintian-kept | paste -sd, -)
lintian --fail-on error,warning ${kept:+--suppress-tags "$kept"} "${debs[@]}" >&2

printf '%s\n' "${debs[@]}"
