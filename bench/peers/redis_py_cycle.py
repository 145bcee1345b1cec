# SPDX-License-Identifier: Apache-2.0
# redis-py's Lock: acquire + release, one at a time, on one Redis. Prints
# "<cycles> cycles in <seconds> s". Usage: python3 redis_py_cycle.py CYCLES PORT
import sys
import time

import redis

cycles, port = int(sys.argv[1]), int(sys.argv[2])
client = redis.Redis(host="127.0.0.1", port=port)
lock = client.lock("bench:redis-py", timeout=30, blocking=False)


def cycle():
    if not lock.acquire():
        raise SystemExit("redis-py: the lock was not free")
    lock.release()


for _ in range(min(2000, cycles)):  # warm-up: the scripts loaded, the connection made
    cycle()
start = time.perf_counter()
for _ in range(cycles):
    cycle()
print(f"{cycles} cycles in {time.perf_counter() - start:.3f} s")
