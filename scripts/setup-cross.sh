#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs what cross-building edgelock for ARM needs, only what is missing.
#
#   scripts/setup-cross.sh aarch64|armhf [--core-only]
#
# --core-only leaves out Asio, which only the clients need (what scripts/cross.sh --quick
# builds has none; hiredis stays: the RESP reader's tests compare against it). The target's
# OpenSSL and Lua 5.1 are not installed here at all: a multiarch -dev package must be the very
# version of the native one, and OpenSSL's security updates reach a mirror's architectures at
# different times, so one caught between them refuses the install (liblua5.1-0-dev:ARCH needs
# the target's libssl3 through readline and Kerberos). scripts/cross.sh unpacks them into the
# build directory instead (scripts/target-libs.sh).
#
# The cross compiler, qemu-user (the tests run under it), and the target's libraries through
# Debian multiarch: the architecture is added to dpkg, then the `:arm64`/`:armhf` dev
# packages and pkgconf:<arch> (its <triplet>-pkg-config finds the target's .pc files).
# Silent and quick when everything is present (dpkg-query only). The native packages
# (cmake, redis-server, ...) are scripts/setup.sh's.
set -euo pipefail

usage() {
  echo "usage: setup-cross.sh aarch64|armhf [--core-only]" >&2
  exit 2
}
(($# == 1 || $# == 2)) || usage
core_only=false
if (($# == 2)); then
  [[ "$2" == --core-only ]] || usage
  core_only=true
fi
case "$1" in
  aarch64) debian_arch=arm64; triplet=aarch64-linux-gnu ;;
  armhf) debian_arch=armhf; triplet=arm-linux-gnueabihf ;;
  *) usage ;;
esac

packages=(
  "g++-$triplet"     # GCC 12 for the target, its libstdc++ and the cross glibc
  "binutils-$triplet"  # <triplet>-size and -nm for the size report and the sans-IO check
  qemu-user          # qemu-aarch64 / qemu-arm: ctest runs the target's binaries with it
  libc6-dev          # libc.a for the native static build of bench/footprint_min
  "libgtest-dev:$debian_arch"
  "libgmock-dev:$debian_arch"
  "librapidcheck-dev:$debian_arch"
  "libhiredis-dev:$debian_arch"
  "pkgconf:$debian_arch"
)
if [[ "$core_only" != true ]]; then
  packages+=(
    libasio-dev        # header-only (Architecture: all): the native package serves every target
  )
fi

# shellcheck source=scripts/apt-helpers.sh
source "$(dirname "${BASH_SOURCE[0]}")/apt-helpers.sh"
find_missing "${packages[@]}"
foreign=$(dpkg --print-foreign-architectures)
has_arch=false
if grep -qx "$debian_arch" <<<"$foreign"; then
  has_arch=true
fi

if ((${#missing[@]} == 0)) && [[ "$has_arch" == true ]]; then
  exit 0
fi

use_root "setup-cross.sh: missing ${missing[*]:-the $debian_arch architecture}"

if [[ "$has_arch" != true ]]; then
  echo "setup-cross.sh: adding the $debian_arch architecture to dpkg"
  "${as_root[@]}" dpkg --add-architecture "$debian_arch"
fi
# A mirror caught mid-sync fails one index ("File has unexpected size") while the rest are
# fine; retry once, then let the install decide whether what is there suffices.
if ! "${apt_get[@]}" update; then
  sleep 10
  "${apt_get[@]}" update ||
    echo "setup-cross.sh: apt-get update reported errors; trying the install anyway" >&2
fi
if ((${#missing[@]} > 0)); then
  echo "setup-cross.sh: installing ${missing[*]}"
  "${apt_get[@]}" install -y --no-install-recommends "${missing[@]}" </dev/null
fi
