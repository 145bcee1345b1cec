#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Unpacks the target's OpenSSL (the mirror's libssl-dev:ARCH and libssl3:ARCH) and Lua 5.1
# (liblua5.1-0-dev:ARCH, liblua5.1-0:ARCH: the simulated Redis runs the scripts in it) into
# DIR, and prints the CMake arguments that name them, one per line.
#
#   scripts/target-libs.sh arm64|armhf DIR
#
# Used by scripts/cross.sh and scripts/package.sh instead of installing the multiarch -dev
# packages: libssl-dev:ARCH must be the very version of the native one, and a mirror's
# architectures receive OpenSSL's security updates at different times (or one of its indexes
# fails to download), so that install is refused for days at a time; liblua5.1-0-dev:ARCH
# pulls in libreadline-dev:ARCH and through it the target's libc6-dev and Kerberos, which
# need that same libssl3:ARCH. The unpacked files are found through the arguments printed
# here; the binaries linked against them find libssl.so.3 and liblua5.1.so.0 there too (the
# build tree's RUNPATH).
set -euo pipefail

usage() {
  echo "usage: target-libs.sh arm64|armhf DIR" >&2
  exit 2
}
(($# == 2)) || usage
case "$1" in
  arm64) triplet=aarch64-linux-gnu ;;
  armhf) triplet=arm-linux-gnueabihf ;;
  *) usage ;;
esac
arch=$1
dir=$(mkdir -p "$2" && cd "$2" && pwd)

rm -rf "$dir/usr" "$dir/debs"
mkdir -p "$dir/debs"
(cd "$dir/debs" && apt-get download -q "libssl-dev:$arch" "libssl3:$arch" \
  "liblua5.1-0-dev:$arch" "liblua5.1-0:$arch" >&2)
for deb in "$dir"/debs/*.deb; do
  dpkg -x "$deb" "$dir"
done
# opensslconf.h and configuration.h are per architecture, under the triplet's directory.
echo "-DOPENSSL_INCLUDE_DIR=$dir/usr/include;$dir/usr/include/$triplet"
echo "-DOPENSSL_SSL_LIBRARY=$dir/usr/lib/$triplet/libssl.so"
echo "-DOPENSSL_CRYPTO_LIBRARY=$dir/usr/lib/$triplet/libcrypto.so"
# Debian's lua.h includes a per-architecture header from the triplet's directory.
echo "-DEDGELOCK_LUA_INCLUDE_DIRS=$dir/usr/include/lua5.1;$dir/usr/include/$triplet"
echo "-DEDGELOCK_LUA_LIBRARY=$dir/usr/lib/$triplet/liblua5.1.so"
