#!/usr/bin/env bash
# Session 17, device call 4 (H200): issue 29's one traced run (the new default of `graphmode run`: the measuring run's
# records, graph-level callbacks, its own cost measured at its end, now after the pass is written: in call 3 the probe
# met CUDA_ERROR_ILLEGAL_ADDRESS with the run's session still attached) on the third-party set, beside fresh untraced
# processes of the same programs (their own clocks): 2 + 2 processes per workload, traces kept (brought back as one
# archive, analysed off the GPU). Usage, from the repository root with .whl carried: bash benchmarks/notes/s17/call4.sh OUT
set -u
out=${1:?OUT}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
for f in .whl/*.tar.xz; do tar -xJf "$f" -C /tmp/site; done
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . > /tmp/graphmode-install.log 2>&1 \
  || { echo "editable install failed: using the checkout on PYTHONPATH"; export PYTHONPATH=$PWD:$PYTHONPATH; }
timeout 150 python3 -m pytest -m gpu -q -rs -p no:cacheprovider \
  "tests/test_gpu_script.py::test_one_traced_run_by_default_measures_its_own_cost" \
  "tests/test_gpu_script.py::test_torch_graph_found_with_its_lifecycle" > "$out/gpu-tests.log" 2>&1
tail -15 "$out/gpu-tests.log"
timeout 400 python3 benchmarks/script_fidelity.py record /tmp/fid --procs 2 \
  --workloads hf_graph,resnet,jax,mgc_mobilenet,vit_batches,cupy --configs untraced,graphmode --keep-traces all \
  > "$out/fid.log" 2>&1
tail -30 "$out/fid.log"
cp /tmp/fid/results.jsonl "$out/fid.jsonl"
ls -la /tmp/fid | head -30
cd /tmp/fid && tar -cJf "$out/traces.tar.xz" *.gmtrace && ls -la "$out"
