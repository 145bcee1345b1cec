#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/peers.sh: edgelock beside the lock clients its users would otherwise pick, on the same
# redis-server processes, every process pinned to one CPU: redis-py's Lock (Debian's
# python3-redis) and node-redlock (bench/peers/package.json, pinned versions), on one instance
# and over five masters (Redlock; redis-py has no Redlock). Each client runs acquire + release
# cycles one at a time (a warm-up first); rounds alternate between the clients and each
# figure is the median round. Prints cycles/s of each and edgelock's ratio to each peer.
#
# Usage: bench/peers.sh [BUILD_DIR]   (default build/, where the target peer_cycle is built)
# Environment: PEERS_CPU (0), PEERS_ROUNDS (3), PEERS_CYCLES (20000, one instance),
# PEERS_REDLOCK_CYCLES (5000). Needs python3-redis (installed here when missing, as root)
# and Node.js with npm (the npm registry, for bench/peers/node_modules).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=${1:-$here/../build}
cpu=${PEERS_CPU:-0}
rounds=${PEERS_ROUNDS:-3}
single_cycles=${PEERS_CYCLES:-20000}
redlock_cycles=${PEERS_REDLOCK_CYCLES:-5000}
python=/usr/bin/python3  # Debian's, which python3-redis is installed for

fail() {
  echo "peers.sh: $*" >&2
  exit 1
}

edgelock=$build/bench/peer_cycle
[[ -x $edgelock ]] || fail "no $edgelock (cmake --build $build --target peer_cycle)"
if ! "$python" -c 'import redis' 2>/dev/null; then
  [[ $(id -u) == 0 ]] || fail "redis-py is missing: apt-get install python3-redis"
  apt-get install -y -qq python3-redis >/dev/null || fail "apt-get install python3-redis failed"
fi
command -v node >/dev/null || fail "Node.js is missing"
if [[ ! -d $here/peers/node_modules/redlock ]]; then
  (cd "$here/peers" && npm install --no-audit --no-fund --silent) || fail "npm install failed"
fi

pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT

free_port() {
  "$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}

# Five volatile servers (no persistence, so no client pays for fsync), pinned.
ports=()
for _ in 1 2 3 4 5; do
  port=$(free_port)
  taskset -c "$cpu" redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
    --daemonize no --logfile '' >/dev/null &
  pids+=($!)
  ports+=("$port")
done
for port in "${ports[@]}"; do
  for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.05; done
  redis-cli -p "$port" ping >/dev/null 2>&1 || fail "redis-server on port $port did not start"
done
urls=()
for port in "${ports[@]}"; do urls+=("redis://127.0.0.1:$port"); done

# "<cycles> cycles in <seconds> s" -> cycles/s
rate() { taskset -c "$cpu" "$@" | awk '/cycles in/ { printf "%.0f\n", $1 / $4 }'; }

declare -A runs
record() {  # name command...
  local name=$1
  shift
  local r
  r=$(rate "$@") || fail "$name failed"
  [[ -n $r ]] || fail "$name printed no rate"
  runs[$name]+="$r "
}

py=("$python" "$here/peers/redis_py_cycle.py")
js=(node "$here/peers/redlock_cycle.mjs")
n1=$single_cycles
n5=$redlock_cycles
for ((round = 1; round <= rounds; ++round)); do
  record "edgelock async, one instance" "$edgelock" async "$n1" "${urls[0]}"
  record "edgelock blocking, one instance" "$edgelock" blocking "$n1" "${urls[0]}"
  record "redis-py Lock, one instance" "${py[@]}" "$n1" "${ports[0]}"
  record "node-redlock, one instance" "${js[@]}" "$n1" "${urls[0]}"
  record "edgelock async, Redlock-5" "$edgelock" async "$n5" "${urls[@]}"
  record "edgelock blocking, Redlock-5" "$edgelock" blocking "$n5" "${urls[@]}"
  record "node-redlock, Redlock-5" "${js[@]}" "$n5" "${urls[@]}"
done

median() {
  tr ' ' '\n' <<<"$1" | grep -v '^$' | sort -n |
    awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

redlock_version=$(node -p "require('$here/peers/node_modules/redlock/package.json').version")
echo "peers.sh: redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/')," \
  "redis-py $("$python" -c 'import redis; print(redis.__version__)'), node-redlock" \
  "$redlock_version, Node.js $(node --version); all on CPU $cpu; median of $rounds rounds"
one="one instance"
five="Redlock-5"
order=("edgelock async, $one" "edgelock blocking, $one" "redis-py Lock, $one" "node-redlock, $one"
  "edgelock async, $five" "edgelock blocking, $five" "node-redlock, $five")
declare -A med
for name in "${order[@]}"; do
  med[$name]=$(median "${runs[$name]}")
  printf '  %-34s %8s cycles/s   (rounds: %s)\n' "$name" "${med[$name]}" "${runs[$name]% }"
done
ratio() {  # label, numerator's name, denominator's name
  awk -v a="${med[$2]}" -v b="${med[$3]}" -v l="$1" 'BEGIN { printf "ratio %s = %.2f\n", l, a / b }'
}
ratio "edgelock-async/redis-py ($one)" "edgelock async, $one" "redis-py Lock, $one"
ratio "edgelock-async/node-redlock ($one)" "edgelock async, $one" "node-redlock, $one"
ratio "edgelock-async/node-redlock ($five)" "edgelock async, $five" "node-redlock, $five"
ratio "edgelock-blocking/redis-py ($one)" "edgelock blocking, $one" "redis-py Lock, $one"
ratio "edgelock-blocking/node-redlock ($five)" "edgelock blocking, $five" "node-redlock, $five"
