#!/usr/bin/env bash
# Session 17, device call 1 (H200): the measurement that decides issue 29's single-run design.
# 1. benchmarks/tracer_costs_frameworks.py: per-kind and per-configuration tracer cost on PyTorch (ResNet-18 train
#    step, MobileNetV3 forward, its capture and replay, a raw cuLaunchKernel) and on a JAX jitted call, A/B in one
#    process, 5 rounds.
# 2. benchmarks/script_fidelity.py: third-party programs untraced vs today's single run (the detail run's
#    configuration) vs the candidate (the measuring run's kinds plus graph-level callbacks), 2 processes each.
# Usage, from the repository root with .whl carried: bash benchmarks/notes/s17/call1.sh OUT
set -u
out=${1:?OUT}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
for f in .whl/*.tar.xz; do tar -xJf "$f" -C /tmp/site; done
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . > /tmp/graphmode-install.log 2>&1 \
  || { echo "editable install failed: using the checkout on PYTHONPATH"; export PYTHONPATH=$PWD:$PYTHONPATH; }
timeout 150 python3 benchmarks/tracer_costs_frameworks.py "$out/costs-torch.json" --framework torch --rounds 5 \
  > "$out/costs-torch.txt" 2>&1; tail -20 "$out/costs-torch.txt"
timeout 60 python3 benchmarks/tracer_costs_frameworks.py "$out/costs-jax.json" --framework jax --rounds 5 \
  > "$out/costs-jax.txt" 2>&1; tail -18 "$out/costs-jax.txt"
timeout 330 python3 benchmarks/script_fidelity.py record "$out/fid" --procs 2 --workloads hf_graph,resnet,jax \
  --configs untraced,single_today,single_light,measure > "$out/fid.log" 2>&1
tail -30 "$out/fid.log"
cp "$out/fid/results.jsonl" "$out/fid.jsonl" 2>/dev/null; rm -rf "$out/fid"
