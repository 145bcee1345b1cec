# SPDX-License-Identifier: Apache-2.0
# A redis-server of the caller's own on a free loopback port, stopped by PID. Sourced, not
# run: by scripts/demo.sh and tests/package/package_test.sh.
#
#   redis_dir=DIR          where the server keeps its files and log (the caller's to remove)
#   start_redis ARGS...    starts one (ARGS: persistence flags, e.g. --appendonly yes
#                          --appendfsync always); sets redis_pid and redis_port; exits 1 when
#                          no free port took it
#   stop_redis_process     stops it (harmless when none runs); call it from the caller's trap
#
# The server counts as started when the port answers with its own process_id: a server that
# lost a port race exits, and another one already listening there must not be taken for it.

redis_pid=""
redis_port=""

port_free() {
  ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

start_redis() {
  local attempt port info
  for attempt in 1 2 3 4 5 6 7 8; do
    port=$((20000 + RANDOM % 30000))
    port_free "$port" || continue
    redis-server --port "$port" --bind 127.0.0.1 --save '' "$@" \
      --dir "$redis_dir" --logfile "$redis_dir/redis.log" &
    redis_pid=$!
    for _ in $(seq 100); do
      kill -0 "$redis_pid" 2>/dev/null || break  # lost the port to someone else: try another
      info=$(redis-cli -p "$port" info server 2>/dev/null || true)
      if [[ "$info" == *"process_id:$redis_pid"$'\r'* ]]; then
        redis_port=$port
        return 0
      fi
      sleep 0.1
    done
    stop_redis_process
  done
  echo "${0##*/}: could not start redis-server on a free loopback port" >&2
  exit 1
}

stop_redis_process() {
  if [[ -n "$redis_pid" ]]; then
    kill "$redis_pid" 2>/dev/null || true
    wait "$redis_pid" 2>/dev/null || true
  fi
  redis_pid=""
}
