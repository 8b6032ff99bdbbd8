#!/usr/bin/env bash
# Session 23, device call 1 (H200): noise_probe.py in 4 fresh processes, unpinned and pinned to one CPU alternately,
# with the machine's CPU facts. Usage: bash benchmarks/notes/s23/call1.sh OUT
set -u
out=${1:?OUT}
{ lscpu; echo; cat /proc/loadavg; echo; nvidia-smi -q -d CLOCK,PERFORMANCE | head -60; ps -eo pcpu,comm --sort=-pcpu | head -8; } > "$out/machine.txt" 2>&1
for i in 1 2; do
  timeout 120 python3 benchmarks/notes/s23/noise_probe.py unpinned 40 2>>"$out/noise.err" >> "$out/noise.jsonl"
  timeout 120 taskset -c 5 python3 benchmarks/notes/s23/noise_probe.py pinned5 40 2>>"$out/noise.err" >> "$out/noise.jsonl"
done
tail -3 "$out/noise.err"; wc -l "$out/noise.jsonl"
