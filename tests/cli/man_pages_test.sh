#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Do the manual pages document what the help texts promise?
#
#   man_pages_test.sh EDGELOCK EDGELOCK_SIM MAN_DIR
#   man_pages_test.sh EDGELOCK EDGELOCK_SIM MAN_DIR --without PAGE WORD
#
# MAN_DIR holds the configured pages edgelock.1 and edgelock-sim.1 (docs/man/*.1.in). The
# help texts are `edgelock --help` and `edgelock help COMMAND` for every command its usage
# lists, and `edgelock-sim --help`. For each page:
#   - every flag of its help text (--long and -x) appears in it
#   - every command of the usage lines has its entry under COMMANDS (.SS or a .B tag)
#   - every exit code the help text lists has its .B tag under EXIT STATUS
#   - every EDGELOCK_* variable it names has its .B tag under ENVIRONMENT
#   - man(1) renders it without a warning, and its NAME line is a whatis entry (what lintian
#     checks; skipped where man-db is not installed)
# Prints every item missing and exits 1, or 0 when none is.
#
# --without PAGE WORD: the test shown able to fail. Runs the check on a copy of the pages in
# which PAGE lost every occurrence of WORD (a flag) or its exit-status entry (a code), and
# exits 0 only if the check then fails and names WORD.
set -euo pipefail

