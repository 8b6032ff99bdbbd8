#!/usr/bin/env bash
# Session 30, device call 4 (H200): detach_warm_probe.py, fresh processes in turn: none, graph, capture, ROUNDS times.
set -u
out=${1:?OUT}; rounds=${2:-2}
. benchmarks/device_setup.sh
for r in $(seq 1 "$rounds"); do for m in none graph capture; do
  timeout 60 python3 benchmarks/notes/s30/detach_warm_probe.py $m 2>>"$out/probe4.err" | tail -1 >> "$out/detach_warm.jsonl"; done; done
cat "$out/detach_warm.jsonl"; tail -3 "$out/probe4.err"
