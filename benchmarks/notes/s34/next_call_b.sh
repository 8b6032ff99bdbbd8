#!/usr/bin/env bash
# Prepared in session 34 for the next device session, not yet run: the linger (LINGER_LOOP = 4) on other shapes beside
# the default one run and untraced processes: make_graphed_callables (two graphs a step; call 3: its first capture
# adopted), a forward and a backward graph per ViT layer, and a ResNet-18 training script; PROCS processes each,
# interleaved, traces kept.
# Usage: bash benchmarks/notes/s34/next_call_b.sh OUT PROCS
set -u
out=${1:?OUT}; procs=${2:-2}
t0=$(date +%s)
. benchmarks/device_setup.sh
timeout 520 python3 benchmarks/script_fidelity.py record /tmp/fidl --procs "$procs" \
  --workloads mgc_mobilenet,vit_layers,resnet --configs untraced,graphmode,graphmode_linger --keep-traces all \
  --no-report --timeout 60 > "$out/record.log" 2>&1
cut -c1-160 "$out/record.log" | tail -6; echo "recorded at $(( $(date +%s) - t0 )) s"
# a run the time limit cut: SIGTERM makes graphmode write what it recorded (status interrupted) before the archive
pkill -TERM -f "graphmode run" 2>/dev/null && sleep 5
cp /tmp/fidl/results.jsonl "$out/results.jsonl" 2>/dev/null
(cd /tmp/fidl && tar -cf - $(ls *.gmtrace *.wal 2>/dev/null) | xz -2 -T8 > "$out/traces.tar.xz")  # a .wal: a trace still being written
echo "elapsed $(( $(date +%s) - t0 )) s"
