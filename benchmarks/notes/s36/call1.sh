#!/usr/bin/env bash
# Session 36, call 1. (a) Is the first process of a fresh machine cold, and does its first capture read from disk? The
# call's first process is the eager-only ViT under `graphmode run`, whose in-process torch probe now records each capture
# block's CPU time and page faults (tracer.calibrate.torch_capture_probe) and every process's major faults
# (script_fidelity's record). (b) Issue 30's eager-only set not yet run under the linger default (ResNet-18's training
# step, the CuPy chain) with the ViT, and (c) issue 29's graphed twins under the default run: the six programs, untraced
# and under `graphmode run`, PROCS processes each, interleaved.
# Usage: bash benchmarks/notes/s36/call1.sh OUT PROCS
set -u
out=${1:?OUT}; procs=${2:-2}
t0=$(date +%s)
. benchmarks/device_setup.sh
echo "setup $(( $(date +%s) - t0 )) s"
timeout 60 python3 benchmarks/script_fidelity.py record /tmp/cold --procs 1 --workloads vit_eager --configs graphmode \
  --keep-traces all --no-report --timeout 50 > "$out/record.log" 2>&1
echo "cold at $(( $(date +%s) - t0 )) s"
timeout 430 python3 benchmarks/script_fidelity.py record /tmp/fid --procs "$procs" \
  --workloads vit_eager,resnet_eager,cupy_eager,vit_batches,resnet,cupy --configs untraced,graphmode \
  --keep-traces all --no-report --timeout 60 >> "$out/record.log" 2>&1
cut -c1-160 "$out/record.log" | tail -4; echo "recorded at $(( $(date +%s) - t0 )) s"
pkill -TERM -f "graphmode run" 2>/dev/null && sleep 5
cat /tmp/cold/results.jsonl /tmp/fid/results.jsonl > "$out/results.jsonl" 2>/dev/null
(cd /tmp/cold && tar -cf - *.gmtrace 2>/dev/null) > "$out/cold.tar"
(cd /tmp/fid && tar -cf - $(ls *.gmtrace *.wal 2>/dev/null) | xz -2 -T8 > "$out/traces.tar.xz")
ls -la "$out"; echo "elapsed $(( $(date +%s) - t0 )) s"
