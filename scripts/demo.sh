#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The main job: installs what is missing, builds, and shows edgelock working.
#
#   1. the seeds' scenarios against a real Redis: examples/order_grab (drivers race for one
#      order; fencing refuses a paused holder's late write), examples/inventory (stock
#      deduction never oversells, and does without the lock), examples/gateway_job (a job one
#      gateway of a fleet runs; the lost handler aborts it)
#   2. the edgelock command: two `edgelock run` racing for one lock, and a third that will not
#      wait; then the restart guard: Redis restarted without AOF, and the lock waits a TTL
#   3. the simulator: `edgelock sim matrix` as a table (which configuration keeps which promise
#      under which fault), and the SVG timeline of one counterexample
#
# It starts its own redis-server (AOF, appendfsync always: the deployment the restart guard
# counts at once) on a free loopback port and stops it (by PID) on exit. Output
# files go to build/demo/ (EDGELOCK_BUILD_DIR picks another build directory than build/).
# About 20 s once built; the first build adds a minute or two on two cores.
# (examples/core_walkthrough, the core driven by hand, is built too but not run here: its
# byte-level output is for readers of the core, see README.md.)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
build=${EDGELOCK_BUILD_DIR:-build}
out=$build/demo
started=$SECONDS

part() {
  printf '\n== %s\n' "$*"
}

# Runs a noisy step with its output in a log; shows the log's end if it fails.
quietly() {
  local log=$1
  shift
  if ! "$@" >"$log" 2>&1; then
    tail -n 40 "$log" >&2
    echo "demo.sh: '$*' failed (full log: $log)" >&2
    exit 1
  fi
}

part "setup and build (log: $out/build.log)"
./scripts/setup.sh
mkdir -p "$out"
quietly "$out/build.log" cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo
quietly "$out/build.log" cmake --build "$build" -j "$(nproc)" --target \
  edgelock edgelock-sim order_grab inventory gateway_job quickstart core_walkthrough
edgelock=$build/tools/edgelock/edgelock
echo "built in $((SECONDS - started)) s"

# A redis-server of our own on a free loopback port, stopped by PID whatever happens.
source scripts/redis-on-loopback.sh
redis_dir=$(mktemp -d)
stop_redis() {
  stop_redis_process
  rm -rf "$redis_dir"
}
trap stop_redis EXIT

start_redis --appendonly yes --appendfsync always
url="redis://127.0.0.1:$redis_port"
export EDGELOCK_REDIS=$url
echo "redis-server pid $redis_pid on $url"

part "1. The seeds' scenarios against a real Redis"
echo "-- order_grab: 8 drivers race for one order; then a paused holder tries a late write"
"$build"/examples/order_grab "$url"
echo
echo "-- inventory: 4 shops, 24 orders, 10 in stock; with the lock, then without it"
"$build"/examples/inventory "$url" | tail -n 1
"$build"/examples/inventory "$url" --no-lock | tail -n 1 || true
echo
echo "-- gateway_job (asio): a job one gateway of three runs at a time;" \
  "the key is deleted under job 3"
"$build"/examples/gateway_job "$url"

part "2. The edgelock command: flock(1) across machines"
job='echo "  [$0] holds demo:nightly, fence $EDGELOCK_FENCE, works 1 s"; '
job+='sleep 1; echo "  [$0] done"'
echo "\$ edgelock run --name demo:nightly --wait 10s -- sh -c '...'   (A and B at once)"
"$edgelock" run --name demo:nightly --wait 10s -- sh -c "$job" A &
first=$!
sleep 0.3
"$edgelock" run --name demo:nightly --wait 10s -- sh -c "$job" B &
second=$!
sleep 0.3
echo "\$ edgelock status --name demo:nightly"
"$edgelock" status --name demo:nightly | sed -n 's/^\(holder\|ttl\|fence\) /  &/p'
echo "\$ edgelock run --name demo:nightly --wait 0 -- true   (C will not wait)"
status=0
"$edgelock" run --name demo:nightly --wait 0 -- true 2>"$out/c.err" || status=$?
echo "  [C] exit $status: $(cat "$out/c.err")"
wait "$first" "$second"
echo "(exit codes: $edgelock --help; docs/CLI.md)"
echo
echo "-- the restart guard: Redis restarts without AOF, so it may have forgotten a lease"
stop_redis_process
start_redis --appendonly no
export EDGELOCK_REDIS="redis://127.0.0.1:$redis_port"
echo "\$ edgelock run --name demo:guard --ttl 3s --wait 0 -- true   (Redis restarted a moment ago)"
status=0
"$edgelock" run --name demo:guard --ttl 3s --wait 0 -- true 2>"$out/guard.err" || status=$?
echo "  exit $status: $(cat "$out/guard.err")"
echo "\$ edgelock run --name demo:guard --ttl 3s --wait 10s -- echo ran"
"$edgelock" run --name demo:guard --ttl 3s --wait 10s -- echo "  ran" 2>&1 |
  sed 's/^edgelock/  edgelock/'

