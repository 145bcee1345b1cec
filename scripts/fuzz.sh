#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs every libFuzzer target of a build for a bounded time, starting from its seed corpus.
#
#   scripts/fuzz.sh BUILD_DIR [SECONDS]      (default 30 s per target)
#
# BUILD_DIR was configured with -DEDGELOCK_FUZZ=ON (Clang; scripts/test.sh uses build-asan/,
# so ASan and UBSan watch every run). The corpus is copied to a scratch directory first, so
# new inputs never land in the tree. A failing target leaves its input under the scratch
# directory, whose path is printed; replay it with `BUILD_DIR/tests/fuzz/<target>_fuzz FILE`.
# Exits non-zero on the first target that finds a crash or a broken check.
set -euo pipefail

(($# >= 1)) || { echo "usage: fuzz.sh BUILD_DIR [SECONDS]" >&2; exit 2; }
build=$1
seconds=${2:-30}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

scratch=$(mktemp -d "${TMPDIR:-/tmp}/edgelock-fuzz.XXXXXX")
for corpus in "$root"/tests/fuzz/corpus/*/; do
  target=$(basename "$corpus")
  binary=$build/tests/fuzz/${target}_fuzz
  [[ -x "$binary" ]] || {
    echo "fuzz.sh: no $binary (configure with -DEDGELOCK_FUZZ=ON)" >&2
    exit 2
  }
  work=$scratch/$target
  mkdir -p "$work/corpus"
  cp "$corpus"/* "$work/corpus/"
  if ! "$binary" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=1024 -print_final_stats=1 \
      -artifact_prefix="$work/" "$work/corpus" >"$work/log" 2>&1; then
    tail -n 30 "$work/log"
    echo "fuzz.sh: $target failed; its input and log are in $work" >&2
    exit 1
  fi
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work/log" |
    grep -o '[0-9]*$' || echo '?')
  printf '%-12s %8s runs in %ss, corpus %s -> %s inputs\n' "$target" "$runs" "$seconds" \
    "$(ls "$corpus" | wc -l)" "$(ls "$work/corpus" | wc -l)"
done
rm -rf "$scratch"
