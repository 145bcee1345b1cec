#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/backends.sh: the async client on Asio's epoll reactor beside the same client on its
# io_uring backend (EDGELOCK_IO_URING=ON), each built in a tree of its own: `lock_cycle --only
# single` from each tree in turn, RUNS times (each run its own servers, every process pinned
# to one CPU), then the system calls per single-lock cycle of each (strace -c over
# `--only edgelock-alone` and `--only raw-asio-alone` at two cycle counts, the difference
# divided by the extra cycles, so the setup's calls cancel out).
#
# Usage: bench/backends.sh EPOLL_BUILD_DIR IO_URING_BUILD_DIR [RUNS]   (RUNS: 3)
# Both trees need the target lock_cycle; the second configured with -DEDGELOCK_IO_URING=ON.
set -euo pipefail
epoll=${1:?usage: bench/backends.sh EPOLL_BUILD_DIR IO_URING_BUILD_DIR [RUNS]}
io_uring=${2:?usage: bench/backends.sh EPOLL_BUILD_DIR IO_URING_BUILD_DIR [RUNS]}
runs=${3:-3}

for tree in "$epoll" "$io_uring"; do
  [[ -x $tree/bench/lock_cycle ]] || {
    echo "backends.sh: no $tree/bench/lock_cycle (cmake --build $tree --target lock_cycle)" >&2
    exit 1
  }
done
grep -q '^EDGELOCK_IO_URING:BOOL=ON' "$io_uring/CMakeCache.txt" || {
  echo "backends.sh: $io_uring is not configured with -DEDGELOCK_IO_URING=ON" >&2
  exit 1
}

for ((run = 1; run <= runs; run++)); do
  for tree in "$epoll" "$io_uring"; do
    name=epoll
    [[ $tree == "$io_uring" ]] && name=io_uring
    echo "== run $run, $name ($tree)"
    "$tree/bench/lock_cycle" --only single | grep -E '^(ratio|  raw|  edgelock|server sleeps)'
  done
done

command -v strace >/dev/null || {
  echo "backends.sh: no strace; system calls not counted" >&2
  exit 0
}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
small=4000
large=8000
echo "== system calls per single-lock cycle (strace -c; ${large} cycles less ${small})"
for tree in "$epoll" "$io_uring"; do
  for loop in edgelock raw-asio; do
    for cycles in $small $large; do
      strace -c -o "$scratch/$cycles" "$tree/bench/lock_cycle" --only "$loop-alone" \
        --cycles "$cycles" --rounds 1 --no-pin >/dev/null
    done
    name=epoll
    [[ $tree == "$io_uring" ]] && name=io_uring
    # strace -c rows: % time, seconds, usecs/call, calls, [errors,] syscall name.
    awk -v small=$small -v large=$large -v label="$name $loop" '
      function row() { return NF == 6 ? $4 " " $5 " " $6 : $4 " 0 " $5 }
      $1 ~ /^[0-9.]+$/ && $NF != "total" {
        split(row(), f, " ")
        if (FILENAME ~ /\/'"$large"'$/) { calls[f[3]] += f[1]; errors[f[3]] += f[2] }
        else { calls[f[3]] -= f[1]; errors[f[3]] -= f[2] }
      }
      END {
        extra = large - small
        line = ""; total = 0
        for (name in calls) {
          per = calls[name] / extra
          if (per < 0.05) continue
          total += per
          line = line sprintf(", %s %.2f", name, per)
          failed = errors[name] / extra
          if (failed >= 0.05) line = line sprintf(" (%.2f failed)", failed)
        }
        printf "%-18s %.2f%s\n", label, total, line
      }' "$scratch/$small" "$scratch/$large"
  done
done
