#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The house checks on the source text, one line per finding (`path:line: [rule] what`):
#
#   function-length  no function over 70 lines in core/ session/ transport/ sim/ tools/
#                    bench/ examples/ (tests are exempt), counted as clang-tidy's
#                    readability-function-size counts them
#   columns          no line over 100 columns in C, C++, shell, CMake and Python files
#   paths            every file path a document or a comment names exists
#   tracked          every file git tracks is of a kind the repository keeps (no logs)
#   format           every C and C++ file is as clang-format 14 lays it out (.clang-format)
#
# All but the format check are scripts/tidy.py's (where each rule is defined precisely).
#
#   scripts/tidy.sh [ROOT]               every check
#   scripts/tidy.sh --no-format [ROOT]   all but the format check
#   scripts/tidy.sh --format [ROOT]      the format check alone
#   scripts/tidy.sh --fix-format [ROOT]  reformat every C and C++ file in place; no checks
#
# ROOT is the tree to check (default: this repository); files under directories named build*
# or starting with a dot are never read, and the format is ROOT's own .clang-format.
# Exits 0 when nothing was found (or after --fix-format), 1 on findings, 2 on a bad command
# line or a missing tool (python3, clang-format).
set -euo pipefail

usage() {
  echo "usage: tidy.sh [--format|--no-format|--fix-format] [ROOT]" >&2
  exit 2
}

mode=all
root=
for argument in "$@"; do
  case "$argument" in
    --format) mode=format ;;
    --no-format) mode=text ;;
    --fix-format) mode=fix-format ;;
    -*) usage ;;
    *) [[ -z "$root" ]] || usage; root=$argument ;;
  esac
done
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "${root:-$here/..}" 2>/dev/null && pwd) || usage
cd "$root"

# The C and C++ files clang-format owns, NUL-separated, relative to ROOT.
cxx_files() {
  find . -type d \( -name 'build*' -o -name '.?*' \) -prune -o -type f \
    \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' -o -name '*.c' \) -printf '%P\0' |
    sort -z
}

# clang-format 14, as CI has it (another version lays some constructs out differently).
clang_format_tool() {
  local tool
  for tool in "${CLANG_FORMAT:-}" clang-format-14 clang-format; do
    if [[ -n "$tool" ]] && command -v "$tool" >/dev/null; then
      if ! "$tool" --version | grep -q ' version 14\.'; then
        echo "tidy.sh: $tool is not clang-format 14: expect findings 14 would not make" >&2
      fi
      echo "$tool"
      return
    fi
  done
  echo "tidy.sh: clang-format not found (scripts/setup.sh installs it)" >&2
  exit 2
}

# clang-format with ROOT's style on every C and C++ file.
clang_format() {
  if [[ ! -f .clang-format ]]; then
    echo "tidy.sh: $root has no .clang-format" >&2
    exit 2
  fi
  cxx_files | xargs -0 -r "$clang_format" --style=file:.clang-format "$@"
}

if [[ "$mode" != text ]]; then
  clang_format=$(clang_format_tool)
fi

if [[ "$mode" == fix-format ]]; then
  clang_format -i
  exit 0
fi

findings=$(mktemp)
trap 'rm -f "$findings"' EXIT

if [[ "$mode" != format ]]; then
  if ! command -v python3 >/dev/null; then
    echo "tidy.sh: python3 not found (scripts/setup.sh installs it)" >&2
    exit 2
  fi
  python3 "$here/tidy.py" . functions columns paths tracked >>"$findings" || exit 2
fi

if [[ "$mode" != text ]]; then
  # --dry-run warns once per replacement it would make, at the replacement's first
  # character; a line is reported once however many it has.
  warnings=$(clang_format --dry-run 2>&1 >/dev/null) || {
    printf '%s\n' "$warnings" >&2
    exit 2
  }
  sed -nE 's/^([^:]+):([0-9]+):[0-9]+: warning: code should be clang-formatted.*/\1:\2/p' \
    <<<"$warnings" | sort -t: -k1,1 -k2,2n -u |
    sed 's/$/: [format] not laid out as .clang-format says (scripts\/tidy.sh --fix-format)/' \
      >>"$findings"
fi

cat "$findings"
count=$(wc -l <"$findings")
if ((count > 0)); then
  summary=$(sed -nE 's/^[^ ]+ \[([a-z-]+)\].*/\1/p' "$findings" | sort | uniq -c |
    awk '{printf "%s%s %s", (NR > 1 ? ", " : ""), $1, $2}')
  echo "tidy.sh: $count findings ($summary)" >&2
  exit 1
fi
echo "tidy.sh: nothing found" >&2
