#!/usr/bin/env bash
# Session 32, device call 5 (H200): does less traced work before a capture make it cheaper? The graphed decode step
# untraced, under the default run (its eager loop: 24 steps traced, 32 untraced, the rest traced) and with the loop's
# untraced window lasting until the loop ends (GRAPHMODE_WINDOW_ITERATIONS=100000, an experiment), PROCS each.
# Usage: bash benchmarks/notes/s32/call5.sh OUT PROCS
set -u
out=${1:?OUT}; procs=${2:-3}
t0=$(date +%s)
. benchmarks/device_setup.sh
timeout $(( 230 - ($(date +%s) - t0) )) python3 benchmarks/script_fidelity.py record /tmp/fid5 --procs "$procs" \
  --workloads hf_graph --configs untraced,graphmode,graphmode_longwindow --keep-traces all --no-report \
  --timeout 60 > "$out/record.log" 2>&1
cut -c1-200 "$out/record.log" | tail -9
cp /tmp/fid5/results.jsonl "$out/results.jsonl" 2>/dev/null
(cd /tmp/fid5 && tar -cf - *.gmtrace | xz -2 -T8 > "$out/traces.tar.xz")
echo "elapsed $(( $(date +%s) - t0 )) s"
