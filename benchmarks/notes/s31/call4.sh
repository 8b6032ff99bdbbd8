#!/usr/bin/env bash
# Session 31, device call 4 (H200): after_detach_probe.py, 'none' and 'thread' in turn, ROUNDS times; then the ViT with a
# graph per batch size (4 captures a process) untraced, under the default `graphmode run`, and with each detach's work
# on a helper thread off the program's CPU (GRAPHMODE_DETACH_ELSEWHERE=1), PROCS processes each.
# Ran at commit 24f7151 (the experiment and its graphmode_elsewhere configuration, removed after: README.md).
# Usage: bash call4.sh OUT ROUNDS PROCS
set -u
out=${1:?OUT}; rounds=${2:-4}; procs=${3:-2}
t0=$(date +%s)
. benchmarks/device_setup.sh
for r in $(seq 1 "$rounds"); do for m in none thread; do
  timeout 60 python3 benchmarks/notes/s31/after_detach_probe.py $m 2>>"$out/probe4.err" | tail -1 >> "$out/after_detach.jsonl"; done; done
echo "probe done at $(( $(date +%s) - t0 )) s"
timeout $(( 470 - ($(date +%s) - t0) )) python3 benchmarks/script_fidelity.py record /tmp/fid --procs "$procs" \
  --workloads vit_batches --configs untraced,graphmode,graphmode_elsewhere --keep-traces all --no-report --timeout 120 \
  > "$out/record.log" 2>&1
cut -c1-200 "$out/record.log" | tail -12
cp /tmp/fid/results.jsonl "$out/results.jsonl" 2>/dev/null
(cd /tmp/fid && tar -cf - *.gmtrace | xz -2 -T8 > "$out/traces.tar.xz")
echo "elapsed $(( $(date +%s) - t0 )) s"
