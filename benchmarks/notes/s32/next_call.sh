#!/usr/bin/env bash
# Prepared in session 32 for the next device session, not yet run: decode_capture_probe.py, each MODE in PROCS fresh
# processes, interleaved. The figure: D's body over U's body per process, by mode (control is the captures' own spread).
# Usage: bash benchmarks/notes/s32/next_call.sh OUT PROCS
set -u
out=${1:?OUT}; procs=${2:-3}
. benchmarks/device_setup.sh
cd benchmarks/third_party  # hf_static_decode.py's folder (its _truth module is not needed here)
for i in $(seq 1 "$procs"); do
  for mode in control session history stamper hooks all; do
    timeout 90 python3 ../notes/s32/decode_capture_probe.py "$mode" 2>>"$out/probe.err" | tail -1 >> "$out/probe.jsonl"
  done
done
tail -3 "$out/probe.err"; wc -l "$out/probe.jsonl"
