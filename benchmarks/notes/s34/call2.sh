#!/usr/bin/env bash
# Session 34, device call 2 (H200): detach_probe.py, every mode in turn, ROUNDS rounds (time-capped).
# Usage: bash benchmarks/notes/s34/call2.sh OUT ROUNDS
set -u
out=${1:?OUT}; rounds=${2:-3}
t0=$(date +%s)
. benchmarks/device_setup.sh
for i in $(seq 1 "$rounds"); do
  for mode in at_begin sleep own step early_through control; do
    [ $(( $(date +%s) - t0 )) -gt 330 ] && break 2
    timeout 60 python3 benchmarks/notes/s34/detach_probe.py "$mode" 2>>"$out/probe.err" | tail -1 >> "$out/detach.jsonl"
  done
  echo "round $i done at $(( $(date +%s) - t0 )) s"
done
tail -3 "$out/probe.err" | cut -c1-300; cat "$out/detach.jsonl"
