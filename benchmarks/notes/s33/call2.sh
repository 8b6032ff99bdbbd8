#!/usr/bin/env bash
# Session 33, device call 2 (H200): (1) the gpu tests named (TESTS: pytest arguments) on the hooks' memory samples timed
# into an untraced capture's gaps; (2) context_probe.py, each mode in PROCS fresh processes, interleaved; (3) the graphed
# decode step untraced and under the default run (now with the samples left out), RUNS + RUNS processes, traces kept.
# Usage: bash benchmarks/notes/s33/call2.sh OUT PROCS RUNS [TESTS...]
set -u
out=${1:?OUT}; procs=${2:-4}; runs=${3:-3}; shift 3
t0=$(date +%s)
. benchmarks/device_setup.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$out/gpu.txt" 2>&1
if [ $# -gt 0 ]; then
  timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider -rs "$@" > "$out/gpu-tests.log" 2>&1
  echo "gpu tests rc=$?" >> "$out/gpu-tests.log"; tail -3 "$out/gpu-tests.log"; echo "gpu tests done at $(( $(date +%s) - t0 )) s"
fi
for i in $(seq 1 "$procs"); do
  for mode in control early early_through late; do
    [ $(( $(date +%s) - t0 )) -gt 380 ] && break 2
    timeout 60 python3 benchmarks/notes/s33/context_probe.py "$mode" 2>>"$out/probe.err" | tail -1 >> "$out/context.jsonl"
  done
  echo "round $i done at $(( $(date +%s) - t0 )) s"
done
tail -2 "$out/probe.err" | cut -c1-300; wc -l "$out/context.jsonl"
GRAPHMODE_PHASES="$out/run_phases.jsonl" timeout $(( 585 - ($(date +%s) - t0) )) python3 benchmarks/script_fidelity.py \
  record /tmp/fid2 --procs "$runs" --workloads hf_graph --configs untraced,graphmode --keep-traces all --no-report \
  --timeout 60 > "$out/record.log" 2>&1
cut -c1-200 "$out/record.log" | tail -6
cp /tmp/fid2/results.jsonl "$out/results.jsonl" 2>/dev/null
(cd /tmp/fid2 && tar -cf - *.gmtrace | xz -2 -T8 > "$out/traces.tar.xz")
echo "elapsed $(( $(date +%s) - t0 )) s"
