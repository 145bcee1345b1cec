#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs every libFuzzer target of a build for a bounded time, starting from its seed corpus.
#
#   scripts/fuzz.sh BUILD_DIR [SECONDS]      (default 30 s per target)
#
# BUILD_DIR was configured with -DEDGELOCK_FUZZ=ON (Clang; scripts/test.sh uses build-asan/,
# so ASan and UBSan watch every run). The corpus is copied to a scratch directory first, so
# new inputs never land in the tree. The targets run one per CPU at a time (each is a single
# thread for its SECONDS), and report in a fixed order. A failing target leaves its input under
# the scratch directory, whose path is printed; replay it with
# `BUILD_DIR/tests/fuzz/<target>_fuzz FILE`. Exits non-zero when a target finds a crash or a
# broken check (the first such in that order is shown).
set -euo pipefail

(($# >= 1)) || { echo "usage: fuzz.sh BUILD_DIR [SECONDS]" >&2; exit 2; }
build=$1
seconds=${2:-30}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
jobs=$(nproc)

targets=()
for corpus in "$root"/tests/fuzz/corpus/*/; do
  target=$(basename "$corpus")
  [[ -x "$build/tests/fuzz/${target}_fuzz" ]] || {
    echo "fuzz.sh: no $build/tests/fuzz/${target}_fuzz (configure with -DEDGELOCK_FUZZ=ON)" >&2
    exit 2
  }
  targets+=("$target")
done

scratch=$(mktemp -d "${TMPDIR:-/tmp}/edgelock-fuzz.XXXXXX")

# One target from its seed corpus; its exit status goes to $work/status.
fuzz_target() {
  local target=$1
  local work=$scratch/$target
  local status=0
  mkdir -p "$work/corpus"
  cp "$root/tests/fuzz/corpus/$target"/* "$work/corpus/"
  "$build/tests/fuzz/${target}_fuzz" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=1024 \
    -print_final_stats=1 -artifact_prefix="$work/" "$work/corpus" >"$work/log" 2>&1 ||
    status=$?
  echo "$status" >"$work/status"
}

running=0
for target in "${targets[@]}"; do
  if ((running >= jobs)); then
    wait -n
    running=$((running - 1))
  fi
  fuzz_target "$target" &
  running=$((running + 1))
done
wait

for target in "${targets[@]}"; do
  work=$scratch/$target
  if [[ "$(cat "$work/status")" != 0 ]]; then
    tail -n 30 "$work/log"
    echo "fuzz.sh: $target failed; its input and log are in $work" >&2
    exit 1
  fi
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work/log" |
    grep -o '[0-9]*$' || echo '?')
  printf '%-12s %8s runs in %ss, corpus %s -> %s inputs\n' "$target" "$runs" "$seconds" \
    "$(ls "$root/tests/fuzz/corpus/$target" | wc -l)" "$(ls "$work/corpus" | wc -l)"
done
rm -rf "$scratch"
