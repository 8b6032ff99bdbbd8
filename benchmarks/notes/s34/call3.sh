#!/usr/bin/env bash
# Session 34, device call 3 (H200): the linger with its 'loop' end (a window's loop entered again, or another loop,
# ends it: tracer.untraced_windows.LINGER_LOOP) beside the default one run and untraced processes: the decode step,
# the ViT with a graph per batch size, and MobileNetV3 through make_graphed_callables (two graphs a step), PROCS
# processes each, interleaved, traces kept.
# Usage: bash benchmarks/notes/s34/call3.sh OUT PROCS
set -u
out=${1:?OUT}; procs=${2:-2}
t0=$(date +%s)
. benchmarks/device_setup.sh
timeout 470 python3 benchmarks/script_fidelity.py record /tmp/fidl --procs "$procs" \
  --workloads hf_graph,vit_batches,mgc_mobilenet --configs untraced,graphmode,graphmode_linger --keep-traces all \
  --no-report --timeout 60 > "$out/record.log" 2>&1
cut -c1-160 "$out/record.log" | tail -20; echo "recorded at $(( $(date +%s) - t0 )) s"
cp /tmp/fidl/results.jsonl "$out/results.jsonl" 2>/dev/null
(cd /tmp/fidl && tar -cf - *.gmtrace | xz -2 -T8 > "$out/traces.tar.xz")
echo "elapsed $(( $(date +%s) - t0 )) s"
