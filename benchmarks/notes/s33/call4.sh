#!/usr/bin/env bash
# Session 33, device call 4 (H200): context_probe.py's 'at_begin' (CUPTI detached just before the capture block, as
# the one run does) against 'early_through' (detached before the capture's warm-up steps), PROCS processes each.
# Usage: bash benchmarks/notes/s33/call4.sh OUT PROCS
set -u
out=${1:?OUT}; procs=${2:-4}
t0=$(date +%s)
. benchmarks/device_setup.sh
for i in $(seq 1 "$procs"); do
  for mode in at_begin early_through; do
    [ $(( $(date +%s) - t0 )) -gt 200 ] && break 2
    timeout 60 python3 benchmarks/notes/s33/context_probe.py "$mode" 2>>"$out/probe.err" | tail -1 >> "$out/at_begin.jsonl"
  done
  echo "round $i done at $(( $(date +%s) - t0 )) s"
done
tail -2 "$out/probe.err" | cut -c1-300; cat "$out/at_begin.jsonl"
