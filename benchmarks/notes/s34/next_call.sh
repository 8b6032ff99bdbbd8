#!/usr/bin/env bash
# Prepared in session 34 for the next device session, not yet run. (1) The linger with LINGER_LOOP = 4 (call 3 ran 3,
# which ended the decode step's linger in its warm-up; call 4 never ran: the machine was taken back) beside the default
# one run and untraced processes: the decode step and the ViT with a graph per batch size, PROCS processes each,
# interleaved, traces kept. Read with benchmarks/one_run.py RESULTS TRACES [--config graphmode_linger] and
# benchmarks/notes/s29/own_clock.py, and each capture entry's "adopted" and each window's "linger_reason".
# (2) pool_probe.py (issue 30), depths 4 and 16, 3 processes each; (3) instantiate_probe.py, 2 processes a step, as
# time allows.
# Usage: bash benchmarks/notes/s34/next_call.sh OUT PROCS
set -u
out=${1:?OUT}; procs=${2:-3}
t0=$(date +%s)
. benchmarks/device_setup.sh
timeout 380 python3 benchmarks/script_fidelity.py record /tmp/fidl --procs "$procs" --workloads hf_graph,vit_batches \
  --configs untraced,graphmode,graphmode_linger --keep-traces all --no-report --timeout 60 > "$out/record.log" 2>&1
cut -c1-160 "$out/record.log" | tail -6; echo "recorded at $(( $(date +%s) - t0 )) s"
# a run the time limit cut: SIGTERM makes graphmode write what it recorded (status interrupted) before the archive
pkill -TERM -f "graphmode run" 2>/dev/null && sleep 5
cp /tmp/fidl/results.jsonl "$out/results.jsonl" 2>/dev/null
(cd /tmp/fidl && tar -cf - $(ls *.gmtrace *.wal 2>/dev/null) | xz -2 -T8 > "$out/traces.tar.xz")  # a .wal: a trace still being written
for i in 1 2 3; do for depth in 4 16; do
  [ $(( $(date +%s) - t0 )) -gt 540 ] && break 2
  timeout 40 python3 benchmarks/notes/s34/pool_probe.py "$depth" 2>>"$out/pool.err" | tail -1 >> "$out/pool.jsonl"
done; done; cat "$out/pool.jsonl"
for i in 1 2; do for step in decode vit; do  # a PyTorch graph's instantiation against the model's price
  [ $(( $(date +%s) - t0 )) -gt 570 ] && break 2
  timeout 40 python3 benchmarks/notes/s34/instantiate_probe.py "$step" 2>>"$out/inst.err" | tail -1 >> "$out/inst.jsonl"
done; done; cat "$out/inst.jsonl"; echo "elapsed $(( $(date +%s) - t0 )) s"
