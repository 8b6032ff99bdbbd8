#!/usr/bin/env bash
# Session 17, device call 2 (H200): the measurement that decides issue 29's single-run design.
# 1. benchmarks/tracer_costs_frameworks.py: per-kind and per-configuration tracer cost on PyTorch (ResNet-18 train
#    step, MobileNetV3 forward, its capture and replay, a raw cuLaunchKernel) and on a JAX jitted call, A/B in one
#    process, 5 rounds.
# 2. benchmarks/script_fidelity.py: untraced vs the candidate vs the candidate without API records (1 process each).
# Usage, from the repository root with .whl carried: bash benchmarks/notes/s17/call2.sh OUT
set -u
out=${1:?OUT}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
for f in .whl/*.tar.xz; do tar -xJf "$f" -C /tmp/site; done
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . > /tmp/graphmode-install.log 2>&1 \
  || { echo "editable install failed: using the checkout on PYTHONPATH"; export PYTHONPATH=$PWD:$PYTHONPATH; }
timeout 220 python3 benchmarks/tracer_costs_frameworks.py "$out/costs-torch.json" --framework torch --rounds 5 \
  > "$out/costs-torch.txt" 2>&1; tail -22 "$out/costs-torch.txt"
timeout 100 python3 benchmarks/tracer_costs_frameworks.py "$out/costs-jax.json" --framework jax --rounds 5 \
  > "$out/costs-jax.txt" 2>&1; tail -18 "$out/costs-jax.txt"
timeout 250 python3 benchmarks/script_fidelity.py record "$out/fid" --procs 1 --workloads hf_graph,resnet,jax \
  --configs untraced,single_light,single_noapi > "$out/fid.log" 2>&1
tail -30 "$out/fid.log"
cp "$out/fid/results.jsonl" "$out/fid.jsonl" 2>/dev/null; rm -rf "$out/fid"
