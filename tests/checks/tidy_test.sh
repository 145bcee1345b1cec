#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# scripts/tidy.sh on a small tree with one violation of each rule, each beside a near miss
# that must pass: the report must be exactly the violations, and the options must select
# and fix as they say.
#
#   tests/checks/tidy_test.sh REPOSITORY_ROOT
set -euo pipefail

repository=$(cd "${1:?usage: tidy_test.sh REPOSITORY_ROOT}" && pwd)
tidy=$repository/scripts/tidy.sh
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
cd "$tree"
cp "$repository/.clang-format" .
mkdir -p core/src tests/core docs scripts build/core

failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# A function body of $1 lines indented by $2, with braces in strings, characters, comments
# and a lambda.
body() {
  local lines=$1 indent=$2
  {
    echo 'int total = 0;'
    echo 'const char* text = "{{";  // }'
    echo "const char brace = '}';"
    echo '/* { */'
    echo 'auto add = [&total](int n) { total += n; };'
    for ((i = 6; i < lines; ++i)); do echo "add($i);"; done
    echo 'return total + text[0] + brace;'
  } | sed "s/^/$indent/"
}

# function-length: 71 lines (closing brace's line 74 minus opening's 3) against 70; the
# same 71 lines in tests/ are exempt. paths: a comment names a missing and a present file.
{
  echo '// The rules: DESIGN.md (missing) and docs/GUIDE.md (present).'
  echo 'namespace fixture {'
  echo 'int too_long() {'
  body 70 '    '
  echo '}'
  echo 'struct holder {'
  echo '    int fits() {'
  body 69 '        '
  echo '    }'
  echo '};'
  echo '}  // namespace fixture'
} >core/src/lengths.cpp
{
  echo 'int long_test() {'
  body 70 '    '
  echo '}'
} >tests/core/lengths_test.cpp

# columns: 101 columns against 100, in C++ (a string clang-format leaves alone) and in shell.
x() { printf 'x%.0s' $(seq "$1"); }
printf '%s\n' 'const char* const fits =' "    \"$(x 93)\";" 'const char* const wide =' \
  "    \"$(x 94)\";" >core/src/wide.cpp
printf '%s\n' '#!/bin/sh' "# $(x 99)" "# $(x 98)" >scripts/wide.sh

# paths: a document names a missing script and, not paths of the tree, a URL, a system
# file, a build product and the reader's own script.
cat >docs/GUIDE.md <<'EOF'
# Guide

Run scripts/wide.sh, then scripts/gone.sh (see https://example.com/docs/x.md).
The page lands in /usr/share/doc/fixture/GUIDE.md and build/core/made.hpp; try ./mine.sh.
EOF

# format: one function as nobody would lay it out.
printf '%s\n' '// The one badly formatted file.' 'int  ugly( ){return 1;}' >core/src/ugly.cpp

# Nothing under a build directory is read.
cp core/src/ugly.cpp core/src/lengths.cpp docs/GUIDE.md build/core/

# tracked: a server log committed at the root, beside a log that is not tracked and files of
# the kinds kept (everything above).
echo 'a log line' >r.log
echo 'another log line' >untracked.log
git init -q .
git add .clang-format core docs scripts r.log

expected_text='core/src/lengths.cpp:3: [function-length] too_long is 71 lines (max 70)
core/src/wide.cpp:4: [columns] 101 columns (max 100)
scripts/wide.sh:2: [columns] 101 columns (max 100)
core/src/lengths.cpp:1: [paths] names DESIGN.md, which does not exist
docs/GUIDE.md:3: [paths] names scripts/gone.sh, which does not exist
r.log:1: [tracked] not a kind of file the repository keeps'
expected_text+=' (remove it, or add its kind to scripts/tidy.py)'
expected_format='core/src/ugly.cpp:2: [format] not laid out as .clang-format says'
expected_format+=' (scripts/tidy.sh --fix-format)'

# $1: what to run it with; $2: the exit status expected; $3: the report expected.
expect() {
  local status=0 output
  output=$("$tidy" $1 "$tree" 2>/dev/null) || status=$?
  if ((status != $2)); then
    fail "tidy.sh $1: exit status $status, expected $2"
  fi
  if [[ "$output" != "$3" ]]; then
    fail "tidy.sh $1 reported:"$'\n'"$output"$'\n'"expected:"$'\n'"$3"
  fi
}

expect "" 1 "$expected_text"$'\n'"$expected_format"
expect --no-format 1 "$expected_text"
expect --format 1 "$expected_format"

ugly=$(cat core/src/ugly.cpp)
"$tidy" --fix-format "$tree"
if [[ "$(tail -n 1 core/src/ugly.cpp)" != 'int ugly() { return 1; }' ]]; then
  fail "--fix-format left core/src/ugly.cpp as:"$'\n'"$(cat core/src/ugly.cpp)"
fi
if [[ "$(cat build/core/ugly.cpp)" != "$ugly" ]]; then
  fail "--fix-format reformatted a file under build/"
fi
expect --format 0 ""

if ((failures > 0)); then
  echo "tidy_test.sh: $failures failures" >&2
  exit 1
fi
echo "tidy_test.sh: every rule caught, every near miss passed"
