#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian packages edgelock needs to build and test, only those missing.
#
#   scripts/setup.sh [--io-uring]
#
# --io-uring adds liburing-dev, for the async client on Asio's io_uring backend
# (-DEDGELOCK_IO_URING=ON: scripts/test.sh's build-uring/, bench/backends.sh).
#
# Silent and quick when everything is present (dpkg-query only). Otherwise runs
# `apt-get update` once and installs the missing packages, non-interactively, as root or
# through sudo. Services are kept from starting while packages install: the tests start
# their own redis-server/redis-sentinel processes on free ports, and nothing should listen
# by default.
set -euo pipefail

packages=(
  build-essential  # g++ 12, make, binutils (nm, for the sans-IO check)
  cmake
  pkgconf          # pkg-config, the way in to hiredis (its CMake config is broken)
  clang            # Clang 14: the second compiler the build must pass with -Werror
  clang-format     # clang-format 14: scripts/tidy.sh's format check (.clang-format)
  python3          # scripts/tidy.py: function length, columns, named paths
  ccache           # scripts/test.sh's builds share compiled objects between runs and clones
  libclang-rt-14-dev  # its sanitizer runtimes and libFuzzer (build-asan/, build-tsan/)
  libgtest-dev
  libgmock-dev
  librapidcheck-dev
  libhiredis-dev
  liblua5.1-0-dev  # Lua 5.1, as Redis embeds it: the simulated Redis runs the scripts in it
  libssl-dev       # OpenSSL 3: TLS in both transports (rediss://), and the tests' certificates
  libasio-dev
  redis-server
  redis-sentinel
  redis-tools
  man-db           # man and lexgrog: tests/cli/man_pages_test.sh renders the pages as lintian does
  systemd          # systemd-analyze verify: tests/examples/systemd_units_test.sh
)
for argument in "$@"; do
  case "$argument" in
    --io-uring) packages+=(liburing-dev) ;;
    *) echo "usage: $0 [--io-uring]" >&2; exit 2 ;;
  esac
done

# promtool, for tests/cli's check of --metrics-file (`promtool check metrics`). Debian has it only
# in the prometheus package, whose install starts a server on :9090; so the .deb is downloaded
# (about 19 MB, once) and only usr/bin/promtool extracted into a cache, where
# tests/cli/CMakeLists.txt looks. Best effort: without it the tests use their own reader.
promtool_cache=${XDG_CACHE_HOME:-$HOME/.cache}/edgelock
fetch_promtool() {
  if command -v promtool >/dev/null 2>&1 || [[ -x "$promtool_cache/usr/bin/promtool" ]]; then
    return 0
  fi
  local scratch
  scratch=$(mktemp -d)
  chmod 755 "$scratch"  # apt-get download runs as _apt where it can, and writes here
  if (cd "$scratch" && apt-get download -q prometheus >/dev/null 2>&1) &&
    mkdir -p "$promtool_cache" &&
    dpkg-deb --fsys-tarfile "$scratch"/prometheus_*.deb |
    tar -x -C "$promtool_cache" ./usr/bin/promtool
  then
    echo "setup.sh: promtool extracted into $promtool_cache/usr/bin"
  else
    echo "setup.sh: could not fetch promtool; the metrics tests use their own reader only" >&2
  fi
  rm -rf "$scratch"
}

# shellcheck source=scripts/apt-helpers.sh
source "$(dirname "${BASH_SOURCE[0]}")/apt-helpers.sh"
find_missing "${packages[@]}"

if ((${#missing[@]} == 0)); then
  fetch_promtool
  exit 0
fi

use_root "setup.sh: missing packages (${missing[*]})"

echo "setup.sh: installing ${missing[*]}"

# Debian's maintainer scripts start services through invoke-rc.d, which asks policy-rc.d
# first: exit 101 means "do not start". Only a policy this script created is removed again.
policy=/usr/sbin/policy-rc.d
created_policy=false
remove_policy() {
  if [[ "$created_policy" == true ]]; then
    "${as_root[@]}" rm -f "$policy"
  fi
}
trap remove_policy EXIT
if [[ ! -e "$policy" ]]; then
  printf '#!/bin/sh\nexit 101\n' | "${as_root[@]}" tee "$policy" >/dev/null
  "${as_root[@]}" chmod 755 "$policy"
  created_policy=true
fi

"${apt_get[@]}" update
"${apt_get[@]}" install -y --no-install-recommends "${missing[@]}" </dev/null
fetch_promtool
