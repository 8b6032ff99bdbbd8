#!/usr/bin/env bash
# Session 32, device call 3 (H200): (1) real CUPTI buffers for the record walk (benchmarks/record_walk.py --live, saved
# for study on a CPU machine); (2) the one-time cost's two sources side by side in one call: the graphed decode step
# (hf_graph) and the ViT with a graph per batch size (vit_batches), untraced, under the default `graphmode run`
# (captures untraced) and with GRAPHMODE_UNTRACED_CAPTURE=0 (captures traced, the calibrated cost taken off), PROCS
# processes each, interleaved, phase marks on (the detach with the walk that finds patterns).
# Usage: bash benchmarks/notes/s32/call3.sh OUT PROCS
set -u
out=${1:?OUT}; procs=${2:-3}
t0=$(date +%s)
. benchmarks/device_setup.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$out/gpu.txt" 2>&1
timeout 120 python3 benchmarks/record_walk.py --live 40 --workloads mlp,vit,train --save /tmp/live > "$out/record_walk.txt" \
  2> "$out/record_walk.err"
tail -5 "$out/record_walk.txt"; tail -2 "$out/record_walk.err"; echo "walk done at $(( $(date +%s) - t0 )) s"
GRAPHMODE_PHASES="$out/run_phases.jsonl" timeout $(( 575 - ($(date +%s) - t0) )) python3 benchmarks/script_fidelity.py record /tmp/fid3 --procs "$procs" \
  --workloads hf_graph,vit_batches --configs untraced,graphmode,graphmode_tracedcap --keep-traces all --no-report \
  --timeout 150 > "$out/record.log" 2>&1
cut -c1-250 "$out/record.log" | tail -20
cp /tmp/fid3/results.jsonl "$out/results.jsonl" 2>/dev/null
(cd /tmp/fid3 && tar -cf - *.gmtrace | xz -2 -T8 > "$out/traces.tar.xz"; cd /tmp/live && tar -cf - *.npz > "$out/live.tar")
echo "elapsed $(( $(date +%s) - t0 )) s"
