#!/usr/bin/env bash
# The main job: installs what is missing, builds, and shows edgelock working.
#
# Today that is the core lock state machine driven by hand with scripted Redis replies
# (examples/core_walkthrough): acquire with fencing, a watchdog renewal, release, waiting
# out a busy lock with backoff, Redlock with two silent masters, and a lost lock.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

./scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$(nproc)" --target core_walkthrough >/dev/null

./build/examples/core_walkthrough
