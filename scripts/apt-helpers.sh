# SPDX-License-Identifier: Apache-2.0
# Sourced by scripts/setup.sh and scripts/setup-cross.sh.
#
# find_missing PACKAGE...: sets missing to those of the packages dpkg does not have installed.
# use_root "WHAT IS MISSING": sets as_root (nothing as root, else sudo) and apt_get (apt-get as
# root, non-interactive, waiting for the dpkg lock), or says on one line that WHAT IS MISSING
# cannot be installed without root or sudo, and exits 1.

find_missing() {
  missing=()
  local package status
  for package in "$@"; do
    status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$package" 2>/dev/null || true)
    if [[ "$status" != ii* ]]; then
      missing+=("$package")
    fi
  done
}

use_root() {
  if ((EUID == 0)); then
    as_root=()
  elif command -v sudo >/dev/null 2>&1; then
    as_root=(sudo)
  else
    echo "$1, and neither root nor sudo is available" >&2
    exit 1
  fi
  apt_get=("${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -q -o DPkg::Lock::Timeout=600)
}
