#!/usr/bin/env bash
# Session 19, device call 3 (H200): the graphed third-party programs under the one traced run of now (API records of the
# launches, stamps of the user's lines), which must stay right: each once untraced and once under `graphmode run`,
# interleaved (benchmarks/script_fidelity.py, traces kept for the analysis off the GPU); then the GPU tests of
# `graphmode run` (tests/test_gpu_script.py). Usage: bash benchmarks/notes/s19/call3.sh OUT
set -u
out=${1:?OUT}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
for f in .whl/*.tar.xz; do tar -xJf "$f" -C /tmp/site; done
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . > /tmp/graphmode-install.log 2>&1 \
  || { echo "editable install failed: using the checkout on PYTHONPATH"; export PYTHONPATH=$PWD:$PYTHONPATH; }
timeout 260 python3 benchmarks/script_fidelity.py record "$out/fid" --procs 1 \
  --workloads hf_graph,resnet,vit_batches,mgc_mobilenet,cupy,jax --configs untraced,graphmode --no-report \
  --keep-traces first --timeout 80
(cd "$out/fid" && for f in *.gmtrace; do xz -T4 "$f"; done) 2>/dev/null
timeout 230 python3 -m pytest -m gpu -q -rs -p no:cacheprovider tests/test_gpu_script.py > "$out/gpu-tests.log" 2>&1
tail -15 "$out/gpu-tests.log"
