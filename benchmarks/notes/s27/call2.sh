#!/usr/bin/env bash
# Session 27, device call 2 (H200): the default `graphmode run` (one traced run, as landed at the end of session 26)
# on the shapes session 26 did not re-check, against the same programs untraced, PROCS + PROCS processes interleaved
# (script_fidelity.py): several graphs a step (make_graphed_callables on MobileNetV3; a forward and a backward graph per
# ViT layer), graphs with no eager twin (transformers decode under torch.compile reduce-overhead; a JAX jitted loop).
# Carried without plotly (the working tree's limit): every run here writes no page (--no-html), so no gpu test runs.
# Everything into OUT/c2.tar.xz and the traces into OUT/c2-traces.tar.xz.
# Usage: bash benchmarks/notes/s27/call2.sh OUT PROCS
set -u
out=${1:?OUT}; procs=${2:-2}
t0=$(date +%s)
d=/tmp/c2; mkdir -p $d
. benchmarks/device_setup.sh
nvidia-smi --query-gpu=name,driver_version --format=csv > $d/gpu.txt 2>&1
timeout $(( 570 - ($(date +%s) - t0) )) python3 benchmarks/script_fidelity.py record /tmp/fid --procs "$procs" \
  --workloads mgc_mobilenet,vit_layers,jax,hf --configs untraced,graphmode --keep-traces all --timeout 150 > $d/record.log 2>&1
cut -c1-200 $d/record.log | tail -18
cp /tmp/fid/results.jsonl $d/ 2>/dev/null
(cd /tmp && tar -cf - c2 | xz -2 -T8 > "$out/c2.tar.xz")
(cd /tmp/fid && tar -cf - *.gmtrace | xz -2 -T8 > "$out/c2-traces.tar.xz")
ls -la "$out"
echo "elapsed $(( $(date +%s) - t0 )) s"
