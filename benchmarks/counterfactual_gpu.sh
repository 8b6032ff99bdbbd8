#!/usr/bin/env bash
# On the GPU machine (../shared/device/README.md's prefix first): the measurements behind the counterfactual
# (issue 28): the per-framework launch probes (tracer.launch_probes) in fresh processes, the third-party truths
# (ResNet-50 compiled with mode="default" and "reduce-overhead"; a JAX jitted loop with and without XLA's
# command buffers) in fresh untraced processes, interleaved, and `graphmode run` on the graphed versions.
# Usage: bash benchmarks/counterfactual_gpu.sh OUT [PROCS]
set -uo pipefail
out=${1:?OUT}; procs=${2:-3}
mkdir -p "$out"
tp=benchmarks/third_party
export XLA_PYTHON_CLIENT_PREALLOCATE=false
for i in $(seq 1 "$procs"); do
  for fw in torch inductor xla; do
    if [ "$fw" = xla ]; then env XLA_FLAGS=--xla_gpu_enable_command_buffer= timeout 240 python3 -m graphmode.tracer.launch_probes xla
    else timeout 240 python3 -m graphmode.tracer.launch_probes "$fw"; fi >> "$out/probes.jsonl" 2>> "$out/probes.err" \
      || echo "{\"framework\": \"$fw\", \"error\": \"exit $?\"}" >> "$out/probes.jsonl"
  done
  (cd $tp && timeout 300 python3 compile_resnet50.py --mode default) | grep GRAPHMODE_TRUTH >> "$out/truth.jsonl"
  (cd $tp && timeout 300 python3 compile_resnet50.py --mode reduce-overhead) | grep GRAPHMODE_TRUTH >> "$out/truth.jsonl"
  (cd $tp && timeout 120 python3 jax_loop.py --label command_buffer) | grep GRAPHMODE_TRUTH >> "$out/truth.jsonl"
  (cd $tp && XLA_FLAGS=--xla_gpu_enable_command_buffer= timeout 120 python3 jax_loop.py --label no_command_buffer) \
    | grep GRAPHMODE_TRUTH >> "$out/truth.jsonl"
  echo "round $i done $(date +%T)" >&2
done
