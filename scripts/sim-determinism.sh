#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Same seed, same run, on every architecture: compares the simulator built natively with the
# simulator built for another architecture (run under an emulator).
#
#   scripts/sim-determinism.sh NATIVE_SIM -- COMMAND...
#   scripts/sim-determinism.sh build/sim/edgelock-sim -- \
#       qemu-aarch64 -L /usr/aarch64-linux-gnu build-aarch64/sim/edgelock-sim
#
# Runs `edgelock-sim run` for every scenario (S1..S10) and configuration, once scripted and
# once with a random schedule, each with its own seed, then `edgelock-sim matrix`. Every
# output must be byte-identical between the two builds (the trace hash is printed per run as
# the summary), except the matrix's last line, its wall and CPU time. Exit status: 0 all
# identical, 1 a difference (the first lines of the diff are printed), 2 usage or a run that
# printed no trace hash.
set -uo pipefail
export LC_ALL=C

usage() {
  echo "usage: sim-determinism.sh NATIVE_SIM -- COMMAND..." >&2
  exit 2
}
(($# >= 3)) || usage
native=$1
[[ "$2" == -- ]] || usage
shift 2
target=("$@")
[[ -x "$native" ]] || { echo "sim-determinism: not executable: $native" >&2; exit 2; }

matrix_runs=3
matrix_seed=42
scenarios=(S1 S2 S3 S4 S5 S6 S7 S8 S9 S10 S11)
# The configurations are whatever this simulator offers: its usage text lists them.
# (the matrix's line: "configurations (the matrix): ..."; the one-off rows are left out)
read -r -a configs < <("$native" 2>&1 | sed -n 's/^configurations\( (the matrix)\)\{0,1\}: *//p')
((${#configs[@]} > 0)) || { echo "sim-determinism: $native lists no configurations" >&2; exit 2; }

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

differences=0
runs=0

# compare NAME ARGS...: runs both builds with ARGS, compares output and exit status.
compare() {
  local name=$1
  shift
  "$native" "$@" >"$scratch/native" 2>&1
  local native_status=$?
  "${target[@]}" "$@" >"$scratch/target" 2>&1
  local target_status=$?
  runs=$((runs + 1))
  if [[ "$1" == matrix ]]; then
    # The last line is the time taken, the one part of the output allowed to differ.
    sed -i '$d' "$scratch/native" "$scratch/target"
  fi
  local native_hash target_hash
  native_hash=$(sed -n 's/^trace hash //p' "$scratch/native")
  target_hash=$(sed -n 's/^trace hash //p' "$scratch/target")
  if [[ "$1" == run && -z "$native_hash" ]]; then
    echo "sim-determinism: no trace hash from: $native $*" >&2
    sed 's/^/  /' "$scratch/native" | head -20 >&2
    exit 2
  fi
  if cmp -s "$scratch/native" "$scratch/target" && ((native_status == target_status)); then
    printf '%-44s %-16s %-16s same\n' "$name" "${native_hash:-(output)}" "${target_hash:-(output)}"
  else
    printf '%-44s %-16s %-16s DIFFERENT (exit %d vs %d)\n' "$name" "${native_hash:-(output)}" \
      "${target_hash:-(output)}" "$native_status" "$target_status"
    diff -u --label native --label target "$scratch/native" "$scratch/target" | head -30
    differences=$((differences + 1))
  fi
}

printf '%-44s %-16s %-16s\n' "run" "native hash" "target hash"
for s in "${!scenarios[@]}"; do
  for c in "${!configs[@]}"; do
    scenario=${scenarios[$s]}
    config=${configs[$c]}
    seed=$((1000 + 100 * s + c))
    compare "$scenario $config seed $seed" \
      run --scenario "$scenario" --config "$config" --seed "$seed"
    random_seed=$((9000 + 100 * s + c))
    compare "$scenario $config seed $random_seed random" \
      run --scenario "$scenario" --config "$config" --seed "$random_seed" --random
  done
done
compare "matrix --runs $matrix_runs --seed $matrix_seed" \
  matrix --runs "$matrix_runs" --seed "$matrix_seed"

if ((differences > 0)); then
  echo "sim-determinism: $differences of $runs outputs differ between $native and ${target[*]}"
  exit 1
fi
echo "sim-determinism: all $runs outputs identical" \
  "($((runs - 1)) runs with their trace hashes, and the matrix)"
