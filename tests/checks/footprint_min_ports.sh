#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# footprint_min refuses a port that is not 1..65535 in at most five plain digits with its
# usage status (2), before it opens any socket. A port it accepted would be tried instead
# (exit 0 or 1), so only refusals are run here.
# Usage: footprint_min_ports.sh FOOTPRINT_MIN
program=$1
failed=0
for port in "" 0 00000 65536 99999 -1 +1 " 1" "1 " 1x 000001 -0; do
  "$program" "$port" >/dev/null 2>&1
  status=$?
  if [ "$status" -ne 2 ]; then
    echo "footprint_min '$port': exit $status, expected 2 (usage)"
    failed=1
  fi
done
exit $failed
