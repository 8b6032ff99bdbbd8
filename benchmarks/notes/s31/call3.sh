#!/usr/bin/env bash
# Session 31, device call 3 (H200): after_detach_probe.py in fresh processes, MODES in turn, ROUNDS times.
# Usage: MODES="control none thread burn burnthread" bash call3.sh OUT ROUNDS
set -u
out=${1:?OUT}; rounds=${2:-3}
. benchmarks/device_setup.sh
for r in $(seq 1 "$rounds"); do for m in ${MODES:-control none thread burn burnthread}; do
  timeout 60 python3 benchmarks/notes/s31/after_detach_probe.py $m 2>>"$out/probe3.err" | tail -1 >> "$out/after_detach.jsonl"; done; done
cat "$out/after_detach.jsonl"; tail -3 "$out/probe3.err"
