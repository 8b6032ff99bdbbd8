#!/usr/bin/env bash
# Session 31, device call 5 (H200): where a detach's 46-83 ms go. after_detach_probe.py 'none' in PROCS fresh processes
# with graphmode's phase marks on (GRAPHMODE_PHASES: tracer.phases.mark, five of them inside CuptiSession.stop).
# Usage: bash call5.sh OUT PROCS
set -u
out=${1:?OUT}; procs=${2:-4}
. benchmarks/device_setup.sh
for i in $(seq 1 "$procs"); do
  GRAPHMODE_PHASES="$out/phases.jsonl" timeout 60 python3 benchmarks/notes/s31/after_detach_probe.py none \
    2>>"$out/probe5.err" | tail -1 >> "$out/after_detach.jsonl"; done
cat "$out/phases.jsonl" | tail -12; tail -2 "$out/probe5.err"
