#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Same seed, same run, on every architecture: compares the simulator built natively with the
# simulator built for another architecture (run under an emulator).
#
#   scripts/sim-determinism.sh NATIVE_SIM -- COMMAND...
#   scripts/sim-determinism.sh build/sim/edgelock-sim -- \
#       qemu-aarch64 -L /usr/aarch64-linux-gnu build-aarch64/sim/edgelock-sim
#
# Runs `edgelock-sim run` for every scenario (S1..S11) and configuration, once scripted and
# once with a random schedule, each with its own seed, then `edgelock-sim matrix`. Every
# output must be byte-identical between the two builds (the trace hash is printed per run as
# the summary), except the matrix's last line, its wall and CPU time. Exit status: 0 all
# identical, 1 a difference (the first lines of the diff are printed), 2 usage or a run that
# printed no trace hash. As many comparisons run at once as there are cores; the report
# lists them in order.
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

# Two comparisons at a time on two cores (each is a native run then an emulated one).
parallel_max=$(nproc)
count=0

# compare INDEX NAME ARGS...: runs both builds with ARGS and compares output and exit status.
# Writes the report line (and the head of a diff) to $scratch/INDEX.report, and marks a
# difference ($scratch/INDEX.different) or a run without a trace hash ($scratch/INDEX.nohash).
compare() {
  local index=$1 name=$2
  shift 2
  local native_out="$scratch/$index.native" target_out="$scratch/$index.target"
  local report="$scratch/$index.report"
  "$native" "$@" >"$native_out" 2>&1
  local native_status=$?
  "${target[@]}" "$@" >"$target_out" 2>&1
  local target_status=$?
  if [[ "$1" == matrix ]]; then
    # The last line is the time taken, the one part of the output allowed to differ.
    sed -i '$d' "$native_out" "$target_out"
  fi
  local native_hash target_hash
  native_hash=$(sed -n 's/^trace hash //p' "$native_out")
  target_hash=$(sed -n 's/^trace hash //p' "$target_out")
  if [[ "$1" == run && -z "$native_hash" ]]; then
    { echo "sim-determinism: no trace hash from: $native $*"; sed 's/^/  /' "$native_out" | head -20
    } >"$report"
    touch "$scratch/$index.nohash"
  elif cmp -s "$native_out" "$target_out" && ((native_status == target_status)); then
    printf '%-44s %-16s %-16s same\n' "$name" "${native_hash:-(output)}" \
      "${target_hash:-(output)}" >"$report"
  else
    { printf '%-44s %-16s %-16s DIFFERENT (exit %d vs %d)\n' "$name" "${native_hash:-(output)}" \
      "${target_hash:-(output)}" "$native_status" "$target_status"
      diff -u --label native --label target "$native_out" "$target_out" | head -30
    } >"$report"
    touch "$scratch/$index.different"
  fi
}

# launch NAME ARGS...: compare in the background, once fewer than parallel_max run.
launch() {
  while (($(jobs -rp | wc -l) >= parallel_max)); do wait -n; done
  compare "$count" "$@" &
  count=$((count + 1))
}

printf '%-44s %-16s %-16s\n' "run" "native hash" "target hash"
for s in "${!scenarios[@]}"; do
  for c in "${!configs[@]}"; do
    scenario=${scenarios[$s]}
    config=${configs[$c]}
    seed=$((1000 + 100 * s + c))
    launch "$scenario $config seed $seed" \
      run --scenario "$scenario" --config "$config" --seed "$seed"
    random_seed=$((9000 + 100 * s + c))
    launch "$scenario $config seed $random_seed random" \
      run --scenario "$scenario" --config "$config" --seed "$random_seed" --random
  done
done
launch "matrix --runs $matrix_runs --seed $matrix_seed" \
  matrix --runs "$matrix_runs" --seed "$matrix_seed"
wait

differences=0
missing_hash=0
for ((i = 0; i < count; i++)); do
  if [[ -e "$scratch/$i.nohash" ]]; then
    cat "$scratch/$i.report" >&2
    missing_hash=1
    continue
  fi
  cat "$scratch/$i.report"
  [[ -e "$scratch/$i.different" ]] && differences=$((differences + 1))
done
((missing_hash == 0)) || exit 2
runs=$count

if ((differences > 0)); then
  echo "sim-determinism: $differences of $runs outputs differ between $native and ${target[*]}"
  exit 1
fi
echo "sim-determinism: all $runs outputs identical" \
  "($((runs - 1)) runs with their trace hashes, and the matrix)"
