#!/usr/bin/env bash
# Session 23, device call 2 (H200, the quiet machine of call 1): issue 29's one traced run on the graphed third-party
# set, as sessions 19 and 21 measured it: each program untraced and under the default `graphmode run`, interleaved,
# 2 processes each (benchmarks/script_fidelity.py), traces kept. Usage: bash benchmarks/notes/s23/call2.sh OUT
set -u
out=${1:?OUT}
t0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
for f in .whl/*.tar.xz; do tar -xJf "$f" -C /tmp/site; done
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . > /tmp/graphmode-install.log 2>&1 \
  || { echo "editable install failed: using the checkout on PYTHONPATH"; export PYTHONPATH=$PWD:$PYTHONPATH; }
timeout 500 python3 benchmarks/script_fidelity.py record /tmp/fid --procs 2 \
  --workloads hf_graph,resnet,vit_batches,mgc_mobilenet --configs untraced,graphmode --no-report \
  --keep-traces all --timeout 80
(cd /tmp/fid && for f in *.gmtrace; do xz -T8 -6 "$f"; done; tar -cf "$out/fid.tar" .) 2>/dev/null
ls -la /tmp/fid | head -30
echo "elapsed $(( $(date +%s) - t0 )) s"
