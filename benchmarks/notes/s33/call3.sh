#!/usr/bin/env bash
# Session 33, device call 3 (H200): the default run with the hooks' memory samples left out of an untraced capture's
# cost, beside untraced processes: the graphed decode step (and the run without NVTX injection, graphmode_nonvtx: is it
# what slows the traced process's capture?) and the ViT with a graph per batch size, PROCS processes each, traces kept.
# Usage: bash benchmarks/notes/s33/call3.sh OUT PROCS
set -u
out=${1:?OUT}; procs=${2:-3}
t0=$(date +%s)
. benchmarks/device_setup.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$out/gpu.txt" 2>&1
GRAPHMODE_PHASES="$out/run_phases.jsonl" timeout 330 python3 benchmarks/script_fidelity.py record /tmp/fid3 \
  --procs "$procs" --workloads hf_graph --configs untraced,graphmode,graphmode_nonvtx --keep-traces all --no-report \
  --timeout 60 > "$out/record.log" 2>&1
echo "hf done at $(( $(date +%s) - t0 )) s"
timeout $(( 560 - ($(date +%s) - t0) )) python3 benchmarks/script_fidelity.py record /tmp/fid3v \
  --procs "$procs" --workloads vit_batches --configs untraced,graphmode --keep-traces all --no-report \
  --timeout 60 > "$out/record_vit.log" 2>&1
cut -c1-200 "$out/record.log" "$out/record_vit.log" | grep -v "^$" | tail -16
cat /tmp/fid3/results.jsonl /tmp/fid3v/results.jsonl > "$out/results.jsonl" 2>/dev/null
(mkdir -p /tmp/all && cp /tmp/fid3/*.gmtrace /tmp/fid3v/*.gmtrace /tmp/all/ && cd /tmp/all && tar -cf - *.gmtrace | xz -2 -T8 > "$out/traces.tar.xz")
ls -la "$out"; echo "elapsed $(( $(date +%s) - t0 )) s"
