#!/usr/bin/env bash
# Session 36, call 6: issue 29's third-party set under the default `graphmode run`, each program warmed up once first
# (script_fidelity --warm-up): the decode step, the ViT with a graph per batch size, ResNet-18, make_graphed_callables on
# MobileNetV3, a graph per ViT layer, the CuPy chain and the JAX loop; untraced and under graphmode run, PROCS each.
# Usage: bash benchmarks/notes/s36/call6.sh OUT PROCS
set -u
out=${1:?OUT}; procs=${2:-2}
t0=$(date +%s)
. benchmarks/device_setup.sh
export XLA_PYTHON_CLIENT_PREALLOCATE=false
timeout 470 python3 benchmarks/script_fidelity.py record /tmp/fid --procs "$procs" --warm-up \
  --workloads hf_graph,vit_batches,resnet,mgc_mobilenet,vit_layers,cupy,jax --configs untraced,graphmode \
  --keep-traces all --no-report --timeout 60 > "$out/record.log" 2>&1
cut -c1-150 "$out/record.log" | tail -3; echo "recorded at $(( $(date +%s) - t0 )) s"
pkill -TERM -f "graphmode run" 2>/dev/null && sleep 3
cp /tmp/fid/results.jsonl "$out/results.jsonl" 2>/dev/null
(cd /tmp/fid && tar -cf - $(ls *.gmtrace *.wal 2>/dev/null) | xz -2 -T8 > "$out/traces.tar.xz")
ls -la "$out"; echo "elapsed $(( $(date +%s) - t0 )) s"
