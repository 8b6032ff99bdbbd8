#!/usr/bin/env bash
# Session 30, device call 3 (H200): capture_parts_probe.py in PROCS fresh processes. Usage: bash call3.sh OUT PROCS
set -u
out=${1:?OUT}; procs=${2:-3}
. benchmarks/device_setup.sh
for i in $(seq 1 "$procs"); do timeout 90 python3 benchmarks/notes/s30/capture_parts_probe.py 2>"$out/probe.err.$i" | tail -1 >> "$out/capture_probe.jsonl"; done
cat "$out/capture_probe.jsonl"; tail -3 "$out/probe.err.1"
