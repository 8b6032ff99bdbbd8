#!/usr/bin/env bash
# Session 19, device call 1 (H200): the measurements that decide issue 29's design for a script that built no graph.
# 1. What recording the launches' API calls adds to a launch: tracer.launch_probes torch untraced, --traced (the one
#    traced run of today: sparse API records) and --traced --api-filter=needed (the candidate: the launches, copies,
#    allocations, synchronizations and events recorded too), 3 processes each, interleaved.
# 2. What the timing run costs CPU-bound third-party loops written eager-only (issue 29, item 3), and two
#    recordings of the candidate one run (for the analysis to be built on): benchmarks/script_fidelity.py, fresh processes interleaved in a shuffled
#    order; the timing run stamps the lines graphmode chose for these programs in session 18 (tests/data/scripts/eager_only).
# Usage: bash benchmarks/notes/s19/call1.sh OUT
set -u
out=${1:?OUT}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
for f in .whl/*.tar.xz; do tar -xJf "$f" -C /tmp/site; done
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . > /tmp/graphmode-install.log 2>&1 \
  || { echo "editable install failed: using the checkout on PYTHONPATH"; export PYTHONPATH=$PWD:$PYTHONPATH; }
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; cat /proc/loadavg;
  lscpu | grep -iE "model name|numa|socket|mhz"; nvidia-smi topo -m; } > "$out/machine.txt" 2>&1
for i in 1 2 3; do
  for mode in "" "--traced" "--traced --api-filter=needed"; do
    timeout 60 python3 -m graphmode.tracer.launch_probes torch $mode 2>>"$out/probes.err" | grep '^{' >> "$out/probes.jsonl"
    echo "probe torch $i [$mode] rc=$?"
  done
done
cat /proc/loadavg >> "$out/machine.txt"
L="--lines hf_eager=hf_static_decode.py:46 --lines vit_eager=vit_batch_graphs.py:35,vit_batch_graphs.py:39 --lines resnet_eager=resnet_train.py:35"
timeout 300 python3 benchmarks/script_fidelity.py record "$out/timing" --procs 3 --workloads hf_eager,vit_eager,resnet_eager \
  --configs untraced,timing_only $L --no-report --timeout 60
timeout 100 python3 benchmarks/script_fidelity.py record "$out/single" --procs 1 --workloads hf_eager,vit_eager \
  --configs single_structure --no-report --keep-traces first --timeout 60
cat /proc/loadavg >> "$out/machine.txt"
(cd "$out/single" && for f in *.gmtrace; do xz -T4 "$f"; done) 2>/dev/null
ls -la "$out"/*
