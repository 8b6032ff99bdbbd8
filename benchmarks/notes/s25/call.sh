#!/usr/bin/env bash
# Session 25 (H200): the default `graphmode run` against the same programs untraced, 3 + 3 processes each, interleaved
# (benchmarks/script_fidelity.py record --configs untraced,graphmode --keep-traces all). Optionally gpu tests first.
# Usage: bash benchmarks/notes/s25/call.sh OUT WORKLOADS PROCS [PYTEST_K]
set -u
out=${1:?OUT}; workloads=${2:?WORKLOADS}; procs=${3:-3}; k=${4:-}
t0=$(date +%s)
. benchmarks/device_setup.sh  # the carried wheels into /tmp/site, graphmode editable
if [ -n "$k" ]; then
  timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_script.py -k "$k" > "$out/gpu-tests.log" 2>&1
  echo "gpu tests rc=$?" >> "$out/gpu-tests.log"; tail -3 "$out/gpu-tests.log"
fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$out/gpu.txt" 2>&1
python3 benchmarks/script_fidelity.py record /tmp/fid --procs "$procs" --workloads "$workloads" \
  --configs untraced,graphmode --keep-traces all --no-report --timeout 150 2>&1 | tee "$out/record.log" | tail -40
cp /tmp/fid/results.jsonl "$out/results.jsonl"
(cd /tmp/fid && tar -cf - *.gmtrace | xz -3 -T8 > "$out/traces.tar.xz")
echo "elapsed $(( $(date +%s) - t0 )) s"
