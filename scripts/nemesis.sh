#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The simulator's safety matrix checked against real processes under real faults, longer
# than the ctest (`ctest -L nemesis`, two runs per cell, one of S2, S3, S8): builds the runner,
# the holders (blocking client, async client, and the edgelock CLI running a command; runs
# rotate which holds first), the CLI and the simulator, then runs
# every cell N times against real redis-server and redis-sentinel processes on loopback
# (tests/nemesis/README.md says which faults) and prints the agreement table:
# configuration x scenario, the matrix's verdict, runs, violations seen.
#
#   scripts/nemesis.sh [--runs N] [--ttl MS] [--configs a,b] [--scenarios S1,S2,S3,S5,S6,S8,S9]
#                      [--build DIR]
#
# Exits 1 when a cell disagrees (a violation the matrix shows never reproduced, or one seen
# where the matrix shows none). The holders' logs of every run stay in
# <build>/nemesis-logs/<date-time>/<configuration>-<scenario>-<run>/.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build="$root/build"
runs=10
ttl=1000
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=$2; shift 2 ;;
    --ttl) ttl=$2; shift 2 ;;
    --configs|--scenarios) extra+=("$1" "$2"); shift 2 ;;
    --build) build=$2; shift 2 ;;
    *) echo "usage: $0 [--runs N] [--ttl MS] [--configs a,b] [--scenarios S1,S2,S3,S5,S6,S8,S9]" \
         "[--build DIR]" >&2; exit 2 ;;
  esac
done

for tool in redis-server redis-sentinel; do
  command -v "$tool" >/dev/null || { echo "$tool is missing (scripts/setup.sh)" >&2; exit 2; }
done
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo
fi
nice -n 10 cmake --build "$build" -j2 --target nemesis_runner nemesis_holder nemesis_holder_asio \
  nemesis_holder_cli edgelock edgelock-sim

logs="$build/nemesis-logs/$(date +%Y%m%d-%H%M%S)"
mkdir -p "$logs"
started=$(date +%s)
status=0
nice -n 10 "$build/tests/nemesis/nemesis_runner" \
  --holder "$build/tests/nemesis/nemesis_holder" \
  --holder-asio "$build/tests/nemesis/nemesis_holder_asio" \
  --holder-cli "$build/tests/nemesis/nemesis_holder_cli" \
  --edgelock "$build/tools/edgelock/edgelock" \
  --sim "$build/sim/edgelock-sim" \
  --runs "$runs" --ttl "$ttl" --dir "$logs" ${extra[@]+"${extra[@]}"} || status=$?
echo "nemesis: $runs runs per cell, ttl $ttl ms, $(( $(date +%s) - started )) s"
exit "$status"