part "3. The simulator: which configuration keeps which promise under which fault"
"$edgelock" sim matrix --runs 30 --seed 1 >"$out/matrix.txt"
awk '
  /^S[0-9]+ / {
    cell = ""
    for (i = 3; i <= NF; i++) {
      split($i, kv, "=")
      if (kv[2] != "VIOLATED") continue
      if (kv[1] == "overlap") cell = cell "O"
      if (kv[1] == "stale") cell = cell "S"
      if (kv[1] == "order") cell = cell "F"
      if (kv[1] == "liveness") cell = cell "L"
      if (kv[1] == "oracle") cell = cell "H"
      if (kv[1] == "kept") cell = cell "K"
      if (kv[1] == "available") cell = cell "A"
      if (kv[1] == "claim") cell = cell "C"
      if (kv[1] == "wakeup") cell = cell "W"
      if (kv[1] == "fifo") cell = cell "Q"
    }
    if (!($2 in seen)) { seen[$2] = 1; configs[++n] = $2 }
    if (!($1 in scenario_seen)) { scenario_seen[$1] = 1; scenarios[++m] = $1 }
    table[$2, $1] = cell == "" ? "ok" : cell
  }
  /^total / { total = $0 }
  END {
    line = sprintf("%-27s", "configuration")
    for (j = 1; j <= m; j++) line = line sprintf("%-5s", scenarios[j])
    sub(/ +$/, "", line)
    print line
    for (i = 1; i <= n; i++) {
      line = sprintf("%-27s", configs[i])
      for (j = 1; j <= m; j++) line = line sprintf("%-5s", table[configs[i], scenarios[j]])
      sub(/ +$/, "", line)
      print line
    }
    print total
  }' "$out/matrix.txt"
cat <<'EOF'
ok: every run kept every promise. Violated: O two holders at once, S a stale write reached
the protected storage, F fence tokens out of order, L the lock never came back, H held()
said yes while Redis no longer kept the holder's key where it had to, K a holder lost the
lock for no reason, A a holder lost it, or a free lock waited past its bound, through what its
configuration rides out (a slot moving between cluster masters, a failover with WAIT), C a
claim counted without the server's evidence (a WAIT on another connection than the claim's, a
replica never asked ROLE); fair locks only: W a waiter missed its wake-up at a free lock,
Q the line was not served in order.
S1 GC pause after acquire  S2 write delayed past the TTL  S3 pause during acquire
S4 Redis wall-clock jump   S5 Redis restart empty, or another server at its address
S6 master lost, failover
S7 client clock drift      S8 lost release/renew reply       S9 network partition
S10 a node evicts keys (maxmemory-policy volatile-* or allkeys-*)
S11 a waiter subscribes after the release published its wake-up (fair waiting)
EOF
echo "(every line, with the command that replays it: $out/matrix.txt)"
echo
echo "\$ edgelock sim run --scenario S1 --config single --seed 1 --svg $out/S1-single.svg"
"$edgelock" sim run --scenario S1 --config single --seed 1 --svg "$out/S1-single.svg" \
  >"$out/S1-single.txt" || true
grep -E '^(  overlap|  stale|svg written)' "$out/S1-single.txt" | sed 's/^  /  /'
echo "(the full timeline: $out/S1-single.txt; with fencing the stale write is refused:"
echo " edgelock sim run --scenario S1 --config single+fencing --seed 1)"

part "done in $((SECONDS - started)) s; stopping redis-server pid $redis_pid"
