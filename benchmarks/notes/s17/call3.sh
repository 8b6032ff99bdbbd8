#!/usr/bin/env bash
# Session 17, device call 3 (H200): issue 29's one traced run (the new default of `graphmode run`: the measuring run's
# records, graph-level callbacks, its own cost measured at its end) on the third-party set, beside fresh untraced
# processes of the same programs (their own clocks): 2 + 2 processes per workload, traces kept (brought back as one
# archive, analysed off the GPU). Usage, from the repository root with .whl carried: bash benchmarks/notes/s17/call3.sh OUT
set -u
out=${1:?OUT}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
for f in .whl/*.tar.xz; do tar -xJf "$f" -C /tmp/site; done
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . > /tmp/graphmode-install.log 2>&1 \
  || { echo "editable install failed: using the checkout on PYTHONPATH"; export PYTHONPATH=$PWD:$PYTHONPATH; }
timeout 470 python3 benchmarks/script_fidelity.py record /tmp/fid --procs 2 \
  --workloads hf_graph,resnet,jax,mgc_mobilenet,vit_batches,cupy --configs untraced,graphmode --keep-traces all \
  > "$out/fid.log" 2>&1
tail -30 "$out/fid.log"
cp /tmp/fid/results.jsonl "$out/fid.jsonl"
ls -la /tmp/fid | head -30
cd /tmp/fid && tar -cJf "$out/traces.tar.xz" *.gmtrace && ls -la "$out"
