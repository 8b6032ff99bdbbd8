#!/usr/bin/env bash
# Prepared in session 33 for the next device session, not yet run: the linger experiment (tracer.script
# ._window_experiment, off by default) beside the default run and untraced processes. The graphed decode step and the
# ViT with a graph per batch size, PROCS processes of each configuration, interleaved, traces kept; then the gpu tests
# of the untraced captures and windows (the experiment's code paths with the knobs unset); before them,
# capture_ratio_probe.py (issue 30), 3 processes a step. Phase marks on: the attach's
# 'API filtered' and 'buffers registered' phases after commit 90b216a (8 and 3 ms in call 1).
# Read: benchmarks/one_run.py on results.jsonl with the traces (graphmode_linger-NN symlinked as graphmode-NN),
# benchmarks/notes/s32/window_parts.py on the traces (the block less gaps), and each capture entry's 'adopted'.
# Usage: bash benchmarks/notes/s33/next_call.sh OUT PROCS
set -u
out=${1:?OUT}; procs=${2:-3}
t0=$(date +%s)
. benchmarks/device_setup.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$out/gpu.txt" 2>&1
GRAPHMODE_PHASES="$out/run_phases.jsonl" timeout 300 python3 benchmarks/script_fidelity.py record /tmp/fidl --procs "$procs" --workloads hf_graph,vit_batches \
  --configs untraced,graphmode,graphmode_linger --keep-traces all --no-report --timeout 60 > "$out/record.log" 2>&1
cut -c1-200 "$out/record.log" | tail -8; echo "recorded at $(( $(date +%s) - t0 )) s"
cp /tmp/fidl/results.jsonl "$out/results.jsonl" 2>/dev/null
(cd /tmp/fidl && tar -cf - *.gmtrace | xz -2 -T8 > "$out/traces.tar.xz")
for i in 1 2 3; do for step in mlp decode; do  # issue 30: the torch probe's capture ratio against a real step's
  timeout 40 python3 benchmarks/notes/s33/capture_ratio_probe.py "$step" 2>>"$out/ratio.err" | tail -1 >> "$out/ratio.jsonl"
done; done; tail -6 "$out/ratio.jsonl"
timeout $(( 580 - ($(date +%s) - t0) )) python3 -m pytest -m gpu -q -p no:cacheprovider -rs tests/test_gpu_script.py \
  -k "untraced or one_traced_run_by_default or an_eager_only_script_is_run_once" > "$out/gpu-tests.log" 2>&1
echo "gpu tests rc=$?" >> "$out/gpu-tests.log"; tail -3 "$out/gpu-tests.log"; echo "elapsed $(( $(date +%s) - t0 )) s"
