#!/usr/bin/env bash
# Session 35, call 3: the linger on eager-only programs (issue 30's shapes), beside the default one run: the decode step, the ViT at four batch sizes and MobileNetV3's training step in a function, written
# eager-only; PROCS processes each, interleaved, traces kept. Read with benchmarks/eager_only.py-style predictions of
# both configurations (prediction_compare.py).
# Usage: bash benchmarks/notes/s35/call3.sh OUT PROCS
set -u
out=${1:?OUT}; procs=${2:-2}
t0=$(date +%s)
. benchmarks/device_setup.sh
timeout 250 python3 benchmarks/script_fidelity.py record /tmp/fidl --procs "$procs" \
  --workloads hf_eager,vit_eager,mobilenet_fn --configs graphmode,graphmode_linger --keep-traces all \
  --no-report --timeout 60 > "$out/record.log" 2>&1
# the graphed twin of MobileNetV3's step, untraced: the prediction's truth (the decode step's and the ViT's: call 1)
timeout 60 python3 benchmarks/script_fidelity.py record /tmp/fidg --procs "$procs" --workloads mobilenet_fn_graph \
  --configs untraced --no-report --timeout 40 >> "$out/record.log" 2>&1
cut -c1-160 "$out/record.log" | tail -6; echo "recorded at $(( $(date +%s) - t0 )) s"
pkill -TERM -f "graphmode run" 2>/dev/null && sleep 5
cat /tmp/fidl/results.jsonl /tmp/fidg/results.jsonl > "$out/results.jsonl" 2>/dev/null
(cd /tmp/fidl && tar -cf - $(ls *.gmtrace *.wal 2>/dev/null) | xz -2 -T8 > "$out/traces.tar.xz")
echo "elapsed $(( $(date +%s) - t0 )) s"
