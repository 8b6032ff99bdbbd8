#!/usr/bin/env bash
# Session 25, device call 4 (H200): what CUPTI adds to a capture after an untraced window. capture_probe.py in 3
# processes; tracer.launch_probes torch untraced, --traced and --traced --reattached, 3 processes each, interleaved.
# Usage: bash benchmarks/notes/s25/call4.sh OUT
set -u
out=${1:?OUT}
t0=$(date +%s)
. benchmarks/device_setup.sh  # the carried wheels into /tmp/site, graphmode editable
for i in 0 1 2; do
  timeout 120 python3 benchmarks/notes/s25/capture_probe.py >> "$out/capture_probe.txt" 2>&1
  for mode in "" "--traced" "--traced --reattached"; do
    timeout 120 python3 -m graphmode.tracer.launch_probes torch $mode 2>/dev/null | grep '^{' | sed "s/^{/{\"process\": $i, /" >> "$out/launch_probes.jsonl"
  done
  echo "round $i done at $(( $(date +%s) - t0 )) s"
done
grep -v '^{' "$out/capture_probe.txt"
echo "elapsed $(( $(date +%s) - t0 )) s"
