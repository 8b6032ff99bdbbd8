#!/usr/bin/env bash
# Session 32, device call 2 (H200): what in the detach slows the decode step's untraced capture. The graphed decode step
# (hf_graph) untraced, under the default `graphmode run`, and under two experiments of the detach before the capture
# (GRAPHMODE_DETACH_EXPERIMENT: 'nonames', the kernel names not read; 'deferred', the names read and CUPTI finalized
# after the capture instead of before it), PROCS processes each, interleaved, phase marks on.
# Usage: bash benchmarks/notes/s32/call2.sh OUT PROCS
set -u
out=${1:?OUT}; procs=${2:-3}
t0=$(date +%s)
. benchmarks/device_setup.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$out/gpu.txt" 2>&1
GRAPHMODE_PHASES="$out/run_phases.jsonl" timeout $(( 575 - ($(date +%s) - t0) )) python3 benchmarks/script_fidelity.py \
  record /tmp/fid2 --procs "$procs" --workloads hf_graph \
  --configs untraced,graphmode,graphmode_nonames,graphmode_deferred --keep-traces all --no-report \
  --timeout 150 > "$out/record.log" 2>&1
cut -c1-250 "$out/record.log" | tail -14
cp /tmp/fid2/results.jsonl "$out/results.jsonl" 2>/dev/null
(cd /tmp/fid2 && tar -cf - *.gmtrace | xz -2 -T8 > "$out/traces.tar.xz")
echo "elapsed $(( $(date +%s) - t0 )) s"
