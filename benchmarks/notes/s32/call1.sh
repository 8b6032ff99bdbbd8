#!/usr/bin/env bash
# Session 32, device call 1 (H200): does session 31's numpy record walk shorten the detach, and with it the decode
# step's untraced capture? (1) benchmarks/record_walk.py --live 200; (2) session 31's probe, mode 'none', in PROCS fresh
# processes with the phase marks on, now also inside the name read; (3) the graphed decode step (hf_graph) untraced and
# under the default `graphmode run`, PROCS + PROCS processes interleaved, phase marks on.
# Usage: bash benchmarks/notes/s32/call1.sh OUT PROCS
set -u
out=${1:?OUT}; procs=${2:-3}
t0=$(date +%s)
. benchmarks/device_setup.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$out/gpu.txt" 2>&1
timeout 90 python3 benchmarks/record_walk.py --live 200 > "$out/record_walk.txt" 2> "$out/record_walk.err"
tail -4 "$out/record_walk.txt"; tail -2 "$out/record_walk.err"; echo "walk done at $(( $(date +%s) - t0 )) s"
for i in $(seq 1 "$procs"); do
  GRAPHMODE_PHASES="$out/probe_phases.jsonl" timeout 60 python3 benchmarks/notes/s31/after_detach_probe.py none \
    2>>"$out/probe.err" | tail -1 >> "$out/after_detach.jsonl"; done
tail -2 "$out/probe.err"; echo "probe done at $(( $(date +%s) - t0 )) s"
GRAPHMODE_PHASES="$out/run_phases.jsonl" timeout $(( 575 - ($(date +%s) - t0) )) python3 benchmarks/script_fidelity.py \
  record /tmp/fid --procs "$procs" --workloads hf_graph --configs untraced,graphmode --keep-traces all --no-report \
  --timeout 150 > "$out/record.log" 2>&1
cut -c1-200 "$out/record.log" | tail -12
cp /tmp/fid/results.jsonl "$out/results.jsonl" 2>/dev/null
(cd /tmp/fid && tar -cf - *.gmtrace | xz -2 -T8 > "$out/traces.tar.xz")
echo "elapsed $(( $(date +%s) - t0 )) s"
