#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Are the systemd units of examples/systemd/ valid, as systemd itself reads them?
#
#   systemd_units_test.sh EDGELOCK MAN_DIR UNITS_DIR [--broken]
#
# Copies the service and the timer to a scratch directory, with the packaged command's path
# (/usr/bin/edgelock) replaced by EDGELOCK, and runs `systemd-analyze verify` on them with
# MANPATH naming MAN_DIR's edgelock.1 (the units' Documentation=man:edgelock(1) is checked
# too). Any message, or a non-zero status, fails the test. Also checks that
# edgelock-nightly.env sets only variables `edgelock --help` names.
# Exits 77 (skipped) without systemd-analyze (Debian's `systemd` package).
#
# --broken: the test shown able to fail: a copy of the service whose ExecStart= is misspelled
# must fail the check.
set -euo pipefail

(($# == 3 || $# == 4)) || {
  echo "usage: systemd_units_test.sh EDGELOCK MAN_DIR UNITS_DIR [--broken]" >&2
  exit 2
}
edgelock=$(realpath "$1")  # ExecStart= takes an absolute path
man_dir=$2
units=$3
broken=${4:-}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/../cli/help_words.sh"

if ! command -v systemd-analyze >/dev/null; then
  echo "systemd_units_test: skipped: no systemd-analyze (apt-get install systemd)"
  exit 77
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/edgelock-systemd-test.XXXXXX")
trap 'rm -rf "$work"' EXIT

fail() {
  echo "systemd_units_test: FAIL: $*" >&2
  exit 1
}

mkdir -p "$work/units" "$work/man/man1"
ln -s "$(realpath "$man_dir/edgelock.1")" "$work/man/man1/edgelock.1"
service=edgelock-nightly.service
timer=edgelock-nightly.timer
grep -q '^ExecStart=/usr/bin/edgelock run ' "$units/$service" ||
  fail "$service does not run /usr/bin/edgelock run (the packaged command)"
EDGELOCK=$edgelock perl -pe 's{^ExecStart=/usr/bin/edgelock }{ExecStart=$ENV{EDGELOCK} }' \
  "$units/$service" >"$work/units/$service"
cp "$units/$timer" "$work/units/$timer"
if [[ "$broken" == --broken ]]; then
  sed -i 's/^ExecStart=/ExecStrat=/' "$work/units/$service"
elif [[ -n "$broken" ]]; then
  echo "systemd_units_test: unknown option $broken" >&2
  exit 2
fi

set +e
messages=$(cd "$work/units" &&
  MANPATH=$work/man systemd-analyze verify "./$service" "./$timer" 2>&1)
status=$?
set -e
if [[ "$broken" == --broken ]]; then
  if ((status != 0)) || [[ -n "$messages" ]]; then
    echo "systemd_units_test: ok: with ExecStart= misspelled," \
      "systemd-analyze verify says: $messages"
    exit 0
  fi
  fail "systemd-analyze verify accepted a service whose ExecStart= is misspelled"
fi
((status == 0)) && [[ -z "$messages" ]] ||
  fail "systemd-analyze verify $service $timer exited $status: $messages"
echo "systemd_units_test: ok: systemd-analyze verify $service $timer" \
  "(systemd $(systemd-analyze --version | sed -n '1s/^systemd \([0-9]*\).*/\1/p'))"

known=$("$edgelock" --help | help_variables)
while IFS= read -r line; do
  [[ "$line" =~ ^[[:space:]]*(#|$) ]] && continue
  variable=${line%%=*}
  grep -Fxq -- "$variable" <<<"$known" ||
    fail "edgelock-nightly.env sets $variable, which edgelock --help does not name"
done <"$units/edgelock-nightly.env"
echo "systemd_units_test: ok: edgelock-nightly.env sets only variables edgelock reads"