(($# == 3 || $# == 6)) || {
  echo "usage: man_pages_test.sh EDGELOCK EDGELOCK_SIM MAN_DIR [--without PAGE WORD]" >&2
  exit 2
}
edgelock=$1
edgelock_sim=$2
man_dir=$3
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/help_words.sh"

work=$(mktemp -d "${TMPDIR:-/tmp}/edgelock-man-test.XXXXXX")
trap 'rm -rf "$work"' EXIT

if (($# == 6)); then
  [[ "$4" == --without ]] || { echo "man_pages_test: expected --without, got $4" >&2; exit 2; }
  page=$5 word=$6
  mkdir "$work/pages"
  cp "$man_dir"/*.1 "$work/pages/"
  [[ -f "$work/pages/$page" ]] || { echo "man_pages_test: no page $page in $man_dir" >&2; exit 2; }
  if [[ "$word" == -* ]]; then
    roff=${word//-/\\-}
    WORD=$roff perl -pi -e 's/\Q$ENV{WORD}\E(?![A-Za-z0-9]|\\-)//g' "$work/pages/$page"
  else
    # The tag line of the code's entry under EXIT STATUS.
    WORD=$word perl -ni -e 'print unless /^\.B \Q$ENV{WORD}\E$/' "$work/pages/$page"
  fi
  cmp -s "$man_dir/$page" "$work/pages/$page" && {
    echo "man_pages_test: $page has no $word to remove" >&2
    exit 2
  }
  set +e
  "$0" "$edgelock" "$edgelock_sim" "$work/pages" >"$work/output" 2>&1
  status=$?
  set -e
  cat "$work/output"
  if ((status == 1)) && grep -q -- "$page: .*missing:.*\(^\| \)$word\( \|$\)" "$work/output"; then
    echo "man_pages_test: ok: without $word, $page fails the check, which names it"
    exit 0
  fi
  echo "man_pages_test: FAIL: $page without $word: the check exited $status without naming it" >&2
  exit 1
fi

# The page as plain lines: comments dropped, font changes and escapes undone, so that
# `\fB\-\-wait\fR` reads `--wait`; macro lines stay (.SH, .SS, .TP, .B).
normalize() {
  perl -ne '
    next if /^\.\\"/;
    s/\\f(?:\[[A-Za-z]*\]|\([A-Za-z]{2}|[A-Za-z])//g;
    s/\\-/-/g; s/\\&//g; s/\\\(aq/\x27/g; s/\\\(dq/"/g; s/\\\(em/--/g; s/\\e/\\/g;
    print' "$1"
}

# Prints the lines of section $2 (".SH NAME", quotes or not) of normalized page $1.
section() {
  SECTION=$2 perl -ne '
    if (/^\.SH\s+"?(.*?)"?\s*$/) { $in = ($1 eq $ENV{SECTION}); next }
    print if $in' "$1"
}

failures=0
# report PAGE WHAT ITEM...: one line naming every missing item of a kind.
report() {
  local page=$1 what=$2
  shift 2
  (($# == 0)) && return
  echo "man_pages_test: $page: $what missing: $*"
  failures=$((failures + 1))
}

# check_page PAGE PROGRAM HELP_FILE: the checks above, for one page.
check_page() {
  local page=$1 program=$2 help=$3 text=$work/$1.txt missing word
  [[ -f "$man_dir/$page" ]] || { report "$page" "the page is" "$man_dir/$page"; return; }
  normalize "$man_dir/$page" >"$text"
  # Each section in a file of its own: `section | grep -q` would fail under pipefail once grep
  # quits early on a section longer than a pipe write.
  section "$text" COMMANDS >"$text.commands"
  section "$text" "EXIT STATUS" >"$text.exit-status"
  section "$text" ENVIRONMENT >"$text.environment"

  missing=()
  while read -r word; do
    WORD=$word perl -ne 'BEGIN { $found = 0 }
      $found = 1 if /(?<![A-Za-z0-9_-])\Q$ENV{WORD}\E(?![A-Za-z0-9_-])/;
      END { exit !$found }' "$text" ||
      missing+=("$word")
  done < <(help_flags <"$help")
  report "$page" "flags" "${missing[@]}"

  missing=()
  while read -r word; do
    grep -Eq "^\.(SS|B) \"?$word\"?$" "$text.commands" || missing+=("$word")
  done < <(help_commands "$program" <"$help")
  report "$page" "commands (an .SS or .B entry under COMMANDS)" "${missing[@]}"

  missing=()
  while read -r word; do
    grep -Fxq ".B $word" "$text.exit-status" || missing+=("$word")
  done < <(help_exit_codes <"$help")
  report "$page" "exit codes (a .B entry under EXIT STATUS)" "${missing[@]}"

  missing=()
  while read -r word; do
    grep -Fxq ".B $word" "$text.environment" || missing+=("$word")
  done < <(help_variables <"$help")
  report "$page" "variables (a .B entry under ENVIRONMENT)" "${missing[@]}"

  if command -v man >/dev/null && command -v lexgrog >/dev/null; then
    # What lintian runs for manpage-has-errors-from-man.
    local warnings whatis
    warnings=$(LC_ALL=C.UTF-8 MANROFFSEQ='' MANWIDTH=80 man --warnings -E UTF-8 -l -Tutf8 -Z \
      "$man_dir/$page" 2>&1 >/dev/null) || true
    [[ -z "$warnings" ]] || report "$page" "a clean rendering is" "$(tr '\n' ' ' <<<"$warnings")"
    whatis=$(lexgrog "$man_dir/$page" 2>&1) || true
    [[ "$whatis" == *": \"${page%.1} - "* ]] || report "$page" "a whatis NAME line is" "$whatis"
  fi
}

"$edgelock" --help >"$work/edgelock-help"
while read -r command; do
  [[ "$command" == help ]] && continue
  "$edgelock" help "$command" >>"$work/edgelock-help"
done < <(help_commands edgelock <"$work/edgelock-help")
"$edgelock_sim" --help >"$work/edgelock-sim-help"

check_page edgelock.1 edgelock "$work/edgelock-help"
check_page edgelock-sim.1 edgelock-sim "$work/edgelock-sim-help"

if ((failures > 0)); then
  echo "man_pages_test: FAIL: docs/man/*.1.in lack what the help texts list (above)" >&2
  exit 1
fi
echo "man_pages_test: ok: edgelock.1 and edgelock-sim.1 document every command, flag," \
  "exit code and variable of the help texts"
