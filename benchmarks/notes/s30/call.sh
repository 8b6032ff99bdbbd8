#!/usr/bin/env bash
# Session 30 (H200): optionally gpu tests first (TESTS: pytest arguments), then the default `graphmode run` and the
# programs untraced, PROCS + PROCS processes interleaved (benchmarks/script_fidelity.py record --configs
# untraced,graphmode --keep-traces all): the graphed programs' untraced processes are issue 30's truth, the eager-only
# programs' graphmode runs its predictions, their untraced processes the eager clocks beside them.
# Carried with tests/data/{scripts,ranks,legacy,coverage} left out (the device's 64 MiB) and plotly back in .whl.
# Usage: bash benchmarks/notes/s30/call.sh OUT WORKLOADS PROCS [TESTS...]
set -u
out=${1:?OUT}; workloads=${2:?WORKLOADS}; procs=${3:-3}; shift 3
t0=$(date +%s)
. benchmarks/device_setup.sh  # the carried wheels into /tmp/site, graphmode editable
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$out/gpu.txt" 2>&1
if [ $# -gt 0 ]; then
  timeout 240 python3 -m pytest -m gpu -q -p no:cacheprovider -rs "$@" > "$out/gpu-tests.log" 2>&1
  echo "gpu tests rc=$?" >> "$out/gpu-tests.log"; tail -5 "$out/gpu-tests.log"
  echo "gpu tests done at $(( $(date +%s) - t0 )) s"
fi
timeout $(( 575 - ($(date +%s) - t0) )) python3 benchmarks/script_fidelity.py record /tmp/fid --procs "$procs" \
  --workloads "$workloads" --configs untraced,graphmode --keep-traces all --no-report --timeout 150 > "$out/record.log" 2>&1
cut -c1-200 "$out/record.log" | tail -30
cp /tmp/fid/results.jsonl "$out/results.jsonl" 2>/dev/null
(cd /tmp/fid && tar -cf - *.gmtrace | xz -2 -T8 > "$out/traces.tar.xz")
echo "elapsed $(( $(date +%s) - t0 )) s"
