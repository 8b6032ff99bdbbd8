#!/usr/bin/env bash
# Session 32, device call 4 (H200): the walk that finds a loop's step (commit 506fb10) on the H200. (1) the gpu tests of
# the tracer and of `graphmode run` (TESTS: pytest arguments); (2) benchmarks/record_walk.py --live 40 on the three
# live workloads; (3) the graphed decode step untraced and under the default run, PROCS + PROCS processes, phase marks on.
# Usage: bash benchmarks/notes/s32/call4.sh OUT PROCS [TESTS...]
set -u
out=${1:?OUT}; procs=${2:-3}; shift 2
t0=$(date +%s)
. benchmarks/device_setup.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$out/gpu.txt" 2>&1
if [ $# -gt 0 ]; then
  timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider -rs "$@" > "$out/gpu-tests.log" 2>&1
  echo "gpu tests rc=$?" >> "$out/gpu-tests.log"; tail -4 "$out/gpu-tests.log"; echo "gpu tests done at $(( $(date +%s) - t0 )) s"
fi
timeout 120 python3 benchmarks/record_walk.py --live 40 --workloads mlp,vit,train > "$out/record_walk.txt" 2>&1
tail -4 "$out/record_walk.txt" | cut -c1-200; echo "walk done at $(( $(date +%s) - t0 )) s"
GRAPHMODE_PHASES="$out/run_phases.jsonl" timeout $(( 575 - ($(date +%s) - t0) )) python3 benchmarks/script_fidelity.py \
  record /tmp/fid4 --procs "$procs" --workloads hf_graph --configs untraced,graphmode --keep-traces all --no-report \
  --timeout 150 > "$out/record.log" 2>&1
cut -c1-200 "$out/record.log" | tail -6
cp /tmp/fid4/results.jsonl "$out/results.jsonl" 2>/dev/null
(cd /tmp/fid4 && tar -cf - *.gmtrace | xz -2 -T8 > "$out/traces.tar.xz")
echo "elapsed $(( $(date +%s) - t0 )) s"
