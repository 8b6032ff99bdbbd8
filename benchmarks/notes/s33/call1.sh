#!/usr/bin/env bash
# Session 33, device call 1 (H200): (1) the gpu tests named (TESTS: pytest arguments) on session 32's mend of
# tracer/cupti_records.py and the attach phase marks; (2) session 32's prepared probe, decode_capture_probe.py, each
# mode in PROCS fresh processes, interleaved; (3) the default run of the graphed decode step, 2 processes, phase marks on
# (where the 19-44 ms of the attach after an untraced capture go).
# Usage: bash benchmarks/notes/s33/call1.sh OUT PROCS [TESTS...]
set -u
out=${1:?OUT}; procs=${2:-3}; shift 2
t0=$(date +%s)
. benchmarks/device_setup.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$out/gpu.txt" 2>&1
if [ $# -gt 0 ]; then
  timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider -rs "$@" > "$out/gpu-tests.log" 2>&1
  echo "gpu tests rc=$?" >> "$out/gpu-tests.log"; tail -3 "$out/gpu-tests.log"; echo "gpu tests done at $(( $(date +%s) - t0 )) s"
fi
cd benchmarks/third_party
for i in $(seq 1 "$procs"); do
  for mode in control session history stamper hooks all; do
    [ $(( $(date +%s) - t0 )) -gt 420 ] && break 2
    timeout 60 python3 ../notes/s32/decode_capture_probe.py "$mode" 2>>"$out/probe.err" | tail -1 >> "$out/probe.jsonl"
  done
  echo "round $i done at $(( $(date +%s) - t0 )) s"
done
tail -3 "$out/probe.err" | cut -c1-300; wc -l "$out/probe.jsonl"
cd ../..
GRAPHMODE_PHASES="$out/run_phases.jsonl" timeout $(( 580 - ($(date +%s) - t0) )) python3 benchmarks/script_fidelity.py \
  record /tmp/fidn --procs 2 --workloads hf_graph --configs graphmode --no-report --timeout 60 > "$out/record.log" 2>&1
tail -3 "$out/record.log" | cut -c1-200
grep -c "capture attach" "$out/run_phases.jsonl"
echo "elapsed $(( $(date +%s) - t0 )) s"
