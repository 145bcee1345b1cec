#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Puts the licence's SPDX identifier at the top of every tracked source file (LICENSE: Apache-2.0).
#
#   scripts/spdx.sh           add the line to each file that lacks it
#   scripts/spdx.sh --check   change nothing; list the files that lack it and exit 1 if any do
#
# Which files, and where the line goes (files tracked by git in this tree; symbolic links are
# left alone):
#   *.cpp *.hpp *.h *.c            `// SPDX-License-Identifier: Apache-2.0`, the first line
#   *.sh                           `# SPDX-License-Identifier: Apache-2.0`, after the #! line
#                                  (the first line when there is none)
#   CMakeLists.txt *.cmake         `# SPDX-License-Identifier: Apache-2.0`, the first line
# A file has the line when one of its first five lines carries `SPDX-License-Identifier:`.
# Exits 0 when every file has it (after adding, or on --check), 1 when --check found one
# without it, 2 on a bad command line or outside a git work tree.
set -euo pipefail

license=Apache-2.0
tag=SPDX-License-Identifier

usage() {
  echo "usage: spdx.sh [--check]" >&2
  exit 2
}
check=false
case "$#:${1:-}" in
  0:) ;;
  1:--check) check=true ;;
  *) usage ;;
esac

root=$(git rev-parse --show-toplevel 2>/dev/null) || {
  echo "spdx.sh: not in a git work tree" >&2
  exit 2
}
cd "$root"

has_line() {
  head -n 5 -- "$1" | grep -q "$tag:"
}

# Writes the file with `line` inserted before line `at` (1: the top; 2: after the shebang),
# keeping the file's mode.
insert_line() {
  local file=$1 line=$2 at=$3 scratch
  scratch=$(mktemp "$file.spdx.XXXXXX")
  if ((at == 2)); then
    { head -n 1 -- "$file"; printf '%s\n' "$line"; tail -n +2 -- "$file"; } >"$scratch"
  else
    { printf '%s\n' "$line"; cat -- "$file"; } >"$scratch"
  fi
  chmod --reference="$file" "$scratch"
  mv -- "$scratch" "$file"
}

missing=()
added=0
while IFS= read -r -d '' entry; do
  mode=${entry%% *}
  file=${entry#*$'\t'}
  [[ "$mode" == 120000 ]] && continue  # a symbolic link
  case "$file" in
    *.cpp | *.hpp | *.h | *.c) comment=// ;;
    *.sh | CMakeLists.txt | */CMakeLists.txt | *.cmake) comment='#' ;;
    *) continue ;;
  esac
  [[ -f "$file" ]] || continue  # deleted in the work tree, not yet in the index
  has_line "$file" && continue
  if $check; then
    missing+=("$file")
    continue
  fi
  at=1
  if [[ "$file" == *.sh ]] && head -n 1 -- "$file" | grep -q '^#!'; then
    at=2
  fi
  insert_line "$file" "$comment $tag: $license" "$at"
  added=$((added + 1))
done < <(git ls-files -s -z)

if $check; then
  if ((${#missing[@]} > 0)); then
    echo "spdx.sh: ${#missing[@]} files without '$tag: $license':" >&2
    printf '%s\n' "${missing[@]}"
    exit 1
  fi
  echo "spdx.sh: every source file names its licence"
  exit 0
fi
echo "spdx.sh: added the line to $added files"
